"""The producer's batch container: batch and single-message entries in Pulsar's format."""
from __future__ import annotations

import pytest

from broker_core.protocol import codec
from broker_core.errors import InvalidMessage
from broker_core.protocol.compression import compress_payload, decompress_payload
from broker_core.protocol.pulsar_api_pb2 import LZ4, NONE, SNAPPY, ZLIB, ZSTD
from connector.client.batching import BatchContainer


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
