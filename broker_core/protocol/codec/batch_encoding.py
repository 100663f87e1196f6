"""Encoding a batch payload: the messages a producer batches into one entry.

A batch payload (before compression) is ``num_messages_in_batch`` times::

    u32 size | SingleMessageMetadata (size bytes) | payload_size bytes of message

The ``SingleMessageMetadata`` of messages that carry only a payload, a key, an ordering key, a sequence id,
an event time or properties is hand-encoded (byte-identical to what protobuf writes; the tests pin that).
Anything rarer goes through protobuf. :mod:`.batch_decoding` reads it back.
"""
from __future__ import annotations

from typing import Mapping, NamedTuple, Sequence, Union

from broker_core.protocol import pulsar_api_pb2
from broker_core.protocol.codec.entries import U32
from broker_core.protocol.codec.varint import BYTE_VALUES, encode_varint


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
_PLAIN_HEADERS = [b"\x00\x00\x00\x02\x18" + BYTE_VALUES[n] for n in range(0x80)] \
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
            meta = b"\x12" + BYTE_VALUES[len(key)] + key + _PLAIN_METAS[payload_size]
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
