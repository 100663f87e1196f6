"""Producer and consumer round trips through a real broker."""
from __future__ import annotations

import threading
import time

import pytest

from connector import (
    AlreadyClosed, CompressionType, InitialPosition, InvalidMessage, MessageId,
    MessageTooBig, ProducerQueueIsFull, Result, Timeout)
from tests.waiting import wait_for_backlog


def _subscribe(client, topic, name="sub", **kwargs):
    kwargs.setdefault("initial_position", InitialPosition.Earliest)
    return client.subscribe(topic, name, **kwargs)


@pytest.mark.transports
def test_sent_message_is_received_with_its_metadata(client, topic):
    consumer = _subscribe(client, topic)
    producer = client.create_producer(topic, producer_name="prod-1")
    before = int(time.time() * 1000)
    msg_id = producer.send(b"hello", properties={"a": "1"}, partition_key="key", ordering_key=b"ok",
                           event_timestamp=1234)
    msg = consumer.receive(5000)
    assert msg.data() == msg.value() == b"hello"
    assert msg.properties() == {"a": "1"}
    assert msg.partition_key() == "key" and msg.ordering_key() == "ok"
    assert msg.event_timestamp() == 1234
    assert before <= msg.publish_timestamp() <= int(time.time() * 1000)
    assert msg.producer_name() == "prod-1" == producer.producer_name()
    assert msg.topic_name() == topic and msg.redelivery_count() == 0
    assert msg.message_id() == msg_id


@pytest.mark.transports
def test_sync_sends_return_increasing_unbatched_message_ids(client, topic):
    producer = client.create_producer(topic)
    ids = [producer.send(b"m%d" % i) for i in range(5)]
    assert ids == sorted(ids)
    assert [i.entry_id() for i in ids] == list(range(ids[0].entry_id(), ids[0].entry_id() + 5))
    assert all(i.batch_index() == -1 for i in ids)
    assert producer.last_sequence_id() == 4


@pytest.mark.transports
def test_async_sends_are_batched_and_callbacks_get_ids_in_order(client, topic):
    producer = client.create_producer(topic, batching_enabled=True, batching_max_messages=100,
                                      batching_max_publish_delay_ms=1000)
    results = []
    for i in range(250):
        producer.send_async(b"m%d" % i, lambda res, mid: results.append((res, mid)))
    producer.flush()
    assert len(results) == 250 and {r for r, _ in results} == {Result.Ok}
    ids = [mid for _, mid in results]
    assert ids == sorted(ids)
    assert [mid.batch_index() for mid in ids[:100]] == list(range(100))
    assert len({mid.entry_id() for mid in ids}) == 3  # 100 + 100 + 50
    consumer = _subscribe(client, topic)
    received = [consumer.receive(5000) for _ in range(250)]
    assert [m.data() for m in received] == [b"m%d" % i for i in range(250)]
    assert [m.message_id() for m in received] == ids


def test_publish_delay_flushes_a_partial_batch(client, topic):
    producer = client.create_producer(topic, batching_enabled=True, batching_max_publish_delay_ms=20)
    done = threading.Event()
    producer.send_async(b"lonely", lambda res, mid: done.set())
    assert done.wait(5)


def test_sequence_ids_continue_after_initial_sequence_id(client, topic):
    producer = client.create_producer(topic, initial_sequence_id=99)
    producer.send(b"x")
    assert producer.last_sequence_id() == 100


@pytest.mark.parametrize("compression", [CompressionType.LZ4, CompressionType.ZLib,
                                         CompressionType.ZSTD])
def test_compressed_batches_round_trip(client, topic, compression):
    producer = client.create_producer(topic, compression_type=compression, batching_enabled=True,
                                      batching_max_publish_delay_ms=1000)
    for i in range(20):
        producer.send_async(b"payload %d " % i * 20, None, partition_key=f"k{i}")
    producer.flush()
    consumer = _subscribe(client, topic)
    got = [consumer.receive(5000) for _ in range(20)]
    assert [m.data() for m in got] == [b"payload %d " % i * 20 for i in range(20)]
    assert [m.partition_key() for m in got] == [f"k{i}" for i in range(20)]


def test_receive_timeout_raises_timeout(client, topic):
    consumer = _subscribe(client, topic)
    started = time.monotonic()
    with pytest.raises(Timeout):
        consumer.receive(timeout_millis=200)
    assert 0.15 < time.monotonic() - started < 3


def test_cumulative_ack_of_a_message_never_received_is_invalid(client, topic):
    producer = client.create_producer(topic)
    msg_id = producer.send(b"x")
    consumer = _subscribe(client, topic, initial_position=InitialPosition.Latest)
    with pytest.raises(InvalidMessage):
        consumer.acknowledge_cumulative(MessageId(-1, msg_id.ledger_id(), msg_id.entry_id() + 10))


def test_ack_after_close_raises_already_closed(client, topic):
    producer = client.create_producer(topic)
    producer.send(b"x")
    consumer = _subscribe(client, topic)
    msg = consumer.receive(5000)
    consumer.close()
    with pytest.raises(AlreadyClosed):
        consumer.acknowledge(msg)
    with pytest.raises(AlreadyClosed):
        consumer.receive(100)


def test_send_after_close_raises_already_closed(client, topic):
    producer = client.create_producer(topic)
    producer.close()
    with pytest.raises(AlreadyClosed):
        producer.send(b"x")


@pytest.mark.transports
def test_acknowledged_messages_are_not_redelivered_to_the_next_consumer(client, admin, topic):
    producer = client.create_producer(topic)
    for i in range(10):
        producer.send(b"m%d" % i)
    consumer = _subscribe(client, topic)
    msgs = [consumer.receive(5000) for _ in range(10)]
    for msg in msgs[:6]:
        consumer.acknowledge(msg)
    consumer.close()
    consumer = _subscribe(client, topic)
    assert sorted(consumer.receive(5000).data() for _ in range(4)) == [b"m6", b"m7", b"m8", b"m9"]


@pytest.mark.transports
def test_cumulative_ack_acknowledges_everything_before(client, topic):
    producer = client.create_producer(topic)
    for i in range(10):
        producer.send(b"m%d" % i)
    consumer = _subscribe(client, topic)
    msgs = [consumer.receive(5000) for _ in range(10)]
    consumer.acknowledge_cumulative(msgs[6])
    consumer.close()
    consumer = _subscribe(client, topic)
    assert consumer.receive(5000).data() == b"m7"


@pytest.mark.transports
def test_individual_acks_are_grouped_then_sent(client, admin, topic):
    producer = client.create_producer(topic)
    for i in range(5):
        producer.send(b"m%d" % i)
    consumer = _subscribe(client, topic)
    for _ in range(5):
        consumer.acknowledge(consumer.receive(5000))
    assert wait_for_backlog(admin, topic, "sub", 0) == 0  # the grouped ack reaches the broker


@pytest.mark.transports
def test_oversized_message_raises_message_too_big_from_send_and_send_async(tmp_path, transport):
    from broker_core import Broker
    from connector import Client
    with Broker(data_dir=tmp_path, port=0, maxMessageSize=1024) as broker, \
            Client(broker.service_url, transport=transport) as client:
        producer = client.create_producer("big")
        with pytest.raises(MessageTooBig) as info:
            producer.send(b"x" * 2000)
        assert (info.value.size, info.value.limit) == (2000, 1024)
        with pytest.raises(MessageTooBig):
            producer.send_async(b"x" * 2000, None)
        assert producer.send(b"small").entry_id() == 0


def test_full_queue_is_reported_to_the_send_async_callback(client, topic):
    producer = client.create_producer(topic, max_pending_messages=2, batching_enabled=True,
                                      batching_max_publish_delay_ms=5000)
    results = []
    for _ in range(3):
        producer.send_async(b"x", lambda res, mid: results.append(res))
    assert results == [Result.ProducerQueueIsFull]
    with pytest.raises(ProducerQueueIsFull):
        producer.send(b"y")
    producer.flush()
    assert results.count(Result.Ok) == 2


def test_message_listener_gets_messages_on_its_thread(client, topic):
    got, done = [], threading.Event()

    def listener(consumer, msg):
        got.append(msg.data())
        consumer.acknowledge(msg)
        if len(got) == 3:
            done.set()

    _subscribe(client, topic, message_listener=listener)
    producer = client.create_producer(topic)
    for i in range(3):
        producer.send(b"m%d" % i)
    assert done.wait(5) and got == [b"m0", b"m1", b"m2"]


@pytest.mark.transports
def test_seek_to_earliest_replays_and_drops_what_was_buffered(client, topic):
    producer = client.create_producer(topic)
    for i in range(5):
        producer.send(b"m%d" % i)
    consumer = _subscribe(client, topic)
    assert consumer.receive(5000).data() == b"m0"
    consumer.seek(MessageId.earliest)
    assert [consumer.receive(5000).data() for _ in range(5)] == [b"m%d" % i for i in range(5)]
    with pytest.raises(Timeout):
        consumer.receive(200)


@pytest.mark.transports
def test_seek_to_message_id_and_to_timestamp(client, topic):
    producer = client.create_producer(topic)
    ids = [producer.send(b"m%d" % i) for i in range(5)]
    consumer = _subscribe(client, topic)
    consumer.seek(ids[3])  # the message after it: start_message_id_inclusive is False by default
    assert consumer.receive(5000).data() == b"m4"
    consumer.seek(0)
    assert consumer.receive(5000).data() == b"m0"
    inclusive = _subscribe(client, topic, "inclusive", start_message_id_inclusive=True)
    inclusive.seek(ids[3])
    assert inclusive.receive(5000).data() == b"m3"


@pytest.mark.transports
def test_many_messages_flow_beyond_the_receiver_queue(client, topic):
    producer = client.create_producer(topic, block_if_queue_full=True)
    for i in range(3000):
        producer.send_async(b"%d" % i, None)
    producer.flush()
    consumer = _subscribe(client, topic, receiver_queue_size=100)
    assert [int(consumer.receive(5000).data()) for _ in range(3000)] == list(range(3000))


@pytest.mark.transports
def test_redeliver_unacknowledged_messages_delivers_them_again(client, topic):
    producer = client.create_producer(topic)
    for i in range(3):
        producer.send(b"m%d" % i)
    consumer = _subscribe(client, topic)
    first = [consumer.receive(5000) for _ in range(3)]
    consumer.acknowledge(first[0])
    consumer.redeliver_unacknowledged_messages()
    again = sorted(consumer.receive(5000).data() for _ in range(2))
    assert again == [b"m1", b"m2"]


@pytest.mark.transports
def test_unsubscribe_removes_the_subscription(client, admin, topic):
    consumer = _subscribe(client, topic, "gone")
    consumer.unsubscribe()
    assert "gone" not in admin.topic_stats(topic).get("subscriptions", {})
    with pytest.raises(AlreadyClosed):
        consumer.receive(10)
