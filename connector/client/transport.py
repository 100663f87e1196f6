"""The seam between the client core and the wire: :class:`Transport`.

The client core -- producers (batching, chunking, dedup sequence ids, resend on reconnect), consumers (receive
queues, acks, negative acks, ack timeouts, dead letters, seek), readers, lookups and schemas -- speaks one
internal language: the ``broker_pb2`` requests and responses of pulsarlike's ``Produce`` and ``Consume``
streams and of a handful of unary calls. A transport carries that language to a broker:

- :class:`connector.client.connection.Connection`: gRPC, pulsarlike's own service (one stream per producer or
  consumer, multiplexed by HTTP/2).
- :class:`connector.client.binary.transport.BinaryTransport`: Pulsar's binary protocol over TCP (or TLS), to
  pulsarlike's binary front end or to any Pulsar broker: it translates the same requests into Pulsar commands
  (PRODUCER/SEND, SUBSCRIBE/FLOW/ACK, LOOKUP ...) and the broker's commands back into the same responses.

So a feature is written once, above the seam, and behaves the same over both. What differs between brokers is
how a message's position is numbered: pulsarlike's offsets are dense per partition (a message id's entry id
is its entry's first offset), another broker's are ``(ledger, entry, batch index)``; :class:`Positions`
maps between message ids and the integer positions the core orders, acknowledges and seeks by.
"""
from __future__ import annotations

import threading
from typing import Any, Callable, Protocol

from broker_core import errors

from connector.client.message_id import MessageId


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
    """One open producer or consumer on a transport (gRPC: a bidirectional stream)."""

    def start(self) -> None:
        """Start delivering responses to ``on_response`` (after the caller stored the stream)."""

    def send(self, request: Any) -> None:
        """Queue a request (a ``broker_pb2`` request, or a producer's ``PendingEntry``); never blocks."""

    def half_close(self) -> None: ...

    def close(self, wait_s: float = 2.0) -> None: ...

    @property
    def alive(self) -> bool: ...


class Transport(Protocol):
    """What the client core uses of a connection to the broker (see the module docstring)."""

    target: str
    """``host:port`` of the service URL."""
    operation_timeout_s: float
    connection_timeout_s: float
    security: Any
    """:class:`connector.client.connection.Security`: authentication and TLS."""
    closed: threading.Event
    """Set by :meth:`close`: waits between retries end at once."""
    positions: Positions

    def ensure_ready(self) -> None:
        """Wait (``connection_timeout_s``) for the first connection; ``ConnectError`` if there is none."""

    def unary(self, method: str, request: Any, timeout_s: float | None = None, retry: bool = False) -> Any:
        """Call ``method`` (a pulsarlike RPC name, e.g. ``GetPartitionedTopicMetadata``) with ``request``;
        failures are typed errors; a method the transport cannot carry raises ``NotSupported`` naming it."""

    def stream(self, method: str, first_request: Any, on_response: Callable[[Any], None],
               on_end: Callable[[errors.PulsarLikeError | None], None],
               batch_requests: Callable[[list[Any]], Any] | None = None, name: str = "stream",
               reconnecting: bool = False) -> TransportStream:
        """Open a ``Produce`` or ``Consume`` stream whose first request is ``first_request``."""

    def close(self) -> None: ...
