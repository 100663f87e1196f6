"""The stored frame: layout, validation and what never validates."""
import pytest

from broker_core.storage.format import (
    HEADER, HEADER_SIZE, MAGIC, MAX_FRAME_DATA, InvalidFrame, decode_frame, decode_header, encode_header)


def frame(data=b"payload", offset=7, count=3, publish_time=1_700_000_000_123):
    return encode_header(data, offset, count, publish_time) + data


def test_header_is_32_bytes_starting_with_the_magic():
    assert HEADER_SIZE == HEADER.size == 32
    assert frame()[:4] == b"PLF1" and MAGIC == 0x504C4631


def test_a_frame_round_trips_every_field():
    header, data = decode_frame(frame())
    assert (header.length, header.offset, header.count, header.publish_time) == (7, 7, 3, 1_700_000_000_123)
    assert data == b"payload" and header.end_offset == 10 and header.frame_size == 39


def test_an_empty_entry_is_a_valid_frame():
    header, data = decode_frame(frame(b""))
    assert data == b"" and header.length == 0


def test_an_all_zero_frame_never_validates():
    for size in (HEADER_SIZE, HEADER_SIZE + 1, 4096):
        with pytest.raises(InvalidFrame, match="magic"):
            decode_frame(bytes(size))


def test_a_zero_message_count_is_invalid_even_with_a_matching_crc():
    with pytest.raises(InvalidFrame, match="count"):
        decode_frame(frame(count=0))


def test_a_huge_length_is_rejected_from_the_header_alone():
    header = bytearray(frame()[:HEADER_SIZE])
    header[4:8] = (0xFFFFFFFF).to_bytes(4, "big")
    with pytest.raises(InvalidFrame, match="exceeds"):
        decode_header(bytes(header))
    header[4:8] = (MAX_FRAME_DATA + 1).to_bytes(4, "big")
    with pytest.raises(InvalidFrame, match="exceeds"):
        decode_header(bytes(header))


def test_the_length_bound_is_configurable():
    with pytest.raises(InvalidFrame):
        decode_header(frame(b"x" * 100), max_data=99)
    assert decode_header(frame(b"x" * 100), max_data=100).length == 100


def test_the_crc_covers_every_header_field_and_the_data():
    good = frame()
    for i in range(4, len(good)):
        if 28 <= i < 32:
            continue  # the CRC itself
        bad = bytearray(good)
        bad[i] ^= 0x01
        with pytest.raises(InvalidFrame):
            decode_frame(bytes(bad))


def test_a_flipped_crc_byte_is_detected():
    bad = bytearray(frame())
    bad[30] ^= 0x80
    with pytest.raises(InvalidFrame, match="CRC"):
        decode_frame(bytes(bad))


def test_truncated_data_is_invalid():
    with pytest.raises(InvalidFrame, match="truncated"):
        decode_frame(frame()[:-1])


def test_a_short_header_is_invalid():
    with pytest.raises(InvalidFrame, match="short"):
        decode_header(frame()[:31])
