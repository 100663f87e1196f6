"""One consumer's session with the broker core, whatever the transport: subscribe, flow, acknowledge,
redeliver, seek, unsubscribe, close.

A front end (gRPC ``Consume`` stream, Pulsar binary connection) turns its wire requests into calls on a
:class:`ConsumerSession` and implements :class:`ConsumerEvents` to turn what the session reports (deliveries,
active consumer changes, end of topic, a failure) into its wire format -- as Pulsar's ``ServerCnx`` does
over ``TransportCnx``. What both need once lives here:

- where a new subscription starts (:class:`Start`: earliest, latest, the last message for an inclusive
  reader at latest, an offset, a publish time);
- the Key_Shared policy a consumer brings (:func:`key_shared_policy`: its sticky ranges cut short, so a
  client sending a million ranges costs one refusal, not a million tuples);
- permits behind a :class:`~broker_core.core.backpressure.PermitGate` (withheld while the front end's
  replies have no room: :meth:`ConsumerSession.pause` / :meth:`~ConsumerSession.resume`);
- end-of-topic watching on a terminated topic;
- events made while subscribing (the first dispatch round) held until the front end has answered the
  subscribe (:meth:`ConsumerEvents.subscribed`), dropped when subscribing fails;
- the topic's subscribe rate (``subscribeRate``, :mod:`broker_core.core.throttling`): a consumer -- its client's
  host and its name -- subscribing beyond it is refused with ``NotAllowedError``, before anything else;
- compacted reads (``read_compacted``, Pulsar's ``readCompacted``): persistent topics and Exclusive/Failover
  subscriptions only (``NotAllowedError`` otherwise, as Pulsar's broker answers); the subscription reads
  a :class:`~dispatch.compacted.CompactedSource` and the session's :attr:`ConsumerSession.positions` is a
  :class:`~broker_core.core.compacted_view.CompactedView`, so start positions, seeks and the last message
  id are the compacted view's;
- seek in Pulsar's order: the subscription's consumers are closed first (when the front end's clients
  subscribe again after a seek), the cursor is reset, then the seek is answered; what the consumers held
  is forgotten with the reset, so replays carry redelivery count 0.

Offsets only: message ids and protobuf positions are the front ends' business.
"""
from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterable, Optional, Protocol

from broker_core.core.backpressure import PermitGate
from broker_core.core.compacted_view import CompactedView
from broker_core.errors import InvalidMessage, NotAllowedError
from dispatch.consumer import Consumer, Delivery
from dispatch.key_shared import AUTO_SPLIT, STICKY, KeySharedPolicy
from dispatch.selectors.sticky import MAX_STICKY_RANGES
from dispatch.types import SubType

if TYPE_CHECKING:
    from broker_core.core.topic_protocol import Topic

__all__ = ["COMPACTED_SUB_TYPES", "ConsumerEvents", "ConsumerSession", "Delivery", "EARLIEST", "KeySharedPolicy",
           "LAST_MESSAGE", "LATEST", "MAX_PERMITS", "Start", "SubType", "check_read_compacted", "key_shared_policy"]
"""``Delivery``, ``KeySharedPolicy`` and ``SubType`` are dispatch's, re-exported: what a front end's sink
receives and what it passes to :meth:`ConsumerSession.subscribe`, from the session layer (front ends call
sessions, never dispatch)."""

log = logging.getLogger(__name__)

MAX_PERMITS = (1 << 31) - 1
"""Most permits a consumer may hold: a Pulsar client's receiver queue is an int32."""
LOGGED_NAME = 200
"""Subscription and consumer names are cut to this in log lines (a client may send a 4 MB name)."""
READER_RESUBSCRIBE_S = 60.0
"""How long a reader's subscription waits for its consumer to come back after a seek closed it."""


class ConsumerEvents(Protocol):
    """What a session reports to its front end, to be sent in the front end's wire format."""

    def subscribed(self) -> None:
        """The subscription exists: answer the subscribe request (what dispatch made meanwhile follows)."""

    def deliver(self, deliveries: list[Delivery]) -> None:
        """Entries for the client (dispatch recorded them as pending: never drop them)."""

    def active_changed(self, active: bool) -> None:
        """The consumer became (or stopped being) the active one of a Failover/Exclusive subscription."""

    def reached_end_of_topic(self) -> None:
        """The consumer has every message of a terminated topic."""

    def error(self, exc: Exception) -> None:
        """Dispatch failed the consumer (a damaged segment, the topic unloaded or deleted): end the session."""

    def ended(self) -> None:
        """The broker closed the session (a seek of its subscription): the client should subscribe again."""


@dataclass(frozen=True)
class Start:
    """Where a new subscription (or a seek) starts, without a wire format."""

    where: str
    """``earliest``, ``latest``, ``last`` (the last message: a reader at latest, inclusive), ``offset``
    (``value``) or ``time`` (the first message published at or after ``value`` ms)."""
    value: int = 0

    @staticmethod
    def at(offset: int) -> "Start":
        return Start("offset", offset)

    @staticmethod
    def published(publish_time_ms: int) -> "Start":
        return Start("time", publish_time_ms)

    def offset(self, topic: "Topic | CompactedView") -> int:
        """The offset on ``topic`` (or its compacted view) of the first message to deliver (an offset is
        clamped to its end)."""
        where = self.where
        if where == "earliest":
            return topic.start_offset
        if where == "offset":
            return min(self.value, topic.confirmed_end_offset)
        if where == "time":
            return topic.offset_for_timestamp(self.value)
        if where == "last":
            # as a Pulsar reader at latest with start_message_id_inclusive: the last message comes first
            if isinstance(topic, CompactedView):
                return topic.last_offset()
            return max(topic.start_offset, topic.confirmed_end_offset - 1)
        return topic.confirmed_end_offset


EARLIEST, LATEST, LAST_MESSAGE = Start("earliest"), Start("latest"), Start("last")

COMPACTED_SUB_TYPES = (SubType.EXCLUSIVE, SubType.FAILOVER)
"""The subscription types a compacted reader may use (one active consumer: Pulsar's rule)."""


def check_read_compacted(topic: "Topic", sub_type: SubType) -> None:
    """``NotAllowedError`` unless ``topic`` and ``sub_type`` allow compacted reads (Pulsar's broker answers
    NotAllowed with the same reason; its clients refuse before asking)."""
    if sub_type not in COMPACTED_SUB_TYPES:
        raise NotAllowedError("readCompacted only allowed on failover or exclusive subscriptions;"
                              f" subscribe as Exclusive or Failover, or without read_compacted ({sub_type})")
    if not topic.persistent:
        raise NotAllowedError(f"readCompacted only allowed on persistent topics: {topic.topic} is"
                              " non-persistent and is never compacted; subscribe without read_compacted")


def key_shared_policy(sticky: bool, allow_out_of_order_delivery: bool,
                      ranges: Iterable[tuple[int, int]]) -> KeySharedPolicy:
    """A Key_Shared consumer's policy. Only one range more than a consumer may hold is kept: the selector
    refuses that many, and copying all of what a client sent would cost memory for nothing."""
    kept: list[tuple[int, int]] = []
    for start, end in ranges:
        if len(kept) > MAX_STICKY_RANGES:
            break
        kept.append((start, end))
    return KeySharedPolicy(STICKY if sticky else AUTO_SPLIT, allow_out_of_order_delivery, tuple(kept))


class ConsumerSession:
    """One consumer: its dispatch ``Consumer``, subscription and permit gate (see the module docstring).

    ``peers`` is the front end's directory of sessions by ``(topic, subscription)``: a seek that closes
    consumers closes the ones found there. ``later(delay, fn)`` schedules a call (default: the running
    event loop's ``call_later``).
    """

    def __init__(self, events: ConsumerEvents, *, peer: str = "",
                 peers: Optional[dict[tuple[str, str], set]] = None,
                 later: Optional[Callable[[float, Callable[..., Any]], Any]] = None) -> None:
        self.events = events
        self.peer = peer
        self.peers = peers
        self._later = later
        self.topic: Any = None
        self.positions: Any = None
        """Where messages are for this consumer: the topic, or its :class:`CompactedView` when reading
        compacted (front ends resolve seeks and the last message id with it)."""
        self.read_compacted = False
        self.sub: Any = None
        self.consumer: Optional[Consumer] = None
        self.gate: Optional[PermitGate] = None
        self.closed = False
        self._paused = False
        self._held: Optional[list[tuple[Callable[..., None], tuple]]] = None
        self._ends: Any = None

    # ------------------------------------------------------------------ subscribe
    def subscribe(self, topic: "Topic", subscription: str, sub_type: SubType, start: Start, *, consumer_id: int,
                  consumer_name: str, durable: bool = True, priority_level: int = 0, multi_topic: bool = False,
                  key_shared: Optional[KeySharedPolicy] = None, permits: int = 0, read_compacted: bool = False,
                  refuse_damaged: bool = False, properties: Optional[dict[str, str]] = None) -> Any:
        """Join ``subscription`` on ``topic`` (a new one starts at ``start``); returns the subscription.
        ``events.subscribed()`` runs before anything dispatched meanwhile is reported. On failure nothing
        is reported and the session holds nothing. ``read_compacted``: read the compacted view (see the
        module's doc). ``refuse_damaged``: a client that cannot be told later that its next message is in a
        damaged stored range (Pulsar's protocol has no error for a consumer) is refused now, with
        ``NotAllowedError`` naming the range, rather than left waiting. ``properties``: the subscription's, when
        this subscribe creates it (Pulsar's ``subscription_properties``; an existing one keeps its own)."""
        if not subscription:
            raise InvalidMessage("subscription name must not be empty")
        if read_compacted:
            check_read_compacted(topic, sub_type)
        topic.throttling.check_subscribe(self.peer.rsplit(":", 1)[0], consumer_name)
        self.topic = topic
        self.read_compacted = read_compacted
        self.positions = positions = CompactedView(topic) if read_compacted else topic
        self._held = []
        consumer = Consumer(consumer_id, consumer_name, self._deliver, priority_level=priority_level,
                            multi_topic=multi_topic,
                            key_shared=key_shared if sub_type is SubType.KEY_SHARED else None,
                            on_active_change=self._active_changed, on_error=self._failed)
        consumer.permits = permits
        self.consumer = consumer
        self.gate = gate = PermitGate(consumer)
        if self._paused:
            gate.close()
        self._ends = ends = topic.termination
        ends.watch(consumer, self._reached_end)
        created = subscription not in topic.subscriptions and subscription not in topic.readers
        try:
            extra = {"read_compacted": True} if read_compacted else {}
            self.sub = sub = topic.subscribe(subscription, sub_type, consumer, durable=durable,
                                             start_offset=start.offset(positions), **extra)
        except BaseException:
            ends.forget(consumer)
            self._held = None
            self.consumer = self.gate = None
            raise
        if refuse_damaged and topic.persistent:  # a non-persistent topic stores nothing to be damaged
            # a reader started at a message id is sent that id's entry first (its client keeps what follows the
            # id): the entry after it is looked at too
            lost = topic.unreadable_at(sub.first_unacked_offset(), 2 if not durable and start.where == "offset" else 1)
            if lost is not None:
                ends.forget(consumer)
                self._held = None
                topic.consumer_left(sub, consumer)
                self.consumer = self.gate = None
                raise NotAllowedError(f"{lost.message} (the consumer's next message is there)", **lost.fields)
        if properties and created:
            sub.replace_properties(properties)
        gate.attach(lambda granted: sub.flow(consumer, granted))
        if self.peers is not None:
            self.peers.setdefault((topic.topic, sub.name), set()).add(self)
        held, self._held = self._held, None
        self.events.subscribed()
        for report, args in held:
            report(*args)
        log.info("event=consumer_subscribed topic=%s subscription=%s consumer=%s type=%s peer=%s"
                 " read_compacted=%s", topic.topic, subscription[:LOGGED_NAME], consumer_name[:LOGGED_NAME],
                 sub_type, self.peer, read_compacted)
        if ends.terminated:
            topic.check_end_of_topic()
        return sub

    # events from dispatch: held while subscribing (the subscribe's answer goes first)
    def _report(self, report: Callable[..., None], *args: Any) -> None:
        if self._held is not None:
            self._held.append((report, args))
        else:
            report(*args)

    def _deliver(self, deliveries: list[Delivery]) -> None:
        # dispatch's sink, once per dispatch round: kept to two attribute reads when nothing is held
        if self._held is None:
            self.events.deliver(deliveries)
        else:
            self._held.append((self.events.deliver, (deliveries,)))
        if self._ends.end_offset is not None:  # a terminated topic only
            self.topic.check_end_of_topic()

    def _active_changed(self, active: bool) -> None:
        self._report(self.events.active_changed, active)

    def _reached_end(self) -> None:
        self._report(self.events.reached_end_of_topic)

    def _failed(self, exc: Exception) -> None:
        self._report(self.events.error, exc)

    # ------------------------------------------------------------------ permits
    def flow(self, permits: int) -> None:
        """The client grants ``permits`` more (``InvalidMessage``, changing nothing, past :data:`MAX_PERMITS`)."""
        consumer, gate = self.consumer, self.gate
        if consumer.permits + gate.withheld + permits > MAX_PERMITS:
            raise InvalidMessage(f"consumer {consumer.consumer_name[:LOGGED_NAME]!r} would hold more than"
                                 f" {MAX_PERMITS} permits", permits=permits)
        gate.flow(permits)

    def pause(self) -> None:
        """The front end's replies have no room: permits are withheld, nothing more is dispatched."""
        self._paused = True
        if self.gate is not None:
            self.gate.close()

    def resume(self) -> None:
        """Room again: the withheld permits go back, dispatching what waited."""
        self._paused = False
        if self.gate is not None:
            self.gate.open()

    # ------------------------------------------------------------------ acknowledgments and redelivery
    def acknowledge(self, ranges: list[tuple[int, int]]) -> None:
        """Acknowledge the messages of each ``[start, end)`` offset range."""
        self.sub.acknowledge(self.consumer, ranges)

    def acknowledge_cumulative(self, offset: int) -> None:
        """Acknowledge every message up to ``offset``, wherever it falls (inside an entry too: a client's id
        arithmetic may name any message); at or below the mark-delete point nothing changes."""
        sub = self.sub
        if self.topic.persistent and offset <= sub.cursor.mark_delete_offset:
            return
        sub.acknowledge_cumulative(self.consumer, offset)

    def redeliver(self, ranges: Optional[list[tuple[int, int]]] = None) -> None:
        """Send again what this consumer holds unacknowledged in ``ranges`` (None: all of it)."""
        if ranges is None:
            self.sub.redeliver_unacknowledged(self.consumer)
        elif ranges:
            self.sub.redeliver(self.consumer, ranges)

    def redeliver_entries(self, entry_starts: Iterable[int]) -> None:
        """Send again the entries starting at ``entry_starts`` that this consumer holds (others are ignored):
        one set pass over the starts, then a lookup per entry held (100,000 ids cost 0.2 s looked up one by
        one)."""
        pending = self.consumer.pending
        held = sorted(start for start in set(entry_starts) if start in pending)
        ranges = [(start, end) for start in held for s, end in pending.overlapping(start, start + 1) if s == start]
        if ranges:
            self.sub.redeliver(self.consumer, ranges)

    # ------------------------------------------------------------------ seek
    def seek(self, offset: int, answer: Callable[[], None], *, close_consumers: bool) -> None:
        """Move the subscription so that ``offset`` is delivered next, then ``answer()`` the seek.

        ``close_consumers`` (Pulsar's order): the subscription's consumers in ``peers`` -- this one too --
        are closed before the cursor moves, so nothing from the old position is sent meanwhile; they
        subscribe again. Without it this consumer stays, with its permits reset to zero (the client grants
        them again after the answer). A reader's subscription outlives the gap for
        :data:`READER_RESUBSCRIBE_S`, so its new position holds when it comes back."""
        topic, sub = self.topic, self.sub
        if close_consumers:
            for other in list(self.peers.get((topic.topic, sub.name), ())) if self.peers is not None else ():
                other.end(keep_reader=True)
            if not self.closed:
                self.end(keep_reader=True)
        else:
            self.consumer.permits = 0
            self.gate.reset()
        sub.seek(offset)
        ends = topic.termination
        if ends.terminated:
            ends.rewound(sub)
        answer()
        log.info("event=consumer_seek topic=%s subscription=%s offset=%d", topic.topic, sub.name[:LOGGED_NAME],
                 offset)
        if ends.terminated and not self.closed:
            topic.check_end_of_topic()
        if close_consumers and not sub.durable:
            later = self._later or asyncio.get_running_loop().call_later
            later(READER_RESUBSCRIBE_S, topic.drop_idle_reader, sub)

    # ------------------------------------------------------------------ leaving
    def unsubscribe(self, *, force: bool = False) -> None:
        """Delete the subscription (``SubscriptionNotFound``; ``NotAllowedError`` while other consumers are
        connected, unless ``force``), then leave it."""
        topic, sub = self.topic, self.sub
        topic.unsubscribe(sub.name, requester=self.consumer, force=force, durable=sub.durable)
        self.close()
        log.info("event=consumer_unsubscribed topic=%s subscription=%s", topic.topic, sub.name[:LOGGED_NAME])

    def close(self, *, keep_reader: bool = False) -> None:
        """The consumer leaves (its unacknowledged messages go to others); ``keep_reader`` keeps a reader's
        subscription for a moment (a seek closed it). Closing twice changes nothing."""
        if self.closed:
            return
        self.closed = True
        topic, sub, consumer = self.topic, self.sub, self.consumer
        if sub is None:
            return
        if self.peers is not None:
            key = (topic.topic, sub.name)
            subscribers = self.peers.get(key)
            if subscribers is not None:
                subscribers.discard(self)
                if not subscribers:
                    del self.peers[key]
        topic.consumer_left(sub, consumer, keep_reader=keep_reader)

    def end(self, *, keep_reader: bool = False) -> None:
        """The broker closes the session: :meth:`close`, then ``events.ended()``."""
        if self.closed:
            return
        self.close(keep_reader=keep_reader)
        self.events.ended()
