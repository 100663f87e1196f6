"""The seam between the client core and the wire: :class:`Transport`.

The client core -- producers (batching, chunking, dedup sequence ids, resend on reconnect), consumers (receive
queues, acks, negative acks, ack timeouts, dead letters, seek), readers, lookups and schemas -- speaks one
internal language, the client's own (:mod:`connector.client.transport.events`): what it asks (``ConsumerSpec``,
``Flow``, ``Ack``, ``Seek`` ..., ``ProducerSpec`` and the entries to send) and what a transport reports
(``Subscribed``, ``Delivery``, ``Receipt``, ``SeekDone``, ``Closed`` ...), plus a handful of unary calls that
answer plain values. Each transport translates its wire into that language, and nothing above the seam
imports a transport's messages:

- :class:`connector.client.transport.grpc.connection.Connection`: gRPC, pulsarlike's own service (one stream per producer or
  consumer, multiplexed by HTTP/2; :mod:`connector.client.transport.grpc.streams` translates its messages).
- :class:`connector.client.transport.binary.transport.BinaryTransport`: Pulsar's binary protocol over TCP (or TLS), to
  pulsarlike's binary front end or to any Pulsar broker: Pulsar commands (PRODUCER/SEND, SUBSCRIBE/FLOW/ACK,
  LOOKUP ...) both ways.

So a feature is written once, above the seam, and behaves the same over both. What differs between brokers is
how a message's position is numbered: pulsarlike's offsets are dense per partition (a message id's entry id
is its entry's first offset), another broker's are ``(ledger, entry, batch index)``; :class:`Positions`
maps between message ids and the integer positions the core orders, acknowledges and seeks by.
"""
from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Callable, Protocol

from connector.client.transport.events import (ConsumerEvent, ConsumerSpec, LastMessage, ProducerEvent, ProducerSpec,
                                     TopicSchema)
from connector.client.message_id import MessageId

if TYPE_CHECKING:
    from connector.client.security import Security


class Positions(Protocol):
    """How the core's integer positions relate to message ids, on one transport."""

    dense: bool
    """True when positions are the broker's dense offsets (pulsarlike): ``position == entry_id + index``."""

    def position(self, message_id: MessageId) -> int:
        """The position of the message ``message_id`` names (the earliest/latest sentinels excluded)."""

    def message_id(self, ledger_id: int, entry_position: int, partition: int, batch_index: int = -1,
                   batch_size: int = 0, topic: str | None = None) -> MessageId:
        """The message id of the message at ``batch_index`` of the entry whose first position is
        ``entry_position`` (as delivered: ``DeliveredEntry.entry_id``)."""


class DensePositions:
    """pulsarlike's numbering: a position is the message's offset (``MessageId.offset()``)."""

    dense = True

    @staticmethod
    def position(message_id: MessageId) -> int:
        return message_id.offset()

    @staticmethod
    def message_id(ledger_id: int, entry_position: int, partition: int, batch_index: int = -1,
                   batch_size: int = 0, topic: str | None = None) -> MessageId:
        return MessageId.of(ledger_id, entry_position, partition, batch_index, batch_size, topic)


DENSE = DensePositions()


class TransportStream(Protocol):
    """One open producer or consumer on a transport (gRPC: a bidirectional stream; binary: a producer or
    consumer id on a connection)."""

    def start(self) -> None:
        """Start opening it and reporting events (after the caller stored the stream where its handler looks)."""

    def send(self, request: Any) -> None:
        """Queue a request -- a consumer's :data:`~connector.client.transport.events.ConsumerRequest` or a producer's
        :class:`~connector.client.producer.batching.PendingEntry` -- never blocks."""

    def close(self, wait_s: float = 2.0) -> None:
        """Close it on the broker (waiting up to ``wait_s`` for the answer); the last event is ``Closed(None)``."""

    @property
    def alive(self) -> bool: ...


class Transport(Protocol):
    """What the client core uses of a connection to the broker (see the module docstring). The unary calls
    take ``timeout_s`` (None: the operation timeout) and ``retry``: an idempotent call is tried again while the
    broker is unreachable or not ready, with backoff, until then. Failures are typed errors."""

    target: str
    """``host:port`` of the service URL."""
    operation_timeout_s: float
    connection_timeout_s: float
    security: Security
    closed: threading.Event
    """Set by :meth:`close`: waits between retries end at once."""
    positions: Positions

    def ensure_ready(self) -> None:
        """Wait (``connection_timeout_s``) for the first connection; ``ConnectError`` if there is none."""

    def consume(self, spec: ConsumerSpec, on_event: Callable[[ConsumerEvent], None], name: str = "consumer",
                reconnecting: bool = False) -> TransportStream:
        """A consumer's stream, not started; its events (:mod:`connector.client.transport.events`) go to ``on_event``.
        A first opening (not ``reconnecting``) fails at once when the broker cannot be reached."""

    def produce(self, spec: ProducerSpec, on_event: Callable[[ProducerEvent], None], name: str = "producer",
                reconnecting: bool = False) -> TransportStream:
        """A producer's stream, not started (as :meth:`consume`)."""

    def partitions(self, topic: str, timeout_s: float | None = None, retry: bool = False) -> int:
        """The partition count of ``topic`` (0: not partitioned)."""

    def list_topics(self, namespace: str, timeout_s: float | None = None, retry: bool = False) -> list[str]:
        """The topics of ``tenant/namespace``, persistent and non-persistent, sorted."""

    def last_message(self, topic: str, read_compacted: bool = False, timeout_s: float | None = None,
                     retry: bool = False) -> LastMessage:
        """The last message of a topic partition (of its compacted view); ``TopicNotFound`` when none exists."""

    def schema(self, topic: str, version: int = -1, timeout_s: float | None = None,
               retry: bool = False) -> TopicSchema:
        """The topic's schema (the latest, or ``version``); ``TopicNotFound`` when it has none."""

    def register_schema(self, topic: str, schema: TopicSchema, check_only: bool = False,
                        timeout_s: float | None = None, retry: bool = False) -> int:
        """The version of ``schema`` on ``topic``, registered when new (``IncompatibleSchema`` when the
        registry refuses it); ``check_only`` (a consumer's): registered only on a topic without a schema,
        else checked compatible (-1)."""

    def create_topic(self, topic: str, timeout_s: float | None = None, retry: bool = False) -> None:
        """Create a non-partitioned topic (``TopicAlreadyExists`` when it exists)."""

    def create_subscription(self, topic: str, subscription: str, timeout_s: float | None = None,
                            retry: bool = False) -> None:
        """Create the durable ``subscription`` of a topic partition at its latest message
        (``NotAllowedError`` when it exists)."""

    def close(self) -> None: ...
