"""Client-side redelivery trackers (Pulsar's ``NegativeAcksTracker`` and ``UnAckedMessageTracker``): which
messages to ask the broker for again, and when. Pure bookkeeping: no I/O, no threads; time comes from an
injected ``clock`` (milliseconds), and the consumer drives them from its timer (see
:mod:`connector.client.consumer`). Keys are opaque hashables (the consumer uses ``(partition consumer,
entry id[, offset])``).

**Negative acks.** ``add(key, redelivery_count)`` makes ``key`` due ``negative_ack_redelivery_delay_ms``
later (at least 100 ms, as in Pulsar), or ``backoff.next(redelivery_count)`` later with a backoff; adding a
key again re-arms it. The consumer looks every :attr:`NegativeAcksTracker.tick_ms` (a third of the delay, or
of the backoff's first delay, at least 100 ms / 3) and redelivers what is due in one request, so nacks close
together travel together. Example, delay 300 ms, tick 100 ms: nacks at t=0 and t=50 are both due at the
tick of t=400 (0+300 and 50+300 <= 400), and go in one request.

**Ack timeout.** A ring of ``ceil(timeout / tick) + 1`` buckets: a received message goes in the newest
bucket; each :meth:`UnAckedMessageTracker.tick` empties the oldest one, whose messages have then been
unacknowledged for between ``timeout`` and ``timeout + tick``. An ack removes the message. With a backoff
(``ack_timeout_redelivery_backoff``), an expired message waits ``backoff.next(redelivery_count)`` more,
which gives the seed's table with a 10 s timeout and ``MultiplierRedeliveryBackoff(1000, 60_000, 2)``:
10+1 s, 10+2 s, 10+4 s ... 10+60 s.
"""
from __future__ import annotations

import collections
import math
from typing import Callable, Hashable, Iterable

from connector.client.policies import RedeliveryBackoff

MIN_NACK_DELAY_MS = 100
"""Pulsar's floor for ``negative_ack_redelivery_delay_ms``: nacks within it are grouped."""
MIN_ACK_TIMEOUT_MS = 1000
"""Pulsar's (Java client's) least ``unacked_messages_timeout_ms``; the C++-based pulsar-client wants 10 s."""
MIN_TICK_MS = 100
"""Pulsar's least ``ack_timeout_tick_time_ms``."""


class NegativeAcksTracker:
    """Negatively acknowledged messages and when each is due for redelivery."""

    def __init__(self, clock: Callable[[], float], delay_ms: int,
                 backoff: RedeliveryBackoff | None = None) -> None:
        self._clock = clock
        self._delay_ms = max(int(delay_ms), MIN_NACK_DELAY_MS)
        self._backoff = backoff
        first = backoff.next(0) if backoff is not None else self._delay_ms
        self.tick_ms = max(first, MIN_NACK_DELAY_MS) / 3
        """How often the consumer calls :meth:`pop_due` while something is tracked."""
        self._due: dict[Hashable, float] = {}

    def add(self, key: Hashable, redelivery_count: int = 0) -> None:
        """``key`` was negatively acknowledged by a consumer that got it ``redelivery_count`` times
        before."""
        backoff = self._backoff
        delay = backoff.next(redelivery_count) if backoff is not None else self._delay_ms
        self._due[key] = self._clock() + delay

    def pop_due(self) -> list[Hashable]:
        """The keys whose time has come, forgotten."""
        now = self._clock()
        due = [key for key, at in self._due.items() if at <= now]
        for key in due:
            del self._due[key]
        return due

    def remove(self, key: Hashable) -> None:
        self._due.pop(key, None)

    def remove_if(self, doomed: Callable[[Hashable], bool]) -> None:
        """Forget every key for which ``doomed(key)`` is true (e.g. a partition consumer's after a
        rewind, which brings all of its messages back anyway)."""
        for key in [key for key in self._due if doomed(key)]:
            del self._due[key]

    def clear(self) -> None:
        self._due.clear()

    def __len__(self) -> int:
        return len(self._due)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._due


class UnAckedMessageTracker:
    """Received, unacknowledged messages, in time buckets of one tick."""

    def __init__(self, timeout_ms: int, tick_ms: int, clock: Callable[[], float] | None = None,
                 backoff: RedeliveryBackoff | None = None) -> None:
        if backoff is not None and clock is None:
            raise ValueError("a backoff needs a clock")
        self.tick_ms = min(int(tick_ms), int(timeout_ms))
        """How often the consumer calls :meth:`tick`."""
        buckets = math.ceil(timeout_ms / self.tick_ms) + 1
        self._buckets: collections.deque[dict[Hashable, int]] = collections.deque(
            {} for _ in range(buckets))
        self._bucket_of: dict[Hashable, dict[Hashable, int]] = {}
        self._clock = clock
        self._backoff = backoff
        self._waiting: dict[Hashable, float] = {}
        """Backoff only: expired keys -> when they are due."""

    def add(self, key: Hashable, redelivery_count: int = 0) -> None:
        """``key`` was handed to the application (again: its clock restarts)."""
        bucket_of = self._bucket_of
        old = bucket_of.get(key)
        if old is not None:
            del old[key]
        elif self._waiting:
            self._waiting.pop(key, None)
        newest = self._buckets[-1]
        newest[key] = redelivery_count
        bucket_of[key] = newest

    def remove(self, key: Hashable) -> bool:
        """``key`` was acknowledged (or negatively acknowledged); True if it was tracked."""
        bucket = self._bucket_of.pop(key, None)
        if bucket is not None:
            del bucket[key]
            return True
        return self._waiting.pop(key, None) is not None if self._waiting else False

    def remove_if(self, doomed: Callable[[Hashable], bool]) -> int:
        """Forget every key for which ``doomed(key)`` is true; returns how many."""
        keys = [key for key in self._bucket_of if doomed(key)]
        for key in keys:
            del self._bucket_of.pop(key)[key]
        waiting = [key for key in self._waiting if doomed(key)]
        for key in waiting:
            del self._waiting[key]
        return len(keys) + len(waiting)

    def tick(self) -> list[Hashable]:
        """One tick: the keys whose ack timeout (and backoff) expired, forgotten."""
        buckets = self._buckets
        expired = buckets.popleft()
        buckets.append({})
        bucket_of = self._bucket_of
        for key in expired:
            del bucket_of[key]
        backoff = self._backoff
        if backoff is None:
            return list(expired)
        assert self._clock is not None
        now = self._clock()
        waiting = self._waiting
        for key, count in expired.items():
            waiting[key] = now + backoff.next(count)
        due = [key for key, at in waiting.items() if at <= now]
        for key in due:
            del waiting[key]
        return due

    def clear(self) -> None:
        for bucket in self._buckets:
            bucket.clear()
        self._bucket_of.clear()
        self._waiting.clear()

    def __len__(self) -> int:
        return len(self._bucket_of) + len(self._waiting)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._bucket_of or key in self._waiting

    def keys(self) -> Iterable[Hashable]:
        yield from self._bucket_of
        yield from self._waiting
