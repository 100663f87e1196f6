"""A subscription on one topic partition: its cursor, its consumers and the dispatcher of its type.

The subscription owns the acknowledgment bookkeeping (cursor, per-consumer pending entries, redelivery
counts); the dispatcher owns who gets what (see :mod:`dispatch.dispatcher`). Everything is synchronous and
driven by calls from the service: ``add_consumer``, ``flow``, ``acknowledge``, ``on_new_entries`` ...
Deliveries leave through each consumer's ``sink``. Cursor changes call ``on_cursor_changed()`` so the
service can persist the cursor (it batches writes; nothing is persisted here).

Not thread-safe: the service calls one subscription from one thread (or under one lock).
"""
from __future__ import annotations

import logging
from typing import Any, Callable, Iterable

from broker_core.clock import SYSTEM_CLOCK, Clock
from broker_core.errors import (AlreadyClosed, ConsumerBusy, CumulativeAcknowledgementNotAllowedError, DataLost,
                                InvalidMessage)
from dispatch.consumer import Consumer
from dispatch.dispatcher import Dispatcher
from dispatch.key_shared import KeySharedDispatcher, KeySharedPolicy
from dispatch.shared import DelayedDelivery, SharedDispatcher
from dispatch.single_active import SingleActiveDispatcher
from dispatch.source import Cursor, EntrySource
from dispatch.throttle import DispatchThrottle
from dispatch.types import SubType

log = logging.getLogger(__name__)


class Subscription:
    def __init__(self, name: str, topic: str, partition_index: int, source: EntrySource, cursor: Cursor,
                 *, durable: bool = True, max_read_entries: int = 100, max_delivery_bytes: int = 8 << 20,
                 max_unacked_per_consumer: int = 50000, max_unacked_per_subscription: int = 0,
                 on_cursor_changed: Callable[[], None] | None = None, clock: Clock = SYSTEM_CLOCK,
                 scheduler: Callable[[float, Callable[[], None]], Any] | None = None,
                 delayed_delivery: DelayedDelivery | None = DelayedDelivery(),
                 key_shared_consistent_hashing: bool = False, batch_index_ack: bool = True,
                 skip_damaged: bool = False) -> None:
        self.name = name
        self.topic = topic
        self.partition_index = partition_index
        self.source = source
        self.cursor = cursor
        self.durable = durable
        self.max_read_entries = max_read_entries
        self.max_delivery_bytes = max_delivery_bytes
        self.max_unacked_per_consumer = max_unacked_per_consumer
        self.max_unacked_per_subscription = max_unacked_per_subscription
        """Shared and Key_Shared: dispatch stops while the consumers hold this many unacked messages (0: none)."""
        self.on_cursor_changed = on_cursor_changed
        self.clock = clock
        self.scheduler = scheduler
        """``scheduler(delay_s, callback)`` -> a handle with ``cancel()`` (the event loop's call_later);
        delayed delivery needs it to wake up."""
        self.delayed_delivery = delayed_delivery
        self.key_shared_consistent_hashing = key_shared_consistent_hashing
        self.batch_index_ack = batch_index_ack
        """Redeliver only the unacknowledged messages of a partly acknowledged batch (an ack set);
        False: the whole batch (Pulsar's ``acknowledgmentAtBatchIndexLevelEnabled``)."""
        self.skip_damaged_ranges = skip_damaged
        """Pass over damaged stored ranges, acknowledging them (Pulsar's ``autoSkipNonRecoverableData``);
        False: dispatch stops at one and every consumer gets its ``DataLost``."""
        self.damaged_skipped = 0
        """Messages of damaged ranges this subscription passed over."""
        self.throttle: DispatchThrottle | None = None
        """The dispatch rate limits it obeys (None: none, see :mod:`dispatch.throttle`); the broker sets it."""
        self._skipped_ranges: set[tuple[int, int]] = set()
        self.redelivery_counts: dict[int, int] = {}
        """Entry offset -> times it came back unacknowledged (only entries that did)."""
        self.msg_out_counter = 0
        self.bytes_out_counter = 0
        self.msg_redeliver_counter = 0
        """Messages sent again to a consumer (Pulsar's msgRateRedeliver is measured from it)."""
        self.last_consumed_ms = 0
        """When messages were last sent to a consumer (0: never), and when one last acknowledged some."""
        self.last_acked_ms = 0
        self.seek_count = 0
        self.closed = False
        self._dispatcher: Dispatcher | None = None
        self._sub_type: SubType | None = None

    # -- consumers ---------------------------------------------------------------------------------

    @property
    def sub_type(self) -> SubType | None:
        """The type set by the first consumer (kept after the last one leaves, as Pulsar reports it)."""
        return self._sub_type

    @property
    def consumers(self) -> list[Consumer]:
        return list(self._dispatcher.consumers) if self._dispatcher is not None else []

    @property
    def active_consumer(self) -> Consumer | None:
        return self._dispatcher.active_consumer() if self._dispatcher is not None else None

    @property
    def properties(self) -> dict[str, str]:
        """Pulsar's subscription properties, kept with the cursor (a durable subscription's saved with it)."""
        return self.cursor.subscription_properties

    def replace_properties(self, properties: dict[str, str]) -> None:
        """Replace every property (Pulsar's ``updateSubscriptionProperties``); the cursor is saved with them."""
        self.cursor.subscription_properties = dict(properties)
        if self.on_cursor_changed is not None:
            self.on_cursor_changed()

    def add_consumer(self, consumer: Consumer, sub_type: SubType | str) -> None:
        """Attach ``consumer``. Raises ``ConsumerBusy`` (Exclusive taken, or another type -- or another
        Key_Shared mode -- in use), ``ConsumerAssignError`` (bad STICKY ranges), ``AlreadyClosed``."""
        if self.closed:
            raise AlreadyClosed(f"subscription {self.name} on {self.topic} is closed")
        sub_type = SubType(sub_type)
        dispatcher = self._dispatcher
        if dispatcher is not None and dispatcher.consumers and dispatcher.sub_type is not sub_type:
            raise ConsumerBusy(
                f"subscription {self.name} is of type {dispatcher.sub_type}; a {sub_type} consumer cannot"
                f" join it while its {len(dispatcher.consumers)} consumer(s) are connected: use the same"
                " subscription type, or another subscription name",
                subscription=self.name, sub_type=str(dispatcher.sub_type))
        if dispatcher is None or dispatcher.sub_type is not sub_type or (
                sub_type is SubType.KEY_SHARED and not dispatcher.consumers):
            if dispatcher is not None:
                dispatcher.close()
            dispatcher = self._new_dispatcher(sub_type, consumer)
            self._dispatcher = dispatcher
        dispatcher.add_consumer(consumer)
        self._sub_type = sub_type

    def remove_consumer(self, consumer: Consumer) -> None:
        """Detach ``consumer`` (disconnect or close); what it held unacknowledged goes back for delivery."""
        if self._dispatcher is not None:
            self._dispatcher.remove_consumer(consumer)

    def _new_dispatcher(self, sub_type: SubType, consumer: Consumer) -> Dispatcher:
        if sub_type in (SubType.EXCLUSIVE, SubType.FAILOVER):
            return SingleActiveDispatcher(self, sub_type)
        if sub_type is SubType.SHARED:
            return SharedDispatcher(self)
        policy = getattr(consumer, "key_shared", None) or KeySharedPolicy()
        return KeySharedDispatcher(self, policy, self.key_shared_consistent_hashing)

    def set_limits(self, max_unacked_per_consumer: int, max_unacked_per_subscription: int,
                   delayed_delivery: DelayedDelivery | None) -> None:
        """New unacked limits and delayed-delivery settings (a policy changed): dispatch goes on under them
        (consumers held at a limit raised are sent more at once)."""
        self.max_unacked_per_consumer = max_unacked_per_consumer
        self.max_unacked_per_subscription = max_unacked_per_subscription
        self.delayed_delivery = delayed_delivery
        if self._dispatcher is not None and not self.closed:
            self._dispatcher.limits_changed()

    # -- flow and dispatch -------------------------------------------------------------------------

    def flow(self, consumer: Consumer, permits: int) -> None:
        """``consumer`` has room for ``permits`` more messages."""
        if self._dispatcher is not None and not self.closed:
            self._dispatcher.flow(consumer, permits)

    def on_new_entries(self) -> None:
        """The log's durable end advanced."""
        if self._dispatcher is not None and not self.closed:
            self._dispatcher.dispatch()

    def redeliver_unacknowledged(self, consumer: Consumer) -> None:
        """Send again everything ``consumer`` holds unacknowledged (for Exclusive/Failover: rewind to the
        first unacknowledged message). Permits are unchanged: a client that cleared its receiver queue
        grants the room back with a flow, as Pulsar clients do."""
        if self._dispatcher is not None and not self.closed:
            self._dispatcher.redeliver_unacknowledged(consumer)

    def redeliver(self, consumer: Consumer, ranges: Iterable[tuple[int, int]]) -> None:
        """Send again the messages of ``ranges`` ``[start, end)`` that ``consumer`` holds (negative acks):
        Shared types redeliver those entries, ordered types everything unacknowledged."""
        if self._dispatcher is not None and not self.closed:
            self._dispatcher.redeliver(consumer, [(int(s), int(e)) for s, e in ranges])

    def first_unacked_offset(self) -> int:
        cursor = self.cursor
        return max(cursor.next_unacked(cursor.mark_delete_offset + 1), self.source.start_offset)

    # -- acknowledgments ---------------------------------------------------------------------------

    def acknowledge(self, consumer: Consumer, ranges: Iterable[tuple[int, int]]) -> int:
        """Acknowledge the offset ranges ``[start, end)``; returns how many messages were newly acked.

        As Pulsar's cursor (``asyncDelete``), any message of the topic is acknowledged, whether ``consumer``
        holds it or not: a client re-sends the acks still pending when it reconnects, before the broker has
        sent those messages again (an entry another consumer holds stays on its list until that one acks it
        or leaves; dispatch passes over what the cursor holds acknowledged). Raises ``InvalidMessage``,
        changing nothing, when a range is empty or reaches past the topic's durable end (nobody was sent
        it: Pulsar's "invalid position" beyond the last confirmed entry).
        """
        ranges = [(int(s), int(e)) for s, e in ranges]
        limit = self.source.durable_end_offset
        for s, e in ranges:
            if not 0 <= s < e <= limit:
                raise InvalidMessage(
                    f"cannot acknowledge offsets [{s}, {e}) on subscription {self.name}: "
                    + (f"the topic holds offsets below {limit}, so no consumer was sent them" if e > limit
                       else "an empty range"), start=s, end=e, topic_end=limit)
        cursor = self.cursor
        pending = consumer.pending
        counts = self.redelivery_counts
        newly = 0
        done: list[int] = []
        for s, e in ranges:
            pos = s
            for ps, pe in pending.overlapping(s, e):
                if pos < ps:
                    newly += cursor.ack(pos, ps)
                cs, ce = max(s, ps), min(e, pe)
                n = cursor.ack(cs, ce)
                newly += n
                # a message may have been acked by another consumer (failover overlap): ask the cursor
                fully = (ce == pe and cs <= ps) or cursor.next_unacked(ps) >= pe
                if pending.acked(ps, n, fully):
                    done.append(ps)
                    if counts:
                        counts.pop(ps, None)
                pos = ce
            if pos < e:
                newly += cursor.ack(pos, e)
        if done and self._dispatcher is not None:
            self._dispatcher.entries_done(consumer, done)
        self._acked(consumer, newly)
        return newly

    def acknowledge_cumulative(self, consumer: Consumer, offset: int) -> int:
        """Acknowledge every message <= ``offset``; returns how many were newly acked.

        As Pulsar's cursor (``asyncMarkDelete``), ``offset`` may be past what ``consumer`` was sent (a
        client re-sending its acks after a reconnect) and past where dispatch reads: dispatch then goes on
        after it (Pulsar moves the read position: "the client has skipped some entries"). Raises
        ``CumulativeAcknowledgementNotAllowedError`` on Shared/Key_Shared, and ``InvalidMessage`` (changing
        nothing) when ``offset`` is past the topic's durable end (Pulsar: "invalid mark deleted position").
        """
        dispatcher = self._dispatcher
        if dispatcher is not None and not dispatcher.allows_cumulative_ack:
            raise CumulativeAcknowledgementNotAllowedError(
                f"cumulative acknowledgment is not allowed on {dispatcher.sub_type} subscription"
                f" {self.name}; acknowledge messages individually", subscription=self.name)
        offset = int(offset)
        limit = self.source.durable_end_offset
        if not 0 <= offset < limit:
            raise InvalidMessage(
                f"cannot acknowledge cumulatively up to offset {offset} on subscription {self.name}: the topic"
                f" holds offsets below {limit}, so no consumer was sent it", offset=offset, topic_end=limit)
        cursor = self.cursor
        pending = consumer.pending
        newly = 0
        for ps, pe in pending.overlapping(offset, offset + 1):
            if pe > offset + 1:  # the entry holding offset stays pending for its later messages
                n = cursor.ack(ps, offset + 1)
                newly += n
                pending.acked(ps, n)
        newly += cursor.ack_cumulative(offset)
        if dispatcher is not None and newly:
            dispatcher.skip_range(offset, offset + 1)  # reading goes on after it, not through what it acked
        removed = pending.remove_through(offset)
        counts = self.redelivery_counts
        if counts:
            for start in removed:
                counts.pop(start, None)
            md = cursor.mark_delete_offset
            for start in [s for s in counts if s <= md]:
                del counts[start]
        self._acked(consumer, newly)
        return newly

    def expire_through(self, offset: int) -> int:
        """Message expiry (TTL): acknowledge every message <= ``offset`` on the cursor, whoever holds it
        (delayed messages too), as Pulsar's expiry monitor moves the mark-delete position; returns how
        many were newly acknowledged. Consumers drop those entries from their pending lists."""
        offset = int(offset)
        if self.closed or offset <= self.cursor.mark_delete_offset:
            return 0
        cursor = self.cursor
        dispatcher = self._dispatcher
        consumers = list(dispatcher.consumers) if dispatcher is not None else []
        newly = 0
        for consumer in consumers:  # an entry holding offset stays pending for its later messages
            for ps, pe in consumer.pending.overlapping(offset, offset + 1):
                if pe > offset + 1:
                    n = cursor.ack(ps, offset + 1)
                    newly += n
                    consumer.pending.acked(ps, n)
        newly += cursor.ack_cumulative(offset)
        if not newly:
            return 0
        counts = self.redelivery_counts
        for start in [s for s in counts if s <= offset]:
            del counts[start]
        if dispatcher is not None:
            for consumer in consumers:
                done = consumer.pending.remove_through(offset)
                if done:
                    dispatcher.entries_done(consumer, done)
        if self.on_cursor_changed is not None:
            self.on_cursor_changed()
        if dispatcher is not None:
            dispatcher.dispatch()  # consumers below their unacked limit again; expired entries are skipped
        return newly

    def _acked(self, consumer: Consumer, newly: int) -> None:
        consumer.last_acked_ms = self.last_acked_ms = self.clock.now_ms()
        if newly:
            if self.on_cursor_changed is not None:
                self.on_cursor_changed()
            if self._dispatcher is not None:
                self._dispatcher.on_acked(consumer)

    def seek(self, offset: int) -> None:
        """Reset the cursor so that the next message delivered is ``offset`` (clamped to the log's end):
        every acknowledgment is forgotten, everything before ``offset`` counts as acknowledged, pending
        lists are dropped. Permits are unchanged."""
        offset = max(0, min(int(offset), self.source.end_offset))
        self.cursor.reset(offset - 1)
        self.seek_count += 1
        self.redelivery_counts.clear()
        if self._dispatcher is not None:
            for c in self._dispatcher.consumers:
                c.pending.clear()
                c.failed = None  # a damaged range met again after the seek is reported again
                if offset > c.highest_delivered_end:
                    c.highest_delivered_end = offset
        if self.on_cursor_changed is not None:
            self.on_cursor_changed()
        if self._dispatcher is not None and not self.closed:
            self._dispatcher.on_seek(offset)

    # -- state -------------------------------------------------------------------------------------

    @property
    def backlog(self) -> int:
        """Pulsar's msgBacklog: unacknowledged messages between the mark-delete offset and the log end."""
        return self.cursor.backlog(self.source.end_offset)

    @property
    def unacked_messages(self) -> int:
        """Messages sent to connected consumers and not acknowledged yet."""
        return sum(c.unacked_messages for c in self.consumers)

    def skip_damaged(self, lost: DataLost) -> bool:
        """Pass over the damaged range ``lost`` names when ``autoSkipNonRecoverableData`` is on: it is logged
        once, counted, acknowledged (a durable cursor moves past it, so its backlog does not hold lost
        messages) and dispatch goes on after it. False (nothing done) when the setting is off."""
        if not self.skip_damaged_ranges or self._dispatcher is None:
            return False
        start, end = lost.start_offset, lost.end_offset
        if (start, end) not in self._skipped_ranges:
            self._skipped_ranges.add((start, end))
            self.damaged_skipped += end - start
            log.warning("event=damaged_range_skipped topic=%s subscription=%s first_offset=%d last_offset=%d"
                        " messages=%d reason=%r", self.topic, self.name, start, end - 1, end - start,
                        getattr(lost, "reason", lost.message))
        if self.durable and self.cursor.ack(start, end) and self.on_cursor_changed is not None:
            self.on_cursor_changed()
        self._dispatcher.skip_range(start, end)
        return True

    def close(self) -> None:
        """Stop dispatching and detach every consumer (without notifying them)."""
        self.closed = True
        if self.throttle is not None:
            self.throttle.cancel()
        if self._dispatcher is not None:
            for c in self._dispatcher.consumers:
                c.pending.clear()
            self._dispatcher.close()

    def stats(self) -> dict[str, object]:
        """The subscription part of Pulsar's topic stats."""
        active = self.active_consumer
        return {
            "msgBacklog": self.backlog,
            "unackedMessages": self.unacked_messages,
            "type": str(self._sub_type) if self._sub_type is not None else None,
            "msgOutCounter": self.msg_out_counter,
            "bytesOutCounter": self.bytes_out_counter,
            "msgRedeliverCounter": self.msg_redeliver_counter,
            "lastConsumedTimestamp": self.last_consumed_ms,
            "lastAckedTimestamp": self.last_acked_ms,
            "consumers": [self._consumer_stats(c) for c in self.consumers],
            "activeConsumerName": active.consumer_name if active is not None else None,
            "isDurable": self.durable,
            "markDeleteOffset": self.cursor.mark_delete_offset,
            "seekCount": self.seek_count,
            "nonRecoverableMessagesSkipped": self.damaged_skipped,
            "subscriptionProperties": dict(self.properties),
            **(self._dispatcher.stats() if self._dispatcher is not None else {}),
        }

    def _consumer_stats(self, consumer: Consumer) -> dict[str, object]:
        stats = consumer.stats()
        if self._dispatcher is not None:
            stats.update(self._dispatcher.consumer_stats(consumer))
        return stats

    def __repr__(self) -> str:
        return f"Subscription({self.name!r}, {self.topic!r}, type={self._sub_type})"
