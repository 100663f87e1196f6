"""Received messages (``Message``), built lazily from the entry they arrived in (:class:`EntryInfo`, shared by
the messages of one entry), and the error of an entry that could not be decoded (:func:`decode_error`).

What taking a buffered message does (return a permit, skip it, raise its decode error) is its entry's
``taker``: see :mod:`connector.client.consumer.permits`.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

from broker_core.errors import MessageDecodeError
from broker_core.protocol import codec, pulsar_api_pb2

from connector.client.security.crypto_keys import EncryptionContext
from connector.client.message_id import MessageId
from connector.client.consumer.permits import Discarded, Taker
from connector.client.transport import DENSE

if TYPE_CHECKING:
    from connector.client.consumer.partition import PartitionConsumer

OFFSETS_LISTED_MAX = 1000
"""A decode error lists up to this many offsets in a tuple; more (an entry's are contiguous, and a poison
entry may claim 2**31 messages) stay a ``range``."""


class EntryInfo:
    """What the messages of one delivered entry share: its metadata and place, the partition consumer it came
    from, and ``taker``, what taking one of its buffered messages does (its stream generation's permit window,
    or a :class:`~connector.client.consumer.permits.Discarded` / ``Undecodable`` stand-in)."""

    __slots__ = ("metadata", "topic", "ledger_id", "entry_id", "partition", "redelivery_count",
                 "num_messages", "batched", "sub", "taker", "cluster", "_properties")

    def __init__(self, metadata: pulsar_api_pb2.MessageMetadata, topic: str, ledger_id: int,
                 entry_id: int, partition: int, redelivery_count: int, num_messages: int,
                 batched: bool, sub: "PartitionConsumer", taker: Taker, cluster: int = 0) -> None:
        self.metadata = metadata
        self.topic = topic
        self.ledger_id = ledger_id
        self.entry_id = entry_id
        self.partition = partition
        self.redelivery_count = redelivery_count
        self.num_messages = num_messages
        self.batched = batched
        self.sub = sub
        self.taker = taker
        self.cluster = cluster
        """``sub.cluster`` when it was received: another value now means the consumer moved to another
        cluster since (its acks would name other messages there)."""
        self._properties: dict[str, str] | None = None

    def properties(self) -> dict[str, str]:
        if self._properties is None:
            self._properties = {kv.key: kv.value for kv in self.metadata.properties}
        return self._properties

    def discard(self, returns_permit: bool = True) -> None:
        """Its messages still buffered must not reach the application (the entry is being redelivered)."""
        if not isinstance(self.taker, Discarded):
            self.taker = Discarded(self.taker, returns_permit)


class UndecryptedEntry(EntryInfo):
    """An encrypted entry delivered as sent (``crypto_failure_action=CONSUME``): its one message's
    ``encryption_context().is_decryption_failed()`` is True."""

    __slots__ = ()


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

    def value(self) -> Any:
        """The payload decoded by the consumer's schema, with the version its producer wrote it with (no schema:
        the same as :meth:`data`)."""
        values = getattr(self._entry.sub, "values", None)
        if values is None:
            return self._content
        return values.decode(self._content, self._entry.metadata.schema_version, self._entry.topic)

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

    def ordering_key(self) -> str:
        """pulsar-client's: the ordering key as a str, ``""`` when the message has none (bytes that are not
        UTF-8 are decoded with replacement characters; :meth:`ordering_key_bytes` gives them as sent)."""
        raw = self.ordering_key_bytes()
        return raw.decode("utf-8", "replace") if raw else ""

    def ordering_key_bytes(self) -> bytes | None:
        """pulsarlike's: the ordering key's bytes as sent, None when the message has none."""
        single = self._single
        if single is not None:
            return single.ordering_key
        meta = self._entry.metadata
        return meta.ordering_key if meta.HasField("ordering_key") else None

    def encryption_context(self) -> EncryptionContext | None:
        """How the message was encrypted (pulsar-client's), None when it was not."""
        metadata = self._entry.metadata
        if not metadata.encryption_keys:
            return None
        return EncryptionContext.of(metadata, isinstance(self._entry, UndecryptedEntry))

    def has_null_value(self) -> bool:
        """True for a tombstone (a message whose value is null, as compaction uses them)."""
        single = self._single
        if single is not None:
            return single.null_value
        return self._entry.metadata.null_value

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
            # the transport's numbering: pulsarlike's (ledger, first offset), another broker's real ids
            sub = e.sub  # None: a MessageBatch's message, whose entry names the real ids
            mid = self._id = (DENSE if sub is None else sub.positions).message_id(
                e.ledger_id, e.entry_id, e.partition, self._index, e.num_messages if e.batched else 0, e.topic)
            return mid

    def offset(self) -> int:
        """The message's position in its topic partition: its dense offset on pulsarlike (on another broker
        the client's packed ``(ledger, entry, batch index)``: :mod:`connector.client.transport.binary.positions`)."""
        return self._entry.entry_id + max(self._index, 0)

    def topic_name(self) -> str:
        """The (partition) topic the message came from, fully qualified."""
        return self._entry.topic

    def redelivery_count(self) -> int:
        return self._entry.redelivery_count

    def producer_name(self) -> str:
        return self._entry.metadata.producer_name

    def schema_version(self) -> str:
        """The version of the schema the message was produced with, as pulsar-client hands it over: a str of
        the 8 bytes of Pulsar's version number (``.encode("latin-1")`` gives them back; ``""`` when none).
        :meth:`schema_version_bytes` gives the bytes."""
        return self._entry.metadata.schema_version.decode("latin-1")

    def schema_version_bytes(self) -> bytes:
        """pulsarlike's: the schema version's bytes as they travel (``b""`` when none)."""
        return self._entry.metadata.schema_version

    def __repr__(self) -> str:
        return f"Message(id={self.message_id()}, topic={self.topic_name()!r}, len={len(self._content)})"


def decode_error(message_id: MessageId, topic: str, offsets: Sequence[int], reason: str) -> MessageDecodeError:
    """The error the application gets for an entry (or chunked message, ``offsets`` being its chunks') that
    cannot be decoded: once, at its place in the queue; the entry is acknowledged."""
    if len(offsets) <= OFFSETS_LISTED_MAX:
        offsets = tuple(offsets)
    return MessageDecodeError(
        f"cannot decode the message {message_id} on {topic} ({_describe_offsets(offsets)}): {reason}. It is "
        "acknowledged, as Pulsar's client discards a corrupted message: it will not be redelivered (a Reader "
        "can still read it while retention keeps it)",
        topic=topic, message_id=message_id, offsets=offsets, reason=reason)


def _describe_offsets(offsets: Sequence[int]) -> str:
    first, last, count = offsets[0], offsets[-1], len(offsets)
    if count == 1:
        return f"offset {first}"
    if last - first + 1 == count:
        return f"offsets {first}..{last}"
    if count <= 8:
        return f"offsets {', '.join(map(str, offsets))}"
    return f"{count} offsets from {first} to {last}"
