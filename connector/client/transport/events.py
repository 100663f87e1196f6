"""The client core's vocabulary at the seam (:mod:`connector.client.transport`): what the core asks of a
transport and what a transport reports, as small typed values. Both transports translate their wire into
these -- gRPC (:mod:`connector.client.transport.grpc.streams`, :class:`~connector.client.transport.grpc.connection.Connection`) and
Pulsar's binary protocol (:mod:`connector.client.transport.binary`) -- as the broker's front ends translate theirs into
its sessions' calls and ``ProducerEvents``/``ConsumerEvents``.

Positions (``offset``, ``entry_id``, ranges) are the core's integer positions: pulsarlike's dense offsets, or
another broker's ``(ledger, entry, batch index)`` packed (:class:`~connector.client.transport.Positions`).

What the core asks::

    ConsumerSpec      open a subscription's stream to one topic partition (start, type, permits ...)
      Flow            more permits                 Ack / AckCumulative   acknowledge positions
      Redeliver       send these again (or all)    Seek                  move to a position or a time
      Unsubscribe     delete the subscription
    ProducerSpec      open a producer on one topic partition; then ``PendingEntry`` items
                      (:mod:`connector.client.producer.batching`: the entry's bytes as stored)

    and ``close()`` on the stream (:class:`~connector.client.transport.TransportStream`) closes either on the
    broker.

What a transport reports, in order, on the stream's reader thread::

    Subscribed / ProducerReady     opened (a reopening after a lost stream reports it again)
    Delivery(entries)              entries with their positions and stored bytes, decoded once by the core
    Receipt / SendFailed           one entry stored (its id) or refused (the stream goes on)
    SeekDone / Unsubscribed        the answers to Seek and Unsubscribe, with the typed error of a refusal
    ActiveChanged / EndOfTopic     Failover's active consumer changed; the topic is terminated and drained
    Unreadable(error)              the next message cannot be read (``DataLost``): raised in its place
    Refused(error)                 a request the broker refused (an ack of another topic's position ...);
                                   the stream goes on
    Closed(error)                  the last event: None when the client closed the stream, else why, typed
                                   (``ConnectError``: lost, reconnect; the broker's refusal otherwise)

The unary calls (partition counts, lookups, last message, schemas, topics of a namespace, subscription
creation) answer plain values: :class:`LastMessage`, :class:`TopicSchema`, ints and lists.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence, Union

from broker_core import errors

# --- what the core asks -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Position:
    """Where a reader starts or a seek goes: the earliest message, the latest, or the message at ``offset``."""

    offset: int = -1
    """The message's position (>= 0); -1 with ``latest`` False: the earliest message."""
    latest: bool = False

    @staticmethod
    def at(offset: int) -> "Position":
        return Position(offset) if offset >= 0 else EARLIEST

    @property
    def earliest(self) -> bool:
        return self.offset < 0 and not self.latest


EARLIEST = Position()
LATEST = Position(latest=True)


@dataclass(frozen=True, slots=True)
class KeySharedSpec:
    """A Key_Shared consumer's hash ranges: AUTO_SPLIT (the broker assigns them), or ``sticky`` ranges."""

    sticky: bool = False
    allow_out_of_order_delivery: bool = False
    ranges: tuple[tuple[int, int], ...] = ()
    """Sticky: ``(start, end)``, both inclusive, within 0..65535."""


@dataclass(frozen=True, slots=True)
class ConsumerSpec:
    """One consumer's subscription on one topic partition (the core makes one per partition, with
    :func:`dataclasses.replace`)."""

    topic: str = ""
    """A single topic: a partition's full name or a non-partitioned topic's."""
    subscription: str = ""
    sub_type: int = 0
    """:class:`~connector.client.enums.ConsumerType`."""
    consumer_name: str = ""
    """Empty: the transport names it."""
    initial_position: int = 0
    """:class:`~connector.client.enums.InitialPosition` of a new durable subscription."""
    priority_level: int = 0
    durable: bool = True
    """False: a reader's (non-durable) subscription, which starts at ``start``."""
    start: Position | None = None
    start_inclusive: bool = False
    partition: int = -1
    """The partition's index; -1 for a non-partitioned topic."""
    multi_topic: bool = False
    """Part of a subscription to several topics (the broker's Failover picks by hash)."""
    key_shared: KeySharedSpec | None = None
    initial_permits: int = 0
    """Flow permits granted with the subscription (no race with a first send)."""
    read_compacted: bool = False


@dataclass(frozen=True, slots=True)
class Flow:
    permits: int


@dataclass(frozen=True, slots=True)
class Ack:
    """Acknowledge the positions of ``ranges`` (``[start, end)``, sorted, disjoint)."""

    ranges: tuple[tuple[int, int], ...]


@dataclass(frozen=True, slots=True)
class AckCumulative:
    """Acknowledge every message up to and including ``offset``."""

    offset: int


@dataclass(frozen=True, slots=True)
class Redeliver:
    """Send the messages of ``ranges`` again (negative acks); empty: everything unacknowledged."""

    ranges: tuple[tuple[int, int], ...] = ()


@dataclass(frozen=True, slots=True)
class Seek:
    """Move the subscription to ``position``, or to the first message published at or after
    ``publish_time_ms`` (when ``position`` is None); answered by :class:`SeekDone` with ``seek_id``."""

    seek_id: int
    position: Position | None = None
    publish_time_ms: int = 0


@dataclass(frozen=True, slots=True)
class Unsubscribe:
    """Delete the subscription; answered by :class:`Unsubscribed` with ``request_id``."""

    request_id: int


ConsumerRequest = Union[Flow, Ack, AckCumulative, Redeliver, Seek, Unsubscribe]


@dataclass(frozen=True, slots=True)
class ProducerSpec:
    """One producer on one topic partition."""

    topic: str
    producer_name: str = ""
    """Empty: the broker names it (a reopening passes the name it was given)."""
    access_mode: int = 0
    """:class:`~connector.client.enums.ProducerAccessMode`."""
    properties: Mapping[str, str] = field(default_factory=dict)
    initial_sequence_id: int = -1
    """-1: none (the broker's last sequence id for the name counts)."""


# --- what a transport reports ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Subscribed:
    """The subscription is open (again, after a reconnection)."""

    topic: str
    consumer_name: str
    partition: int = -1
    service_epoch: int = 0
    """Which service (cluster) it is open on: :class:`~connector.client.failover.SwitchingTransport` numbers
    them, 0 first; a transport whose service never changes always answers 0."""


class Entry:
    """One delivered entry: its stored bytes (``data``: an optional broker-entry metadata prefix, then
    ``0x0e01 | CRC32C | metadataSize | MessageMetadata | payload``), decoded once, by the core or the Spark
    reader (:mod:`connector.client.entries`)."""

    __slots__ = ("data", "ledger_id", "entry_id", "num_messages", "redelivery_count", "ack_set")

    def __init__(self, data: bytes, ledger_id: int, entry_id: int, num_messages: int, redelivery_count: int = 0,
                 ack_set: Sequence[int] = ()) -> None:
        self.data = data
        self.ledger_id = ledger_id
        """The broker's ledger (pulsarlike: the segment's base offset)."""
        self.entry_id = entry_id
        """The position of the entry's first message."""
        self.num_messages = num_messages
        self.redelivery_count = redelivery_count
        self.ack_set = ack_set
        """Pulsar's batch-index ack set: bit i set = message i still unacknowledged; empty: all are."""

    def __repr__(self) -> str:
        return (f"Entry(ledger_id={self.ledger_id}, entry_id={self.entry_id}, num_messages={self.num_messages}, "
                f"redelivery_count={self.redelivery_count}, {len(self.data)} bytes)")


class Delivery:
    """Entries delivered, in order (one per ``MESSAGE`` over the binary protocol, a batch of them over gRPC)."""

    __slots__ = ("entries",)

    def __init__(self, entries: Sequence[Entry]) -> None:
        self.entries = entries


@dataclass(frozen=True, slots=True)
class SeekDone:
    seek_id: int
    error: errors.PulsarLikeError | None = None


@dataclass(frozen=True, slots=True)
class Unsubscribed:
    request_id: int
    error: errors.PulsarLikeError | None = None


@dataclass(frozen=True, slots=True)
class ActiveChanged:
    """Failover (and Exclusive) subscriptions: whether this consumer is now the active one."""

    active: bool


@dataclass(frozen=True, slots=True)
class EndOfTopic:
    """The topic is terminated and every message of it was delivered to this consumer."""


@dataclass(frozen=True, slots=True)
class Unreadable:
    """The broker cannot read the next message (``DataLost``: a damaged stored range; or a
    ``MessageDecodeError`` the transport met): raised in its place; the stream goes on."""

    error: errors.PulsarLikeError


@dataclass(frozen=True, slots=True)
class Refused:
    """A request the broker refused (a flow, ack or redelivery it could not apply); the stream goes on."""

    error: errors.PulsarLikeError


@dataclass(frozen=True, slots=True)
class ProducerReady:
    """The producer is open (again, after a reconnection): its name, the broker's last persisted sequence id
    for it (-1: none), the largest entry the broker takes (0: not said)."""

    producer_name: str
    last_sequence_id: int = -1
    max_message_size: int = 0
    topic: str = ""


class Receipt:
    """The entry whose first sequence id is ``sequence_id`` is stored at ``(ledger_id, entry_id)`` (the
    broker's own ids), or was dropped as a duplicate (``duplicate``: its ids are not known)."""

    __slots__ = ("sequence_id", "highest_sequence_id", "ledger_id", "entry_id", "duplicate")

    def __init__(self, sequence_id: int, highest_sequence_id: int, ledger_id: int = -1, entry_id: int = -1,
                 duplicate: bool = False) -> None:
        self.sequence_id = sequence_id
        self.highest_sequence_id = highest_sequence_id
        self.ledger_id = ledger_id
        self.entry_id = entry_id
        self.duplicate = duplicate

    def __repr__(self) -> str:
        return (f"Receipt(sequence_id={self.sequence_id}, highest_sequence_id={self.highest_sequence_id}, "
                f"ledger_id={self.ledger_id}, entry_id={self.entry_id}, duplicate={self.duplicate})")


@dataclass(frozen=True, slots=True)
class SendFailed:
    """The entry of ``sequence_id`` was refused (too big, malformed, topic terminated ...); the stream goes on."""

    sequence_id: int
    error: errors.PulsarLikeError


@dataclass(frozen=True, slots=True)
class Closed:
    """The stream ended (its last event): ``error`` None when the client closed it, else why -- a
    ``ConnectError`` for a lost stream (the core reconnects), the broker's typed refusal otherwise."""

    error: errors.PulsarLikeError | None = None


ConsumerEvent = Union[Subscribed, Delivery, SeekDone, Unsubscribed, ActiveChanged, EndOfTopic, Unreadable, Refused,
                      Closed]
ProducerEvent = Union[ProducerReady, Receipt, SendFailed, Closed]


# --- unary answers ----------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LastMessage:
    """A topic partition's last message: the broker's own id of it and its position; ``last_offset`` -1 when
    the partition holds none. ``start_offset``: the first position still stored (or after a reader's
    mark-delete point, as the broker says it)."""

    ledger_id: int = -1
    entry_id: int = -1
    batch_index: int = -1
    last_offset: int = -1
    start_offset: int = 0


@dataclass(frozen=True, slots=True)
class TopicSchema:
    """A schema in the broker's registry: ``type`` (Pulsar's ``Schema.Type`` name: ``Avro``, ``Json``,
    ``String`` ...), its definition (``data``), ``name``, ``properties`` and ``version`` (-1: a consumer's
    schema checked compatible, not registered)."""

    type: str
    data: bytes = b""
    name: str = ""
    version: int = -1
    properties: Mapping[str, str] = field(default_factory=dict)
