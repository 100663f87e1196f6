"""Consumer flow permits and ack grouping, without a broker (a fake stream records requests)."""
from __future__ import annotations

import threading

import pytest

from broker_core.errors import InvalidMessage
from broker_core.protocol import broker_pb2, codec, pulsar_api_pb2
from connector.client.partition_consumer import PartitionConsumer


class FakeStream:
    def __init__(self):
        self.sent = []

    def send(self, request):
        self.sent.append(request)


class FakeOwner:
    def __init__(self):
        self.delivered = []

    def _deliver(self, messages):
        self.delivered.extend(messages)


class FakeTimer:
    def call_later(self, delay, fn, *args):
        pass


def _consumer(queue_size=10):
    """A PartitionConsumer wired to fakes (its constructor would open a real stream)."""
    sub = PartitionConsumer.__new__(PartitionConsumer)
    sub.owner, sub.topic, sub.partition = FakeOwner(), "persistent://public/default/t", -1
    sub._timer, sub._stream = FakeTimer(), FakeStream()
    sub._queue_size = queue_size
    sub._refill_every = max(1, queue_size // 2)
    sub._lock = threading.Lock()
    sub._acks, sub._seeking, sub.max_received_offset, sub.closed = [], 0, -1, False
    sub._reset_permits()
    return sub


def _flows(sub):
    return [r.flow.permits for r in sub._stream.sent if r.WhichOneof("request") == "flow"]


def test_permits_are_returned_when_half_the_queue_is_taken():
    sub = _consumer(queue_size=10)
    for _ in range(4):
        sub.on_taken()
    assert _flows(sub) == []
    sub.on_taken()
    assert _flows(sub) == [5]
    for _ in range(9):
        sub.on_taken()
    assert _flows(sub) == [5, 5]


def test_permits_are_not_lost_when_many_threads_take_messages():
    sub = _consumer(queue_size=100)

    def take():
        for _ in range(10_000):
            sub.on_taken()

    threads = [threading.Thread(target=take) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(_flows(sub)) == 40_000


def test_permits_restart_after_a_seek():
    sub = _consumer(queue_size=10)
    for _ in range(3):
        sub.on_taken()
    sub._reset_permits()
    for _ in range(5):
        sub.on_taken()
    assert _flows(sub) == [5]


def test_individual_acks_are_coalesced_into_ranges():
    sub = _consumer()
    for offset in [7, 3, 4, 5, 10, 8, 4]:
        sub.ack(offset)
    sub.flush_acks()
    (request,) = sub._stream.sent
    assert request.ack.ack_type == broker_pb2.INDIVIDUAL
    assert [(r.start, r.end) for r in request.ack.ranges] == [(3, 6), (7, 9), (10, 11)]
    sub.flush_acks()
    assert len(sub._stream.sent) == 1  # nothing more to send


def test_cumulative_ack_beyond_what_was_received_is_invalid_and_sends_nothing():
    sub = _consumer()
    sub.max_received_offset = 5
    with pytest.raises(InvalidMessage, match="never received"):
        sub.ack_cumulative(6)
    assert sub._stream.sent == []
    sub.ack_cumulative(5)
    assert sub._stream.sent[-1].ack.offset == 5


def _delivery(payloads, entry_id, ack_set=()):
    meta = pulsar_api_pb2.MessageMetadata(producer_name="p", sequence_id=0, publish_time=1,
                                          num_messages_in_batch=len(payloads))
    data = codec.broker_entry_prefix(1, entry_id + len(payloads) - 1) + \
        codec.encode_entry(meta, codec.encode_batch(payloads))
    return broker_pb2.DeliveredEntry(data=data, entry_id=entry_id, num_messages=len(payloads),
                                     ack_set=list(ack_set))


def test_deliveries_skip_acked_batch_messages_and_return_their_permits():
    sub = _consumer(queue_size=4)
    response = broker_pb2.ConsumeResponse(deliveries=broker_pb2.Deliveries(entries=[
        _delivery([b"a", b"b", b"c", b"d"], 10, ack_set=[0b0101])]))
    sub._on_response(response)
    msgs = sub.owner.delivered
    assert [m.data() for m in msgs] == [b"a", b"c"]
    assert [m.message_id().batch_index for m in msgs] == [0, 2]
    assert [m.offset() for m in msgs] == [10, 12]
    assert _flows(sub) == [2]
    assert sub.max_received_offset == 13


def test_deliveries_during_a_seek_are_dropped():
    sub = _consumer()
    sub._seeking = 1
    sub._on_response(broker_pb2.ConsumeResponse(deliveries=broker_pb2.Deliveries(entries=[
        _delivery([b"a", b"b"], 0)])))
    assert sub.owner.delivered == []


def test_deliveries_of_mixed_batches_keep_each_message_s_key_and_offset():
    sub = _consumer()
    response = broker_pb2.ConsumeResponse(deliveries=broker_pb2.Deliveries(entries=[
        _delivery([b"aa", codec.BatchMessage(b"bb", partition_key="k"), b"c"], 20),
        _delivery([b"x" * 200] * 3, 23)]))
    sub._on_response(response)
    msgs = sub.owner.delivered
    assert [m.data() for m in msgs] == [b"aa", b"bb", b"c"] + [b"x" * 200] * 3
    assert [m.partition_key() for m in msgs] == ["", "k", "", "", "", ""]
    assert [m.offset() for m in msgs] == list(range(20, 26))
    assert msgs[4].message_id() is msgs[4].message_id()
    assert sub.max_received_offset == 25
