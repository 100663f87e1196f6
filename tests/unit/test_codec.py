"""Pulsar entry format: entries, CRC, broker prefix, batches, compression."""
from __future__ import annotations

import struct

import google_crc32c
import pytest

from broker_core.errors import ChecksumError, InvalidMessage
from broker_core.protocol import codec
from broker_core.protocol.compression import compress_payload, decompress_payload
from broker_core.protocol.pulsar_api_pb2 import (
    BrokerEntryMetadata, CompressionType, KeyValue, MessageMetadata, SingleMessageMetadata)


def _metadata(**fields) -> MessageMetadata:
    return MessageMetadata(producer_name="p", sequence_id=7, publish_time=1_700_000_000_000, **fields)


def _framed(meta: SingleMessageMetadata) -> bytes:
    encoded = meta.SerializeToString()
    return struct.pack(">I", len(encoded)) + encoded


# --- entries -----------------------------------------------------------------------------------------
def test_entry_round_trips_metadata_and_payload():
    meta = _metadata(partition_key="k", properties=[KeyValue(key="a", value="b")])
    data = codec.encode_entry(meta, b"hello")
    decoded, payload = codec.decode_entry(data)
    assert decoded == meta
    assert bytes(payload) == b"hello"


def test_entry_layout_is_magic_crc_size_metadata_payload():
    meta = _metadata()
    data = codec.encode_entry(meta, b"xyz")
    magic, crc, size = struct.unpack_from(">HII", data)
    assert magic == 0x0E01
    assert crc == google_crc32c.value(data[6:])
    assert data[10:10 + size] == meta.SerializeToString()
    assert data[10 + size:] == b"xyz"


def test_entry_with_empty_payload_round_trips():
    _, payload = codec.decode_entry(codec.encode_entry(_metadata(), b""))
    assert bytes(payload) == b""


def test_entry_accepts_memoryview_input():
    data = codec.encode_entry(_metadata(), b"abc")
    _, payload = codec.decode_entry(memoryview(b"junk" + data)[4:])
    assert bytes(payload) == b"abc"


def test_flipped_payload_bit_raises_checksum_error():
    data = bytearray(codec.encode_entry(_metadata(), b"hello"))
    data[-1] ^= 0x01
    with pytest.raises(ChecksumError, match="CRC32C"):
        codec.decode_entry(bytes(data))


def test_verify_false_skips_the_crc_check():
    data = bytearray(codec.encode_entry(_metadata(), b"hello"))
    data[-1] ^= 0x01
    _, payload = codec.decode_entry(bytes(data), verify=False)
    assert bytes(payload) == b"helln"


@pytest.mark.parametrize("cut", [0, 1, 5, 9])
def test_truncated_header_raises_invalid_message(cut):
    data = codec.encode_entry(_metadata(), b"hello")
    with pytest.raises(InvalidMessage, match="shorter"):
        codec.decode_entry(data[:cut])


def test_metadata_size_beyond_the_entry_raises_invalid_message():
    data = codec.encode_entry(_metadata(), b"")
    with pytest.raises(InvalidMessage, match="metadataSize"):
        codec.decode_entry(data[:-3])


def test_bad_magic_raises_invalid_message():
    data = b"\x0e\x03" + codec.encode_entry(_metadata(), b"x")[2:]
    with pytest.raises(InvalidMessage, match="magic"):
        codec.decode_entry(data)


def test_garbage_metadata_raises_invalid_message():
    garbage = b"\xff\xff\xff\xff\xff"
    body = struct.pack(">I", len(garbage)) + garbage
    data = struct.pack(">HI", 0x0E01, google_crc32c.value(body)) + body
    with pytest.raises(InvalidMessage, match="MessageMetadata"):
        codec.decode_entry(data)


def test_metadata_missing_required_fields_raises_invalid_message():
    meta = MessageMetadata(producer_name="p").SerializePartialToString()
    body = struct.pack(">I", len(meta)) + meta
    data = struct.pack(">HI", 0x0E01, google_crc32c.value(body)) + body
    with pytest.raises(InvalidMessage, match="sequence_id"):
        codec.decode_entry(data)


def test_encoding_metadata_without_required_fields_raises_invalid_message():
    with pytest.raises(InvalidMessage, match="required"):
        codec.encode_entry(MessageMetadata(producer_name="p"), b"")


# --- broker prefix -------------------------------------------------------------------------------------
@pytest.mark.parametrize("timestamp,index", [(0, 0), (1, 127), (1_700_000_000_123, 2**40 + 5),
                                             (2**64 - 1, 2**63)])
def test_broker_prefix_equals_protobuf_encoding(timestamp, index):
    expected = BrokerEntryMetadata(broker_timestamp=timestamp, index=index).SerializeToString()
    assert codec.broker_entry_prefix(timestamp, index) == \
        struct.pack(">HI", 0x0E02, len(expected)) + expected


def test_split_broker_entry_reads_timestamp_index_and_start():
    entry = codec.encode_entry(_metadata(), b"payload")
    prefix = codec.broker_entry_prefix(1_700_000_000_123, 41)
    assert codec.split_broker_entry(prefix + entry) == (1_700_000_000_123, 41, len(prefix))


def test_split_broker_entry_tolerates_no_prefix():
    assert codec.split_broker_entry(codec.encode_entry(_metadata(), b"")) == (-1, -1, 0)


def test_split_broker_entry_falls_back_to_protobuf_for_unknown_fields():
    body = BrokerEntryMetadata(broker_timestamp=5, index=9).SerializeToString() + b"\x18\x01"
    stored = struct.pack(">HI", 0x0E02, len(body)) + body
    assert codec.split_broker_entry(stored) == (5, 9, len(stored))


def test_truncated_broker_prefix_raises_invalid_message():
    prefix = codec.broker_entry_prefix(5, 9)
    with pytest.raises(InvalidMessage):
        codec.split_broker_entry(prefix[:-1])


def test_decode_entry_skips_a_broker_prefix():
    stored = codec.broker_entry_prefix(5, 9) + codec.encode_entry(_metadata(), b"abc")
    _, payload = codec.decode_entry(stored)
    assert bytes(payload) == b"abc"


# --- batches -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("size", [0, 1, 127, 128, 4095, 4096, 70_000])
def test_payload_only_header_equals_protobuf_encoding(size):
    assert codec.single_message_header(size) == _framed(SingleMessageMetadata(payload_size=size))


def test_keyed_header_equals_protobuf_encoding():
    expected = SingleMessageMetadata(
        payload_size=300, partition_key="key-é", ordering_key=b"\x00ok", event_time=12345,
        sequence_id=2**40, properties=[KeyValue(key="a", value="1"), KeyValue(key="b", value="")])
    assert codec.single_message_header(300, "key-é", b"\x00ok", {"a": "1", "b": ""}, 12345,
                                       2**40) == _framed(expected)


def test_batch_round_trips_plain_keyed_and_protobuf_messages():
    rare = SingleMessageMetadata(payload_size=0, null_value=True, partition_key="n")
    payload = codec.encode_batch([
        b"one",
        codec.BatchMessage(b"two", partition_key="k2", properties={"x": "y"}, sequence_id=3),
        codec.BatchMessage(b"", ordering_key=b"ord", event_time=99),
        (rare, b""),
        b"x" * 5000,
    ])
    out = codec.decode_batch(payload, 5)
    assert [data for _, data in out] == [b"one", b"two", b"", b"", b"x" * 5000]
    assert out[0][0] == codec.SingleMeta(3)
    assert out[1][0].partition_key == "k2" and dict(out[1][0].properties) == {"x": "y"}
    assert out[1][0].sequence_id == 3
    assert out[2][0].ordering_key == b"ord" and out[2][0].event_time == 99
    assert out[2][0].partition_key is None and out[2][0].sequence_id is None
    assert out[3][0].null_value and out[3][0].partition_key == "n"


def test_batch_encoding_equals_protobuf_framing():
    messages = [codec.BatchMessage(b"a" * 200, partition_key="k"), codec.BatchMessage(b"bc")]
    expected = b"".join(_framed(SingleMessageMetadata(payload_size=len(m.payload),
                                                      partition_key=m.partition_key)) + m.payload
                        if m.partition_key else
                        _framed(SingleMessageMetadata(payload_size=len(m.payload))) + m.payload
                        for m in messages)
    assert codec.encode_batch(messages) == expected


def test_decode_batch_reads_protobuf_encoded_batches():
    meta = SingleMessageMetadata(payload_size=2, partition_key="k", compacted_out=True)
    out = codec.decode_batch(_framed(meta) + b"hi", 1)
    assert out[0][1] == b"hi"
    assert out[0][0].partition_key == "k" and out[0][0].compacted_out


def test_decode_batch_accepts_memoryview():
    payload = codec.encode_batch([b"a", b"b"])
    assert [d for _, d in codec.decode_batch(memoryview(payload), 2)] == [b"a", b"b"]


@pytest.mark.parametrize("size", [0, 100, 127, 128, 5000])
def test_batch_of_equal_payload_only_messages_splits_like_any_batch(size):
    payloads = [bytes([i]) * size for i in range(7)]
    metas, datas = codec.split_batch(codec.encode_batch(payloads), 7)
    assert list(datas) == payloads
    assert list(metas) == [codec.SingleMeta(size)] * 7


def test_batch_whose_sizes_only_add_up_to_equal_strides_is_split_message_by_message():
    payloads = [b"a" * 100, b"b" * 99, b"c" * 101]  # 3 x 106 bytes in all, as if all were 100 B
    assert [d for _, d in codec.decode_batch(codec.encode_batch(payloads), 3)] == payloads


def test_batch_with_one_keyed_message_among_equal_ones_keeps_its_key():
    payload = codec.encode_batch([b"x" * 10, codec.BatchMessage(b"y" * 10, partition_key="k"),
                                  b"z" * 10])
    out = codec.decode_batch(payload, 3)
    assert [d for _, d in out] == [b"x" * 10, b"y" * 10, b"z" * 10]
    assert [m.partition_key for m, _ in out] == [None, "k", None]


def test_batch_with_trailing_bytes_after_equal_messages_is_still_read():
    payload = codec.encode_batch([b"ab", b"cd"]) + b"\x00"
    assert [d for _, d in codec.decode_batch(payload, 2)] == [b"ab", b"cd"]


@pytest.mark.parametrize("cut", [1, 3, 4, 6, 8])
def test_truncated_batch_raises_invalid_message(cut):
    payload = codec.encode_batch([b"abc", b"def"])
    with pytest.raises(InvalidMessage):
        codec.decode_batch(payload[:-cut], 2)


def test_batch_with_fewer_messages_than_declared_raises_invalid_message():
    with pytest.raises(InvalidMessage):
        codec.decode_batch(codec.encode_batch([b"abc"]), 2)


@pytest.mark.parametrize("garbage", [b"\x00\x00\x00\x00", b"\x00\x00\x00\x02\xff\xff",
                                     b"\x00\x00\x00\x03\x12\x05a", b"\xff\xff\xff\xff\x18\x01"])
def test_garbage_batch_raises_invalid_message(garbage):
    with pytest.raises(InvalidMessage):
        codec.decode_batch(garbage, 1)


# --- compression ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("compression", [CompressionType.NONE, CompressionType.LZ4,
                                         CompressionType.ZLIB, CompressionType.ZSTD])
def test_compression_round_trips(compression):
    data = codec.encode_batch([b"hello world " * 50] * 20)
    packed = compress_payload(compression, data)
    if compression != CompressionType.NONE:
        assert len(packed) < len(data)
    assert decompress_payload(compression, packed, len(data)) == data


def test_lz4_is_a_raw_block_without_a_size_prefix():
    import lz4.block
    data = b"abc" * 100
    packed = compress_payload(CompressionType.LZ4, data)
    assert lz4.block.decompress(packed, uncompressed_size=len(data)) == data
    assert packed != lz4.block.compress(data)  # that one has a 4-byte size prefix


def test_corrupt_compressed_payload_raises_invalid_message():
    with pytest.raises(InvalidMessage, match="ZLIB"):
        decompress_payload(CompressionType.ZLIB, b"not zlib", 10)


def test_wrong_uncompressed_size_raises_invalid_message():
    packed = compress_payload(CompressionType.ZLIB, b"abcdef")
    with pytest.raises(InvalidMessage, match="says"):
        decompress_payload(CompressionType.ZLIB, packed, 5)


def test_the_written_out_headers_of_plain_messages_are_what_the_encoder_writes_for_every_size():
    assert len(codec.batch_encoding._PLAIN_HEADERS) == 4096
    assert all(codec.batch_encoding._PLAIN_HEADERS[n] == codec.batch_encoding._plain_header(n) for n in range(4096))
