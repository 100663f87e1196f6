"""The time index of one subscription's delayed messages: which offsets may be delivered, and from when.

As in Pulsar, only Shared and Key_Shared subscriptions hold delayed messages back (Exclusive and Failover
deliver them at once); the dispatcher reads an entry, sees ``deliver_at_time`` in its metadata and asks the
tracker. An offset here is the entry's message offset (a delayed message is always its own entry).

Semantics (Apache Pulsar's ``InMemoryDelayedDeliveryTracker``, broker config
``delayedDeliveryTickTimeMillis`` = ``tick_ms``, default 1000, and ``isDelayedDeliveryDeliverAtTimeStrict`` =
``strict``, default false; the bucket rules are those of Pulsar's master after apache/pulsar#26012 and
#26188, which fixed messages leaving a bucket before their time). ``now`` is the clock's wall time
(``deliver_at`` is the producer's epoch ms):

- **Cutoff.** Not strict: ``now + tick_ms`` (a message may go out up to one tick early; that saves holding
  it for a moment when the dispatcher is already at work). Strict: ``now``.
- **add.** ``deliver_at <= cutoff`` (or negative): not tracked, ``add`` returns False and the dispatcher
  delivers it now ("deliver_at in the past: deliver now"). Otherwise the offset is tracked and True returned.
- **Buckets.** Times are trimmed to ``P`` = the largest power of two <= ``tick_ms`` (512 ms for 1000), so
  one bucket holds every offset due in the same ``P`` window. Not strict: rounded down
  (``deliver_at & -P``); strict: rounded up, so a bucket never opens before any of its messages is due.
- **Ready.** Not strict: a bucket is ready when ``key + P - 1 <= now + tick_ms`` (its latest possible
  ``deliver_at`` is inside the early window, so a popped offset re-read from the log is never tracked again);
  strict: when ``key <= now``. Hence a message never leaves before ``deliver_at - tick_ms`` (not strict) or
  before ``deliver_at`` (strict; then it may leave up to ``P - 1`` ms plus the timer's lateness after it).
- **Timer.** One timer per tracker: :meth:`next_timer_delay_ms` arms it for the first bucket's key, and,
  given ``last_tick_ms``, not sooner than one tick after it last fired (Pulsar's ``updateTimer``). With that
  spacing a strict message can be ``P + tick_ms`` late (1.5 s by default; the seed allows deliver_at plus two
  ticks); without it, at most ``P - 1``, and a non-strict one is never late, for at most two fires a tick.
- **Clock steps.** ``now`` and ``deliver_at`` are wall time, but the dispatcher's timer runs on the event
  loop's monotonic clock: armed for "two minutes" while the wall clock was stepped back two minutes, it
  would hold messages that long after the clock is put right. So the timer is never armed for longer
  than :attr:`clock_check_ms` (one tick, at least :data:`MIN_CLOCK_CHECK_MS`); each fire reads the wall
  clock again. A step back that is put right delivers within a tick of each message's time (or of the
  correction, for messages that fell due meanwhile); a step forward delivers what became due within a
  tick. A subscription holding delayed messages wakes once a tick for that.
- **Fixed delay.** If every message so far arrived in delivery-time order (within one tick), none was due
  on arrival, and
  ``fixed_delay_detection_lookahead`` (broker ``delayedDeliveryFixedDelayDetectionLookahead``, default
  50,000; 0 disables) are tracked and none is ready, :meth:`should_pause_all_deliveries` tells the dispatcher
  to stop reading: later entries cannot be due sooner, so there is no point indexing them yet.

:meth:`pop_ready` returns offsets in **offset order** (as Pulsar's sorted position set): the dispatcher
replays them like any redelivery set, reading the log forward. Buckets are taken earliest first; within the
last bucket, with ``max_count``, the lowest offsets go first.

Bad input: a negative ``deliver_at`` is due (delivered now, as Pulsar); one beyond int64 (cannot come from
the wire) is clamped to int64 max, i.e. held until removed. A negative or non-int64 offset is a
``ValueError``. An offset's ``deliver_at`` comes from its entry and never changes: adding the same offset
again is a no-op (a re-read after a rewind), adding it with a different time is undefined.

Memory: a dict of buckets, each an ``array('q')`` of sorted offsets (8 bytes a message plus the array's
~6% headroom), and a heap of bucket keys for :meth:`next_delivery_time`. 1,000,000 messages with delays
uniform over 60 s take ~8.4 bytes a message (``bench/delayed_tracker.py``); a bucket itself costs ~150
bytes, which only shows when buckets hold few messages (~20 bytes a message with a 1 ms tick).

Restart: the index is not stored. Pulsar rebuilds it by re-reading from the mark-delete position; so can we,
with :meth:`add_many` for a bulk pass over ``(offset, deliver_at)`` pairs. The normal read path may then
``add`` the same offsets again: that is a no-op returning True (still held).

Cost: ``add`` is O(1) for offsets that arrive in order per bucket (the log's order), else an array insert;
``pop_ready`` is O(popped); ``contains``/``remove`` are O(log n) with the entry's ``deliver_at_ms``, else they
search every bucket (O(buckets · log n)).

Example (tick 1000 ms, so P = 512 ms; now = 10,000)::

    tracker.add(7, 10_900)   # False: 10,900 <= now + tick, deliver now
    tracker.add(8, 12_300)   # True: bucket 12,288 (12,300 & -512)
    tracker.add(5, 12_700)   # True: bucket 12,288 too
    # ready when 12,288 + 511 <= now + 1000, i.e. from now = 11,799 (12,300 - 501 and 12,700 - 901)
    tracker.pop_ready()      # at now = 11,799: [5, 8]
"""
from __future__ import annotations

import bisect
import heapq
import sys
from array import array
from typing import Iterable

from broker_core.clock import SYSTEM_CLOCK, Clock

INT64_MAX = (1 << 63) - 1
MIN_CLOCK_CHECK_MS = 100
"""The timer re-reads the wall clock at least this often even with a tick of 0 or a few ms (a tick that
small would otherwise wake the loop every millisecond while messages wait for hours)."""


def precision_ms(tick_ms: int) -> int:
    """Bucket width for ``tick_ms``: the largest power of two not above it (1 for a tick of 0 or 1)."""
    return 1 << (tick_ms.bit_length() - 1) if tick_ms > 1 else 1


class DelayedDeliveryTracker:
    """Delayed offsets of one subscription, bucketed by trimmed delivery time. Not thread-safe: the
    dispatcher calls it under its own lock. Methods that read the clock take an optional ``now`` (ms) so a
    caller handling a batch of entries reads it once.

    A dispatcher uses it so: for each entry read with a ``deliver_at``, ``if tracker.add(offset, at):`` skip
    it (held); keep one timer armed for ``next_timer_delay_ms()``; on each dispatch round and when the timer
    fires, ``pop_ready(max_count=permits)`` and replay those offsets like a redelivery set.
    """

    def __init__(self, clock: Clock = SYSTEM_CLOCK, tick_ms: int = 1000, strict: bool = False,
                 fixed_delay_detection_lookahead: int = 50_000) -> None:
        if tick_ms < 0:
            raise ValueError(f"delayedDeliveryTickTimeMillis must be >= 0, got {tick_ms}")
        if fixed_delay_detection_lookahead < 0:
            raise ValueError("delayedDeliveryFixedDelayDetectionLookahead must be >= 0 (0 disables), "
                             f"got {fixed_delay_detection_lookahead}")
        self._clock = clock
        self._tick = tick_ms
        self._strict = strict
        self._precision = precision_ms(tick_ms)
        self.fixed_delay_detection_lookahead = fixed_delay_detection_lookahead
        self._mask = -self._precision
        self._round_up = self._precision - 1 if strict else 0  # strict buckets never open early
        self._buckets: dict[int, array[int]] = {}
        self._heap: list[int] = []  # bucket keys; a key whose bucket is gone is skipped lazily
        self._count = 0
        self._highest_deliver_at = 0
        self._fixed_delay = True

    @property
    def tick_ms(self) -> int:
        """``delayedDeliveryTickTimeMillis`` (the bucket width it set at the start stays: :meth:`reset_tick`)."""
        return self._tick

    def reset_tick(self, tick_ms: int) -> None:
        """A new tick (a ``delayedDelivery`` policy changed), as Pulsar's ``resetTickTime``: the early window
        and the timer follow it, the bucket width ``P`` stays the one the first tick set (messages held are
        in buckets of that width), so a popped offset is still never tracked again."""
        if tick_ms < 0:
            raise ValueError(f"delayedDeliveryTickTimeMillis must be >= 0, got {tick_ms}")
        self._tick = tick_ms

    @property
    def strict(self) -> bool:
        """``isDelayedDeliveryDeliverAtTimeStrict``."""
        return self._strict

    @property
    def clock_check_ms(self) -> int:
        """The longest the dispatcher's timer is armed for: then the wall clock is read again (clock steps)."""
        return max(self._tick, MIN_CLOCK_CHECK_MS)

    @property
    def precision_ms(self) -> int:
        """Bucket width ``P``: the largest power of two <= ``tick_ms``."""
        return self._precision

    # -- cutoffs --------------------------------------------------------------------------------------

    def _now(self, now: int | None) -> int:
        return self._clock.now_ms() if now is None else now

    def _add_cutoff(self, now: int) -> int:
        """A ``deliver_at`` at or below this is delivered now."""
        return now if self._strict else now + self._tick

    def _bucket_cutoff(self, now: int) -> int:
        """A bucket whose key is at or below this is ready (its every ``deliver_at`` is <= the add cutoff)."""
        return now if self._strict else now + self._tick - self._precision + 1

    def bucket_of(self, deliver_at_ms: int) -> int:
        """The trimmed time (bucket key) ``deliver_at_ms`` is indexed under."""
        return (min(deliver_at_ms, INT64_MAX) + self._round_up) & self._mask

    # -- adding ---------------------------------------------------------------------------------------

    def add(self, offset: int, deliver_at_ms: int, now: int | None = None) -> bool:
        """Hold ``offset`` until ``deliver_at_ms``. False: it is due already, deliver it now."""
        if not 0 <= offset <= INT64_MAX:
            raise ValueError(f"offset must be an int64 >= 0, got {offset}")
        if now is None:
            now = self._clock.now_ms()
        if deliver_at_ms < 0 or deliver_at_ms <= (now if self._strict else now + self._tick):
            self._fixed_delay = False
            return False
        deliver_at_ms = min(deliver_at_ms, INT64_MAX)
        key = (deliver_at_ms + self._round_up) & self._mask
        offsets = self._buckets.get(key)
        if offsets is None:
            self._buckets[key] = array("q", (offset,))
            heapq.heappush(self._heap, key)
            self._count += 1
        elif offset > offsets[-1]:
            offsets.append(offset)
            self._count += 1
        else:
            i = bisect.bisect_left(offsets, offset)
            if offsets[i] != offset:  # else already held (the entry was read again)
                offsets.insert(i, offset)
                self._count += 1
        if deliver_at_ms < self._highest_deliver_at - self._tick:
            self._fixed_delay = False
        if deliver_at_ms > self._highest_deliver_at:
            self._highest_deliver_at = deliver_at_ms
        return True

    def add_many(self, pairs: Iterable[tuple[int, int]], now: int | None = None) -> int:
        """Bulk :meth:`add` of ``(offset, deliver_at_ms)`` pairs (the rebuild after a restart); the clock is
        read once. Due pairs are skipped (the read path delivers them). Returns how many became tracked."""
        cutoff = self._add_cutoff(self._now(now))
        buckets, heap, mask, round_up = self._buckets, self._heap, self._mask, self._round_up
        tick, highest, fixed = self._tick, self._highest_deliver_at, self._fixed_delay
        unsorted: set[int] = set()
        appended = 0
        try:
            for offset, deliver_at in pairs:
                if deliver_at < 0 or deliver_at <= cutoff:
                    fixed = False
                    continue
                if not 0 <= offset <= INT64_MAX:
                    raise ValueError(f"offset must be an int64 >= 0, got {offset}")
                if deliver_at > INT64_MAX:
                    deliver_at = INT64_MAX
                key = (deliver_at + round_up) & mask
                offsets = buckets.get(key)
                if offsets is None:
                    buckets[key] = array("q", (offset,))
                    heapq.heappush(heap, key)
                else:
                    if offset <= offsets[-1]:
                        unsorted.add(key)
                    offsets.append(offset)
                appended += 1
                if deliver_at < highest - tick:
                    fixed = False
                elif deliver_at > highest:
                    highest = deliver_at
        finally:
            # Restore the sorted, duplicate-free invariant even if a bad pair stopped the loop.
            for key in unsorted:
                offsets = buckets[key]
                kept = array("q", sorted(set(offsets)))
                appended -= len(offsets) - len(kept)
                buckets[key] = kept
            self._count += appended
            self._highest_deliver_at, self._fixed_delay = highest, fixed
        return appended

    # -- reading --------------------------------------------------------------------------------------

    def __len__(self) -> int:
        return self._count

    def _first_key(self) -> int | None:
        heap, buckets = self._heap, self._buckets
        while heap and heap[0] not in buckets:
            heapq.heappop(heap)
        return heap[0] if heap else None

    def next_delivery_time(self) -> int | None:
        """The earliest bucket's key (ms), or None when nothing is held. Not strict, the bucket is ready from
        ``key + P - 1 - tick_ms`` on, no later than ``key``; strict, from ``key`` on."""
        return self._first_key()

    def next_timer_delay_ms(self, last_tick_ms: int | None = None, now: int | None = None) -> int | None:
        """How long until the dispatcher's one timer is due: None when nothing is held; else until the first
        bucket's key but no sooner than ``last_tick_ms + tick_ms`` (when the timer last fired); 0 once that
        key has passed (Pulsar then arms nothing: the messages are due and go out when consumers have
        permits). The timer itself is armed for at most :attr:`clock_check_ms` of this (clock steps)."""
        key = self._first_key()
        if key is None:
            return None
        now = self._now(now)
        if key <= now:
            return 0
        delay = key - now
        if last_tick_ms is not None:
            delay = max(delay, last_tick_ms + self._tick - now)
        return delay

    def has_ready(self, now: int | None = None) -> bool:
        """Whether :meth:`pop_ready` would return something (Pulsar's ``hasMessageAvailable``)."""
        key = self._first_key()
        return key is not None and key <= self._bucket_cutoff(self._now(now))

    def ready(self, now: int | None = None) -> list[int]:
        """The offsets that are ready, in offset order, without removing them."""
        cutoff = self._bucket_cutoff(self._now(now))
        return _merge([offsets for key, offsets in self._buckets.items() if key <= cutoff])

    def pop_ready(self, max_count: int | None = None, now: int | None = None) -> list[int]:
        """Remove and return up to ``max_count`` (None: all) ready offsets, in offset order, taken from the
        earliest buckets first."""
        cutoff = self._bucket_cutoff(self._now(now))
        remaining = INT64_MAX if max_count is None else max_count
        buckets, heap = self._buckets, self._heap
        parts: list[array[int]] = []
        while heap and remaining > 0:
            key = heap[0]
            offsets = buckets.get(key)
            if offsets is None:
                heapq.heappop(heap)
                continue
            if key > cutoff:
                break
            if len(offsets) <= remaining:
                heapq.heappop(heap)
                del buckets[key]
                parts.append(offsets)
                remaining -= len(offsets)
            else:
                parts.append(offsets[:remaining])
                del offsets[:remaining]
                remaining = 0
        popped = _merge(parts)
        self._count -= len(popped)
        if not self._count:
            self._reset_detection()
        return popped

    def should_pause_all_deliveries(self, now: int | None = None) -> bool:
        """True when every message so far came in delivery-time order, the lookahead is full and nothing is
        ready: reading further entries cannot yield anything due sooner."""
        return (self.fixed_delay_detection_lookahead > 0 and self._fixed_delay
                and self._count >= self.fixed_delay_detection_lookahead and not self.has_ready(now))

    # -- membership and removal -----------------------------------------------------------------------

    def _candidates(self, deliver_at_ms: int | None) -> list[int]:
        if deliver_at_ms is None:
            return list(self._buckets)
        return [self.bucket_of(deliver_at_ms)]

    def contains(self, offset: int, deliver_at_ms: int | None = None) -> bool:
        """Whether ``offset`` is held. With the entry's ``deliver_at_ms``, one bucket is searched."""
        for key in self._candidates(deliver_at_ms):
            offsets = self._buckets.get(key)
            if offsets is not None:
                i = bisect.bisect_left(offsets, offset)
                if i < len(offsets) and offsets[i] == offset:
                    return True
        return False

    __contains__ = contains

    def remove(self, offset: int, deliver_at_ms: int | None = None) -> bool:
        """Stop holding ``offset`` (acknowledged or expired before its time); False if it was not held."""
        for key in self._candidates(deliver_at_ms):
            offsets = self._buckets.get(key)
            if offsets is not None:
                i = bisect.bisect_left(offsets, offset)
                if i < len(offsets) and offsets[i] == offset:
                    del offsets[i]
                    self._drop_if_empty(key, offsets)
                    self._count -= 1
                    if not self._count:
                        self._reset_detection()
                    return True
        return False

    def remove_through(self, mark_delete_offset: int) -> int:
        """Stop holding every offset <= ``mark_delete_offset`` (the cursor moved past them: TTL, seek, skip).
        Returns how many were dropped."""
        removed = 0
        for key, offsets in list(self._buckets.items()):
            i = bisect.bisect_right(offsets, mark_delete_offset)
            if i:
                del offsets[:i]
                removed += i
                self._drop_if_empty(key, offsets)
        self._count -= removed
        if not self._count:
            self._reset_detection()
        return removed

    def pop_all(self) -> list[int]:
        """Remove and return every offset held, in offset order (delayed delivery was turned off: they go
        now)."""
        popped = _merge(list(self._buckets.values())) if self._buckets else []
        self.clear()
        return popped

    def clear(self) -> None:
        """Forget everything (the subscription is reset or its dispatcher closed)."""
        self._buckets.clear()
        self._heap.clear()
        self._count = 0
        self._reset_detection()

    def memory_bytes(self) -> int:
        """Approximate bytes held by the index (Pulsar's ``delayedMessageIndexSizeInBytes``); O(buckets)."""
        return (sys.getsizeof(self._buckets) + sys.getsizeof(self._heap)
                + sum(sys.getsizeof(offsets) + 32 for offsets in self._buckets.values()))  # 32: the int key

    def _drop_if_empty(self, key: int, offsets: array[int]) -> None:
        if not offsets:
            del self._buckets[key]
            # Stale heap keys are skipped when they reach the top; rebuild if they pile up.
            if len(self._heap) > 2 * len(self._buckets) + 64:
                self._heap = list(self._buckets)
                heapq.heapify(self._heap)

    def _reset_detection(self) -> None:
        self._highest_deliver_at = 0
        self._fixed_delay = True


def _merge(parts: list[array[int]]) -> list[int]:
    """Sorted runs (each bucket is sorted) as one sorted list; Timsort merges runs in linear-ish time."""
    if len(parts) == 1:
        return parts[0].tolist()
    merged: list[int] = []
    for part in parts:
        merged.extend(part)
    merged.sort()
    return merged
