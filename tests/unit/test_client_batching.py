"""The producer's batch containers (default and key-based) and the payload codecs."""
from __future__ import annotations

import pytest

from broker_core.protocol import codec
from broker_core.errors import InvalidMessage
from broker_core.protocol.compression import compress_payload, decompress_payload
from broker_core.protocol.pulsar_api_pb2 import LZ4, NONE, SNAPPY, ZLIB, ZSTD
from connector.client.producer.batching import BatchContainer
from connector.client.producer.callbacks import SyncWaiter
from connector.client.producer.key_based import KeyBasedBatchContainer
from tests.unit import producer_fakes as fakes


def _decode(entry_bytes):
    return codec.decode_entry(entry_bytes)


def test_two_messages_become_one_batch_entry():
    c = BatchContainer(max_messages=10, max_bytes=1000)
    c.add(b"a", 5, "cb-a")
    c.add(b"bb", 6, "cb-b", partition_key="k")
    entry = c.build("prod", 1234)
    meta, payload = _decode(entry.data)
    assert (entry.sequence_id, entry.highest_sequence_id, entry.num_messages, entry.batched) == \
        (5, 6, 2, True)
    assert entry.callbacks == ["cb-a", "cb-b"]
    assert meta.producer_name == "prod" and meta.publish_time == 1234
    assert meta.num_messages_in_batch == 2 and meta.highest_sequence_id == 6
    messages = codec.decode_batch(payload, 2)
    assert [d for _, d in messages] == [b"a", b"bb"]
    assert messages[1][0].partition_key == "k"
    assert messages[1][0].sequence_id is None  # contiguous ids are derived, not written


def test_a_single_message_is_sent_unbatched_with_its_metadata():
    c = BatchContainer(max_messages=10, max_bytes=1000)
    c.add(b"solo", 9, None, properties={"a": "b"}, partition_key="k", ordering_key=b"o",
          event_timestamp=77, deliver_at=999)
    entry = c.build("prod", 1)
    meta, payload = _decode(entry.data)
    assert not entry.batched and entry.num_messages == 1
    assert not meta.HasField("num_messages_in_batch")
    assert bytes(payload) == b"solo"
    assert (meta.partition_key, meta.ordering_key, meta.event_time, meta.deliver_at_time) == \
        ("k", b"o", 77, 999)
    assert {kv.key: kv.value for kv in meta.properties} == {"a": "b"}


def test_non_contiguous_sequence_ids_are_written_per_message():
    c = BatchContainer(max_messages=10, max_bytes=1000)
    c.add(b"a", 10, None)
    c.add(b"b", 11, None)
    c.add(b"c", 20, None)
    _, payload = _decode(c.build("p", 1).data)
    metas = [m for m, _ in codec.decode_batch(payload, 3)]
    assert [m.sequence_id for m in metas] == [None, None, 20]


def test_container_reports_room_and_fullness():
    c = BatchContainer(max_messages=2, max_bytes=100)
    assert c.has_room(10_000)  # an empty container takes any message
    c.add(b"x" * 50, 0, None)
    assert c.has_room(10) and not c.has_room(60)
    c.add(b"y", 1, None)
    assert c.is_full()


def test_build_empties_the_container_and_bumps_the_generation():
    c = BatchContainer(max_messages=5, max_bytes=100)
    c.add(b"x", 0, None)
    generation = c.generation
    c.build("p", 1)
    assert len(c) == 0 and c.generation == generation + 1


JSON_LIKE = b"".join(b'{"id": %d, "user": "user-%d", "ok": true, "tags": ["a", "b"]}' % (i, i % 7)
                     for i in range(200))


@pytest.mark.parametrize("compression", [NONE, LZ4, ZLIB, ZSTD, SNAPPY])
def test_every_codec_round_trips_and_shrinks_json(compression):
    packed = compress_payload(compression, JSON_LIKE)
    assert decompress_payload(compression, packed, len(JSON_LIKE)) == JSON_LIKE
    assert decompress_payload(compression, memoryview(packed), len(JSON_LIKE)) == JSON_LIKE
    if compression != NONE:
        assert len(packed) < len(JSON_LIKE) // 3


def test_snappy_writes_the_raw_block_format_as_pulsar_does():
    packed = compress_payload(SNAPPY, b"a" * 300)
    # A raw snappy block starts with the uncompressed length as a varint (300 = 0xac 0x02); the framed
    # format would start with the stream identifier chunk 0xff 0x06 0x00 0x00 "sNaPpY".
    assert packed[:2] == b"\xac\x02"
    # Literal-only block for a 3-byte input: varint 3, tag (len-1)<<2 = 0x08, then the bytes.
    assert compress_payload(SNAPPY, b"xyz") == b"\x03\x08xyz"
    assert decompress_payload(SNAPPY, b"\x03\x08xyz", 3) == b"xyz"


def test_lz4_writes_a_raw_block_without_a_size_prefix():
    import lz4.block
    packed = compress_payload(LZ4, JSON_LIKE)
    assert lz4.block.decompress(packed, uncompressed_size=len(JSON_LIKE)) == JSON_LIKE
    assert lz4.block.compress(JSON_LIKE, store_size=True)[4:] == packed


@pytest.mark.parametrize("compression", [LZ4, ZLIB, ZSTD, SNAPPY])
def test_corrupt_data_is_an_invalid_message_naming_the_codec(compression):
    from broker_core.protocol.pulsar_api_pb2 import CompressionType
    with pytest.raises(InvalidMessage, match=CompressionType.Name(compression)):
        decompress_payload(compression, b"\xff\xfe garbage \x00" * 3, 500)


def test_a_size_other_than_the_metadata_says_is_an_invalid_message():
    with pytest.raises(InvalidMessage, match="metadata says"):
        decompress_payload(ZLIB, compress_payload(ZLIB, JSON_LIKE), len(JSON_LIKE) - 1)


def test_an_unknown_codec_is_an_invalid_message():
    with pytest.raises(InvalidMessage, match="unknown compression type 9"):
        compress_payload(9, b"x")
    with pytest.raises(InvalidMessage, match="unknown compression type 9"):
        decompress_payload(9, b"x", 1)


@pytest.mark.parametrize("compression", [LZ4, ZLIB, ZSTD, SNAPPY])
def test_compressed_batches_carry_codec_and_uncompressed_size(compression):
    c = BatchContainer(max_messages=100, max_bytes=100_000, compression=compression)
    for i in range(50):
        c.add(b"hello world" * 10, i, None)
    meta, payload = _decode(c.build("p", 1).data)
    assert meta.compression == compression
    raw = decompress_payload(compression, payload, meta.uncompressed_size)
    assert [d for _, d in codec.decode_batch(raw, 50)] == [b"hello world" * 10] * 50


def test_uncompressed_batches_have_no_codec_field():
    c = BatchContainer(max_messages=2, max_bytes=100, compression=NONE)
    c.add(b"x", 0, None)
    meta, _ = _decode(c.build("p", 1).data)
    assert not meta.HasField("compression")


def test_take_callbacks_empties_without_building():
    c = BatchContainer(max_messages=5, max_bytes=100)
    c.add(b"x", 0, "cb")
    assert c.take_callbacks() == ["cb"] and len(c) == 0


# --- key-based batching -----------------------------------------------------------------------------------
def _keyed_entries(entries):
    """[(partition_key, ordering_key, sequence_id, highest, [(payload, message sequence id)])]."""
    out = []
    for entry in entries:
        meta, payload = _decode(entry.data)
        if entry.batched:
            messages = [(d, meta.sequence_id + i if m.sequence_id is None else m.sequence_id)
                        for i, (m, d) in enumerate(codec.decode_batch(payload, entry.num_messages))]
        else:
            messages = [(bytes(payload), meta.sequence_id)]
        out.append((meta.partition_key if meta.HasField("partition_key") else None,
                    meta.ordering_key if meta.HasField("ordering_key") else None,
                    entry.sequence_id, entry.highest_sequence_id, messages))
    return out


def test_key_based_container_keeps_one_batch_per_key_open_at_once():
    c = KeyBasedBatchContainer(max_messages=100, max_bytes=100_000)
    for payload, key in [(b"a1", "a"), (b"b1", "b"), (b"n1", None), (b"a2", "a"), (b"b2", "b")]:
        c.add(payload, None, f"cb-{payload.decode()}", partition_key=key)
    assert c.keys == ["a", "b", None] and len(c) == 5
    entries, next_id = c.build("prod", 1, next_sequence_id=10)
    assert next_id == 15 and len(c) == 0
    assert _keyed_entries(entries) == [
        ("a", None, 10, 11, [(b"a1", 10), (b"a2", 11)]),
        ("b", None, 12, 13, [(b"b1", 12), (b"b2", 13)]),
        (None, None, 14, 14, [(b"n1", 14)]),  # the keyless batch carries no key
    ]
    assert [e.callbacks for e in entries] == [["cb-a1", "cb-a2"], ["cb-b1", "cb-b2"], ["cb-n1"]]


def test_key_based_sequence_ids_are_contiguous_per_entry_and_rise_across_entries():
    c = KeyBasedBatchContainer(max_messages=100, max_bytes=100_000)
    for i in range(30):
        c.add(b"m%d" % i, None, None, partition_key=f"k{i % 3}")
    entries, _ = c.build("prod", 1, next_sequence_id=0)
    previous_highest = -1
    for _, _, first, highest, messages in _keyed_entries(entries):
        ids = [seq for _, seq in messages]
        assert ids == list(range(first, highest + 1)) and first > previous_highest
        previous_highest = highest


def test_key_based_groups_by_ordering_key_before_partition_key():
    c = KeyBasedBatchContainer(max_messages=100, max_bytes=100_000)
    c.add(b"1", None, None, partition_key="p1", ordering_key=b"o")
    c.add(b"2", None, None, partition_key="p2", ordering_key=b"o")
    c.add(b"3", None, None, partition_key="o")  # a partition key equal to the ordering key's text
    entries, _ = c.build("prod", 1, next_sequence_id=0)
    assert [(pk, ok, [d for d, _ in msgs]) for pk, ok, _, _, msgs in _keyed_entries(entries)] == [
        ("p1", b"o", [b"1", b"2"]), ("o", None, [b"3"])]
    _, payload = _decode(entries[0].data)
    assert [m.partition_key for m, _ in codec.decode_batch(payload, 2)] == ["p1", "p2"]


def test_key_based_limits_count_all_open_batches_together():
    c = KeyBasedBatchContainer(max_messages=3, max_bytes=1000)
    c.add(b"x", None, None, partition_key="a")
    c.add(b"x", None, None, partition_key="b")
    assert not c.is_full() and c.has_room(1)
    c.add(b"x", None, None, partition_key="c")
    assert c.is_full()
    c = KeyBasedBatchContainer(max_messages=100, max_bytes=100)
    c.add(b"x" * 60, None, None, partition_key="a")
    assert not c.has_room(60) and c.has_room(20)


def test_key_based_keeps_explicit_sequence_ids():
    c = KeyBasedBatchContainer(max_messages=100, max_bytes=100_000)
    c.add(b"a", None, None, partition_key="k")
    c.add(b"b", 500, None, partition_key="k")
    c.add(b"c", None, None, partition_key="k")
    entries, next_id = c.build("prod", 1, next_sequence_id=7)
    assert _keyed_entries(entries)[0][4] == [(b"a", 7), (b"b", 500), (b"c", 8)] and next_id == 9


def test_key_based_take_callbacks_returns_every_key_batch_callbacks():
    c = KeyBasedBatchContainer(max_messages=100, max_bytes=100_000)
    c.add(b"a", None, "1", partition_key="k")
    c.add(b"b", None, "2")
    generation = c.generation
    assert c.take_callbacks() == ["1", "2"] and len(c) == 0 and c.generation == generation + 1


def test_key_based_compresses_each_key_batch():
    c = KeyBasedBatchContainer(max_messages=100, max_bytes=100_000, compression=LZ4)
    for i in range(10):
        c.add(JSON_LIKE[:300], None, None, partition_key=f"k{i % 2}")
    entries, _ = c.build("prod", 1, next_sequence_id=0)
    for entry in entries:
        meta, payload = _decode(entry.data)
        raw = decompress_payload(meta.compression, payload, meta.uncompressed_size)
        assert meta.compression == LZ4 and len(codec.decode_batch(raw, 5)) == 5


# --- key-based batching and delayed messages in the producer -------------------------------------------
def _sent(part):
    return _keyed_entries_of(fakes.sent_entries(part))


def _keyed_entries_of(send_entries):
    from connector.client.producer.batching import PendingEntry
    return _keyed_entries([PendingEntry(e.sequence_id, e.highest_sequence_id, e.num_messages,
                                        e.num_messages > 1, e.data, []) for e in send_entries])


def test_key_based_producer_sends_every_key_batch_when_the_limit_is_reached(monkeypatch):
    producer, (part,) = fakes.make_producer(monkeypatch, key_based_batching=True,
                                            batching_max_messages=4)
    for payload, key in [(b"1", "a"), (b"2", "b"), (b"3", None)]:
        producer.send_async(payload, None, partition_key=key)
    assert _sent(part) == []
    producer.send_async(b"4", None, partition_key="a")
    assert _sent(part) == [("a", None, 0, 1, [(b"1", 0), (b"4", 1)]), ("b", None, 2, 2, [(b"2", 2)]),
                           (None, None, 3, 3, [(b"3", 3)])]


def test_key_based_producer_flushes_all_keys_on_the_publish_delay_timer(monkeypatch):
    clock = fakes.use_clock(monkeypatch)
    producer, (part,) = fakes.make_producer(monkeypatch, key_based_batching=True,
                                            batching_max_publish_delay_ms=10)
    producer.send_async(b"1", None, partition_key="a")
    producer.send_async(b"2", None, partition_key="b")
    clock.now += 0.010
    fakes.timer(part).fire_all()
    assert [(k, msgs) for k, _, _, _, msgs in _sent(part)] == [("a", [(b"1", 0)]), ("b", [(b"2", 1)])]


def test_key_based_producer_flush_and_sync_send_send_every_open_batch(monkeypatch):
    producer, (part,) = fakes.make_producer(monkeypatch, key_based_batching=True)
    producer.send_async(b"1", None, partition_key="a")
    producer.send_async(b"2", None, partition_key="b")
    part.flush_batch()
    assert [k for k, *_ in _sent(part)] == ["a", "b"]
    producer.send_async(b"3", None, partition_key="a")
    waiter = SyncWaiter()
    part.add(b"4", waiter, None, "c", None, None, 0, None, True)  # what a blocking send does
    assert [(k, first) for k, _, first, _, _ in _sent(part)] == [("a", 0), ("b", 1), ("a", 2), ("c", 3)]


def test_key_based_producer_receipts_complete_each_key_batch(monkeypatch):
    from connector import Result
    producer, (part,) = fakes.make_producer(monkeypatch, key_based_batching=True)
    got = []
    for payload, key in [(b"1", "a"), (b"2", "b"), (b"3", "a")]:
        producer.send_async(payload, lambda r, mid, p=payload: got.append((p, r, mid.entry_id(),
                                                                             mid.batch_index())),
                            partition_key=key)
    part.flush_batch()
    for n, entry in enumerate(fakes.sent_entries(part)):
        fakes.respond(part, fakes.receipt(entry, entry_id=100 + n))
    assert sorted(got) == [(b"1", Result.Ok, 100, 0), (b"2", Result.Ok, 101, -1),
                           (b"3", Result.Ok, 100, 1)]
    assert part.last_sequence_id == 2 and not fakes.pending(part)


@pytest.mark.parametrize("key_based", [False, True])
def test_a_delayed_message_is_always_an_entry_of_its_own(monkeypatch, key_based):
    producer, (part,) = fakes.make_producer(monkeypatch, key_based_batching=key_based,
                                            batching_max_messages=100)
    producer.send_async(b"1", None, partition_key="a")
    producer.send_async(b"2", None, partition_key="a")
    producer.send_async(b"late", None, partition_key="a", deliver_at=123456)
    producer.send_async(b"later", None, partition_key="a", deliver_after=5000)
    producer.send_async(b"3", None, partition_key="a")
    part.flush_batch()
    entries = fakes.sent_entries(part)
    metas = [codec.decode_entry(e.data)[0] for e in entries]
    assert [e.num_messages for e in entries] == [2, 1, 1, 1]
    assert metas[1].deliver_at_time == 123456 and metas[2].deliver_at_time > 123456
    assert not metas[0].HasField("deliver_at_time") and not metas[3].HasField("deliver_at_time")
    assert [[d for d, _ in msgs] for *_, msgs in _sent(part)] == [[b"1", b"2"], [b"late"], [b"later"],
                                                                 [b"3"]]
