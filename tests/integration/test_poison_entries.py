"""Poison entries (a decompression bomb, a batch claiming 2**31-1 messages in one byte) never kill a consumer:
each reaches it as one MessageDecodeError, and the messages after it still arrive.

Two ways in: entries the broker accepts (their claims are plausible, their bytes are not), and entries written
straight into a topic's log before the broker starts, as data stored before the broker validated entries."""
from __future__ import annotations

import time
import tracemalloc

import grpc
import pytest

from broker_core import Broker
from broker_core.protocol import broker_pb2 as pb
from broker_core.protocol import broker_pb2_grpc, codec
from broker_core.storage.log import ManagedLog
from broker_core.storage.paths import topic_dir
from broker_core.types import TopicName
from connector import Admin, Client, InitialPosition, MessageDecodeError, MessageId

from tests.poison import (
    INT32_MAX, MiB, huge_count_entry, plain, zlib_bomb_entry, zstd_lying_frame_entry)
from tests.waiting import wait_for_backlog


def produce_raw(address, topic, entries):
    """Store entry bytes in this order through the Produce stream; their offsets."""
    sends = [pb.SendEntry(sequence_id=i, highest_sequence_id=i, data=data) for i, data in enumerate(entries)]
    requests = [pb.ProduceRequest(open=pb.ProducerOpen(topic=topic, producer_name="raw")),
                pb.ProduceRequest(send=pb.SendBatch(entries=sends))]
    offsets = []
    with grpc.insecure_channel(address, options=[("grpc.max_send_message_length", 64 * MiB)]) as channel:
        responses = broker_pb2_grpc.PulsarLikeStub(channel).Produce(iter(requests), timeout=30)
        assert next(responses).WhichOneof("response") == "opened"
        while len(offsets) < len(entries):
            response = next(responses)
            assert response.WhichOneof("response") == "receipts", response
            offsets.extend(r.entry_id for r in response.receipts.receipts)
        responses.cancel()
    return offsets


def subscribe(client, topic):
    return client.subscribe(topic, "sub", initial_position=InitialPosition.Earliest)


def traced_peak(call):
    """(what ``call()`` returned or raised, peak traced memory of the whole process meanwhile)."""
    tracemalloc.start()
    try:
        try:
            result = call()
        except MessageDecodeError as exc:
            result = exc
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


# --- entries the broker accepts -------------------------------------------------------------------------
@pytest.mark.parametrize("poison", [lambda: zlib_bomb_entry(1, claims=MiB),
                                    lambda: zstd_lying_frame_entry(1, claims=1000)],
                         ids=["zlib-bomb", "zstd-frame-states-more"])
def test_decompression_bomb_reaches_the_consumer_as_one_decode_error_using_little_memory(
        broker, client, admin, topic, poison):
    offsets = produce_raw(broker.address, topic, [plain(0, b"before"), poison(), plain(2, b"after")])
    consumer = subscribe(client, topic)
    assert consumer.receive(5000).data() == b"before"
    error, peak = traced_peak(lambda: consumer.receive(5000))
    assert isinstance(error, MessageDecodeError) and error.offsets == (offsets[1],)
    assert peak < 100 * 10**6
    after = consumer.receive(5000)
    assert after.data() == b"after"
    consumer.acknowledge_cumulative(after)
    assert wait_for_backlog(admin, topic, "sub", 0) == 0


# --- entries stored before the broker checked them ------------------------------------------------------
@pytest.fixture(scope="module")
def old_data(tmp_path_factory):
    """A data dir whose topic holds: "good-1", a 1-byte entry claiming INT32_MAX messages, "good-2", with the
    last two appended to the topic's log while no broker ran. Yields (data_dir, topic, offsets)."""
    data_dir = tmp_path_factory.mktemp("old-data")
    topic = "persistent://public/default/old-data"
    with Broker(data_dir=data_dir, port=0) as running:
        first = produce_raw(running.address, topic, [plain(0, b"good-1")])
    log = ManagedLog(topic_dir(data_dir / "topics", TopicName.parse(topic)))
    try:
        offsets = list(first)
        for data, count in ((huge_count_entry(1), INT32_MAX), (plain(2, b"good-2"), 1)):
            offset = log.end_offset
            prefix = codec.broker_entry_prefix(int(time.time() * 1000), offset + count - 1)
            log.append(prefix + data, count, int(time.time() * 1000))
            offsets.append(offset)
        log.sync()
    finally:
        log.close()
    return data_dir, topic, offsets


@pytest.fixture(scope="module")
def old_broker(old_data):
    data_dir, _, _ = old_data
    with Broker(data_dir=data_dir, port=0) as running:
        yield running


def test_stored_batch_claiming_int32_max_messages_is_one_decode_error_between_good_messages(old_data,
                                                                                            old_broker):
    _, topic, offsets = old_data
    with Client(old_broker.service_url) as client, Admin(old_broker.service_url) as admin:
        consumer = subscribe(client, topic)
        first = consumer.receive(5000)
        assert first.data() == b"good-1"
        error, peak = traced_peak(lambda: consumer.receive(5000))
        assert isinstance(error, MessageDecodeError) and "claims 2147483647 messages" in error.reason
        assert (error.offsets[0], len(error.offsets)) == (offsets[1], INT32_MAX)
        assert peak < 100 * 10**6
        last = consumer.receive(5000)
        assert last.data() == b"good-2" and last.message_id().entry_id() == offsets[2]
        consumer.acknowledge(first)
        consumer.acknowledge(last)
        # the poison entry's INT32_MAX offsets were acknowledged as one range
        assert wait_for_backlog(admin, topic, "sub", 0) == 0


def test_a_reader_reads_past_a_stored_batch_claiming_int32_max_messages(old_data, old_broker):
    _, topic, offsets = old_data
    with Client(old_broker.service_url) as client:
        reader = client.create_reader(topic, MessageId.earliest)
        assert reader.read_next(5000).data() == b"good-1"
        with pytest.raises(MessageDecodeError):
            reader.read_next(5000)
        assert reader.has_message_available() is True
        assert reader.read_next(5000).data() == b"good-2"
        assert reader.has_message_available() is False
        reader.close()


def test_peek_shows_a_stored_batch_claiming_int32_max_messages_with_its_decode_error(old_data, old_broker):
    _, topic, offsets = old_data
    with Admin(old_broker.service_url) as admin:
        admin.create_subscription(topic, "peek", MessageId.earliest)
        peeked = admin.peek_messages(topic, "peek", 3)
    # the broker counts the poison entry's claimed messages against the 3 asked for: it stops there
    assert [p.data for p in peeked] == [b"good-1", b""]
    assert [p.offset for p in peeked] == offsets[:2]
    assert peeked[1].decode_error and "claims 2147483647 messages" in peeked[1].decode_error
    assert peeked[0].decode_error is None and peeked[1].producer_name == "raw"
