"""The one entry codec of the read side: the bytes of a stored entry -> its messages.

Everything that reads entries goes through here -- the client's consumers and readers, the Spark source, the
admin's peek, and dispatch's key peeks (:func:`read_metadata`) -- so an entry is decoded the same way
everywhere. Steps, in the order a reader applies them (``shared/PULSAR_WIRE.md`` has the byte layout; the
hand-encoded fast paths live in :mod:`broker_core.protocol.codec`)::

    stored bytes --open_entry--> (broker timestamp, MessageMetadata, payload)      prefix skipped, CRC checked
    payload ------payload_of---> decompressed payload                              bounded by uncompressed_size
    ----------split_messages---> (per-message metadata, per-message bytes)         a batch split, count checked
    ack_set ------kept_indexes-> which of them are still unacknowledged            (Pulsar's int64 words)

A chunk (:func:`is_chunk`) is not split: its payload goes to the pure reassembler of
:mod:`broker_core.protocol.chunks`, and the reassembled payload through :func:`payload_of` and
:func:`split_messages` like any unbatched message. Message ids are written and read as Pulsar's
``MessageIdData`` bytes by :func:`message_id_bytes` and :func:`parse_message_id` (what pulsar-client's
``MessageId.serialize()`` writes).

Pure functions; bad input raises :class:`~broker_core.errors.InvalidMessage` (or ``ChecksumError``) saying
what is wrong, never ``IndexError``/``DecodeError``.
"""
from __future__ import annotations

from typing import NamedTuple, Sequence

from google.protobuf.message import DecodeError

from broker_core.errors import InvalidMessage
from broker_core.protocol import codec, pulsar_api_pb2
from broker_core.protocol.ack_set import (from_words, set_indexes, to_words,  # noqa: F401  (the codec's API)
                                          unacked_bits)
from broker_core.protocol.compression import decompress_payload
from broker_core.protocol.entry_limits import unknown_compression

SingleMeta = codec.SingleMeta
"""Decoded ``SingleMessageMetadata`` of one batched message (None stands for an unbatched message)."""

_U64 = (1 << 64) - 1
_PREFIX = codec.BROKER_PREFIX_HEADER


class OpenedEntry(NamedTuple):
    """A stored entry with its headers read."""

    metadata: pulsar_api_pb2.MessageMetadata
    payload: memoryview
    """The bytes after the metadata: compressed as ``metadata.compression`` says."""
    broker_timestamp: int
    """``BrokerEntryMetadata.broker_timestamp`` (ms), -1 when the entry has no broker prefix."""


def open_entry(data: bytes | memoryview, *, verify: bool = True) -> OpenedEntry:
    """Skip the broker prefix, check the CRC (unless ``verify=False``), parse the metadata."""
    broker_timestamp, _, start = codec.split_broker_entry(data)
    view = data if isinstance(data, memoryview) else memoryview(data)
    metadata, payload = codec.decode_entry(view[start:] if start else view, verify=verify)
    return OpenedEntry(metadata, payload, broker_timestamp)


def read_metadata(data: bytes | memoryview) -> pulsar_api_pb2.MessageMetadata:
    """The metadata of an entry the broker itself verified (no CRC check): keys and counts for dispatch (once
    per entry for Key_Shared). The broker's prefix is skipped by its size, not decoded (its fields are not
    needed here), and the metadata's required fields are not checked again (they were when it was published); a
    prefix size past the entry's end leaves nothing, which :func:`~.codec.decode_entry` refuses."""
    view = data if isinstance(data, memoryview) else memoryview(data)
    if len(view) >= _PREFIX.size and view[0] == 0x0E and view[1] == 0x02:
        view = view[_PREFIX.size + _PREFIX.unpack_from(view)[1]:]
    return codec.decode_entry(view, verify=False, required=False)[0]


def is_chunk(metadata: pulsar_api_pb2.MessageMetadata) -> bool:
    """One chunk of a message split over several entries (never a batch)."""
    return metadata.num_chunks_from_msg > 1 and not metadata.HasField("num_messages_in_batch")


def message_count(metadata: pulsar_api_pb2.MessageMetadata) -> int:
    """How many messages the entry holds (a chunk counts as one)."""
    return metadata.num_messages_in_batch if metadata.HasField("num_messages_in_batch") else 1


def payload_of(metadata: pulsar_api_pb2.MessageMetadata, payload: bytes | memoryview) -> bytes | memoryview:
    """The payload of an entry or a reassembled chunked message, decompressed as its metadata says (at most
    ``uncompressed_size`` bytes); raises :class:`InvalidMessage` when that fails or the codec is unknown."""
    compression = metadata.compression
    if compression:
        return decompress_payload(compression, payload, metadata.uncompressed_size)
    if metadata.uncompressed_size and metadata.uncompressed_size != len(payload):
        raise unexpected_payload_size(metadata, len(payload))
    return payload


def unexpected_payload_size(metadata: pulsar_api_pb2.MessageMetadata, actual: int) -> InvalidMessage:
    """The error for an uncompressed payload whose size is not the metadata's ``uncompressed_size``: most
    likely a compression type this code does not know (protobuf reads an unknown enum value as NONE and
    keeps the number among the unknown fields)."""
    unknown = unknown_compression(metadata)
    if unknown is not None:
        return InvalidMessage(f"unknown compression type {unknown}: this client reads NONE, LZ4, ZLIB, ZSTD and "
                              "SNAPPY; upgrade the consumer or produce with one of those")
    return InvalidMessage(f"the payload is {actual} bytes but the metadata's uncompressed_size says "
                          f"{metadata.uncompressed_size}")


def split_messages(metadata: pulsar_api_pb2.MessageMetadata, payload: bytes | memoryview,
                   ) -> tuple[Sequence[SingleMeta | None], Sequence[bytes]]:
    """The messages of a (non-chunk, or reassembled) entry: per-message metadata (``(None,)`` for an
    unbatched message, whose fields are the entry's) and, in the same order, their bytes. The payload is
    decompressed first; a batch count the bytes cannot hold is refused before anything is built."""
    data = payload_of(metadata, payload)
    if not metadata.HasField("num_messages_in_batch"):
        return (None,), (data if type(data) is bytes else bytes(data),)
    return codec.split_batch(data, metadata.num_messages_in_batch)


def kept_indexes(ack_set: Sequence[int], num_messages: int) -> list[int] | None:
    """Indexes of the messages a delivery's ``ack_set`` leaves unacknowledged (bit set), or None when the
    delivery has no ack set (all of them). Example: ack set ``[0b1001]`` of 4 messages keeps ``[0, 3]``."""
    if not ack_set:
        return None
    return set_indexes(from_words(ack_set, num_messages), num_messages)


# ---------------------------------------------------------------------------------------------------
# Message ids: Pulsar's MessageIdData, byte for byte as pulsar-client's MessageId.serialize() writes it.
#
#   0x08 varint(ledgerId)  0x10 varint(entryId)         always; -1 (earliest) as the 64-bit pattern
#   0x18 varint(partition)                              when >= 0
#   0x20 varint(batch_index)                            when >= 0
#   0x30 varint(batch_size)                             when > 0 (a message of a batch)
def _varint(value: int) -> bytes:
    return codec.encode_varint(value & _U64)


def message_id_prefix(ledger_id: int, entry_id: int, partition: int) -> bytes:
    """The ledger, entry and partition fields of :func:`message_id_bytes` (the Spark source appends each
    message's batch fields to one prefix per entry)."""
    prefix = b"\x08" + _varint(ledger_id) + b"\x10" + _varint(entry_id)
    return prefix + b"\x18" + _varint(partition) if partition >= 0 else prefix


def batch_fields(batch_index: int, batch_size: int) -> bytes:
    """The batch index and size fields of :func:`message_id_bytes`."""
    out = b"\x20" + _varint(batch_index) if batch_index >= 0 else b""
    return out + b"\x30" + _varint(batch_size) if batch_size > 0 else out


def message_id_bytes(ledger_id: int, entry_id: int, partition: int = -1, batch_index: int = -1,
                     batch_size: int = 0) -> bytes:
    """``MessageIdData`` bytes. Example: ledger 2, entry 3, partition 1, batch index 4 ->
    ``08 02 10 03 18 01 20 04``."""
    return message_id_prefix(ledger_id, entry_id, partition) + batch_fields(batch_index, batch_size)


def _signed64(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def parse_message_id(data: bytes) -> tuple[int, int, int, int, int]:
    """``(ledger_id, entry_id, partition, batch_index, batch_size)`` of ``MessageIdData`` bytes (absent
    partition and batch index read as -1, an absent batch size as 0); ``ValueError`` for anything else."""
    parsed = pulsar_api_pb2.MessageIdData()
    try:
        parsed.ParseFromString(bytes(data))
    except (DecodeError, TypeError) as exc:
        raise ValueError(f"not a serialized MessageId ({exc}): pass the bytes MessageId.serialize() "
                         "returned") from None
    if not parsed.IsInitialized():
        raise ValueError("not a serialized MessageId (no ledger or entry id): pass the bytes "
                         "MessageId.serialize() returned")
    return (_signed64(parsed.ledgerId), _signed64(parsed.entryId), parsed.partition, parsed.batch_index,
            parsed.batch_size)
