"""Chunking on the producer side: how a large message is split, what each chunk carries, and how the
send completes (last chunk's receipt, first chunk error, one place in the pending queue)."""
from __future__ import annotations

import os
import threading

import pytest

from broker_core import errors
from broker_core.protocol import codec
from broker_core.protocol.compression import decompress_payload
from broker_core.protocol.pulsar_api_pb2 import LZ4, NONE
from connector import Result
from connector.client.transport.events import SendFailed
from connector.client.producer.chunking import build_entries, chunk_payload_size, message_metadata
from tests.unit import producer_fakes as fakes

MAX = 1000


def _meta(**overrides):
    values = dict(producer_name="prod", sequence_id=42, publish_time_ms=1234, compression=NONE,
                  uncompressed_size=0, properties={"a": "1"}, partition_key="key", ordering_key=b"ok",
                  event_timestamp=77, deliver_at=None)
    values.update(overrides)
    return message_metadata(**values)


def _decoded(datas):
    return [(meta, bytes(payload)) for meta, payload in (codec.decode_entry(d) for d in datas)]


def test_a_large_payload_is_split_into_chunks_that_concatenate_to_it():
    payload = os.urandom(5000)
    chunks = _decoded(build_entries(_meta(uncompressed_size=5000), payload, MAX))
    step = chunk_payload_size(_meta(), 5000, MAX)
    assert len(chunks) == -(-5000 // step) == 6
    assert [len(p) for _, p in chunks] == [step] * 5 + [5000 - 5 * step]
    assert b"".join(p for _, p in chunks) == payload


def test_every_chunk_stays_within_max_message_size_with_its_metadata():
    for size in (1001, 2000, 9999, 150_000):
        for meta, payload in _decoded(build_entries(_meta(), os.urandom(size), MAX)):
            assert meta.ByteSize() + len(payload) <= MAX


def test_the_chunk_size_is_max_message_size_minus_the_largest_chunk_metadata():
    meta = _meta()
    probe = _meta()
    probe.uuid = "prod-42"
    probe.chunk_id = probe.num_chunks_from_msg = probe.total_chunk_msg_size = 5000
    assert chunk_payload_size(meta, 5000, MAX) == MAX - probe.ByteSize()
    assert not meta.HasField("uuid")  # the probe is a copy


def test_every_chunk_carries_the_message_fields_and_its_chunk_fields():
    chunks = _decoded(build_entries(_meta(compression=LZ4, uncompressed_size=9000,
                                          deliver_at=5555), os.urandom(3000), MAX))
    n = len(chunks)
    for chunk_id, (meta, _) in enumerate(chunks):
        assert (meta.producer_name, meta.sequence_id, meta.publish_time) == ("prod", 42, 1234)
        assert (meta.uuid, meta.chunk_id, meta.num_chunks_from_msg, meta.total_chunk_msg_size) == \
            ("prod-42", chunk_id, n, 3000)
        assert (meta.compression, meta.uncompressed_size) == (LZ4, 9000)
        assert {kv.key: kv.value for kv in meta.properties} == {"a": "1"}
        assert (meta.partition_key, meta.ordering_key, meta.event_time, meta.deliver_at_time) == \
            ("key", b"ok", 77, 5555)
        assert not meta.HasField("num_messages_in_batch")  # a chunk is never a batch


def test_a_payload_that_fits_is_one_plain_entry():
    (meta, payload), = _decoded(build_entries(_meta(), b"x" * MAX, MAX))
    assert payload == b"x" * MAX and not meta.HasField("uuid") and not meta.HasField("chunk_id")


def test_metadata_that_leaves_no_room_for_a_chunk_is_message_too_big():
    with pytest.raises(errors.MessageTooBig, match="no room for a chunk"):
        build_entries(_meta(properties={"p": "v" * MAX}), os.urandom(2 * MAX), MAX)


# --- the chunking producer ------------------------------------------------------------------------------
def _chunking_producer(monkeypatch, **overrides):
    overrides.setdefault("batching_enabled", False)
    producer, (part,) = fakes.make_producer(monkeypatch, max_message_size=MAX, chunking_enabled=True,
                                            **overrides)
    return producer, part


def _receipts(part, entries, first_entry_id=10):
    for n, entry in enumerate(entries):
        fakes.respond(part, fakes.receipt(entry, entry_id=first_entry_id + n))


def test_a_chunking_producer_sends_a_large_message_as_chunks_of_one_sequence_id(monkeypatch):
    producer, part = _chunking_producer(monkeypatch)
    payload = os.urandom(3500)
    producer.send_async(payload, None, properties={"k": "v"})
    producer.send_async(b"small", None)
    entries = fakes.sent_entries(part)
    chunks = _decoded([e.data for e in entries[:-1]])
    assert len(chunks) == 4 and all(e.num_messages == 1 for e in entries)
    assert {(e.sequence_id, e.highest_sequence_id) for e in entries[:-1]} == {(0, 0)}
    assert b"".join(p for _, p in chunks) == payload
    assert [m.chunk_id for m, _ in chunks] == [0, 1, 2, 3]
    assert {m.uuid for m, _ in chunks} == {"prod-0"}
    last_meta, last_payload = _decoded([entries[-1].data])[0]
    assert last_payload == b"small" and last_meta.sequence_id == 1 and not last_meta.HasField("uuid")


def test_compression_applies_to_the_whole_message_before_the_split(monkeypatch):
    producer, part = _chunking_producer(monkeypatch, compression=LZ4)
    payload = b"".join(b"%08d" % i for i in range(2000))  # 16,000 compressible bytes
    producer.send_async(payload, None)
    chunks = _decoded([e.data for e in fakes.sent_entries(part)])
    assert len(chunks) > 1
    whole = b"".join(p for _, p in chunks)
    assert {(m.compression, m.uncompressed_size, m.total_chunk_msg_size) for m, _ in chunks} == \
        {(LZ4, len(payload), len(whole))}
    assert decompress_payload(LZ4, whole, len(payload)) == payload


def test_a_large_message_that_compresses_below_the_limit_is_one_entry(monkeypatch):
    producer, part = _chunking_producer(monkeypatch, compression=LZ4)
    producer.send_async(b"a" * 5000, None)
    (entry,) = fakes.sent_entries(part)
    meta, payload = codec.decode_entry(entry.data)
    assert not meta.HasField("uuid") and meta.compression == LZ4 and meta.uncompressed_size == 5000
    assert decompress_payload(LZ4, payload, 5000) == b"a" * 5000


def test_the_send_completes_with_the_last_chunk_receipt_and_its_id(monkeypatch):
    producer, part = _chunking_producer(monkeypatch)
    got = []
    producer.send_async(os.urandom(2500), lambda result, mid: got.append((result, mid)))
    entries = fakes.sent_entries(part)
    assert len(entries) == 3
    _receipts(part, entries[:2])
    assert got == [] and part._pending_messages == 1
    _receipts(part, entries[2:], first_entry_id=12)
    (result, mid), = got
    assert result == Result.Ok
    assert (mid.ledger_id(), mid.entry_id(), mid.partition(), mid.batch_index()) == (7, 12, -1, -1)
    assert part._pending_messages == 0 and not fakes.pending(part) and part.last_sequence_id == 0


def test_a_blocking_send_of_a_chunked_message_returns_the_last_chunk_id(monkeypatch):
    producer, part = _chunking_producer(monkeypatch)
    ids = []
    sender = threading.Thread(target=lambda: ids.append(producer.send(os.urandom(2500))))
    sender.start()
    while len(fakes.sent_entries(part)) < 3:
        threading.Event().wait(0.001)
    _receipts(part, fakes.sent_entries(part), first_entry_id=20)
    sender.join(5)
    assert (ids[0].entry_id(), ids[0].batch_index()) == (22, -1)


def test_a_failed_chunk_fails_the_message_once(monkeypatch):
    producer, part = _chunking_producer(monkeypatch)
    got = []
    producer.send_async(os.urandom(2500), lambda result, mid: got.append((result, mid)))
    entries = fakes.sent_entries(part)
    fakes.respond(part, SendFailed(0, errors.BrokerPersistenceError("disk full")))
    _receipts(part, entries[1:])  # the later chunks were stored: the message still failed
    assert got == [(Result.BrokerPersistenceError, None)]
    assert part._pending_messages == 0


def test_a_chunked_message_counts_once_against_max_pending_messages(monkeypatch):
    producer, part = _chunking_producer(monkeypatch, max_pending_messages=2)
    results = []
    producer.send_async(os.urandom(4000), None)
    producer.send_async(b"small", None)
    producer.send_async(b"third", lambda result, mid: results.append(result))
    assert len(fakes.sent_entries(part)) == 6 and part._pending_messages == 2
    assert results == [Result.ProducerQueueIsFull]


def test_a_chunk_without_a_receipt_in_time_fails_the_message_with_timeout(monkeypatch):
    clock = fakes.use_clock(monkeypatch)
    producer, part = _chunking_producer(monkeypatch, send_timeout_ms=100)
    got = []
    producer.send_async(os.urandom(2500), lambda result, mid: got.append(result))
    _receipts(part, fakes.sent_entries(part)[:1])
    clock.now += 0.2
    fakes.timer(part).fire_all()
    assert got == [Result.Timeout] and part._pending_messages == 0 and not fakes.pending(part)


def test_without_chunking_an_oversized_message_is_message_too_big_at_send(monkeypatch):
    producer, (part,) = fakes.make_producer(monkeypatch, max_message_size=MAX)
    with pytest.raises(errors.MessageTooBig, match="enable chunking"):
        producer.send_async(b"x" * (MAX + 1), None)
    with pytest.raises(errors.MessageTooBig):
        producer.send(b"x" * (MAX + 1))
    assert fakes.sent_entries(part) == []
