"""Non-persistent topics (seed "Non-persistent topics", issue 4 item 10) with a real broker and client:
messages reach only the consumers connected (with permits) when they are published, nothing is written
to disk, the four subscription types deliver by their rules, drops are counted, a restart loses
everything, and ``enableNonPersistentTopics=false`` refuses them."""
from __future__ import annotations

import os
import time
import uuid
from collections import defaultdict

import pytest

from broker_core import Broker
from connector import (Admin, Client, ConsumerBusy, ConsumerType, InitialPosition, MessageId, NotAllowedError,
                       Timeout, TopicNotFound)


@pytest.fixture
def np_topic():
    return f"non-persistent://public/default/np-{uuid.uuid4().hex[:12]}"


def wait_for_permits(admin, topic, subscription, consumers=1, timeout_s=10.0):
    """Wait until ``subscription`` has exactly ``consumers`` consumers, each with permits.

    A consumer's first permits travel with its subscribe request, so they are in place once
    ``subscribe()`` returns; this checks the broker's view (a condition, polled; not a fixed sleep)."""
    deadline = time.monotonic() + timeout_s
    while True:
        sub = admin.topic_stats(topic)["subscriptions"].get(subscription)
        if sub and len(sub["consumers"]) == consumers and all(c["availablePermits"] > 0 for c in sub["consumers"]):
            return
        assert time.monotonic() < deadline, f"{subscription} on {topic} never got {consumers} consumer(s) with permits"
        time.sleep(0.01)


def drain(consumer, timeout_millis=300):
    received = []
    while True:
        try:
            received.append(consumer.receive(timeout_millis=timeout_millis))
        except Timeout:
            return received


def send_all(client, topic, payloads, **kwargs):
    producer = client.create_producer(topic, batching_enabled=False, **kwargs)
    ids = [producer.send(p if isinstance(p, bytes) else p.encode()) for p in payloads]
    producer.close()
    return ids


# -- only connected consumers -----------------------------------------------------------------------------

def test_a_consumer_never_sees_messages_published_before_it_subscribed(client, admin, np_topic):
    producer = client.create_producer(np_topic, batching_enabled=False)
    producer.send(b"nobody-listening")
    first = client.subscribe(np_topic, "first", initial_position=InitialPosition.Earliest)
    wait_for_permits(admin, np_topic, "first")
    producer.send(b"m1")
    producer.send(b"m2")
    late = client.subscribe(np_topic, "late", initial_position=InitialPosition.Earliest)
    wait_for_permits(admin, np_topic, "late")
    producer.send(b"m3")
    assert [m.data() for m in drain(first)] == [b"m1", b"m2", b"m3"]
    assert [m.data() for m in drain(late)] == [b"m3"]


def test_send_receipts_carry_dense_running_offsets(client, admin, np_topic):
    consumer = client.subscribe(np_topic, "s")
    wait_for_permits(admin, np_topic, "s")
    producer = client.create_producer(np_topic, batching_enabled=False)
    ids = [producer.send(f"m{i}".encode()) for i in range(5)]
    assert [i.entry_id() for i in ids] == [0, 1, 2, 3, 4]
    assert len({i.ledger_id() for i in ids}) == 1
    assert [m.message_id() for m in drain(consumer)] == ids


def test_a_reader_gets_only_what_is_published_after_it_starts(client, admin, np_topic):
    send_all(client, np_topic, ["old"])
    reader = client.create_reader(np_topic, MessageId.earliest)
    sub = next(iter(admin.topic_stats(np_topic)["subscriptions"]))
    wait_for_permits(admin, np_topic, sub)
    assert admin.topic_stats(np_topic)["subscriptions"][sub]["isDurable"] is False
    send_all(client, np_topic, ["new"])
    assert reader.read_next(timeout_millis=5000).data() == b"new"
    with pytest.raises(Timeout):
        reader.read_next(timeout_millis=200)
    reader.close()


def test_acknowledged_or_not_nothing_is_ever_redelivered(client, admin, np_topic):
    consumer = client.subscribe(np_topic, "s", consumer_type=ConsumerType.Shared)
    wait_for_permits(admin, np_topic, "s")
    send_all(client, np_topic, ["a", "b"])
    got = drain(consumer)
    assert [m.data() for m in got] == [b"a", b"b"]
    consumer.acknowledge(got[0])
    consumer.negative_acknowledge(got[1])
    consumer.redeliver_unacknowledged_messages()
    consumer.close()
    again = client.subscribe(np_topic, "s", consumer_type=ConsumerType.Shared)
    assert drain(again) == []


# -- nothing on disk, nothing after a restart --------------------------------------------------------------

def test_nothing_is_written_to_the_data_dir(tmp_path):
    marker = uuid.uuid4().hex.encode()
    topic = "non-persistent://public/default/no-disk"
    with Broker(data_dir=tmp_path, port=0) as broker, Client(broker.service_url) as client, \
            Admin(broker.service_url) as admin:
        consumer = client.subscribe(topic, "s")
        wait_for_permits(admin, topic, "s")
        send_all(client, topic, [marker + b"-%d" % i for i in range(20)])
        assert len(drain(consumer)) == 20
        assert not (tmp_path / "topics" / "non-persistent").exists()
        for root, _, files in os.walk(tmp_path):
            for name in files:
                with open(os.path.join(root, name), "rb") as f:
                    assert marker not in f.read(), name


def test_a_restart_loses_topics_subscriptions_and_counters(tmp_path):
    topic = "non-persistent://public/default/restart"
    with Broker(data_dir=tmp_path, port=0) as broker, Client(broker.service_url) as client, \
            Admin(broker.service_url) as admin:
        client.subscribe(topic, "s")
        wait_for_permits(admin, topic, "s")
        send_all(client, topic, ["m"])
        assert topic in admin.list_topics("public/default")
    with Broker(data_dir=tmp_path, port=0) as broker, Admin(broker.service_url) as admin:
        assert topic not in admin.list_topics("public/default")
        with pytest.raises(TopicNotFound):
            admin.topic_stats(topic)


# -- subscription types ------------------------------------------------------------------------------------

def test_second_exclusive_consumer_is_rejected(client, np_topic):
    client.subscribe(np_topic, "ex", consumer_type=ConsumerType.Exclusive)
    with pytest.raises(ConsumerBusy):
        client.subscribe(np_topic, "ex", consumer_type=ConsumerType.Exclusive)


def test_failover_delivers_to_the_active_consumer_and_the_standby_takes_over_new_messages(client, admin, np_topic):
    a = client.subscribe(np_topic, "fo", consumer_type=ConsumerType.Failover, consumer_name="A")
    b = client.subscribe(np_topic, "fo", consumer_type=ConsumerType.Failover, consumer_name="B")
    wait_for_permits(admin, np_topic, "fo", consumers=2)
    assert admin.topic_stats(np_topic)["subscriptions"]["fo"]["activeConsumerName"] == "A"
    send_all(client, np_topic, ["m0", "m1"])
    assert [m.data() for m in drain(a)] == [b"m0", b"m1"]
    assert drain(b, 100) == []
    a.close()  # unacknowledged: lost anyway, nothing is kept to hand over
    wait_for_permits(admin, np_topic, "fo", consumers=1)
    send_all(client, np_topic, ["m2"])
    assert [m.data() for m in drain(b)] == [b"m2"]


def test_shared_gives_each_message_to_one_consumer(client, admin, np_topic):
    consumers = [client.subscribe(np_topic, "sh", consumer_type=ConsumerType.Shared) for _ in range(2)]
    wait_for_permits(admin, np_topic, "sh", consumers=2)
    send_all(client, np_topic, [f"m{i}" for i in range(10)])
    got = [[m.data() for m in drain(c)] for c in consumers]
    assert all(got) and sorted(got[0] + got[1]) == sorted(f"m{i}".encode() for i in range(10))


def test_key_shared_keeps_each_key_on_one_consumer(client, admin, np_topic):
    consumers = [client.subscribe(np_topic, "ks", consumer_type=ConsumerType.KeyShared, consumer_name=f"c{i}")
                 for i in range(2)]
    wait_for_permits(admin, np_topic, "ks", consumers=2)
    producer = client.create_producer(np_topic, batching_enabled=False)
    for i in range(40):
        producer.send(f"m{i}".encode(), partition_key=f"key-{i % 8}")
    owners = defaultdict(set)
    for c in consumers:
        for m in drain(c):
            owners[m.partition_key()].add(c)
    assert len(owners) == 8 and all(len(who) == 1 for who in owners.values())
    stats = admin.topic_stats(np_topic)["subscriptions"]["ks"]
    assert stats["type"] == "Key_Shared" and stats["msgOutCounter"] == 40
    assert all(c["keyHashRangeArrays"] for c in stats["consumers"])


# -- drops and stats ---------------------------------------------------------------------------------------

def test_a_consumer_without_permits_drops_messages_and_stats_count_them(client, admin, np_topic):
    consumer = client.subscribe(np_topic, "slow", receiver_queue_size=1)
    wait_for_permits(admin, np_topic, "slow")
    send_all(client, np_topic, [f"m{i}" for i in range(5)])  # 1 permit: m0 goes, m1..m4 are dropped
    stats = admin.topic_stats(np_topic)
    sub = stats["subscriptions"]["slow"]
    assert sub["msgDropCount"] == 4 and sub["msgOutCounter"] == 1 and sub["msgBacklog"] == 0
    assert sub["consumers"][0]["msgDropCount"] == 4
    assert stats["msgInCounter"] == 5 and stats["msgDropCount"] == 4
    assert [m.data() for m in drain(consumer)] == [b"m0"]


def test_stats_show_publishers_subscriptions_and_consumers_while_the_topic_is_in_use(client, admin, np_topic):
    consumer = client.subscribe(np_topic, "s", consumer_name="reader-1")
    producer = client.create_producer(np_topic, producer_name="writer-1", batching_enabled=False)
    wait_for_permits(admin, np_topic, "s")
    producer.send(b"x")
    stats = admin.topic_stats(np_topic)
    assert stats["publishers"][0]["producerName"] == "writer-1" and stats["publishers"][0]["msgInCounter"] == 1
    assert stats["subscriptions"]["s"]["consumers"][0]["consumerName"] == "reader-1"
    assert (stats["msgInCounter"], stats["msgOutCounter"], stats["storageSize"]) == (1, 1, 0)
    assert np_topic in admin.list_topics("public/default")
    # the durable subscription keeps the topic alive after its consumer leaves; unsubscribing ends it
    consumer.close()
    producer.close()
    assert np_topic in admin.list_topics("public/default")
    admin.delete_subscription(np_topic, "s")
    assert np_topic not in admin.list_topics("public/default")


def test_delete_topic_forgets_it(client, admin, np_topic):
    client.subscribe(np_topic, "s").close()
    admin.delete_topic(np_topic)
    assert np_topic not in admin.list_topics("public/default")


# -- partitioned ---------------------------------------------------------------------------------------------

def test_partitioned_non_persistent_topic_spreads_and_delivers_every_partition(client, admin, np_topic):
    admin.create_partitioned_topic(np_topic, 3)
    assert admin.get_partitioned_topic_metadata(np_topic)["partitions"] == 3
    assert {f"{np_topic}-partition-{i}" for i in range(3)} <= set(admin.list_topics("public/default"))
    consumer = client.subscribe(np_topic, "s")
    wait_for_permits(admin, np_topic, "s", consumers=3)
    ids = send_all(client, np_topic, [f"m{i}" for i in range(9)])
    assert {i.partition() for i in ids} == {0, 1, 2}
    assert sorted(m.data() for m in drain(consumer)) == sorted(f"m{i}".encode() for i in range(9))
    stats = admin.topic_stats(np_topic)
    assert stats["metadata"]["partitions"] == 3 and stats["msgInCounter"] == 9


# -- enableNonPersistentTopics=false ----------------------------------------------------------------------------

def test_disabled_non_persistent_topics_are_refused_naming_the_setting(tmp_path):
    topic = "non-persistent://public/default/off"
    with Broker(data_dir=tmp_path, port=0, enableNonPersistentTopics=False) as broker, \
            Client(broker.service_url) as client, Admin(broker.service_url) as admin:
        with pytest.raises(NotAllowedError, match="enableNonPersistentTopics"):
            client.create_producer(topic)
        with pytest.raises(NotAllowedError, match="enableNonPersistentTopics"):
            client.subscribe(topic, "s")
        with pytest.raises(NotAllowedError, match="enableNonPersistentTopics"):
            admin.create_partitioned_topic(topic + "-p", 2)
        send_all(client, "persistent://public/default/still-fine", ["ok"])


def test_partitioned_stats_add_up_the_drops_of_every_partition(client, admin, np_topic):
    admin.create_partitioned_topic(np_topic, 2)
    client.subscribe(np_topic, "slow", receiver_queue_size=1)
    wait_for_permits(admin, np_topic, "slow", consumers=2)
    producer = client.create_producer(np_topic, batching_enabled=False)
    for i in range(8):  # round robin: 4 per partition, 1 delivered and 3 dropped on each
        producer.send(f"m{i}".encode())
    stats = admin.topic_stats(np_topic)
    assert stats["msgDropCount"] == 6 and stats["subscriptions"]["slow"]["msgDropCount"] == 6


# -- the topic class itself (no network): what the servicer relies on --------------------------------------

def _send_entry(seq, *, num_messages=1, chunks=0):
    from broker_core.protocol import broker_pb2, codec, pulsar_api_pb2

    meta = pulsar_api_pb2.MessageMetadata(producer_name="p", sequence_id=seq, publish_time=1)
    if num_messages > 1:
        meta.num_messages_in_batch = num_messages
    if chunks:
        meta.num_chunks_from_msg, meta.chunk_id, meta.uuid, meta.total_chunk_msg_size = chunks, 0, "p-0", 10
    return broker_pb2.SendEntry(sequence_id=seq, highest_sequence_id=seq, num_messages=num_messages,
                                data=codec.encode_entry(meta, b"payload" * num_messages))


def _topic(on_idle=None):
    from broker_core.clock import FakeClock
    from broker_core.config import BrokerConfig
    from broker_core.core.nonpersistent.topic import NonPersistentTopic
    from broker_core.types import TopicName

    return NonPersistentTopic(TopicName.parse("non-persistent://public/default/unit"), BrokerConfig(),
                              FakeClock(), on_idle=on_idle)


def test_the_broker_refuses_chunks_on_a_non_persistent_topic():
    topic = _topic()
    producer, _ = topic.add_producer("p", {})
    done = []
    topic.publish(producer, [_send_entry(0), _send_entry(1, chunks=3), _send_entry(2, num_messages=4)],
                  lambda results, error: done.append(results))
    (results,) = done
    assert isinstance(results[1].error, NotAllowedError)
    assert [r.entry.offset for r in (results[0], results[2])] == [0, 1] and topic.next_offset == 5
    assert topic.stats()["msgInCounter"] == 5


def test_an_idle_topic_asks_to_be_forgotten_once_its_last_client_leaves():
    forgotten = []
    topic = _topic(forgotten.append)
    producer, _ = topic.add_producer("p", {})
    from dispatch.testing import RecordingConsumer
    from dispatch.types import SubType

    reader = RecordingConsumer(1)
    sub = topic.subscribe("reader-sub", SubType.EXCLUSIVE, reader, durable=False, start_offset=0)
    topic.remove_producer(producer)
    assert forgotten == []
    topic.consumer_left(sub, reader)  # a reader's subscription goes with it: nothing is left
    assert forgotten == [topic] and topic.closed


def test_a_message_sent_right_after_subscribe_returns_is_received(client, np_topic):
    """The first permits come with the subscribe, not in a later flow a send could overtake."""
    consumer = client.subscribe(np_topic, "immediate")
    client.create_producer(np_topic).send(b"first")
    assert consumer.receive(timeout_millis=5000).data() == b"first"


def test_every_call_on_stored_data_is_refused_with_not_allowed_by_the_topic(client, admin, np_topic):
    client.subscribe(np_topic, "s")
    wait_for_permits(admin, np_topic, "s")
    calls = {
        "create_subscription": lambda: admin.create_subscription(np_topic, "new"),
        "reset_cursor": lambda: admin.reset_cursor(np_topic, "s", MessageId.earliest),
        "skip_messages": lambda: admin.skip_messages(np_topic, "s", 1),
        "clear_backlog": lambda: admin.clear_backlog(np_topic, "s"),
        "peek_messages": lambda: admin.peek_messages(np_topic, "s"),
        "terminate_topic": lambda: admin.terminate_topic(np_topic),
    }
    refused = {}
    for name, call in calls.items():
        with pytest.raises(NotAllowedError) as raised:
            call()
        refused[name] = "non-persistent" in str(raised.value)
    assert refused == dict.fromkeys(calls, True)
