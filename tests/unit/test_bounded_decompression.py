"""Decompression never allocates more than the metadata's size, nor more than the reader's cap."""
from __future__ import annotations

import tracemalloc
import zlib

import pytest

from broker_core.errors import InvalidMessage
from broker_core.protocol.compression import MAX_UNCOMPRESSED_SIZE, compress_payload, decompress_payload
from broker_core.protocol.pulsar_api_pb2 import CompressionType

from tests.poison import MiB, zlib_bomb, zstd_zeros

LZ4, ZLIB, ZSTD, SNAPPY = (CompressionType.LZ4, CompressionType.ZLIB, CompressionType.ZSTD,
                           CompressionType.SNAPPY)


def zstd_frame(data, *, states_size=True):
    import zstandard
    return zstandard.ZstdCompressor(write_content_size=states_size).compress(data)


def snappy_preamble(size):
    """The start of a raw snappy block: its uncompressed length as a varint."""
    out = bytearray()
    while size >= 0x80:
        out.append(size & 0x7F | 0x80)
        size >>= 7
    return bytes(out + bytes([size]))


def peak_bytes_of(call):
    """(exception raised by ``call()``, peak traced Python memory while it ran)."""
    tracemalloc.start()
    try:
        with pytest.raises(InvalidMessage) as info:
            call()
        return info.value, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.fixture(scope="module")
def bomb():
    return zlib_bomb(2048)


def test_the_zlib_bomb_is_small_and_really_inflates():
    assert zlib.decompress(zlib_bomb(3)) == bytes(3 * MiB)
    assert len(zlib_bomb(2048)) < 2.5 * MiB


def test_zlib_bomb_claiming_its_2_gib_is_refused_before_inflating(bomb):
    error, peak = peak_bytes_of(lambda: decompress_payload(ZLIB, bomb, 2048 * MiB))
    assert "above the" in error.message and peak < MiB


def test_zlib_bomb_claiming_1_mib_stops_one_byte_past_it(bomb):
    error, peak = peak_bytes_of(lambda: decompress_payload(ZLIB, bomb, MiB))
    assert "more than the 1048576 bytes" in error.message and peak < 10 * MiB


def test_zlib_bomb_claiming_the_whole_cap_holds_no_more_than_the_cap(bomb):
    error, peak = peak_bytes_of(lambda: decompress_payload(ZLIB, bomb, MAX_UNCOMPRESSED_SIZE))
    assert "more than" in error.message and peak < 100 * 10**6


def test_a_tighter_cap_from_the_caller_is_honoured():
    packed = compress_payload(ZLIB, bytes(5000))
    assert decompress_payload(ZLIB, packed, 5000, max_size=5000) == bytes(5000)
    with pytest.raises(InvalidMessage, match="above the 4999 bytes this reader accepts"):
        decompress_payload(ZLIB, packed, 5000, max_size=4999)


@pytest.mark.parametrize("compression", [LZ4, ZLIB, ZSTD, SNAPPY])
def test_every_codec_refuses_a_size_above_the_cap_before_decompressing(compression):
    packed = compress_payload(compression, b"abc")
    with pytest.raises(InvalidMessage, match=CompressionType.Name(compression)):
        decompress_payload(compression, packed, MAX_UNCOMPRESSED_SIZE + 1)


def test_zstd_frame_stating_more_than_the_metadata_is_refused_before_decompressing():
    frame = zstd_zeros(256)  # states 256 MiB in its header
    error, peak = peak_bytes_of(lambda: decompress_payload(ZSTD, frame, 1000))
    assert "frame states 268435456 bytes, the metadata 1000" in error.message and peak < MiB


def test_the_zstd_helper_states_the_size_only_when_asked():
    import zstandard
    assert zstandard.frame_content_size(zstd_zeros(2)) == 2 * MiB
    assert zstandard.frame_content_size(zstd_zeros(2, states_size=False)) == -1


def test_the_snappy_preamble_is_what_snappy_writes():
    assert compress_payload(SNAPPY, bytes(300)).startswith(snappy_preamble(300))


def test_zstd_frame_stating_less_than_the_metadata_is_refused():
    with pytest.raises(InvalidMessage, match="frame states 10 bytes, the metadata 11"):
        decompress_payload(ZSTD, zstd_frame(b"0123456789"), 11)


def test_zstd_frame_without_a_stated_size_stops_one_byte_past_the_metadata():
    frame = zstd_zeros(256, states_size=False)
    error, peak = peak_bytes_of(lambda: decompress_payload(ZSTD, frame, MiB))
    assert "more than the 1048576 bytes" in error.message and peak < 10 * MiB


def test_zstd_frame_without_a_stated_size_still_decompresses():
    data = b"zstd " * 1000
    assert decompress_payload(ZSTD, zstd_frame(data, states_size=False), len(data)) == data


@pytest.mark.parametrize("size", [99, 101])
def test_lz4_block_of_another_size_than_the_metadata_is_refused(size):
    with pytest.raises(InvalidMessage, match="LZ4"):
        decompress_payload(LZ4, compress_payload(LZ4, bytes(100)), size)


def test_snappy_block_stating_another_size_than_the_metadata_is_refused_before_decompressing():
    block = snappy_preamble(1 << 30) + compress_payload(SNAPPY, bytes(1000))[2:]
    error, peak = peak_bytes_of(lambda: decompress_payload(SNAPPY, block, 1000))
    assert "block states 1073741824 bytes, the metadata 1000" in error.message and peak < MiB


def test_truncated_zlib_stream_is_refused():
    data = b"zlib " * 1000
    with pytest.raises(InvalidMessage, match="ZLIB"):
        decompress_payload(ZLIB, compress_payload(ZLIB, data)[:-10], len(data))


@pytest.mark.parametrize("compression", [LZ4, ZLIB, ZSTD, SNAPPY])
def test_an_empty_payload_round_trips(compression):
    assert decompress_payload(compression, compress_payload(compression, b""), 0) == b""


@pytest.mark.parametrize("compression", [LZ4, ZLIB, ZSTD, SNAPPY])
def test_a_payload_over_one_streaming_piece_round_trips(compression):
    data = bytes(range(256)) * (5 * 4096 + 3)  # > 5 MiB: several 1 MiB pieces for ZLIB
    assert decompress_payload(compression, memoryview(compress_payload(compression, data)), len(data)) == data


def test_unknown_codec_is_refused_by_number():
    with pytest.raises(InvalidMessage, match="unknown compression type 9"):
        decompress_payload(9, b"x", 1)
