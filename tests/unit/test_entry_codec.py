"""The one entry codec of the read side (``broker_core.protocol.entry``), as pure functions: stored bytes in,
metadata and messages out; ack sets; message id bytes."""
from __future__ import annotations

import pytest

from broker_core.errors import ChecksumError, InvalidMessage
from broker_core.protocol import codec, entry, pulsar_api_pb2
from broker_core.protocol.compression import compress_payload


def _meta(**fields) -> pulsar_api_pb2.MessageMetadata:
    fields.setdefault("producer_name", "p")
    fields.setdefault("sequence_id", 3)
    fields.setdefault("publish_time", 1000)
    return pulsar_api_pb2.MessageMetadata(**fields)


def _stored(meta, payload: bytes, broker_time: int = 77, index: int = 0) -> bytes:
    return codec.broker_entry_prefix(broker_time, index) + codec.encode_entry(meta, payload)


def test_opening_a_stored_entry_reads_the_broker_prefix_metadata_and_payload():
    opened = entry.open_entry(_stored(_meta(partition_key="k"), b"hello"))
    assert opened.metadata.partition_key == "k" and bytes(opened.payload) == b"hello"
    assert opened.broker_timestamp == 77


def test_an_entry_without_a_broker_prefix_opens_too():
    opened = entry.open_entry(codec.encode_entry(_meta(), b"x"))
    assert bytes(opened.payload) == b"x" and opened.broker_timestamp == -1


def test_a_damaged_entry_fails_its_crc_unless_the_broker_reads_its_own_verified_log():
    data = bytearray(_stored(_meta(), b"hello"))
    data[-1] ^= 0xFF
    with pytest.raises(ChecksumError):
        entry.open_entry(bytes(data))
    assert entry.read_metadata(bytes(data)).sequence_id == 3  # dispatch's key peek: no CRC


def test_an_unbatched_message_splits_into_itself_with_the_entry_s_metadata():
    meta = _meta()
    metas, payloads = entry.split_messages(meta, memoryview(b"one"))
    assert metas == (None,) and payloads == (b"one",) and type(payloads[0]) is bytes


def test_a_compressed_batch_is_decompressed_then_split():
    batch = codec.encode_batch([b"a", codec.BatchMessage(b"bb", partition_key="k"), b"c"])
    meta = _meta(num_messages_in_batch=3, compression=pulsar_api_pb2.LZ4, uncompressed_size=len(batch))
    opened = entry.open_entry(_stored(meta, compress_payload(pulsar_api_pb2.LZ4, batch)))
    metas, payloads = entry.split_messages(opened.metadata, opened.payload)
    assert list(payloads) == [b"a", b"bb", b"c"] and metas[1].partition_key == "k"
    assert entry.message_count(opened.metadata) == 3


def test_decompression_is_bounded_by_the_stated_uncompressed_size():
    data = compress_payload(pulsar_api_pb2.ZLIB, b"x" * 10_000)
    with pytest.raises(InvalidMessage):
        entry.payload_of(_meta(compression=pulsar_api_pb2.ZLIB, uncompressed_size=100), data)


def test_a_batch_count_its_bytes_cannot_hold_is_refused_before_splitting():
    with pytest.raises(InvalidMessage, match="claims 1000 messages"):
        entry.split_messages(_meta(num_messages_in_batch=1000), codec.encode_batch([b"a", b"b"]))


def test_an_unknown_compression_type_is_named():
    meta = _meta(uncompressed_size=5)
    meta.MergeFromString(b"\x40\x09")  # compression = 9, unknown to this code
    with pytest.raises(InvalidMessage, match="unknown compression type 9"):
        entry.payload_of(meta, b"12")


def test_a_chunk_is_recognised_by_its_chunk_count():
    assert entry.is_chunk(_meta(uuid="p-3", chunk_id=0, num_chunks_from_msg=2, total_chunk_msg_size=4))
    assert not entry.is_chunk(_meta(num_chunks_from_msg=1))
    assert not entry.is_chunk(_meta(num_messages_in_batch=2))


@pytest.mark.parametrize("ack_set,kept", [((), None), ([0b1001], [0, 3]), ([0], []),
                                          ([-1, 1], list(range(64)) + [64])])
def test_an_ack_set_keeps_the_messages_whose_bit_is_set(ack_set, kept):
    assert entry.kept_indexes(ack_set, 65 if len(ack_set) == 2 else 4) == kept


def test_message_id_bytes_are_messageiddata_without_absent_fields():
    assert entry.message_id_bytes(2, 3, 1, 4) == bytes.fromhex("0802100318012004")
    assert entry.message_id_bytes(5, 6) == bytes.fromhex("08051006")
    assert entry.message_id_bytes(-1, -1) == pulsar_api_pb2.MessageIdData(ledgerId=2**64 - 1,
                                                                          entryId=2**64 - 1).SerializeToString()


def test_message_id_bytes_parse_back_with_the_batch_size():
    data = entry.message_id_prefix(7, 8, 2) + entry.batch_fields(1, 5)
    assert entry.parse_message_id(data) == (7, 8, 2, 1, 5)
    assert entry.parse_message_id(entry.message_id_bytes(-1, -1)) == (-1, -1, -1, -1, 0)


def test_garbage_is_not_a_message_id():
    with pytest.raises(ValueError):
        entry.parse_message_id(b"\x08")


def test_dispatchs_key_peek_skips_the_broker_prefix_by_its_size_and_refuses_one_past_the_end():
    """Issue 35: read_metadata (once per entry for Key_Shared) does not decode the broker's prefix."""
    metadata = pulsar_api_pb2.MessageMetadata(producer_name="p", sequence_id=7, publish_time=1, partition_key="k")
    stored = codec.broker_entry_prefix(1_700_000_000_000, 41) + codec.encode_entry(metadata, b"x" * 10)
    assert entry.read_metadata(stored) == entry.open_entry(stored, verify=False).metadata
    assert entry.read_metadata(memoryview(stored)).partition_key == "k"
    with pytest.raises(InvalidMessage):
        entry.read_metadata(b"\x0e\x02\x00\x00\xff\xff" + stored[6:])


def test_decode_entry_checks_the_required_metadata_fields_unless_told_not_to():
    unset = pulsar_api_pb2.MessageMetadata(producer_name="p", sequence_id=1)  # publish_time missing
    body = unset.SerializePartialToString()
    data = codec.ENTRY_HEADER.pack(codec.MAGIC_CRC32C, 0, len(body)) + body
    with pytest.raises(InvalidMessage, match="required"):
        codec.decode_entry(data, verify=False)
    assert codec.decode_entry(data, verify=False, required=False)[0].sequence_id == 1
