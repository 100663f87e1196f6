"""Protobuf's base-128 varints, hand-written for the codec's fast paths (:mod:`.entries`, :mod:`.batch_encoding`,
:mod:`.batch_decoding`)."""
from __future__ import annotations

from broker_core.errors import InvalidMessage

_MAX_VARINT_SHIFT = 64

BYTE_VALUES = [bytes((i,)) for i in range(256)]
"""``bytes((i,))`` for every byte value: a one-byte varint (or length) without building it."""


def encode_varint(value: int) -> bytes:
    """Protobuf's base-128 varint; a negative value as its 64-bit two's complement."""
    if value < 0:  # negative int32/int64 are written as 10-byte two's complement
        value += 1 << 64
    if value < 0x80:
        return BYTE_VALUES[value]
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def read_varint(buf: bytes, pos: int) -> tuple[int, int]:
    """(value, next position); raises IndexError on truncation (callers convert it)."""
    byte = buf[pos]
    if byte < 0x80:
        return byte, pos + 1
    result = byte & 0x7F
    shift = 7
    pos += 1
    while True:
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
        shift += 7
        if shift >= _MAX_VARINT_SHIFT + 7:
            raise InvalidMessage("malformed varint in SingleMessageMetadata")
