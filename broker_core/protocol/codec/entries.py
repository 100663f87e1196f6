"""One stored entry, and the broker's prefix on it: encode, decode, split.

One stored entry (see ``shared/PULSAR_WIRE.md``; all integers big-endian)::

    [ u16 0x0e02 | u32 size | BrokerEntryMetadata ]             optional, added by the broker
      u16 0x0e01 | u32 CRC32C | u32 metadataSize | MessageMetadata | payload
                   \\________ CRC32C covers metadataSize .. end ________/

The broker prefix is hand-encoded (byte-identical to what protobuf writes; the tests pin that). Decoding
never raises ``IndexError``/``DecodeError``: bad input becomes :class:`~broker_core.errors.InvalidMessage`
(bad magic, sizes, metadata) or :class:`~broker_core.errors.ChecksumError` (CRC mismatch).
"""
from __future__ import annotations

import struct

import google_crc32c
from google.protobuf.message import DecodeError, EncodeError

from broker_core.errors import ChecksumError, InvalidMessage
from broker_core.protocol import pulsar_api_pb2
from broker_core.protocol.codec.varint import encode_varint, read_varint

MAGIC_CRC32C = 0x0E01
MAGIC_BROKER_ENTRY_METADATA = 0x0E02

ENTRY_HEADER = struct.Struct(">HII")
"""magic (u16, 0x0e01) | CRC32C (u32) | metadataSize (u32); the metadata follows."""
BROKER_PREFIX_HEADER = struct.Struct(">HI")
"""magic (u16, 0x0e02) | size of BrokerEntryMetadata (u32); the metadata follows."""
_MAGIC_AND_CRC = struct.Struct(">HI")
"""The first two fields of ENTRY_HEADER, written before the CRC'd part."""
U32 = struct.Struct(">I")
"""metadataSize inside the CRC'd part; size of each SingleMessageMetadata in a batch."""

_CRC_START = 2 + 4  # the CRC covers everything after magic and CRC

Compression = pulsar_api_pb2.CompressionType


def encode_entry(metadata: pulsar_api_pb2.MessageMetadata, payload: bytes) -> bytes:
    """``0x0e01 | CRC32C | metadataSize | MessageMetadata | payload``.

    Raises :class:`InvalidMessage` when a required metadata field (producer_name, sequence_id,
    publish_time) is unset.
    """
    try:
        meta = metadata.SerializeToString()
    except EncodeError as exc:
        raise InvalidMessage(f"MessageMetadata is missing required fields: {exc}") from None
    sized_meta = U32.pack(len(meta)) + meta
    payload = payload if type(payload) is bytes else bytes(payload)
    crc = google_crc32c.extend(google_crc32c.value(sized_meta), payload)
    return b"".join((_MAGIC_AND_CRC.pack(MAGIC_CRC32C, crc), sized_meta, payload))


def decode_entry(data: bytes | memoryview, *, verify: bool = True, required: bool = True,
                 ) -> tuple[pulsar_api_pb2.MessageMetadata, memoryview]:
    """Parse one entry (a leading broker prefix is skipped) into (metadata, payload view).

    ``verify=False`` skips the CRC check (the broker re-reading its own verified log); ``required=False`` the
    check of the metadata's required fields (its stored entries had theirs checked when published: ~2.5 us
    of the ~6 us a dispatch key peek costs).
    """
    view = data if isinstance(data, memoryview) else memoryview(data)
    total = len(view)
    start = 0
    if total >= 2 and view[0] == 0x0E and view[1] == 0x02:
        start = split_broker_entry(view)[2]
    if total - start < ENTRY_HEADER.size:
        raise InvalidMessage(f"entry of {total - start} bytes is shorter than its "
                             f"{ENTRY_HEADER.size}-byte header")
    magic, crc, meta_size = ENTRY_HEADER.unpack_from(view, start)
    if magic != MAGIC_CRC32C:
        raise InvalidMessage(f"bad entry magic 0x{magic:04x} (expected 0x{MAGIC_CRC32C:04x}): "
                             "not a Pulsar entry")
    meta_start = start + ENTRY_HEADER.size
    if meta_size > total - meta_start:
        raise InvalidMessage(f"metadataSize {meta_size} exceeds the {total - meta_start} bytes left "
                             "in the entry (truncated entry?)")
    if verify:
        actual = google_crc32c.value(bytes(view[start + _CRC_START:]))
        if actual != crc:
            raise ChecksumError(f"entry CRC32C mismatch: stored 0x{crc:08x}, computed 0x{actual:08x}",
                                expected=crc, actual=actual)
    metadata = pulsar_api_pb2.MessageMetadata()
    try:
        metadata.ParseFromString(view[meta_start:meta_start + meta_size])
    except DecodeError as exc:
        raise InvalidMessage(f"unparseable MessageMetadata: {exc}") from None
    if required and not metadata.IsInitialized():
        missing = ", ".join(metadata.FindInitializationErrors())
        raise InvalidMessage(f"MessageMetadata is missing required fields: {missing}")
    return metadata, view[meta_start + meta_size:]


# ---------------------------------------------------------------------------------------------------
# Broker entry prefix.
def broker_entry_prefix(broker_timestamp: int, index: int) -> bytes:
    """``0x0e02 | size | BrokerEntryMetadata(broker_timestamp, index)``; ``index`` is the offset of the
    LAST message of the entry. Byte-identical to protobuf's encoding with both fields set."""
    body = b"\x08" + encode_varint(broker_timestamp) + b"\x10" + encode_varint(index)
    return BROKER_PREFIX_HEADER.pack(MAGIC_BROKER_ENTRY_METADATA, len(body)) + body


def split_broker_entry(stored: bytes | memoryview) -> tuple[int, int, int]:
    """(broker_timestamp, index, start of the 0x0e01 part) of a stored entry.

    Without a prefix: ``(-1, -1, 0)``; an absent field in the prefix reads as -1.
    """
    if len(stored) < 2 or stored[0] != 0x0E or stored[1] != 0x02:
        return -1, -1, 0
    if len(stored) < BROKER_PREFIX_HEADER.size:
        raise InvalidMessage("truncated BrokerEntryMetadata prefix")
    _, size = BROKER_PREFIX_HEADER.unpack_from(stored, 0)
    end = BROKER_PREFIX_HEADER.size + size
    if end > len(stored):
        raise InvalidMessage(f"BrokerEntryMetadata size {size} exceeds the entry's {len(stored)} bytes")
    body = bytes(stored[BROKER_PREFIX_HEADER.size:end])
    timestamp = index = -1
    pos = 0
    try:
        while pos < size:
            tag = body[pos]
            if tag == 0x08:
                timestamp, pos = read_varint(body, pos + 1)
            elif tag == 0x10:
                index, pos = read_varint(body, pos + 1)
            else:  # a field we do not hand-parse (a newer broker): let protobuf do it
                meta = pulsar_api_pb2.BrokerEntryMetadata.FromString(body)
                timestamp = meta.broker_timestamp if meta.HasField("broker_timestamp") else -1
                index = meta.index if meta.HasField("index") else -1
                break
    except (IndexError, DecodeError) as exc:
        raise InvalidMessage(f"unparseable BrokerEntryMetadata: {exc!r}") from None
    return timestamp, index, end
