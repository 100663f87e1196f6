"""Key_Shared ordering by key as Pulsar 4.0 does it: *draining hashes* (PIP-379).

Invariant: messages with the same sticky key hash are unacknowledged at one consumer at a time. When a
consumer joins or leaves, the selector moves hash ranges between consumers. A moved hash whose previous
owner still holds unacknowledged messages becomes *draining*: its messages are not dispatched to any other
consumer until the previous owner has acknowledged them all (or left, its messages going back for
redelivery). Only those hashes are held back; every other hash keeps flowing. Pulsar applies this to
AUTO_SPLIT (hash range or consistent hashing) without ``allowOutOfOrderDelivery``; STICKY ranges never
move between live consumers.

Two pieces, both pure and cheap per entry:

- :class:`PendingHashes` -- ``consumer -> {hash: unacked messages}``: who holds what. The dispatcher feeds
  it through the tracker on every dispatch and ack.
- :class:`DrainingHashesTracker` -- ``hash -> (draining consumer, blocked attempts)`` plus per-consumer
  stats. Its unacked count for a draining hash is read live from :class:`PendingHashes`, so there is one
  counter per (consumer, hash), not two. (Pulsar counts pending *entries* in its ``unackMsgs``; we count
  whatever unit the dispatcher passes as ``messages`` -- messages, to match the stat's name.)

Dispatcher protocol (a dispatcher walking entries in offset order, one hash per entry)::

    changes = selector.add_consumer(c);   tracker.owners_changed(changes, skip=c)
    changes = selector.remove_consumer(c); tracker.consumer_removed(c)   # its unacked go to redelivery
                                           tracker.owners_changed(changes, skip=c)
    per entry:  owner = selector.select(h)
                if owner is None or tracker.should_block(owner, h): keep it (and later entries of h) back
                else: send; tracker.add_entry(owner, h, n_messages)
    per ack:    if tracker.remove_entry(c, h, n_acked): a held-back hash is free -> dispatch again
    redeliver_unacknowledged_messages: tracker.release_consumer(c)

Example: C1 holds 2 unacked messages of key K (hash 6067). C2 joins and AUTO_SPLIT gives it ``0..32768``:
hash 6067 starts draining on C1. K's next message selects C2, ``should_block(C2, 6067)`` is True (C1's
``drainingHashes`` shows ``{hash: 6067, unackMsgs: 2, blockedAttempts: 1}``). C1 acks both:
``remove_entry`` returns True on the second, the hash is cleared (``drainingHashesClearedTotal`` 1) and
C2 receives K's messages from then on, in order. If instead the hash moves back to C1 before it drains,
``should_block(C1, 6067)`` drops the draining state and lets it through.
"""
from __future__ import annotations

import bisect
import logging
from typing import Any, Iterable, Mapping

from dispatch.selectors.base import OwnerChange, lost_ranges

log = logging.getLogger(__name__)

_EMPTY: Mapping[int, int] = {}


class PendingHashes:
    """Unacknowledged messages per (consumer, sticky key hash)."""

    __slots__ = ("_by_consumer",)

    def __init__(self) -> None:
        self._by_consumer: dict[Any, dict[int, int]] = {}

    def add(self, consumer: Any, hash_: int, messages: int = 1) -> None:
        counts = self._by_consumer.get(consumer)
        if counts is None:
            counts = self._by_consumer[consumer] = {}
        counts[hash_] = counts.get(hash_, 0) + messages

    def remove(self, consumer: Any, hash_: int, messages: int = 1) -> int:
        """Count ``messages`` of ``hash_`` as acked by ``consumer``; returns how many remain (never < 0)."""
        counts = self._by_consumer.get(consumer)
        if counts is None:
            return 0
        left = counts.get(hash_, 0) - messages
        if left > 0:
            counts[hash_] = left
            return left
        counts.pop(hash_, None)
        return 0

    def count(self, consumer: Any, hash_: int) -> int:
        return self._by_consumer.get(consumer, _EMPTY).get(hash_, 0)

    def hashes(self, consumer: Any) -> Mapping[int, int]:
        """``{hash: unacked}`` of ``consumer`` (a live view; do not change it while iterating)."""
        return self._by_consumer.get(consumer, _EMPTY)

    def pop(self, consumer: Any) -> dict[int, int]:
        """Forget ``consumer``; returns what it held."""
        return self._by_consumer.pop(consumer, {})

    def clear(self) -> None:
        self._by_consumer.clear()


class _Draining:
    __slots__ = ("consumer", "blocked_attempts")

    def __init__(self, consumer: Any) -> None:
        self.consumer = consumer
        self.blocked_attempts = 0


class _ConsumerDrainingStats:
    __slots__ = ("hashes", "cleared_total")

    def __init__(self) -> None:
        self.hashes: set[int] = set()
        self.cleared_total = 0


class DrainingHashesTracker:
    """Which hashes are draining on which consumer, and whether an entry may go to a consumer."""

    def __init__(self) -> None:
        self.pending = PendingHashes()
        self._draining: dict[int, _Draining] = {}
        self._stats: dict[Any, _ConsumerDrainingStats] = {}

    def __len__(self) -> int:
        return len(self._draining)

    # -- per entry -------------------------------------------------------------------------------------

    def add_entry(self, consumer: Any, hash_: int, messages: int = 1) -> None:
        """``messages`` of ``hash_`` were dispatched to ``consumer`` and are now unacknowledged there.

        Raises ValueError if ``hash_`` is draining on another consumer: ask :meth:`should_block` first.
        """
        if self._draining:
            draining = self._draining.get(hash_)
            if draining is not None and draining.consumer is not consumer:
                raise ValueError(
                    f"hash {hash_} is draining on consumer {draining.consumer.consumer_name!r}; it cannot "
                    f"be dispatched to {consumer.consumer_name!r} until should_block() says so")
        self.pending.add(consumer, hash_, messages)

    def remove_entry(self, consumer: Any, hash_: int, messages: int = 1) -> bool:
        """``consumer`` acked (or gave back) ``messages`` of ``hash_``.

        Returns True when this drained a hash that had blocked a dispatch: held-back entries may go now.
        """
        if self.pending.remove(consumer, hash_, messages) or not self._draining:
            return False
        draining = self._draining.get(hash_)
        if draining is None or draining.consumer is not consumer:
            return False
        return self._clear(hash_, draining)

    def should_block(self, consumer: Any, hash_: int) -> bool:
        """True if ``hash_`` is draining on a consumer other than ``consumer`` (counted as a blocked
        attempt). If it is draining on ``consumer`` itself the hash came back to it: no longer draining."""
        if not self._draining:
            return False
        draining = self._draining.get(hash_)
        if draining is None:
            return False
        if draining.consumer is consumer:
            self._clear(hash_, draining)
            return False
        draining.blocked_attempts += 1
        return True

    # -- membership changes ----------------------------------------------------------------------------

    def owners_changed(self, changes: Iterable[OwnerChange], skip: Any = None) -> list[int]:
        """Start draining every hash that a previous owner (other than ``skip``, the consumer being added
        or removed) lost while still holding unacked messages of it. Returns those hashes, sorted."""
        started: list[int] = []
        for consumer, ranges in lost_ranges(list(changes)).items():
            if consumer is skip:
                continue
            held = self.pending.hashes(consumer)
            if not held:
                continue
            starts = [start for start, _ in ranges]
            for hash_ in list(held):
                i = bisect.bisect_right(starts, hash_) - 1
                if i >= 0 and hash_ <= ranges[i][1] and self.start_draining(hash_, consumer):
                    started.append(hash_)
        started.sort()
        return started

    def start_draining(self, hash_: int, from_consumer: Any) -> bool:
        """Make ``hash_`` draining on ``from_consumer`` if it holds unacked messages of it; True if it did."""
        if self.pending.count(from_consumer, hash_) <= 0:
            return False
        draining = self._draining.get(hash_)
        if draining is not None:
            if draining.consumer is not from_consumer:
                # two consumers holding one hash breaks the invariant; keep the first drain
                log.warning("event=hash_already_draining hash=%d draining_consumer=%s ignored_consumer=%s",
                            hash_, draining.consumer.consumer_name, from_consumer.consumer_name)
            return False
        self._draining[hash_] = _Draining(from_consumer)
        stats = self._stats.get(from_consumer)
        if stats is None:
            stats = self._stats[from_consumer] = _ConsumerDrainingStats()
        stats.hashes.add(hash_)
        return True

    def release_consumer(self, consumer: Any) -> list[int]:
        """All of ``consumer``'s unacked messages go back for redelivery (it closes, or asked for
        redelivery): its draining hashes are cleared. Returns the cleared hashes that had blocked a
        dispatch, sorted."""
        self.pending.pop(consumer)
        stats = self._stats.get(consumer)
        if stats is None:
            return []
        unblocked = []
        for hash_ in sorted(stats.hashes):
            draining = self._draining[hash_]
            if self._clear(hash_, draining):
                unblocked.append(hash_)
        return unblocked

    def consumer_removed(self, consumer: Any) -> list[int]:
        """:meth:`release_consumer`, then forget the consumer's stats."""
        unblocked = self.release_consumer(consumer)
        self._stats.pop(consumer, None)
        return unblocked

    def clear(self) -> None:
        """Forget everything (the last consumer left)."""
        self.pending.clear()
        self._draining.clear()
        self._stats.clear()

    # -- inspection ------------------------------------------------------------------------------------

    def is_draining(self, hash_: int) -> bool:
        return hash_ in self._draining

    def draining_consumer(self, hash_: int) -> Any | None:
        """The consumer whose unacked messages ``hash_`` waits for, or None."""
        draining = self._draining.get(hash_)
        return draining.consumer if draining is not None else None

    def stats(self, consumer: Any) -> dict[str, Any]:
        """The consumer's draining stats, with the names and shape of Pulsar's topic stats."""
        stats = self._stats.get(consumer)
        hashes = []
        unacked_total = 0
        for hash_ in sorted(stats.hashes) if stats is not None else ():
            unacked = self.pending.count(consumer, hash_)
            hashes.append({"hash": hash_, "unackMsgs": unacked,
                           "blockedAttempts": self._draining[hash_].blocked_attempts})
            unacked_total += unacked
        return {
            "drainingHashesCount": len(hashes),
            "drainingHashesClearedTotal": stats.cleared_total if stats is not None else 0,
            "drainingHashesUnackedMessages": unacked_total,
            "drainingHashes": hashes,
        }

    def _clear(self, hash_: int, draining: _Draining) -> bool:
        del self._draining[hash_]
        stats = self._stats.get(draining.consumer)
        if stats is not None:
            stats.hashes.discard(hash_)
            stats.cleared_total += 1
        return draining.blocked_attempts > 0
