"""Decoding a batch payload (layout in :mod:`.batch_encoding`) into its messages' metadata and bytes.

The common ``SingleMessageMetadata`` fields are hand-parsed; anything rarer goes through protobuf.
Decoding never raises ``IndexError``/``DecodeError``: bad input becomes
:class:`~broker_core.errors.InvalidMessage`. Nothing is sized from the count an entry states before that
count is checked against the bytes it came with (:func:`split_batch`; see
:mod:`broker_core.protocol.entry_limits`).
"""
from __future__ import annotations

import struct
from types import MappingProxyType
from typing import Mapping, Sequence

from google.protobuf.message import DecodeError

from broker_core.errors import InvalidMessage
from broker_core.protocol import pulsar_api_pb2
from broker_core.protocol.codec.entries import U32
from broker_core.protocol.codec.varint import read_varint
from broker_core.protocol.entry_limits import MIN_BATCH_FRAME

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


_PLAIN_META_CACHE: dict[int, SingleMeta] = {}
_PLAIN_META_CACHE_MAX = 1 << 16


def plain_meta(size: int) -> SingleMeta:
    """The (shared) metadata of a payload-only message of ``size`` bytes."""
    meta = _PLAIN_META_CACHE.get(size)
    if meta is None:
        meta = SingleMeta(size)
        if len(_PLAIN_META_CACHE) < _PLAIN_META_CACHE_MAX:
            _PLAIN_META_CACHE[size] = meta
    return meta


def _parse_single_meta(buf: bytes, pos: int, end: int) -> SingleMeta:
    """Hand-parse the common fields; anything else goes through protobuf."""
    if buf[pos] == 0x18 and end - pos <= 3:  # payload_size only: the overwhelmingly common case
        size, nxt = read_varint(buf, pos + 1)
        if nxt == end:
            return plain_meta(size)
    start = pos
    size = -1
    partition_key = ordering_key = sequence_id = None
    properties: dict[str, str] | None = None
    event_time = 0
    while pos < end:
        tag = buf[pos]
        pos += 1
        if tag == 0x18:
            size, pos = read_varint(buf, pos)
        elif tag == 0x12 or tag == 0x3A or tag == 0x0A:
            length, pos = read_varint(buf, pos)
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
            event_time, pos = read_varint(buf, pos)
        elif tag == 0x40:
            sequence_id, pos = read_varint(buf, pos)
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
                meta = cache_get(size) or plain_meta(size)
            elif meta_size == 3 and buf[meta_start] == 0x18 and buf[meta_start + 1] >= 0x80 \
                    and buf[meta_start + 2] < 0x80:
                size = (buf[meta_start + 1] & 0x7F) | (buf[meta_start + 2] << 7)
                meta = cache_get(size) or plain_meta(size)
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
    layout = uniform_layout(buf, num_messages)
    if layout is None:
        return None
    header_size, size = layout
    return [plain_meta(size)] * num_messages, split_uniform(buf, header_size, size, num_messages)


def uniform_layout(buf: bytes, num_messages: int) -> tuple[int, int] | None:
    """``(header_size, size)`` when ``buf`` is exactly ``num_messages`` times the same payload-only header
    (``u32 2|3 | 0x18 varint(size)``, ``header_size`` bytes) followed by ``size`` bytes; otherwise None. Such a
    batch's message ``i`` is ``buf[i * stride + header_size:(i + 1) * stride]``, ``stride = header_size +
    size`` (what a columnar reader slices without splitting: :func:`split_uniform` splits)."""
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
    return header_size, size


def split_uniform(buf: bytes, header_size: int, size: int, num_messages: int) -> tuple[bytes, ...]:
    """The message bytes of a batch whose :func:`uniform_layout` is ``(header_size, size)``, in one C call."""
    key = (header_size, size, num_messages)
    unpacker = _UNIFORM_UNPACKERS.get(key)
    if unpacker is None:
        unpacker = struct.Struct(f"{header_size}x{size}s" * num_messages)
        if len(_UNIFORM_UNPACKERS) >= _UNIFORM_UNPACKERS_MAX:
            _UNIFORM_UNPACKERS.clear()
        _UNIFORM_UNPACKERS[key] = unpacker
    return unpacker.unpack(buf)
