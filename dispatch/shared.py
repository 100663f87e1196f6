"""Shared: every consumer of the subscription gets messages; each message goes to one consumer.

Pulsar's ``PersistentDispatcherMultipleConsumers``, entry by entry:

1. **Who gets the next entry.** Among the consumers with permits, those of the highest priority (the
   lowest ``priority_level``) take turns, round robin; lower priorities get entries only while every
   higher one is out of permits. A consumer holding ``max_unacked_per_consumer`` unacknowledged messages
   is skipped until it acknowledges some (Pulsar's ``maxUnackedMessagesPerConsumer``); nobody gets anything
   while the consumers together hold ``max_unacked_per_subscription``, until they hold half as many
   (``maxUnackedMessagesPerSubscription``, ``blockedSubscriptionOnUnackedMsgs`` in the stats).
2. **What is sent first.** The *replay set* -- entries to send again: those a leaving consumer held
   unacknowledged, negatively acknowledged ones, everything a ``redeliver_unacknowledged`` returned, and
   delayed messages whose time came -- goes out first, in offset order; then new entries from the read
   position. An entry already acknowledged by the time it would go out is skipped.
3. **Delayed delivery** (seed "Delayed message delivery"): an entry whose ``deliver_at_time`` is still in
   the future is not sent; it is tracked in :class:`~dispatch.delayed.DelayedDeliveryTracker` and joins
   the replay set when due. One timer is armed for the earliest one. Delayed messages are never batched, so
   only single-message entries are looked at (and only those whose bytes can hold the field).

Example: consumers A and B with 2 permits each and entries 0..4 -> A gets 0 and 2, B gets 1 and 3, and
4 waits for a permit. If A closes holding 0 and 2 unacknowledged, they go to B first, before 4.

:class:`~dispatch.key_shared.KeySharedDispatcher` refines step 1: an entry's consumer is fixed by the
hash of its key, so an entry may have to wait while others go ahead.
"""
from __future__ import annotations

import bisect
import logging
from typing import TYPE_CHECKING, Any

from broker_core.protocol.entry import read_metadata
from broker_core.storage.stored_entry import StoredEntry
from dispatch.consumer import Consumer, Delivery
from dispatch.delayed import DelayedDeliveryTracker
from dispatch.dispatcher import Dispatcher, split_by_bytes
from dispatch.types import DelayedDelivery, SubType  # noqa: F401 (DelayedDelivery: re-exported)

if TYPE_CHECKING:
    from dispatch.subscription import Subscription

log = logging.getLogger(__name__)

_DELIVER_AT_TAG = b"\x98\x01"  # MessageMetadata field 19 (deliver_at_time), varint: its tag bytes

_MISSING = object()
STUCK = object()
"""An entry's consumer cannot take it now, but others may take later entries (Key_Shared)."""


def deliver_at(entry: "StoredEntry") -> int | None:
    """The entry's ``deliver_at_time`` (None: not a delayed message). Cheap for the usual entry: a
    batch, or an entry whose bytes do not contain the field's tag, is not parsed."""
    if entry.num_messages != 1 or _DELIVER_AT_TAG not in entry.data:
        return None
    metadata = read_metadata(entry.data)
    return metadata.deliver_at_time if metadata.HasField("deliver_at_time") else None


class SharedDispatcher(Dispatcher):
    allows_cumulative_ack = False

    def __init__(self, subscription: "Subscription", sub_type: SubType = SubType.SHARED) -> None:
        super().__init__(subscription, sub_type)
        self.read_offset = subscription.first_unacked_offset()
        self._replay: list[int] = []
        """Sorted offsets of the entries to send again; may hold offsets already removed (tombstones,
        compacted when they pile up), so removing the first of thousands is not a list shift."""
        self._replay_entries: dict[int, StoredEntry | None] = {}
        """The replay set: offset -> the entry when at hand (no second read), else None."""
        self._replay_dead = 0
        self._turn = 0
        settings = subscription.delayed_delivery
        self.delayed: DelayedDeliveryTracker | None = None
        if settings is not None and settings.enabled:
            self.delayed = DelayedDeliveryTracker(subscription.clock, settings.tick_ms, settings.strict)
        self.blocked_on_unacked = False
        """The subscription's consumers hold ``max_unacked_per_subscription`` unacked messages: nothing is
        dispatched until they hold half as many (Pulsar's ``blockedDispatcherOnUnackedMsgs``)."""
        self._timer: Any = None
        self._timer_at: int | None = None
        self._assigning: dict[Consumer, int] = {}  # messages assigned in the current pass, not yet sent
        self._ready: list[Consumer] = []  # consumers that may take entries in the current pass
        self._blocked: set[Consumer] = set()  # consumers found at their unacked limit
        self._wake = False  # an ack freed something that waits (Key_Shared: a draining hash)
        self._replay_scanned = -1

    # -- membership ----------------------------------------------------------------------------------

    def add_consumer(self, consumer: Consumer) -> None:
        self.consumers.append(consumer)
        self.dispatch()

    def remove_consumer(self, consumer: Consumer) -> None:
        if consumer not in self.consumers:
            return
        self.consumers.remove(consumer)
        self._blocked.discard(consumer)
        self._return_pending(consumer, None)
        self.dispatch()

    def close(self) -> None:
        self._cancel_timer()
        super().close()

    # -- redelivery ----------------------------------------------------------------------------------

    def redeliver_unacknowledged(self, consumer: Consumer) -> None:
        self._return_pending(consumer, None)
        self.dispatch()

    def redeliver(self, consumer: Consumer, ranges: list[tuple[int, int]]) -> None:
        """Send again the entries of ``consumer`` holding any offset in ``ranges`` (negative acks)."""
        self._return_pending(consumer, ranges)
        self.dispatch()

    def _return_pending(self, consumer: Consumer, ranges: list[tuple[int, int]] | None) -> list[int]:
        """Move ``consumer``'s pending entries (all, or those overlapping ``ranges``) to the replay set;
        each counts one more redelivery."""
        pending = consumer.pending
        if ranges is None:
            starts = pending.clear()
        else:
            starts = sorted({s for a, b in ranges for s, _ in pending.overlapping(a, b)})
            for s in starts:
                pending.acked(s, 0, fully=True)
        counts = self.subscription.redelivery_counts
        for s in starts:
            counts[s] = counts.get(s, 0) + 1
            self._replay_add(s)
        self.entries_returned(consumer, starts)
        return starts

    def waits_for_permits(self, offset: int) -> bool:
        """Hook: the waiting entry at ``offset`` is known to wait for a consumer that has no room now
        (skipped without a look; Key_Shared)."""
        return False

    def entries_returned(self, consumer: Consumer, starts: list[int]) -> None:
        """Hook: ``consumer`` no longer holds the entries at ``starts`` (Key_Shared releases hashes)."""

    def on_seek(self, offset: int) -> None:
        self._replay.clear()
        self._replay_entries.clear()
        self._replay_dead = 0
        if self.delayed is not None:
            self.delayed.clear()
        self.read_offset = offset
        self.dispatch()

    def skip_range(self, start: int, end: int) -> None:
        super().skip_range(start, end)
        for offset in [o for o in self._replay_entries if start <= o < end]:
            self._replay_remove(offset)

    def on_acked(self, consumer: Consumer) -> None:
        # Acks free room only for a consumer held at its unacked limit (or, Key_Shared, a draining hash, or
        # the subscription held at its limit): dispatching on every ack would rescan what waits for nothing new.
        if consumer in self._blocked or self._wake or (self.blocked_on_unacked and not self._subscription_blocked()):
            self._blocked.discard(consumer)
            self._wake = False
            self.dispatch()

    def limits_changed(self) -> None:
        """Delayed delivery turned on builds the tracker; turned off, what it holds goes now; a new tick is
        the tracker's (:meth:`~dispatch.delayed.DelayedDeliveryTracker.reset_tick`). Consumers held at an
        unacked limit are looked at again."""
        settings = self.subscription.delayed_delivery
        delayed = self.delayed
        if settings is None or not settings.enabled:
            self.delayed = None
            if delayed is not None:
                for offset in delayed.pop_all():
                    self._replay_add(offset)
        elif delayed is None or (not len(delayed) and (delayed.tick_ms, delayed.strict) != (
                settings.tick_ms, settings.strict)):
            self.delayed = DelayedDeliveryTracker(self.subscription.clock, settings.tick_ms, settings.strict)
        elif delayed.tick_ms != settings.tick_ms:
            delayed.reset_tick(settings.tick_ms)
        self._blocked.clear()
        self.blocked_on_unacked = False
        self._cancel_timer()
        self.dispatch()

    def _replay_add(self, offset: int, entry: "StoredEntry | None" = None) -> None:
        entries = self._replay_entries
        if offset in entries:
            if entry is not None:
                entries[offset] = entry
            return
        entries[offset] = entry
        replay = self._replay
        if not replay or offset > replay[-1]:
            replay.append(offset)
            return
        i = bisect.bisect_left(replay, offset)
        if i < len(replay) and replay[i] == offset:  # revives its tombstone
            self._replay_dead -= 1
        else:
            replay.insert(i, offset)

    def _replay_remove(self, offset: int) -> None:
        if self._replay_entries.pop(offset, _MISSING) is _MISSING:
            return
        self._replay_dead += 1
        if self._replay_dead > 64 and self._replay_dead * 2 > len(self._replay):
            self._replay = [o for o in self._replay if o in self._replay_entries]
            self._replay_dead = 0

    # -- choosing consumers ----------------------------------------------------------------------------

    def _is_blocked(self, consumer: Consumer) -> bool:
        limit = self.subscription.max_unacked_per_consumer
        if limit and consumer.pending.unacked_messages + self._assigning.get(consumer, 0) >= limit:
            self._blocked.add(consumer)
            return True
        return False

    def _unacked_total(self) -> int:
        """Messages the consumers hold unacknowledged, counting those assigned in the current pass."""
        return sum(c.pending.unacked_messages for c in self.consumers) + sum(self._assigning.values())

    def _subscription_blocked(self) -> bool:
        """Whether the subscription is held at ``max_unacked_per_subscription``: from when its consumers hold
        that many until they hold half as many (Pulsar's dispatcher)."""
        limit = self.subscription.max_unacked_per_subscription
        if not limit:
            self.blocked_on_unacked = False
            return False
        total = self._unacked_total()
        if self.blocked_on_unacked:
            self.blocked_on_unacked = total > limit // 2
        else:
            self.blocked_on_unacked = total >= limit
        return self.blocked_on_unacked

    def _available(self) -> list[Consumer]:
        """Consumers that may take an entry now, highest priority only."""
        if self._subscription_blocked():
            return []
        ready = [c for c in self.consumers if c.permits > 0 and not self._is_blocked(c)]
        if len(ready) > 1:
            best = min(c.priority_level for c in ready)
            ready = [c for c in ready if c.priority_level == best]
        return ready

    def choose(self, entry: "StoredEntry", replay: bool) -> Any:
        """The consumer for ``entry`` (among ``self._ready``, the consumers that may take entries in this
        pass); None when nobody can take anything now (the pass stops); ``STUCK`` when this entry must
        wait but later ones may go (Key_Shared)."""
        ready = self._ready
        if not ready:
            ready = self._ready = self._available()  # lower priorities, once the higher ones are full
            if not ready:
                return None
        self._turn += 1
        return ready[self._turn % len(ready)]

    def assigned(self, consumer: Consumer, entry: "StoredEntry") -> None:
        """Hook: ``entry`` goes to ``consumer``."""

    # -- dispatching -------------------------------------------------------------------------------------

    def _dispatch_rounds(self) -> None:
        self._replay_scanned = -1  # entries left waiting are looked at once per dispatch, not per pass
        self._release_due()
        while self._round():
            self._release_due()

    def _after_dispatch(self) -> None:
        self._arm_timer()

    def may_read_ahead(self) -> bool:
        """Whether new entries may be read while the replay set still holds some (Key_Shared bounds it)."""
        return not self._replay_entries

    def _round(self) -> bool:
        """One read-and-assign pass; True when something was sent or skipped (worth another pass)."""
        sub = self.subscription
        if sub.closed or not self.consumers or not self._available():
            return False
        budget = self.read_budget()
        if budget is None:
            return False  # a dispatch rate's budget is spent: dispatch resumes when it renews
        progress = False
        self._ready = self._available()
        if self._replay_entries:
            progress = self._assign(self._read_replay(budget[0]), replay=True)
            if not self._available() or (progress and sub.throttle is not None):
                return progress  # throttled: the next pass asks for the budget left
        if not self.may_read_ahead():
            return progress
        source = sub.source
        end = source.durable_end_offset
        if self.read_offset < source.start_offset:
            self.read_offset = source.start_offset
        if self.read_offset >= end:
            return progress
        entries = source.read(self.read_offset, budget[0], budget[1], end)
        return self._assign(entries, replay=False) or progress

    def _read_replay(self, max_entries: int) -> list["StoredEntry"]:
        """The next waiting entries not looked at yet in this dispatch (at most ``max_entries``), in offset
        order."""
        sub = self.subscription
        source = sub.source
        entries = self._replay_entries
        replay = self._replay
        out: list[StoredEntry] = []
        waits = self.waits_for_permits
        i = bisect.bisect_right(replay, self._replay_scanned)
        while i < len(replay) and len(out) < max_entries:
            offset = replay[i]
            i += 1
            self._replay_scanned = offset
            if offset not in entries or waits(offset):
                continue
            entry = entries[offset]
            if entry is None:
                got = source.read(offset, 1, sub.max_delivery_bytes)
                if not got or got[0].offset != offset:  # trimmed by retention meanwhile
                    self._replay_remove(offset)
                    continue
                entry = entries[offset] = got[0]
            out.append(entry)
        return out

    def _assign(self, entries: list["StoredEntry"], *, replay: bool) -> bool:
        batches: dict[Consumer, list[Delivery]] = {}
        progress = False
        delayed = self.delayed if not replay else None
        if not self._ready:
            self._ready = self._available()
        limit = self.subscription.max_unacked_per_subscription
        limit_left = limit - self._unacked_total() if limit else None
        for entry in entries:
            if delayed is not None:
                at = deliver_at(entry)
                if at is not None and delayed.add(entry.offset, at):
                    self.read_offset = entry.end_offset
                    progress = True
                    continue
            # Whether the entry may go first (cheap), then what of it is still unacknowledged.
            consumer = self.choose(entry, replay)
            if consumer is None:
                break
            if consumer is STUCK:
                if not replay:
                    self._replay_add(entry.offset, entry)
                    self.read_offset = entry.end_offset
                    progress = True
                continue
            delivery = self.prepare(entry)
            if delivery is None:  # acknowledged meanwhile
                if replay:
                    self._replay_remove(entry.offset)
                else:
                    self.read_offset = entry.end_offset
                progress = True
                continue
            consumer.permits -= delivery.messages
            self._assigning[consumer] = self._assigning.get(consumer, 0) + delivery.messages
            if consumer.permits <= 0 or self._is_blocked(consumer):
                self._ready.remove(consumer)
            if limit_left is not None:
                limit_left -= delivery.messages
                if limit_left <= 0:  # the subscription reached max_unacked_per_subscription
                    self.blocked_on_unacked = True
                    self._ready.clear()
            batches.setdefault(consumer, []).append(delivery)
            self.assigned(consumer, entry)
            progress = True
            if replay:
                self._replay_remove(entry.offset)
            else:
                self.read_offset = entry.end_offset
        self._assigning.clear()
        limit = self.subscription.max_delivery_bytes
        for consumer, deliveries in batches.items():
            for group in split_by_bytes(deliveries, limit):
                self.send(consumer, group)
        return progress

    # -- delayed delivery ------------------------------------------------------------------------------

    def _release_due(self) -> None:
        delayed = self.delayed
        if delayed is not None and len(delayed) and delayed.has_ready():
            for offset in delayed.pop_ready():
                self._replay_add(offset)

    def _arm_timer(self) -> None:
        delayed = self.delayed
        schedule = self.subscription.scheduler
        if delayed is None or schedule is None or not len(delayed) or self.subscription.closed:
            return
        at = delayed.next_delivery_time()
        if at is None or (self._timer is not None and self._timer_at is not None and self._timer_at <= at):
            return
        self._cancel_timer()
        delay_ms = delayed.next_timer_delay_ms()
        if delay_ms is None:
            return
        self._timer_at = at
        # deliver_at is wall time, the loop's timer monotonic: re-read the wall clock at least once a tick
        delay_ms = min(max(delay_ms, 0), delayed.clock_check_ms)
        self._timer = schedule(delay_ms / 1000.0, self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        self._timer_at = None
        if not self.subscription.closed:
            self.dispatch()

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer = None
        self._timer_at = None

    # -- stats -------------------------------------------------------------------------------------------

    def stats(self) -> dict[str, object]:
        return {"msgInReplay": len(self._replay_entries),
                "msgDelayed": len(self.delayed) if self.delayed is not None else 0,
                "blockedSubscriptionOnUnackedMsgs": self.blocked_on_unacked}

    def consumer_stats(self, consumer: Consumer) -> dict[str, object]:
        return {"blockedConsumerOnUnackedMsgs": self._is_blocked(consumer)}

