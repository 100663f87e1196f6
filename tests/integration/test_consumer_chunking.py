"""Chunked messages on the consumer, end to end: chunk entries are written through a raw Produce stream
(so their interleaving is exact), then read with a real consumer; and real chunking producers."""
from __future__ import annotations

import time

import grpc
import pytest

from broker_core import Broker
from broker_core.protocol import broker_pb2 as pb
from broker_core.protocol import broker_pb2_grpc, codec, pulsar_api_pb2
from connector import Client, CompressionType, InitialPosition, MessageId, Timeout
from tests import waiting


def produce_raw(broker, topic, entries):
    """Store ``entries`` ((MessageMetadata, payload) pairs, or entry bytes encoded by hand) in this order;
    their offsets."""
    sends = [pb.SendEntry(num_messages=1, data=entry) if isinstance(entry, bytes) else
             pb.SendEntry(sequence_id=entry[0].sequence_id, highest_sequence_id=entry[0].sequence_id,
                          num_messages=1, data=codec.encode_entry(*entry))
             for entry in entries]
    requests = [pb.ProduceRequest(open=pb.ProducerOpen(topic=topic, producer_name="raw")),
                pb.ProduceRequest(send=pb.SendBatch(entries=sends))]
    offsets = []
    with grpc.insecure_channel(broker.address) as channel:
        responses = broker_pb2_grpc.PulsarLikeStub(channel).Produce(iter(requests), timeout=30)
        assert next(responses).WhichOneof("response") == "opened"
        while len(offsets) < len(entries):
            response = next(responses)
            assert response.WhichOneof("response") == "receipts", response
            offsets.extend(r.entry_id for r in response.receipts.receipts)
        responses.cancel()
    return offsets


def chunks(producer, sequence_id, payload, num_chunks, **fields):
    """The (metadata, payload) pairs of ``payload`` split into ``num_chunks`` chunks, as a producer
    writes them."""
    size = -(-len(payload) // num_chunks)
    parts = [payload[i:i + size] for i in range(0, len(payload), size)]
    assert len(parts) == num_chunks
    fields.setdefault("publish_time", int(time.time() * 1000))
    return [(pulsar_api_pb2.MessageMetadata(
        producer_name=producer, sequence_id=sequence_id, uuid=f"{producer}-{sequence_id}", chunk_id=i,
        num_chunks_from_msg=num_chunks, total_chunk_msg_size=len(payload), **fields), part)
        for i, part in enumerate(parts)]


def plain(producer, sequence_id, payload):
    return (pulsar_api_pb2.MessageMetadata(producer_name=producer, sequence_id=sequence_id,
                                           publish_time=int(time.time() * 1000)), payload)


def subscribe(client, topic, name="sub", **options):
    return client.subscribe(topic, name, initial_position=InitialPosition.Earliest, **options)


def wait_for_backlog(admin, topic, expected, sub="sub", timeout_s=10.0):
    """The subscription's msgBacklog once it equals ``expected`` (acks are grouped and asynchronous)."""
    return waiting.wait_for_backlog(admin, topic, sub, expected, timeout_s)


@pytest.mark.transports
def test_consecutive_chunks_with_regular_messages_around_them_are_received_in_order(broker, client, topic):
    m1 = chunks("producer-1", 1, b"M1 is a large message" * 10, 3)
    offsets = produce_raw(broker, topic, [plain("producer-1", 0, b"before"), *m1,
                                          plain("producer-1", 2, b"after")])
    consumer = subscribe(client, topic)
    received = [consumer.receive(5000) for _ in range(3)]
    assert [m.data() for m in received] == [b"before", b"M1 is a large message" * 10, b"after"]
    assert received[1].message_id().entry_id() == offsets[3]  # the last chunk's id


@pytest.mark.transports
def test_interwoven_chunks_of_two_producers_are_reassembled_per_message(broker, client, topic):
    m1 = chunks("producer-1", 0, b"message one from producer 1", 3, properties=[
        pulsar_api_pb2.KeyValue(key="from", value="p1")], partition_key="k1", event_time=11)
    m2 = chunks("producer-2", 0, b"message two from producer 2", 3, partition_key="k2")
    offsets = produce_raw(broker, topic, [m1[0], m2[0], m1[1], m2[1], m1[2], m2[2]])
    consumer = subscribe(client, topic)
    first, second = consumer.receive(5000), consumer.receive(5000)
    assert (first.data(), second.data()) == (b"message one from producer 1", b"message two from producer 2")
    assert (first.producer_name(), second.producer_name()) == ("producer-1", "producer-2")
    assert first.properties() == {"from": "p1"} and first.event_timestamp() == 11
    assert (first.partition_key(), second.partition_key()) == ("k1", "k2")
    assert first.message_id() == MessageId(-1, first.message_id().ledger_id(), offsets[4])
    assert second.message_id().entry_id() == offsets[5]
    assert first.message_id().batch_index() == -1 and first.topic_name() == topic
    with pytest.raises(Timeout):
        consumer.receive(200)


@pytest.mark.transports
def test_acknowledging_a_chunked_message_acknowledges_every_chunk(broker, client, admin, topic):
    m1 = chunks("producer-1", 0, b"x" * 100, 4)
    m2 = chunks("producer-2", 0, b"y" * 100, 3)
    produce_raw(broker, topic, [m1[0], m2[0], m1[1], m2[1], m1[2], m2[2], m1[3]])
    consumer = subscribe(client, topic)
    first, second = consumer.receive(5000), consumer.receive(5000)
    assert (first.data(), second.data()) == (b"y" * 100, b"x" * 100)  # m2 completes first
    consumer.acknowledge(first)
    assert wait_for_backlog(admin, topic, 4) == 4
    consumer.acknowledge(second.message_id())  # by id: the consumer knows the id's chunks
    assert wait_for_backlog(admin, topic, 0) == 0


@pytest.mark.transports
def test_cumulative_ack_of_a_chunked_message_acknowledges_up_to_its_last_chunk(broker, client, admin,
                                                                              topic):
    produce_raw(broker, topic, [*chunks("p", 0, b"z" * 90, 3), plain("p", 1, b"next")])
    consumer = subscribe(client, topic)
    consumer.acknowledge_cumulative(consumer.receive(5000))
    assert wait_for_backlog(admin, topic, 1) == 1
    assert consumer.receive(5000).data() == b"next"


def test_compressed_chunked_message_is_decompressed_after_reassembly(broker, client, topic):
    import zstandard

    original = b'{"key": "value", "n": 12345}' * 400
    compressed = zstandard.ZstdCompressor().compress(original)
    produce_raw(broker, topic, chunks("p", 0, compressed, 4, compression=pulsar_api_pb2.ZSTD,
                                      uncompressed_size=len(original)))
    assert subscribe(client, topic).receive(5000).data() == original


@pytest.mark.transports
def test_message_of_more_chunks_than_the_receiver_queue_is_received(broker, client, topic):
    payload = bytes(range(256)) * 8
    produce_raw(broker, topic, [*chunks("p", 0, payload, 32), plain("p", 1, b"after")])
    consumer = subscribe(client, topic, receiver_queue_size=5)
    assert consumer.receive(5000).data() == payload
    assert consumer.receive(5000).data() == b"after"


def test_incomplete_chunked_message_expires_and_its_chunks_are_acknowledged(broker, client, admin, topic):
    incomplete = chunks("p", 0, b"never finished" * 3, 3)[:2]
    produce_raw(broker, topic, [*incomplete, plain("p", 1, b"regular")])
    consumer = subscribe(client, topic, expire_time_of_incomplete_chunked_message_ms=200,
                         auto_ack_oldest_chunked_message_on_queue_full=True)
    regular = consumer.receive(5000)
    assert regular.data() == b"regular"
    consumer.acknowledge(regular)
    assert wait_for_backlog(admin, topic, 0) == 0  # the expiry timer acknowledged both chunks


def test_queue_full_with_auto_ack_drops_the_oldest_message_and_delivers_the_other(broker, client, admin,
                                                                                 topic):
    m1 = chunks("producer-1", 0, b"a" * 30, 3)
    m2 = chunks("producer-2", 0, b"b" * 30, 3)
    produce_raw(broker, topic, [m1[0], m2[0], m1[1], m2[1], m1[2], m2[2]])
    consumer = subscribe(client, topic, max_pending_chunked_message=1,
                         auto_ack_oldest_chunked_message_on_queue_full=True)
    only = consumer.receive(5000)
    assert only.data() == b"b" * 30
    consumer.acknowledge(only)
    # m1's first chunk was acknowledged when dropped, its later chunks as they arrived: m1 is never
    # delivered, and nothing is left in the backlog
    assert wait_for_backlog(admin, topic, 0) == 0
    with pytest.raises(Timeout):
        consumer.receive(300)


def test_queue_full_without_auto_ack_redelivers_the_oldest_message_later(broker, client, admin, topic):
    m1 = chunks("producer-1", 0, b"a" * 30, 3)
    m2 = chunks("producer-2", 0, b"b" * 30, 3)
    produce_raw(broker, topic, [m1[0], m2[0], m1[1], m2[1], m1[2], m2[2]])
    consumer = subscribe(client, topic, max_pending_chunked_message=1,
                         negative_ack_redelivery_delay_ms=100)
    received = []
    deadline = time.monotonic() + 10
    while b"a" * 30 not in received and time.monotonic() < deadline:
        msg = consumer.receive(5000)
        received.append(msg.data())
        consumer.acknowledge(msg)
    assert received[0] == b"b" * 30 and received[-1] == b"a" * 30
    assert wait_for_backlog(admin, topic, 0) == 0


# --- real chunking producers ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def small_broker(tmp_path_factory):
    with Broker(data_dir=tmp_path_factory.mktemp("small"), port=0, maxMessageSize=1024) as running:
        yield running


@pytest.mark.transports
@pytest.mark.parametrize("compression", [CompressionType.NONE, CompressionType.LZ4])
def test_message_sent_by_a_chunking_producer_round_trips(small_broker, topic, compression, transport):
    payload = b"".join(b"record %06d;" % i for i in range(2000))  # 26 KB, 26+ chunks of <= 1 KB
    with Client(small_broker.service_url, transport=transport) as client:
        consumer = subscribe(client, topic, receiver_queue_size=10)
        producer = client.create_producer(topic, chunking_enabled=True, batching_enabled=False,
                                          compression_type=compression)
        msg_id = producer.send(payload, properties={"kind": "big"})
        msg = consumer.receive(10_000)
        assert msg.data() == payload and msg.properties() == {"kind": "big"}
        assert msg.message_id() == msg_id
        consumer.acknowledge(msg)  # every chunk: nothing is left in the backlog
        from connector import Admin
        with Admin(small_broker.service_url) as admin:
            assert wait_for_backlog(admin, topic, 0) == 0


@pytest.mark.transports
def test_messages_of_two_chunking_producers_sent_at_once_are_each_reassembled(small_broker, topic, transport):
    payloads = {name: name.encode() * 3000 for name in ("first", "second")}
    with Client(small_broker.service_url, transport=transport) as client:
        consumer = subscribe(client, topic)
        producers = {name: client.create_producer(topic, producer_name=name, chunking_enabled=True,
                                                  batching_enabled=False) for name in payloads}
        for name, producer in producers.items():
            producer.send_async(payloads[name], None)
        for producer in producers.values():
            producer.flush()
        received = {m.producer_name(): m.data() for m in (consumer.receive(10_000) for _ in payloads)}
    assert received == payloads
