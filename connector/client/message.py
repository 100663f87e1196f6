"""Received messages (``Message``), built lazily from the entry they arrived in; what stands in the
receive queue for an entry that could not be decoded (``DecodeFailure``); how buffered messages of an entry
that is being redelivered are dropped without touching the queue (``Discarded``)."""
from __future__ import annotations

import itertools
from typing import Any, NoReturn, Sequence

from broker_core.errors import InvalidMessage, MessageDecodeError
from broker_core.protocol import codec, pulsar_api_pb2
from broker_core.protocol.compression import decompress_payload
from broker_core.protocol.entry_limits import unknown_compression
from broker_core.types import MessageId

OFFSETS_LISTED_MAX = 1000
"""A decode error lists up to this many offsets in a tuple; more (an entry's are contiguous, and a poison
entry may claim 2**31 messages) stay a ``range``."""


class EntryInfo:
    """What the messages of one delivered entry share."""

    __slots__ = ("metadata", "topic", "ledger_id", "entry_id", "partition", "redelivery_count",
                 "num_messages", "batched", "sub", "_properties")

    def __init__(self, metadata: pulsar_api_pb2.MessageMetadata, topic: str, ledger_id: int,
                 entry_id: int, partition: int, redelivery_count: int, num_messages: int,
                 batched: bool, sub: Any) -> None:
        self.metadata = metadata
        self.topic = topic
        self.ledger_id = ledger_id
        self.entry_id = entry_id
        self.partition = partition
        self.redelivery_count = redelivery_count
        self.num_messages = num_messages
        self.batched = batched
        self.sub = sub
        self._properties: dict[str, str] | None = None

    def properties(self) -> dict[str, str]:
        if self._properties is None:
            self._properties = {kv.key: kv.value for kv in self.metadata.properties}
        return self._properties


class ChunkedEntryInfo(EntryInfo):
    """A message reassembled from chunks: the last chunk's entry (its id is the message's id, as Pulsar's)
    plus the offsets of every chunk, which acknowledging the message acknowledges."""

    __slots__ = ("chunk_offsets",)

    def __init__(self, metadata: pulsar_api_pb2.MessageMetadata, topic: str, ledger_id: int,
                 entry_id: int, partition: int, redelivery_count: int, sub: Any,
                 chunk_offsets: tuple[int, ...]) -> None:
        super().__init__(metadata, topic, ledger_id, entry_id, partition, redelivery_count, 1, False, sub)
        self.chunk_offsets = chunk_offsets


class DecodeFailure:
    """Holds the place of an entry (or chunked message) that could not be decoded in the receive queue.

    It passes for a queued message so that real messages pay nothing for it. ``receive()`` takes each
    message's permit with ``sub = msg._entry.sub; if next(sub._taken) >= sub._next_refill_raw:
    sub._refill()``; a failure is its own ``_entry`` and ``sub``, its counter always reaches the
    threshold, and its ``_refill()`` takes the permit on the real partition consumer, acknowledges the
    entry (as Pulsar's client discards a corrupted message) and raises :attr:`error`. ``on_taken()``, the
    listener's way to take a permit, does the same. Queue bookkeeping finds the partition consumer in
    :attr:`consumer`.
    """

    __slots__ = ("consumer", "error", "discarded")
    _taken = itertools.repeat(0)
    _next_refill_raw = 0

    def __init__(self, consumer: Any, error: MessageDecodeError) -> None:
        self.consumer = consumer
        self.error = error
        self.discarded: Discarded | None = None
        """Set when its entry is redelivered (or the subscription seeks): taking it then skips it."""

    @classmethod
    def of(cls, consumer: Any, ledger_id: int, entry_id: int, offsets: Sequence[int],
           reason: str) -> "DecodeFailure":
        """The failure of the message at ``entry_id`` (for a chunked message: its last chunk) of
        ``consumer``'s topic, covering ``offsets`` (a tuple, or a ``range`` of more than
        :data:`OFFSETS_LISTED_MAX`), with the error the application will get."""
        if len(offsets) <= OFFSETS_LISTED_MAX:
            offsets = tuple(offsets)
        topic = consumer.topic
        mid = MessageId(ledger_id, entry_id, consumer.partition, -1, 0, topic)
        where = _describe_offsets(offsets)
        return cls(consumer, MessageDecodeError(
            f"cannot decode the message {mid} on {topic} ({where}): {reason}. It is acknowledged, as "
            "Pulsar's client discards a corrupted message: it will not be redelivered (a Reader can "
            "still read it while retention keeps it)",
            topic=topic, message_id=mid, offsets=offsets, reason=reason))

    @property
    def _entry(self) -> "DecodeFailure":
        return self

    @property
    def sub(self) -> "DecodeFailure":
        return self

    def _refill(self) -> NoReturn:
        if self.discarded is not None:
            self.discarded._refill()
        self.consumer.on_taken()
        self.consumer.ack_offsets(self.error.offsets)
        raise self.error

    on_taken = _refill


class Skipped(Exception):
    """Raised by taking a discarded queue item: the caller takes the next one instead."""


class Discarded:
    """Stands in for the partition consumer (``EntryInfo.sub``) of an entry whose buffered messages must not
    reach the application any more: the entry is being redelivered (a negative ack, an ack timeout, a rewind)
    or the subscription seeks.

    The receive queue is never searched and rewritten under the application's feet (``receive()`` pops it
    lock-free). Instead the entry's ``sub`` is swapped for this object; a message popped afterwards goes,
    like a :class:`DecodeFailure`, through ``_refill()``, which takes its permit on the real consumer (unless
    ``returns_permit`` is false: after a seek the permits start afresh) and raises :class:`Skipped`, so
    ``receive()`` moves on. Messages of the entry the application already holds keep working: every other
    attribute is the real consumer's (acks reach it), and :attr:`real` unwraps it (a
    :class:`~connector.client.partition_consumer.PartitionConsumer`'s ``real`` is itself).
    """

    __slots__ = ("real", "returns_permit")
    _taken = itertools.repeat(0)
    _next_refill_raw = 0

    def __init__(self, real: Any, returns_permit: bool = True) -> None:
        self.real = real
        self.returns_permit = returns_permit

    def _refill(self) -> NoReturn:
        if self.returns_permit:
            self.real.on_taken()
        raise Skipped()

    on_taken = _refill

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)


class Message:
    """A received message (``pulsar.Message``): payload, metadata and its :class:`MessageId`."""

    __slots__ = ("_content", "_single", "_entry", "_index", "_id")

    def __init__(self, content: bytes, single: codec.SingleMeta | None, entry: EntryInfo,
                 index: int) -> None:
        self._content = content
        self._single = single
        self._entry = entry
        self._index = index
        # _id (the MessageId) is left unset until message_id() builds it: one store less per message.

    def data(self) -> bytes:
        """The payload."""
        return self._content

    def value(self) -> bytes:
        """The payload (no schema: the same as :meth:`data`)."""
        return self._content

    def properties(self) -> dict[str, str]:
        single = self._single
        if single is not None:
            return dict(single.properties)
        return dict(self._entry.properties())

    def partition_key(self) -> str:
        """The key, or ``""`` when the message has none (as pulsar-client)."""
        single = self._single
        if single is not None:
            return single.partition_key or ""
        meta = self._entry.metadata
        return meta.partition_key if meta.HasField("partition_key") else ""

    def has_partition_key(self) -> bool:
        single = self._single
        if single is not None:
            return single.partition_key is not None
        return self._entry.metadata.HasField("partition_key")

    def ordering_key(self) -> bytes | None:
        single = self._single
        if single is not None:
            return single.ordering_key
        meta = self._entry.metadata
        return meta.ordering_key if meta.HasField("ordering_key") else None

    def publish_timestamp(self) -> int:
        """Milliseconds since the epoch, set by the producer."""
        return self._entry.metadata.publish_time

    def event_timestamp(self) -> int:
        """Milliseconds since the epoch, or 0 when the producer set none."""
        single = self._single
        if single is not None and single.event_time:
            return single.event_time
        return self._entry.metadata.event_time

    def sequence_id(self) -> int:
        single = self._single
        if single is not None and single.sequence_id is not None:
            return single.sequence_id
        return self._entry.metadata.sequence_id + max(self._index, 0)

    def message_id(self) -> MessageId:
        try:
            return self._id
        except AttributeError:
            e = self._entry
            mid = self._id = MessageId(e.ledger_id, e.entry_id, e.partition, self._index,
                                       e.num_messages if e.batched else 0, e.topic)
            return mid

    def offset(self) -> int:
        """The message's dense offset in its topic partition."""
        return self._entry.entry_id + max(self._index, 0)

    def topic_name(self) -> str:
        """The (partition) topic the message came from, fully qualified."""
        return self._entry.topic

    def redelivery_count(self) -> int:
        return self._entry.redelivery_count

    def producer_name(self) -> str:
        return self._entry.metadata.producer_name

    def schema_version(self) -> bytes:
        return self._entry.metadata.schema_version

    def __repr__(self) -> str:
        return f"Message(id={self.message_id()}, topic={self.topic_name()!r}, len={len(self._content)})"


def _describe_offsets(offsets: Sequence[int]) -> str:
    first, last, count = offsets[0], offsets[-1], len(offsets)
    if count == 1:
        return f"offset {first}"
    if last - first + 1 == count:
        return f"offsets {first}..{last}"
    if count <= 8:
        return f"offsets {', '.join(map(str, offsets))}"
    return f"{count} offsets from {first} to {last}"


def decoded_payload(metadata: pulsar_api_pb2.MessageMetadata,
                    payload: bytes | memoryview) -> bytes | memoryview:
    """The payload of an entry or a reassembled chunked message, decompressed as its metadata says;
    raises :class:`InvalidMessage` when that fails or the codec is unknown."""
    compression = metadata.compression
    if compression:
        return decompress_payload(compression, payload, metadata.uncompressed_size)
    if metadata.uncompressed_size and metadata.uncompressed_size != len(payload):
        raise unexpected_payload_size(metadata, len(payload))
    return payload


def unexpected_payload_size(metadata: pulsar_api_pb2.MessageMetadata, actual: int) -> InvalidMessage:
    """The error for an uncompressed payload whose size is not the metadata's ``uncompressed_size``: most
    likely a compression type this client does not know (protobuf reads an unknown enum value as NONE
    and keeps the number among the unknown fields)."""
    unknown = unknown_compression(metadata)
    if unknown is not None:
        return InvalidMessage(f"unknown compression type {unknown}: this client reads NONE, LZ4, ZLIB, ZSTD and "
                              "SNAPPY; upgrade the consumer or produce with one of those")
    return InvalidMessage(f"the payload is {actual} bytes but the metadata's uncompressed_size says "
                          f"{metadata.uncompressed_size}")
