"""Chunked-message reassembly (ChunkedMessageTracker, then the consumer around it) and undecodable entries,
with a fake clock and fake streams: no broker."""
from __future__ import annotations

import threading

import google_crc32c
import lz4.block
import pytest

from broker_core.errors import MessageDecodeError
from broker_core.protocol import broker_pb2, codec, pulsar_api_pb2
from broker_core.types import MessageId
from connector.client import chunk_assembly
from connector.client.chunking import Chunk, ChunkedMessageTracker
from connector.client.consumer import Consumer
from connector.client.enums import ConsumerType
from connector.client.message import DecodeFailure
from connector.client.partition_consumer import PartitionConsumer

PUBLISHED = 1_000_000


class FakeClock:
    def __init__(self, now: int = PUBLISHED) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


def _tracker(clock=None, **options):
    return ChunkedMessageTracker(now_ms=clock or FakeClock(), **options)


def _chunks(uuid, payload, offsets, size=3, publish_time=PUBLISHED):
    """The chunks of ``payload`` split every ``size`` bytes, stored at ``offsets``."""
    parts = [payload[i:i + size] for i in range(0, len(payload), size)]
    assert len(parts) == len(offsets)
    return [Chunk(uuid, i, len(parts), len(payload), offset, publish_time, part)
            for i, (offset, part) in enumerate(zip(offsets, parts))]


def test_consecutive_chunks_become_one_message_when_the_last_arrives():
    tracker = _tracker()
    c1, c2, c3 = _chunks("p-0", b"abcdefgh", [10, 11, 12])
    assert tracker.add(c1) == (None, [], [])
    assert tracker.add(c2) == (None, [], [])
    assert len(tracker) == 1 and tracker.pending_offsets() == [10, 11]
    done, ack, redeliver = tracker.add(c3)
    assert done.payload == b"abcdefgh" and done.offsets == (10, 11, 12) and done.error is None
    assert (ack, redeliver) == ([], [])
    assert len(tracker) == 0


def test_interwoven_chunks_of_two_producers_are_reassembled_per_message():
    # The seed's example: M1-C1, M2-C1, M1-C2, M2-C2, M1-C3, M2-C3 at offsets 0..5.
    tracker = _tracker()
    m1 = _chunks("producer-1-0", b"M1:one-two", [0, 2, 4], size=4)
    m2 = _chunks("producer-2-0", b"M2:three-four", [1, 3, 5], size=5)
    completed = [tracker.add(c).completed for c in (m1[0], m2[0], m1[1], m2[1], m1[2], m2[2])]
    assert completed[:4] == [None] * 4
    assert (completed[4].uuid, completed[4].payload, completed[4].offsets) == \
        ("producer-1-0", b"M1:one-two", (0, 2, 4))
    assert (completed[5].uuid, completed[5].payload, completed[5].offsets) == \
        ("producer-2-0", b"M2:three-four", (1, 3, 5))


def test_a_message_of_one_chunk_completes_at_once():
    (only,) = _chunks("p-7", b"abc", [4])
    assert _tracker().add(only).completed.payload == b"abc"


def test_queue_full_with_auto_ack_acknowledges_the_oldest_incomplete_message():
    tracker = _tracker(max_pending_chunked_message=2, auto_ack_oldest_chunked_message_on_queue_full=True)
    a, b, c = (_chunks(u, b"xxxxxx", offsets) for u, offsets in
               (("a", [0, 3]), ("b", [1, 4]), ("c", [2, 5])))
    tracker.add(a[0])
    tracker.add(b[0])
    assert tracker.add(c[0]) == (None, [0], [])
    assert len(tracker) == 2
    assert tracker.add(a[1]) == (None, [3], [])  # a's later chunk shares its fate
    assert tracker.add(b[1]).completed.offsets == (1, 4)


def test_queue_full_without_auto_ack_asks_for_the_oldest_message_to_be_redelivered():
    tracker = _tracker(max_pending_chunked_message=1)
    a = _chunks("a", b"xxxxxx", [0, 2])
    b = _chunks("b", b"yyyyyy", [1, 3])
    tracker.add(a[0])
    assert tracker.add(b[0]) == (None, [], [0])
    assert tracker.pending_offsets() == [1]
    assert tracker.add(a[1]) == (None, [], [2])  # a's later chunk: redelivered too
    # the redelivery brings a's chunks again; once b is done they fit
    assert tracker.add(b[1]).completed.payload == b"yyyyyy"
    tracker.add(a[0])
    assert tracker.add(a[1]).completed.payload == b"xxxxxx"


def test_incomplete_message_expires_and_its_chunks_are_acknowledged():
    clock = FakeClock()
    tracker = _tracker(clock, expire_time_of_incomplete_chunked_message_ms=200)
    a = _chunks("a", b"xxxxxxxxx", [0, 1, 2])
    tracker.add(a[0])
    tracker.add(a[1])
    assert tracker.next_expiry_ms() == PUBLISHED + 200
    clock.now += 199
    assert tracker.expire() == (None, [], [])
    clock.now += 1
    assert tracker.expire() == (None, [0, 1], [])
    assert len(tracker) == 0 and tracker.next_expiry_ms() is None
    assert tracker.add(a[2]) == (None, [2], [])  # the last chunk, late: acknowledged at once


def test_expiry_acknowledges_even_without_auto_ack_and_is_checked_on_each_chunk():
    clock = FakeClock()
    tracker = _tracker(clock, expire_time_of_incomplete_chunked_message_ms=200,
                       auto_ack_oldest_chunked_message_on_queue_full=False)
    old = _chunks("old", b"xxxxxx", [0, 5])
    young = _chunks("young", b"yyyyyy", [7, 8], publish_time=PUBLISHED + 300)
    tracker.add(old[0])
    clock.now += 300
    outcome = tracker.add(young[0])
    assert outcome == (None, [0], [])
    assert tracker.pending_offsets() == [7]


def test_only_the_latest_given_up_messages_are_remembered(monkeypatch):
    from connector.client import chunking

    monkeypatch.setattr(chunking, "GIVEN_UP_MEMORY", 2)
    tracker = _tracker(max_pending_chunked_message=1, auto_ack_oldest_chunked_message_on_queue_full=True)
    messages = [_chunks(u, b"xxxxxx", [i, 10 + i]) for i, u in enumerate("abcd")]
    for first, _ in messages:
        tracker.add(first)  # each drops the one before: a, b, c given up
    assert tracker.add(messages[0][1]) == (None, [], [10])  # a forgotten: an unexpected chunk
    assert tracker.add(messages[2][1]) == (None, [12], [])  # c remembered


def test_zero_expiry_never_expires():
    clock = FakeClock()
    tracker = _tracker(clock, expire_time_of_incomplete_chunked_message_ms=0)
    tracker.add(_chunks("a", b"xxxxxx", [0, 1])[0])
    clock.now += 10**9
    assert tracker.expire() == (None, [], []) and tracker.next_expiry_ms() is None
    assert len(tracker) == 1


def test_out_of_order_chunk_drops_the_buffer_and_redelivers_while_the_message_is_young():
    clock = FakeClock()
    tracker = _tracker(clock, expire_time_of_incomplete_chunked_message_ms=1000)
    c = _chunks("a", b"xxxxxxxxx", [0, 1, 2])
    tracker.add(c[0])
    assert tracker.add(c[2]) == (None, [], [0, 2])  # chunk 1 is missing
    assert len(tracker) == 0


def test_out_of_order_chunk_of_an_old_message_is_acknowledged():
    clock = FakeClock(PUBLISHED + 1000)
    tracker = _tracker(clock, expire_time_of_incomplete_chunked_message_ms=1000)
    c = _chunks("a", b"xxxxxxxxx", [0, 1, 2])
    tracker.add(c[0])
    assert tracker.add(c[2]) == (None, [0, 2], [])


def test_chunk_without_its_first_chunk_is_dropped():
    tracker = _tracker()
    c = _chunks("a", b"xxxxxx", [4, 5])
    assert tracker.add(c[1]) == (None, [], [5])
    assert len(tracker) == 0


def test_chunk_id_beyond_the_chunk_count_is_dropped():
    tracker = _tracker()
    bad = Chunk("a", 3, 2, 6, 9, PUBLISHED, b"xxx")
    assert tracker.add(bad) == (None, [], [9])


def test_redelivered_first_chunk_restarts_the_message_without_acks():
    tracker = _tracker()
    c = _chunks("a", b"abcdef", [0, 1])
    tracker.add(c[0])
    assert tracker.add(c[0]) == (None, [], [])  # the same entry again (a redelivery)
    assert tracker.add(c[1]).completed.payload == b"abcdef"


def test_duplicate_first_chunk_at_another_offset_acknowledges_the_abandoned_copy():
    tracker = _tracker()
    first_try = _chunks("a", b"abcdef", [0, 1])
    second_try = _chunks("a", b"abcdef", [2, 3])
    tracker.add(first_try[0])
    assert tracker.add(second_try[0]) == (None, [0], [])
    assert tracker.add(second_try[1]).completed.offsets == (2, 3)


def test_duplicate_first_chunk_after_completion_starts_a_buffer_that_expires():
    clock = FakeClock()
    tracker = _tracker(clock, expire_time_of_incomplete_chunked_message_ms=100)
    c = _chunks("a", b"abcdef", [0, 1])
    tracker.add(c[0])
    assert tracker.add(c[1]).completed is not None
    duplicate = c[0]._replace(offset=2)
    assert tracker.add(duplicate) == (None, [], [])
    clock.now += 100
    assert tracker.expire() == (None, [2], [])


def test_chunk_received_twice_in_a_row_is_ignored():
    tracker = _tracker()
    c = _chunks("a", b"abcdefghi", [0, 1, 2])
    tracker.add(c[0])
    tracker.add(c[1])
    assert tracker.add(c[1]) == (None, [], [])  # redelivered copy: nothing to ack
    assert tracker.add(c[1]._replace(offset=7)) == (None, [7], [])  # a stored duplicate
    assert tracker.add(c[2]).completed.payload == b"abcdefghi"


def test_size_disagreeing_with_total_chunk_msg_size_is_reported_on_completion():
    tracker = _tracker()
    c = [Chunk("a", i, 2, 10, i, PUBLISHED, b"abc") for i in range(2)]
    tracker.add(c[0])
    done = tracker.add(c[1]).completed
    assert done.offsets == (0, 1)
    assert "6 bytes" in done.error and "10" in done.error


def test_restarted_message_becomes_the_youngest_for_the_queue_limit():
    tracker = _tracker(max_pending_chunked_message=2, auto_ack_oldest_chunked_message_on_queue_full=True)
    a = _chunks("a", b"xxxxxx", [0, 3])
    b = _chunks("b", b"yyyyyy", [1, 4])
    tracker.add(a[0])
    tracker.add(b[0])
    tracker.add(a[0])  # a redelivered: now younger than b
    assert tracker.add(Chunk("c", 0, 2, 6, 5, PUBLISHED, b"zzz")).ack == [1]
    assert tracker.pending_offsets() == [0, 5]


def test_clear_forgets_every_buffer():
    tracker = _tracker()
    tracker.add(_chunks("a", b"xxxxxx", [0, 1])[0])
    assert tracker.clear() == [0]
    assert len(tracker) == 0


@pytest.mark.parametrize("option, value", [("max_pending_chunked_message", 0),
                                           ("expire_time_of_incomplete_chunked_message_ms", -1)])
def test_bad_options_are_rejected_by_name(option, value):
    with pytest.raises(ValueError, match=option):
        _tracker(**{option: value})


# --- the consumer side: PartitionConsumer + Consumer wired to fakes --------------------------------------
TOPIC = "persistent://public/default/chunks"


class FakeStream:
    def __init__(self):
        self.sent = []

    def send(self, request):
        self.sent.append(request)


class FakeTimer:
    def __init__(self):
        self.calls = []

    def call_later(self, delay, fn, *args):
        self.calls.append((delay, fn, args))


class FakeClient:
    def __init__(self, timer):
        self._timer = timer


def _consumer(queue_size=1000, **options):
    """A Consumer with one PartitionConsumer, both wired to fakes (no stream, no broker)."""
    timer = FakeTimer()
    consumer = Consumer(FakeClient(timer), TOPIC, "sub", ConsumerType.Exclusive, None, 0, **options)
    sub = PartitionConsumer.__new__(PartitionConsumer)
    sub.owner, sub.topic, sub.partition = consumer, TOPIC, -1
    sub._timer, sub._stream = timer, FakeStream()
    sub._queue_size, sub._refill_every = queue_size, max(1, queue_size // 2)
    sub._lock = threading.Lock()
    sub._acks, sub._seeking, sub.max_received_offset, sub.closed, sub.error = [], 0, -1, False, None
    sub._reset_permits()
    consumer._attach([sub])
    return consumer, sub


def _entry(offset, payload, **fields):
    fields.setdefault("producer_name", "p")
    fields.setdefault("sequence_id", 0)
    fields.setdefault("publish_time", int(chunk_assembly._now_ms()))
    meta = pulsar_api_pb2.MessageMetadata(**fields)
    data = codec.broker_entry_prefix(1, offset) + codec.encode_entry(meta, payload)
    return broker_pb2.DeliveredEntry(data=data, ledger_id=0, entry_id=offset, num_messages=1)


def _chunk_entries(producer, seq, payload, offsets, **fields):
    size = -(-len(payload) // len(offsets))
    parts = [payload[i:i + size] for i in range(0, len(payload), size)]
    return [_entry(offset, part, producer_name=producer, sequence_id=seq, uuid=f"{producer}-{seq}",
                   chunk_id=i, num_chunks_from_msg=len(parts), total_chunk_msg_size=len(payload), **fields)
            for i, (offset, part) in enumerate(zip(offsets, parts))]


def _deliver(sub, *entries):
    sub._on_response(broker_pb2.ConsumeResponse(deliveries=broker_pb2.Deliveries(entries=list(entries))))


def _sent(sub, kind):
    return [getattr(r, kind) for r in sub._stream.sent if r.WhichOneof("request") == kind]


def _acked_offsets(sub):
    sub.flush_acks()
    return sorted(o for ack in _sent(sub, "ack") for r in ack.ranges for o in range(r.start, r.end))


def test_consumer_reassembles_interwoven_chunks_into_messages_with_the_last_chunk_s_id():
    consumer, sub = _consumer()
    m1 = _chunk_entries("producer-1", 0, b"first message", [0, 2, 4], properties=[
        pulsar_api_pb2.KeyValue(key="k", value="v")], partition_key="key-1", event_time=77)
    m2 = _chunk_entries("producer-2", 0, b"second one", [1, 3, 5])
    _deliver(sub, m1[0], m2[0], m1[1], m2[1])
    assert len(consumer._queue) == 0
    _deliver(sub, m1[2], m2[2])
    first, second = consumer.receive(0), consumer.receive(0)
    assert (first.data(), second.data()) == (b"first message", b"second one")
    assert first.properties() == {"k": "v"} and first.partition_key() == "key-1"
    assert first.event_timestamp() == 77 and first.producer_name() == "producer-1"
    assert first.message_id() == MessageId(0, 4, -1, -1) and first.offset() == 4
    assert first._entry.chunk_offsets == (0, 2, 4)


def test_acknowledging_a_chunked_message_or_its_id_acknowledges_every_chunk():
    consumer, sub = _consumer()
    _deliver(sub, *_chunk_entries("a", 0, b"x" * 30, [0, 1, 2]), *_chunk_entries("a", 1, b"y" * 30, [3, 4]))
    first, second = consumer.receive(0), consumer.receive(0)
    consumer.acknowledge(first)
    consumer.acknowledge(MessageId(0, second.message_id().entry_id))
    assert _acked_offsets(sub) == [0, 1, 2, 3, 4]


def test_cumulative_ack_of_a_chunked_message_goes_up_to_its_last_chunk():
    consumer, sub = _consumer()
    _deliver(sub, *_chunk_entries("a", 0, b"x" * 30, [0, 1, 2]))
    consumer.acknowledge_cumulative(consumer.receive(0))
    assert [a.offset for a in _sent(sub, "ack")] == [2]
    assert sub._chunk_acks == {}


def test_compressed_chunked_message_is_decompressed_after_reassembly():
    consumer, sub = _consumer()
    original = b"compressible " * 500
    compressed = lz4.block.compress(original, store_size=False)
    _deliver(sub, *_chunk_entries("a", 0, compressed, [0, 1, 2], compression=pulsar_api_pb2.LZ4,
                                  uncompressed_size=len(original)))
    assert consumer.receive(0).data() == original


def test_message_of_more_chunks_than_the_receiver_queue_arrives_without_stalling():
    consumer, sub = _consumer(queue_size=10)
    entries = _chunk_entries("big", 0, bytes(range(200)), list(range(20)))
    broker_permits, delivered = 10, 0
    while delivered < len(entries):
        assert broker_permits > 0, f"stalled after {delivered} chunks"
        _deliver(sub, entries[delivered])  # the broker sends one chunk per response while it has permits
        delivered += 1
        broker_permits -= 1
        broker_permits += sum(f.permits for f in _sent(sub, "flow"))
        sub._stream.sent.clear()
    assert consumer.receive(0).data() == bytes(range(200))


def test_queue_full_without_auto_ack_schedules_a_redelivery():
    consumer, sub = _consumer(max_pending_chunked_message=1)
    a = _chunk_entries("a", 0, b"x" * 10, [0, 2])
    b = _chunk_entries("b", 0, b"y" * 10, [1, 3])
    _deliver(sub, a[0], b[0])
    assert [fn.__name__ for _, fn, _ in sub._timer.calls] == ["_check_expiry", "_redeliver_after_nack"]
    assert _acked_offsets(sub) == []


def test_queue_full_with_auto_ack_acknowledges_the_dropped_chunks():
    consumer, sub = _consumer(max_pending_chunked_message=1,
                              auto_ack_oldest_chunked_message_on_queue_full=True)
    a = _chunk_entries("a", 0, b"x" * 10, [0, 2])
    b = _chunk_entries("b", 0, b"y" * 10, [1, 3])
    _deliver(sub, a[0], b[0], b[1])
    assert consumer.receive(0).data() == b"y" * 10
    assert _acked_offsets(sub) == [0]


def test_incomplete_message_expires_on_the_timer(monkeypatch):
    now = [1_000_000]
    monkeypatch.setattr(chunk_assembly, "_now_ms", lambda: now[0])
    consumer, sub = _consumer(expire_time_of_incomplete_chunked_message_ms=200)
    _deliver(sub, _chunk_entries("a", 0, b"x" * 10, [0, 1, 2])[0])
    (delay, check, args), = [c for c in sub._timer.calls if c[1].__name__ == "_check_expiry"]
    assert delay == pytest.approx(0.201)
    now[0] += 201
    check(*args)
    assert _acked_offsets(sub) == [0]
    assert len(sub._chunks) == 0


def _corrupt_lz4_entry(offset):
    return _entry(offset, b"\xff" * 40, compression=pulsar_api_pb2.LZ4, uncompressed_size=1000)


def test_undecodable_entry_raises_once_in_its_place_and_is_acknowledged():
    consumer, sub = _consumer()
    _deliver(sub, _entry(0, b"good-1"), _corrupt_lz4_entry(1), _entry(2, b"good-2"))
    assert consumer.receive(0).data() == b"good-1"
    with pytest.raises(MessageDecodeError) as info:
        consumer.receive(0)
    error = info.value
    assert error.topic == TOPIC and error.offsets == (1,) and error.message_id == MessageId(0, 1)
    assert "LZ4" in error.reason and "acknowledged" in str(error)
    assert consumer.receive(0).data() == b"good-2"
    assert _acked_offsets(sub) == [1]


def test_entry_with_an_unknown_compression_type_raises_a_decode_error_naming_it():
    consumer, sub = _consumer()
    meta = pulsar_api_pb2.MessageMetadata(producer_name="p", sequence_id=0, publish_time=1,
                                          uncompressed_size=100)
    raw_meta = meta.SerializeToString() + b"\x40\x09"  # field 8 (compression) = 9, unknown to this client
    body = codec.U32.pack(len(raw_meta)) + raw_meta + b"z" * 10
    data = codec.broker_entry_prefix(1, 0) + codec._MAGIC_AND_CRC.pack(codec.MAGIC_CRC32C,
                                                                        google_crc32c.value(body)) + body
    _deliver(sub, broker_pb2.DeliveredEntry(data=data, entry_id=0, num_messages=1))
    with pytest.raises(MessageDecodeError, match="unknown compression type 9"):
        consumer.receive(0)


def test_chunks_whose_sizes_disagree_with_the_total_raise_a_decode_error_for_the_message():
    consumer, sub = _consumer()
    chunks = [_entry(i, b"abc", uuid="p-0", chunk_id=i, num_chunks_from_msg=2, total_chunk_msg_size=99)
              for i in range(2)]
    _deliver(sub, *chunks)
    with pytest.raises(MessageDecodeError, match="total_chunk_msg_size") as info:
        consumer.receive(0)
    assert info.value.offsets == (0, 1)
    assert _acked_offsets(sub) == [0, 1]


def test_undecodable_batch_returns_the_permits_of_its_other_messages():
    consumer, sub = _consumer(queue_size=4)
    meta = pulsar_api_pb2.MessageMetadata(producer_name="p", sequence_id=0, publish_time=1,
                                          num_messages_in_batch=3, compression=pulsar_api_pb2.ZSTD,
                                          uncompressed_size=50)
    data = codec.broker_entry_prefix(1, 2) + codec.encode_entry(meta, b"not zstd at all")
    _deliver(sub, broker_pb2.DeliveredEntry(data=data, entry_id=0, num_messages=3))
    assert [f.permits for f in _sent(sub, "flow")] == [2]
    with pytest.raises(MessageDecodeError) as info:
        consumer.receive(0)
    assert info.value.offsets == (0, 1, 2)
    assert sub.max_received_offset == 2


def test_chunk_offsets_of_unacknowledged_messages_are_remembered_up_to_a_limit(monkeypatch):
    monkeypatch.setattr(chunk_assembly, "CHUNKED_IDS_MAX", 2)
    consumer, sub = _consumer()
    for seq in range(3):
        _deliver(sub, *_chunk_entries("a", seq, b"x" * 10, [2 * seq, 2 * seq + 1]))
    assert sorted(sub._chunk_acks) == [3, 5]  # the oldest message's chunks were forgotten
    for _ in range(3):
        consumer.acknowledge(consumer.receive(0))
    assert _acked_offsets(sub) == [1, 2, 3, 4, 5]


def test_decode_error_names_the_offsets_compactly():
    _, sub = _consumer()
    cases = {(5,): "offset 5", (10, 11, 12): "offsets 10..12", (1, 3, 5): "offsets 1, 3, 5",
             tuple(range(0, 40, 2)): "20 offsets from 0 to 38"}
    for offsets, described in cases.items():
        error = DecodeFailure.of(sub, 0, offsets[-1], offsets, "bad").error
        assert f"{TOPIC} ({described}): bad." in str(error)
