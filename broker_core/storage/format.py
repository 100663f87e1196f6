"""The stored frame: one frame per entry, one CRC per frame.

Layout (big-endian, declared once as :data:`HEADER`)::

     0        4        8                16       20               28       32
     +--------+--------+----------------+--------+----------------+--------+---------------
     | magic  | length | offset         | count  | publish_time   | crc32c | data (length)
     +--------+--------+----------------+--------+----------------+--------+---------------

- ``magic`` is ``0x504C4631`` (``b"PLF1"``), so a zeroed header is never valid (``crc32c(b"") == 0``
  would otherwise let an all-zero frame pass its own checksum).
- ``length`` is checked against a maximum *before* any buffer is allocated for the data.
- ``crc32c`` covers the header bytes ``[4, 28)`` and the data, so every field but the magic (checked
  by equality) is protected.

A frame is valid when magic matches, ``length <= max_data``, ``count >= 1`` and the CRC matches.
"""
from __future__ import annotations

import struct
from typing import NamedTuple

import google_crc32c

#: The frame header. One comment per field; offsets are derived from this declaration.
HEADER = struct.Struct(
    ">"
    "I"  # magic: MAGIC
    "I"  # length: bytes of entry data after the header
    "Q"  # offset: offset of the entry's first message
    "I"  # count: number of messages in the entry, >= 1
    "Q"  # publish_time: ms, from the producer's metadata (seek by time)
    "I"  # crc32c: over header[CRC_START:CRC_END] + data
)
HEADER_SIZE = HEADER.size
MAGIC = 0x504C4631
MAGIC_BYTES = MAGIC.to_bytes(4, "big")
CRC_START = 4
CRC_END = HEADER_SIZE - 4
#: Hard cap on one frame's data, whatever the configured ``max_entry_bytes``.
MAX_FRAME_DATA = 64 << 20

_COVERED = struct.Struct(">IQIQ")  # the CRC-covered fields, to encode them before the CRC is known
assert _COVERED.size == CRC_END - CRC_START


class InvalidFrame(ValueError):
    """A frame that does not verify; ``reason`` says which check failed. Callers turn it into
    :class:`broker_core.errors.CorruptLog` (mid-segment) or a torn tail (recovery)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class FrameHeader(NamedTuple):
    """A decoded, bounds-checked header (its CRC is checked by :func:`verify`)."""

    length: int
    """bytes of data after the header"""
    offset: int
    """offset of the entry's first message"""
    count: int
    """number of messages in the entry"""
    publish_time: int
    """publish time in ms"""
    crc: int
    """stored CRC32C of header[4:28] + data"""

    @property
    def frame_size(self) -> int:
        return HEADER_SIZE + self.length

    @property
    def end_offset(self) -> int:
        return self.offset + self.count


def encode_header(data: bytes, offset: int, count: int, publish_time: int) -> bytes:
    """The 32 header bytes for ``data``; write them followed by ``data`` itself (no concatenation)."""
    covered = _COVERED.pack(len(data), offset, count, publish_time)
    crc = google_crc32c.extend(google_crc32c.value(covered), data)
    return MAGIC_BYTES + covered + crc.to_bytes(4, "big")


def decode_header(buf: bytes | memoryview, max_data: int = MAX_FRAME_DATA) -> FrameHeader:
    """Decode and bounds-check a header; raises :class:`InvalidFrame` (never allocates ``length``)."""
    if len(buf) < HEADER_SIZE:
        raise InvalidFrame("short header")
    magic, length, offset, count, publish_time, crc = HEADER.unpack_from(buf)
    if magic != MAGIC:
        raise InvalidFrame("bad magic")
    if length > max_data:
        raise InvalidFrame(f"length {length} exceeds the maximum {max_data}")
    if count < 1:
        raise InvalidFrame("count is zero")
    return FrameHeader(length, offset, count, publish_time, crc)


def frame_crc(header_bytes: bytes | memoryview, data: bytes) -> int:
    """CRC32C of a frame as stored: over ``header_bytes[4:28]`` and ``data`` (``bytes``: the C
    extension rejects other buffers)."""
    return google_crc32c.extend(google_crc32c.value(bytes(header_bytes[CRC_START:CRC_END])), data)


def verify(header_bytes: bytes | memoryview, header: FrameHeader, data: bytes) -> None:
    """Raise :class:`InvalidFrame` unless ``data`` is complete and matches the header's CRC."""
    if len(data) != header.length:
        raise InvalidFrame("truncated data")
    if frame_crc(header_bytes, data) != header.crc:
        raise InvalidFrame("CRC mismatch")


def decode_frame(buf: bytes | memoryview, max_data: int = MAX_FRAME_DATA) -> tuple[FrameHeader, bytes]:
    """Decode and fully verify the frame at the start of ``buf``; returns its header and data."""
    header = decode_header(buf, max_data)
    data = bytes(buf[HEADER_SIZE:HEADER_SIZE + header.length])
    verify(buf[:HEADER_SIZE], header, data)
    return header, data
