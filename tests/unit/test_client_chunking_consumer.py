"""Chunked messages and undecodable entries on a consumer (a real Consumer over fake streams, a fake timer):
reassembly into one message with the last chunk's id, acks of every chunk, permits, expiry, decode errors."""
from __future__ import annotations

import google_crc32c
import lz4.block
import pytest

from broker_core.errors import MessageDecodeError
from broker_core.protocol import codec, pulsar_api_pb2
from connector.client.transport.events import Entry
from connector import MessageId
from connector.client.consumer import chunk_assembly
from connector.client.enums import ConsumerType
from connector.client.message import decode_error
from tests.unit.consumer_fakes import TOPIC, Harness


def _consumer(queue_size=1000, **settings):
    return Harness(ConsumerType.Exclusive, queue_size, settings=settings)


def _entry(offset, payload, **fields):
    fields.setdefault("producer_name", "p")
    fields.setdefault("sequence_id", 0)
    fields.setdefault("publish_time", int(chunk_assembly._now_ms()))
    meta = pulsar_api_pb2.MessageMetadata(**fields)
    data = codec.broker_entry_prefix(1, offset) + codec.encode_entry(meta, payload)
    return Entry(data, 0, offset, 1)


def _chunk_entries(producer, seq, payload, offsets, **fields):
    size = -(-len(payload) // len(offsets))
    parts = [payload[i:i + size] for i in range(0, len(payload), size)]
    return [_entry(offset, part, producer_name=producer, sequence_id=seq, uuid=f"{producer}-{seq}",
                   chunk_id=i, num_chunks_from_msg=len(parts), total_chunk_msg_size=len(payload), **fields)
            for i, (offset, part) in enumerate(zip(offsets, parts))]


def test_consumer_reassembles_interwoven_chunks_into_messages_with_the_last_chunk_s_id():
    h = _consumer()
    m1 = _chunk_entries("producer-1", 0, b"first message", [0, 2, 4], properties=[
        pulsar_api_pb2.KeyValue(key="k", value="v")], partition_key="key-1", event_time=77)
    m2 = _chunk_entries("producer-2", 0, b"second one", [1, 3, 5])
    h.deliver(m1[0], m2[0], m1[1], m2[1])
    assert h.consumer.buffered() == 0
    h.deliver(m1[2], m2[2])
    first, second = h.consumer.receive(0), h.consumer.receive(0)
    assert (first.data(), second.data()) == (b"first message", b"second one")
    assert first.properties() == {"k": "v"} and first.partition_key() == "key-1"
    assert first.event_timestamp() == 77 and first.producer_name() == "producer-1"
    assert first.message_id() == MessageId(-1, 0, 4, -1) and first.offset() == 4
    h.consumer.acknowledge(first)
    assert h.acked() == [0, 2, 4]


def test_acknowledging_a_chunked_message_or_its_id_acknowledges_every_chunk():
    h = _consumer()
    h.deliver(*_chunk_entries("a", 0, b"x" * 30, [0, 1, 2]), *_chunk_entries("a", 1, b"y" * 30, [3, 4]))
    first, second = h.consumer.receive(0), h.consumer.receive(0)
    h.consumer.acknowledge(first)
    h.consumer.acknowledge(MessageId(-1, 0, second.message_id().entry_id()))
    assert h.acked() == [0, 1, 2, 3, 4]


def test_cumulative_ack_of_a_chunked_message_goes_up_to_its_last_chunk():
    h = _consumer()
    h.deliver(*_chunk_entries("a", 0, b"x" * 30, [0, 1, 2]))
    h.consumer.acknowledge_cumulative(h.consumer.receive(0))
    assert [a.offset for a in h.sent("ack")] == [2]
    h.consumer.acknowledge(MessageId(-1, 0, 2))  # its chunks were forgotten: only offset 2 itself
    assert h.acked() == [2]


def test_compressed_chunked_message_is_decompressed_after_reassembly():
    h = _consumer()
    original = b"compressible " * 500
    compressed = lz4.block.compress(original, store_size=False)
    h.deliver(*_chunk_entries("a", 0, compressed, [0, 1, 2], compression=pulsar_api_pb2.LZ4,
                                  uncompressed_size=len(original)))
    assert h.consumer.receive(0).data() == original


def test_message_of_more_chunks_than_the_receiver_queue_arrives_without_stalling():
    h = _consumer(queue_size=10)
    entries = _chunk_entries("big", 0, bytes(range(200)), list(range(20)))
    broker_permits, delivered = 10, 0
    while delivered < len(entries):
        assert broker_permits > 0, f"stalled after {delivered} chunks"
        h.deliver(entries[delivered])  # the broker sends one chunk per response while it has permits
        delivered += 1
        broker_permits -= 1
        broker_permits += sum(f.permits for f in h.sent("flow"))
        h.stream.sent.clear()
    assert h.consumer.receive(0).data() == bytes(range(200))


def test_queue_full_without_auto_ack_schedules_a_redelivery():
    h = _consumer(max_pending_chunked_message=1)
    a = _chunk_entries("a", 0, b"x" * 10, [0, 2])
    b = _chunk_entries("b", 0, b"y" * 10, [1, 3])
    h.deliver(a[0], b[0])
    assert [fn.__name__ for _, fn, _ in h.timer.calls] == ["_check_expiry", "_rewind_later"]
    assert h.acked() == []


def test_queue_full_with_auto_ack_acknowledges_the_dropped_chunks():
    h = _consumer(max_pending_chunked_message=1,
                              auto_ack_oldest_chunked_message_on_queue_full=True)
    a = _chunk_entries("a", 0, b"x" * 10, [0, 2])
    b = _chunk_entries("b", 0, b"y" * 10, [1, 3])
    h.deliver(a[0], b[0], b[1])
    assert h.consumer.receive(0).data() == b"y" * 10
    assert h.acked() == [0]


def test_incomplete_message_expires_on_the_timer(monkeypatch):
    now = [1_000_000]
    monkeypatch.setattr(chunk_assembly, "_now_ms", lambda: now[0])
    h = _consumer(expire_time_of_incomplete_chunked_message_ms=200)
    h.deliver(_chunk_entries("a", 0, b"x" * 10, [0, 1, 2])[0])
    (delay, check, args), = [c for c in h.timer.calls if c[1].__name__ == "_check_expiry"]
    assert delay == pytest.approx(0.201)
    now[0] += 201
    check(*args)
    assert h.acked() == [0]


def _corrupt_lz4_entry(offset):
    return _entry(offset, b"\xff" * 40, compression=pulsar_api_pb2.LZ4, uncompressed_size=1000)


def test_undecodable_entry_raises_once_in_its_place_and_is_acknowledged():
    h = _consumer()
    h.deliver(_entry(0, b"good-1"), _corrupt_lz4_entry(1), _entry(2, b"good-2"))
    assert h.consumer.receive(0).data() == b"good-1"
    with pytest.raises(MessageDecodeError) as info:
        h.consumer.receive(0)
    error = info.value
    assert error.topic == TOPIC and error.offsets == (1,) and error.message_id == MessageId(-1, 0, 1)
    assert "LZ4" in error.reason and "acknowledged" in str(error)
    assert h.consumer.receive(0).data() == b"good-2"
    assert h.acked() == [1]


def test_entry_with_an_unknown_compression_type_raises_a_decode_error_naming_it():
    h = _consumer()
    meta = pulsar_api_pb2.MessageMetadata(producer_name="p", sequence_id=0, publish_time=1,
                                          uncompressed_size=100)
    raw_meta = meta.SerializeToString() + b"\x40\x09"  # field 8 (compression) = 9, unknown to this client
    body = codec.U32.pack(len(raw_meta)) + raw_meta + b"z" * 10
    data = codec.broker_entry_prefix(1, 0) + codec.entries._MAGIC_AND_CRC.pack(codec.MAGIC_CRC32C,
                                                                        google_crc32c.value(body)) + body
    h.deliver(Entry(data, 0, 0, 1))
    with pytest.raises(MessageDecodeError, match="unknown compression type 9"):
        h.consumer.receive(0)


def test_chunks_whose_sizes_disagree_with_the_total_raise_a_decode_error_for_the_message():
    h = _consumer()
    chunks = [_entry(i, b"abc", uuid="p-0", chunk_id=i, num_chunks_from_msg=2, total_chunk_msg_size=99)
              for i in range(2)]
    h.deliver(*chunks)
    with pytest.raises(MessageDecodeError, match="total_chunk_msg_size") as info:
        h.consumer.receive(0)
    assert info.value.offsets == (0, 1)
    assert h.acked() == [0, 1]


def test_undecodable_batch_returns_the_permits_of_its_other_messages():
    h = _consumer(queue_size=4)
    meta = pulsar_api_pb2.MessageMetadata(producer_name="p", sequence_id=0, publish_time=1,
                                          num_messages_in_batch=3, compression=pulsar_api_pb2.ZSTD,
                                          uncompressed_size=50)
    data = codec.broker_entry_prefix(1, 2) + codec.encode_entry(meta, b"not zstd at all")
    h.deliver(Entry(data, 0, 0, 3))
    assert [f.permits for f in h.sent("flow")] == [2]
    with pytest.raises(MessageDecodeError) as info:
        h.consumer.receive(0)
    assert info.value.offsets == (0, 1, 2)
    assert h.sub.max_received_offset == 2


def test_chunk_offsets_of_unacknowledged_messages_are_remembered_up_to_a_limit(monkeypatch):
    monkeypatch.setattr(chunk_assembly, "CHUNKED_IDS_MAX", 2)
    h = _consumer()
    for seq in range(3):
        h.deliver(*_chunk_entries("a", seq, b"x" * 10, [2 * seq, 2 * seq + 1]))
    for _ in range(3):
        h.consumer.acknowledge(h.consumer.receive(0))
    assert h.acked() == [1, 2, 3, 4, 5]


def test_decode_error_names_the_offsets_compactly():
    cases = {(5,): "offset 5", (10, 11, 12): "offsets 10..12", (1, 3, 5): "offsets 1, 3, 5",
             tuple(range(0, 40, 2)): "20 offsets from 0 to 38"}
    for offsets, described in cases.items():
        error = decode_error(MessageId.of(0, offsets[-1], -1, topic=TOPIC), TOPIC, offsets, "bad")
        assert f"{TOPIC} ({described}): bad." in str(error)
