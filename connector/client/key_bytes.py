"""Partition keys given as bytes: Pulsar's ``partition_key_b64_encoded`` (Java's ``keyBytes``/``getKeyBytes``).

A Pulsar message key is a string field; a key made of arbitrary bytes travels as their base64 text with the
metadata flag ``partition_key_b64_encoded``. Readers that ask for the key's bytes (Java's ``getKeyBytes()``,
the Spark source's ``__key`` column) base64-decode a flagged key and take any other key's UTF-8 bytes;
``Message.partition_key()`` (as pulsar-client's) returns the text as stored, base64 for a flagged key.

pulsar-client 3.13 for Python has no way to send or read key bytes, so neither has our public API; the
Spark sink sends a binary ``__key`` through :class:`B64Key`, a ``str`` (the base64 text: routing, key-based
batching and Key_Shared see it as any key) that the producer recognises when it writes the metadata.
"""
from __future__ import annotations

import base64
import binascii
from typing import Any, Mapping

from broker_core.protocol import pulsar_api_pb2
from broker_core.protocol.codec.entries import U32


class B64Key(str):
    """A partition key that is the base64 text of bytes; messages sent with it carry
    ``partition_key_b64_encoded``."""

    __slots__ = ()

    @classmethod
    def of(cls, data: bytes) -> "B64Key":
        return cls(base64.b64encode(bytes(data)).decode("ascii"))


def is_b64(key: object) -> bool:
    return type(key) is B64Key


def key_bytes(key: str, b64_encoded: bool) -> bytes:
    """The key's bytes as Java's ``getKeyBytes()`` gives them. A flagged key that is not valid base64 (no
    Pulsar client writes one) is taken as its UTF-8 bytes rather than failing the read."""
    if b64_encoded:
        try:
            return base64.b64decode(key, validate=True)
        except (binascii.Error, ValueError):
            pass
    return key.encode("utf-8")


def b64_key_header(payload_size: int, partition_key: str, ordering_key: bytes | None,
                   properties: Mapping[str, str] | None, event_time: int, sequence_id: int | None) -> bytes:
    """``u32 size | SingleMessageMetadata`` of one batched message whose key is flagged base64 (the rare
    case the codec's hand-encoded headers leave to protobuf)."""
    meta = pulsar_api_pb2.SingleMessageMetadata(payload_size=payload_size, partition_key=partition_key,
                                                 partition_key_b64_encoded=True)
    if properties:
        meta.properties.extend(pulsar_api_pb2.KeyValue(key=k, value=v) for k, v in properties.items())
    if event_time:
        meta.event_time = event_time
    if ordering_key is not None:
        meta.ordering_key = ordering_key
    if sequence_id is not None:
        meta.sequence_id = sequence_id
    data = meta.SerializeToString()
    return U32.pack(len(data)) + data


def message_key_bytes(message: Any) -> bytes | None:
    """A received message's key as bytes (None: it has none), as Java's ``getKeyBytes()`` gives it. pulsar-client's
    Python ``Message`` has no such accessor, so neither has ours; readers that need the bytes (the Spark source
    reading through the client) call this."""
    if not message.has_partition_key():
        return None
    single = message._single
    meta = single if single is not None else message._entry.metadata
    return key_bytes(message.partition_key(), bool(meta.partition_key_b64_encoded))
