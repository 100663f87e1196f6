"""What an entry may claim (``codec.check_entry``), and batch splitting that never trusts the count."""
from __future__ import annotations

import tracemalloc

import pytest

from broker_core.errors import InvalidMessage
from broker_core.protocol import codec
from broker_core.protocol.entry_limits import FRAME_PADDING, MAX_UNCOMPRESSED_SIZE, MIN_BATCH_FRAME
from broker_core.protocol.pulsar_api_pb2 import CompressionType, MessageMetadata

MAX = 1000
"""maxMessageSize of these tests."""
INT32_MAX = 2**31 - 1


def meta(**fields):
    return MessageMetadata(producer_name="p", sequence_id=1, publish_time=1, **fields)


def with_unknown_compression(value, **fields):
    """Metadata whose compression enum value this code does not know (as a newer client writes it)."""
    encoded = meta(**fields).SerializeToString() + bytes([0x40, value])
    return MessageMetadata.FromString(encoded)


# --- counts ------------------------------------------------------------------------------------------
def test_unbatched_entry_counts_one_message():
    assert codec.check_entry(meta(), 0, MAX) == 1


def test_batch_counts_its_messages():
    payload = codec.encode_batch([b"a", b"b", b"c"])
    assert codec.check_entry(meta(num_messages_in_batch=3), len(payload), MAX) == 3


@pytest.mark.parametrize("count", [0, -1])
def test_batch_of_fewer_than_one_message_is_refused(count):
    with pytest.raises(InvalidMessage, match="at least one message"):
        codec.check_entry(meta(num_messages_in_batch=count), 100, MAX)


def test_smallest_batch_message_is_a_size_and_an_empty_payload_size():
    assert MIN_BATCH_FRAME == len(codec.encode_batch([b""]))


def test_uncompressed_batch_may_hold_only_minimal_messages():
    payload = codec.encode_batch([b""] * 10)
    assert codec.check_entry(meta(num_messages_in_batch=10), len(payload), MAX) == 10


def test_uncompressed_batch_too_small_for_its_count_is_refused():
    payload = codec.encode_batch([b""] * 10)
    with pytest.raises(InvalidMessage, match="room for at most 10 messages"):
        codec.check_entry(meta(num_messages_in_batch=11), len(payload), MAX)


def test_one_byte_message_claiming_int32_max_messages_is_refused():
    with pytest.raises(InvalidMessage, match=str(INT32_MAX)):
        codec.check_entry(meta(num_messages_in_batch=INT32_MAX), 1, MAX)


# --- compression -------------------------------------------------------------------------------------
def test_compressed_entry_without_uncompressed_size_is_refused():
    with pytest.raises(InvalidMessage, match="without uncompressed_size"):
        codec.check_entry(meta(compression=CompressionType.LZ4), 10, MAX)


def test_compressed_batch_counts_against_its_uncompressed_size():
    fields = dict(compression=CompressionType.ZSTD, num_messages_in_batch=100)
    assert codec.check_entry(meta(uncompressed_size=100 * MIN_BATCH_FRAME, **fields), 20, MAX) == 100
    with pytest.raises(InvalidMessage, match="room for at most 99"):
        codec.check_entry(meta(uncompressed_size=100 * MIN_BATCH_FRAME - 1, **fields), 20, MAX)


def test_compressed_batch_may_decompress_to_max_message_size_plus_padding():
    fields = dict(compression=CompressionType.ZLIB, num_messages_in_batch=2)
    assert codec.check_entry(meta(uncompressed_size=MAX + FRAME_PADDING, **fields), 20, MAX) == 2


def test_compressed_batch_decompressing_beyond_max_message_size_is_refused():
    fields = dict(compression=CompressionType.ZLIB, num_messages_in_batch=2)
    with pytest.raises(InvalidMessage, match="maxMessageSize=1000"):
        codec.check_entry(meta(uncompressed_size=MAX + FRAME_PADDING + 1, **fields), 20, MAX)


def test_compressed_single_message_may_exceed_max_message_size():
    """A producer with chunking on sends a message as one entry when compression made it fit."""
    assert codec.check_entry(meta(compression=CompressionType.ZLIB, uncompressed_size=50 * MAX), 900, MAX) == 1


def test_compressed_single_message_beyond_what_readers_decompress_is_refused():
    with pytest.raises(InvalidMessage, match="readers decompress"):
        codec.check_entry(meta(compression=CompressionType.ZLIB, uncompressed_size=MAX_UNCOMPRESSED_SIZE + 1),
                          900, MAX)


def test_batch_of_an_unknown_codec_counts_against_its_uncompressed_size():
    """The codec may compress 1000 empty messages into a few bytes: the payload size says nothing."""
    metadata = with_unknown_compression(9, num_messages_in_batch=1000, uncompressed_size=1000 * MIN_BATCH_FRAME)
    assert codec.check_entry(metadata, 12, MAX) == 1000


def test_entry_of_an_unknown_codec_without_uncompressed_size_is_refused():
    with pytest.raises(InvalidMessage, match="type 9"):
        codec.check_entry(with_unknown_compression(9), 12, MAX)


# --- chunks --------------------------------------------------------------------------------------------
def chunk(chunk_id=0, num_chunks=3, total=2500, **fields):
    return meta(uuid="p-1", chunk_id=chunk_id, num_chunks_from_msg=num_chunks, total_chunk_msg_size=total,
                **fields)


def test_consistent_chunk_is_one_message():
    assert codec.check_entry(chunk(chunk_id=2), 500, MAX) == 1


@pytest.mark.parametrize("chunk_id, num_chunks", [(3, 3), (-1, 3), (0, 0), (0, -2)])
def test_chunk_id_outside_the_chunk_count_is_refused(chunk_id, num_chunks):
    with pytest.raises(InvalidMessage, match="chunk_id"):
        codec.check_entry(chunk(chunk_id=chunk_id, num_chunks=num_chunks), 500, MAX)


def test_chunk_that_is_also_a_batch_is_refused():
    with pytest.raises(InvalidMessage, match="batching off"):
        codec.check_entry(chunk(num_messages_in_batch=2), 500, MAX)


def test_negative_total_chunk_size_is_refused():
    with pytest.raises(InvalidMessage, match="total_chunk_msg_size -1"):
        codec.check_entry(chunk(total=-1), 0, MAX)


def test_total_chunk_size_below_the_chunks_own_payload_is_refused():
    with pytest.raises(InvalidMessage, match="total_chunk_msg_size 400"):
        codec.check_entry(chunk(total=400), 500, MAX)


def test_total_chunk_size_beyond_what_its_chunks_can_carry_is_refused():
    assert codec.check_entry(chunk(total=3 * (MAX + FRAME_PADDING)), 500, MAX) == 1
    with pytest.raises(InvalidMessage, match="at most 3 entries"):
        codec.check_entry(chunk(total=3 * (MAX + FRAME_PADDING) + 1), 500, MAX)


def test_compressed_chunk_may_state_a_whole_message_beyond_max_message_size():
    metadata = chunk(compression=CompressionType.LZ4, uncompressed_size=100 * MAX)
    assert codec.check_entry(metadata, 500, MAX) == 1


# --- split_batch never trusts the count -----------------------------------------------------------------
def test_split_batch_refuses_int32_max_messages_on_one_byte_before_allocating():
    tracemalloc.start()
    try:
        with pytest.raises(InvalidMessage, match=f"claims {INT32_MAX} messages"):
            codec.split_batch(b"x", INT32_MAX)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20


def test_decode_batch_refuses_a_count_its_payload_cannot_hold():
    payload = codec.encode_batch([b""] * 4)
    with pytest.raises(InvalidMessage, match="at most 4"):
        codec.decode_batch(payload, 5)


def test_split_batch_refuses_a_count_of_zero():
    with pytest.raises(InvalidMessage, match="claims 0 messages"):
        codec.split_batch(codec.encode_batch([b"a"]), 0)


def test_batch_of_minimal_messages_still_splits():
    metas, payloads = codec.split_batch(codec.encode_batch([b""] * 7), 7)
    assert list(payloads) == [b""] * 7 and [m.payload_size for m in metas] == [0] * 7


def test_check_entry_takes_what_decode_entry_returns():
    """The broker's call: decode the entry, then check the metadata against the payload that follows."""
    payload = codec.encode_batch([b"a", b"b"])
    metadata, rest = codec.decode_entry(codec.encode_entry(meta(num_messages_in_batch=2), payload))
    assert codec.check_entry(metadata, len(rest), MAX) == 2
