"""Pulsar's entry format: encode and decode entries, batches and the broker's entry prefix.

One stored entry (see ``shared/PULSAR_WIRE.md``; all integers big-endian)::

    [ u16 0x0e02 | u32 size | BrokerEntryMetadata ]             optional, added by the broker
      u16 0x0e01 | u32 CRC32C | u32 metadataSize | MessageMetadata | payload
                   \\________ CRC32C covers metadataSize .. end ________/

A batch payload (after decompression) is ``num_messages_in_batch`` times::

    u32 size | SingleMessageMetadata (size bytes) | payload_size bytes of message

The hot paths are hand-encoded: the broker prefix, and the ``SingleMessageMetadata`` of messages that carry
only a payload, a key, an ordering key, a sequence id, an event time or properties (byte-identical to
what protobuf writes; the tests pin that). Anything rarer goes through protobuf.

Decoding never raises ``IndexError``/``DecodeError``: bad input becomes
:class:`~broker_core.errors.InvalidMessage` (bad magic, sizes, metadata) or
:class:`~broker_core.errors.ChecksumError` (CRC mismatch). Nothing is sized from a count the entry states
before that count is checked against the bytes it came with (:func:`check_entry` for the broker,
:func:`split_batch` for readers; see :mod:`broker_core.protocol.entry_limits`).
"""
from __future__ import annotations

import struct
from types import MappingProxyType
from typing import Mapping, NamedTuple, Sequence, Union

import google_crc32c
from google.protobuf.message import DecodeError, EncodeError

from broker_core.errors import ChecksumError, InvalidMessage
from broker_core.protocol import pulsar_api_pb2
from broker_core.protocol.entry_limits import (  # noqa: F401  (check_entry: part of the codec's API)
    FRAME_PADDING, MIN_BATCH_FRAME, check_entry)

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
_MAX_VARINT_SHIFT = 64

Compression = pulsar_api_pb2.CompressionType


# ---------------------------------------------------------------------------------------------------
# Varints (protobuf base-128).
def encode_varint(value: int) -> bytes:
    """Protobuf's base-128 varint; a negative value as its 64-bit two's complement."""
    if value < 0:  # negative int32/int64 are written as 10-byte two's complement
        value += 1 << 64
    if value < 0x80:
        return _BYTES[value]
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


_BYTES = [bytes((i,)) for i in range(256)]


def _read_varint(buf: bytes, pos: int) -> tuple[int, int]:
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


# ---------------------------------------------------------------------------------------------------
# Entries.
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


def decode_entry(data: bytes | memoryview, *, verify: bool = True,
                 ) -> tuple[pulsar_api_pb2.MessageMetadata, memoryview]:
    """Parse one entry (a leading broker prefix is skipped) into (metadata, payload view).

    ``verify=False`` skips the CRC check (the broker re-reading its own verified log).
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
    if not metadata.IsInitialized():
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
                timestamp, pos = _read_varint(body, pos + 1)
            elif tag == 0x10:
                index, pos = _read_varint(body, pos + 1)
            else:  # a field we do not hand-parse (a newer broker): let protobuf do it
                meta = pulsar_api_pb2.BrokerEntryMetadata.FromString(body)
                timestamp = meta.broker_timestamp if meta.HasField("broker_timestamp") else -1
                index = meta.index if meta.HasField("index") else -1
                break
    except (IndexError, DecodeError) as exc:
        raise InvalidMessage(f"unparseable BrokerEntryMetadata: {exc!r}") from None
    return timestamp, index, end


# ---------------------------------------------------------------------------------------------------
# Batches.
_NO_PROPERTIES: Mapping[str, str] = MappingProxyType({})


class SingleMeta:
    """A decoded ``SingleMessageMetadata`` (same field names; absent optional fields are ``None``,
    ``properties`` is a read-only-by-convention mapping). Instances may be shared: do not mutate."""

    __slots__ = ("payload_size", "partition_key", "ordering_key", "properties", "event_time",
                 "sequence_id", "null_value", "partition_key_b64_encoded", "null_partition_key",
                 "compacted_out")

    def __init__(self, payload_size: int, partition_key: str | None = None,
                 ordering_key: bytes | None = None, properties: Mapping[str, str] = _NO_PROPERTIES,
                 event_time: int = 0, sequence_id: int | None = None, null_value: bool = False,
                 partition_key_b64_encoded: bool = False, null_partition_key: bool = False,
                 compacted_out: bool = False) -> None:
        self.payload_size = payload_size
        self.partition_key = partition_key
        self.ordering_key = ordering_key
        self.properties = properties
        self.event_time = event_time
        self.sequence_id = sequence_id
        self.null_value = null_value
        self.partition_key_b64_encoded = partition_key_b64_encoded
        self.null_partition_key = null_partition_key
        self.compacted_out = compacted_out

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__)
        return f"SingleMeta({fields})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SingleMeta) and all(
            getattr(self, n) == getattr(other, n) for n in self.__slots__)

    @classmethod
    def from_proto(cls, meta: pulsar_api_pb2.SingleMessageMetadata) -> "SingleMeta":
        has = meta.HasField
        return cls(meta.payload_size,
                   meta.partition_key if has("partition_key") else None,
                   meta.ordering_key if has("ordering_key") else None,
                   {kv.key: kv.value for kv in meta.properties} if meta.properties else _NO_PROPERTIES,
                   meta.event_time,
                   meta.sequence_id if has("sequence_id") else None,
                   meta.null_value, meta.partition_key_b64_encoded, meta.null_partition_key,
                   meta.compacted_out)


class BatchMessage(NamedTuple):
    """One message to put in a batch (see :func:`encode_batch`)."""

    payload: bytes
    partition_key: str | None = None
    ordering_key: bytes | None = None
    properties: Mapping[str, str] | None = None
    event_time: int = 0
    """0: none."""
    sequence_id: int | None = None
    """None: derived by readers from the entry's sequence_id + index."""


def _len_delimited(tag: bytes, value: bytes) -> bytes:
    return tag + encode_varint(len(value)) + value


def _plain_header(payload_size: int) -> bytes:
    meta = b"\x18" + encode_varint(payload_size)
    return U32.pack(len(meta)) + meta


# _plain_header(n) for every n < 4096, written out (varints of 1 and 2 bytes): the table is built at every
# start, and building it through encode_varint was ~3 ms of it
_PLAIN_HEADERS = [b"\x00\x00\x00\x02\x18" + _BYTES[n] for n in range(0x80)] \
    + [b"\x00\x00\x00\x03\x18" + bytes((n & 0x7F | 0x80, n >> 7)) for n in range(0x80, 4096)]
_PLAIN_METAS = [h[4:] for h in _PLAIN_HEADERS]


def single_message_header(payload_size: int, partition_key: str | None = None,
                          ordering_key: bytes | None = None,
                          properties: Mapping[str, str] | None = None, event_time: int = 0,
                          sequence_id: int | None = None) -> bytes:
    """``u32 size | SingleMessageMetadata`` for one batched message, hand-encoded (fields in number
    order, exactly as protobuf writes them). Append the payload to get the message's batch bytes."""
    if partition_key is None and ordering_key is None and not properties and not event_time \
            and sequence_id is None:
        if payload_size < 4096:
            return _PLAIN_HEADERS[payload_size]
        return _plain_header(payload_size)
    if ordering_key is None and not properties and not event_time and sequence_id is None:
        key = partition_key.encode()  # type: ignore[union-attr]
        if len(key) < 0x80 and payload_size < 4096:  # key-only: one concatenation
            meta = b"\x12" + _BYTES[len(key)] + key + _PLAIN_METAS[payload_size]
            return U32.pack(len(meta)) + meta
    parts = []
    if properties:
        for key, value in properties.items():
            kv = _len_delimited(b"\x0a", key.encode()) + _len_delimited(b"\x12", value.encode())
            parts.append(_len_delimited(b"\x0a", kv))
    if partition_key is not None:
        parts.append(_len_delimited(b"\x12", partition_key.encode()))
    parts.append(b"\x18" + encode_varint(payload_size))
    if event_time:
        parts.append(b"\x28" + encode_varint(event_time))
    if ordering_key is not None:
        parts.append(_len_delimited(b"\x3a", bytes(ordering_key)))
    if sequence_id is not None:
        parts.append(b"\x40" + encode_varint(sequence_id))
    meta = b"".join(parts)
    return U32.pack(len(meta)) + meta


BatchItem = Union[bytes, BatchMessage, "tuple[pulsar_api_pb2.SingleMessageMetadata, bytes]"]


def encode_batch(messages: Sequence[BatchItem]) -> bytes:
    """The batch payload for ``messages``: each a payload (``bytes``), a :class:`BatchMessage`, or a
    ``(SingleMessageMetadata, payload)`` pair for fields without a fast path (``payload_size`` is set
    here). Set ``num_messages_in_batch = len(messages)`` in the entry's metadata."""
    parts: list[bytes] = []
    append = parts.append
    plain = _PLAIN_HEADERS
    for item in messages:
        if type(item) is bytes:
            size = len(item)
            append(plain[size] if size < 4096 else _plain_header(size))
            append(item)
        elif isinstance(item, BatchMessage):
            payload = bytes(item.payload)
            append(single_message_header(len(payload), item.partition_key, item.ordering_key,
                                         item.properties, item.event_time, item.sequence_id))
            append(payload)
        elif isinstance(item, tuple) and len(item) == 2:
            meta, payload = item
            payload = bytes(payload)
            meta = pulsar_api_pb2.SingleMessageMetadata.FromString(meta.SerializeToString())
            meta.payload_size = len(payload)
            encoded = meta.SerializeToString()
            append(U32.pack(len(encoded)))
            append(encoded)
            append(payload)
        else:
            payload = bytes(item)  # bytearray / memoryview
            append(_plain_header(len(payload)))
            append(payload)
    return b"".join(parts)


_PLAIN_META_CACHE: dict[int, SingleMeta] = {}
_PLAIN_META_CACHE_MAX = 1 << 16


def _plain_meta(size: int) -> SingleMeta:
    meta = _PLAIN_META_CACHE.get(size)
    if meta is None:
        meta = SingleMeta(size)
        if len(_PLAIN_META_CACHE) < _PLAIN_META_CACHE_MAX:
            _PLAIN_META_CACHE[size] = meta
    return meta


def _parse_single_meta(buf: bytes, pos: int, end: int) -> SingleMeta:
    """Hand-parse the common fields; anything else goes through protobuf."""
    if buf[pos] == 0x18 and end - pos <= 3:  # payload_size only: the overwhelmingly common case
        size, nxt = _read_varint(buf, pos + 1)
        if nxt == end:
            return _plain_meta(size)
    start = pos
    size = -1
    partition_key = ordering_key = sequence_id = None
    properties: dict[str, str] | None = None
    event_time = 0
    while pos < end:
        tag = buf[pos]
        pos += 1
        if tag == 0x18:
            size, pos = _read_varint(buf, pos)
        elif tag == 0x12 or tag == 0x3A or tag == 0x0A:
            length, pos = _read_varint(buf, pos)
            value = buf[pos:pos + length]
            pos += length
            if tag == 0x12:
                partition_key = value.decode()
            elif tag == 0x3A:
                ordering_key = value
            else:
                if properties is None:
                    properties = {}
                kv = pulsar_api_pb2.KeyValue.FromString(value)
                properties[kv.key] = kv.value
        elif tag == 0x28:
            event_time, pos = _read_varint(buf, pos)
        elif tag == 0x40:
            sequence_id, pos = _read_varint(buf, pos)
        else:
            meta = pulsar_api_pb2.SingleMessageMetadata.FromString(buf[start:end])
            if not meta.IsInitialized():
                raise InvalidMessage("SingleMessageMetadata without payload_size")
            return SingleMeta.from_proto(meta)
    if pos != end:
        raise InvalidMessage("SingleMessageMetadata overruns its size")
    if size < 0 or size > 0x7FFFFFFF:
        raise InvalidMessage("SingleMessageMetadata without a valid payload_size")
    return SingleMeta(size, partition_key, ordering_key, properties or _NO_PROPERTIES, event_time,
                      sequence_id)


def decode_batch(payload: bytes | memoryview, num_messages: int) -> list[tuple[SingleMeta, bytes]]:
    """Split a (decompressed) batch payload into ``num_messages`` (metadata, message bytes) pairs."""
    return list(zip(*split_batch(payload, num_messages)))


def split_batch(payload: bytes | memoryview, num_messages: int,
                ) -> tuple[Sequence[SingleMeta], Sequence[bytes]]:
    """Split a (decompressed) batch payload into ``num_messages`` metadata and, in the same order,
    ``num_messages`` message bytes (two sequences: the consumer builds its messages from both at once).

    A batch of payload-only messages of one size (what a producer of fixed-size records writes) is
    checked and split in a few C-level calls; any other batch message by message. A count the payload
    cannot hold (fewer than ``num_messages * MIN_BATCH_FRAME`` bytes) is refused before anything is built.
    """
    buf = payload if type(payload) is bytes else bytes(payload)
    if not 1 <= num_messages <= len(buf) // MIN_BATCH_FRAME:
        raise InvalidMessage(f"the batch claims {num_messages} messages but its {len(buf)} bytes hold at most "
                             f"{len(buf) // MIN_BATCH_FRAME} (each takes at least {MIN_BATCH_FRAME} bytes)")
    uniform = _split_uniform(buf, num_messages)
    if uniform is not None:
        return uniform
    total = len(buf)
    metas: list[SingleMeta] = []
    payloads: list[bytes] = []
    add_meta = metas.append
    add_payload = payloads.append
    unpack_u32 = U32.unpack_from
    cache_get = _PLAIN_META_CACHE.get
    pos = 0
    try:
        for _ in range(num_messages):
            (meta_size,) = unpack_u32(buf, pos)
            meta_start = pos + 4
            pos = meta_start + meta_size
            if meta_size == 0 or pos > total:
                raise InvalidMessage(f"SingleMessageMetadata size {meta_size} at byte {meta_start - 4} "
                                     f"is invalid for a {total}-byte batch")
            # Inlined fast path: payload_size only, as a 1- or 2-byte varint.
            if meta_size == 2 and buf[meta_start] == 0x18 and buf[meta_start + 1] < 0x80:
                size = buf[meta_start + 1]
                meta = cache_get(size) or _plain_meta(size)
            elif meta_size == 3 and buf[meta_start] == 0x18 and buf[meta_start + 1] >= 0x80 \
                    and buf[meta_start + 2] < 0x80:
                size = (buf[meta_start + 1] & 0x7F) | (buf[meta_start + 2] << 7)
                meta = cache_get(size) or _plain_meta(size)
            else:
                meta = _parse_single_meta(buf, meta_start, pos)
                size = meta.payload_size
            end = pos + size
            if end > total:
                raise InvalidMessage(f"message payload_size {size} overruns the {total}-byte batch")
            add_meta(meta)
            add_payload(buf[pos:end])
            pos = end
    except (struct.error, IndexError, DecodeError, UnicodeDecodeError) as exc:
        raise InvalidMessage(f"malformed batch payload ({len(metas)} of {num_messages} messages "
                             f"parsed): {exc}") from None
    return metas, payloads


_UNIFORM_UNPACKERS: dict[tuple[int, int, int], struct.Struct] = {}
_UNIFORM_UNPACKERS_MAX = 64


def _split_uniform(buf: bytes, num_messages: int) -> tuple[list[SingleMeta], tuple[bytes, ...]] | None:
    """(metadata, payloads) when ``buf`` is exactly ``num_messages`` times the same payload-only header
    (``u32 2|3 | 0x18 varint(size)``) followed by ``size`` bytes; otherwise None (nothing raised)."""
    total = len(buf)
    if num_messages <= 0 or total < 6:
        return None
    if buf[:5] == b"\x00\x00\x00\x02\x18" and buf[5] < 0x80:
        header_size, size = 6, buf[5]
    elif total >= 7 and buf[:5] == b"\x00\x00\x00\x03\x18" and buf[5] >= 0x80 and buf[6] < 0x80:
        header_size, size = 7, (buf[5] & 0x7F) | (buf[6] << 7)
    else:
        return None
    stride = header_size + size
    if stride * num_messages != total:
        return None
    # Every message's header equals the first one: compare each header byte column at once.
    for k in range(header_size):
        if buf[k::stride] != buf[k:k + 1] * num_messages:
            return None
    key = (header_size, size, num_messages)
    unpacker = _UNIFORM_UNPACKERS.get(key)
    if unpacker is None:
        unpacker = struct.Struct(f"{header_size}x{size}s" * num_messages)
        if len(_UNIFORM_UNPACKERS) >= _UNIFORM_UNPACKERS_MAX:
            _UNIFORM_UNPACKERS.clear()
        _UNIFORM_UNPACKERS[key] = unpacker
    return [_plain_meta(size)] * num_messages, unpacker.unpack(buf)
