"""A consumer's redelivery (seed: "Negative acknowledgment", "Acknowledgment timeout"), done by the client
as in Pulsar: :class:`Redelivery`.

``negative_acknowledge`` puts the message's entry in a :class:`~connector.client.consumer.trackers.NegativeAcksTracker`;
an ack timeout puts every message handed out in an :class:`~connector.client.consumer.trackers.UnAckedMessageTracker`.
The client timer looks at them every tick and asks the broker, in one request per partition, for the entries
that are due: Shared and Key_Shared redeliver exactly those entries; Exclusive and Failover rewind to the
first unacknowledged message (as Pulsar's client does). Messages of those entries still buffered are
skipped when taken (their entry is discarded: :meth:`~connector.client.message.EntryInfo.discard`). Entries
due for redelivery that reached ``max_redeliver_count`` go to the dead letter topic instead
(:mod:`connector.client.consumer.dead_letter`).

Keys: ``(partition consumer, entry id)`` for negative acks, ``(partition consumer, entry id, offset)`` for the
ack timeout (a batch's messages time out one by one).
"""
from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING, Any, Callable, Iterable

from connector.client.enums import ConsumerType
from connector.client.message import Message
from connector.client.consumer.partition import PartitionConsumer
from connector.client.policies import RedeliveryOptions
from connector.client.consumer.receive_queue import ReceiveQueue
from connector.client.consumer.trackers import NegativeAcksTracker, UnAckedMessageTracker
from connector.client.timer import TimerThread

if TYPE_CHECKING:
    from connector.client.consumer.dead_letter import DeadLetters

log = logging.getLogger(__name__)

SHARED_TYPES = (ConsumerType.Shared, ConsumerType.KeyShared)


def _now_ms() -> float:
    return time.monotonic() * 1000.0


class Redelivery:
    """Negative acks, the ack timeout and rewinds of one consumer (see the module docstring)."""

    def __init__(self, timer: TimerThread, consumer_type: ConsumerType, subscription: str, queue: ReceiveQueue,
                 options: RedeliveryOptions, dead_letters: "DeadLetters | None" = None,
                 clock: Callable[[], float] = _now_ms) -> None:
        self._timer = timer
        self._shared = consumer_type in SHARED_TYPES
        self._subscription = subscription
        self._queue = queue
        self._dead_letters = dead_letters
        self._lock = threading.Lock()
        self._nacks = NegativeAcksTracker(clock, options.negative_ack_redelivery_delay_ms,
                                          options.negative_ack_redelivery_backoff)
        self._nack_timer_armed = False
        self._nack_delay_s = max(0, options.negative_ack_redelivery_delay_ms) / 1000.0
        self._later: set[int] = set()
        """Partition consumers (by id) with a delayed rewind scheduled (chunks given up for now)."""
        self.unacked: UnAckedMessageTracker | None = None
        if options.unacked_messages_timeout_ms:
            self.unacked = UnAckedMessageTracker(options.unacked_messages_timeout_ms,
                                                 options.ack_timeout_tick_time_ms, clock,
                                                 options.ack_timeout_redelivery_backoff)
        self.closed = False

    def start(self) -> None:
        if self.unacked is not None:
            self._timer.call_later(self.unacked.tick_ms / 1000.0, self._ack_timeout_tick)

    # --- what the consumer reports ------------------------------------------------------------------------
    def track(self, msg: Message) -> None:
        """``msg`` was handed to the application: its ack timeout starts (only with an ack timeout)."""
        entry = msg._entry
        entry_id = entry.entry_id
        unacked = self.unacked
        assert unacked is not None
        with self._lock:
            unacked.add((entry.sub, entry_id, entry_id + max(msg._index, 0)), entry.redelivery_count)

    def acknowledged(self, sub: PartitionConsumer, entry_id: int, index: int) -> None:
        if self.unacked is not None:
            with self._lock:
                self.unacked.remove((sub, entry_id, entry_id + max(index, 0)))
        if self._dead_letters is not None:
            self._dead_letters.acked(sub, entry_id, index)

    def acknowledged_cumulative(self, sub: PartitionConsumer, offset: int) -> None:
        if self.unacked is not None:
            with self._lock:
                self.unacked.remove_if(lambda key: key[0] is sub and key[2] <= offset)

    def negative_acknowledge(self, sub: PartitionConsumer, entry_id: int, index: int, redelivery_count: int) -> None:
        with self._lock:
            self._nacks.add((sub, entry_id), redelivery_count)
            if self.unacked is not None:
                self.unacked.remove((sub, entry_id, entry_id + max(index, 0)))
            arm = not self._nack_timer_armed
            self._nack_timer_armed = True
        if arm:
            self._timer.call_later(self._nacks.tick_ms / 1000.0, self._nack_tick)

    # --- timers -------------------------------------------------------------------------------------------
    def _nack_tick(self) -> None:
        with self._lock:
            due = self._nacks.pop_due()
            more = self._nack_timer_armed = len(self._nacks) > 0 and not self.closed
        if more:
            self._timer.call_later(self._nacks.tick_ms / 1000.0, self._nack_tick)
        if due and not self.closed:
            self.redeliver_entries(due)  # type: ignore[arg-type]

    def _ack_timeout_tick(self) -> None:
        if self.closed:
            return
        tracker = self.unacked
        assert tracker is not None
        with self._lock:
            expired = tracker.tick()
        self._timer.call_later(tracker.tick_ms / 1000.0, self._ack_timeout_tick)
        if expired:
            log.info("event=ack_timeout subscription=%s messages=%d", self._subscription, len(expired))
            self.redeliver_entries(dict.fromkeys((sub, entry_id) for sub, entry_id, _ in expired))  # type: ignore

    # --- redelivering -------------------------------------------------------------------------------------
    def redeliver_entries(self, keys: Iterable[tuple[PartitionConsumer, int]]) -> None:
        """Ask again for these ``(partition consumer, entry id)``: dead letters first, then per partition
        the entries (Shared types) or a rewind (ordered types)."""
        if self.closed:
            return
        keys = list(keys)
        if self._dead_letters is not None:
            keys = self._dead_letters.take(keys)
        by_sub: dict[PartitionConsumer, list[int]] = {}
        for sub, entry_id in keys:
            by_sub.setdefault(sub, []).append(entry_id)
        for sub, entry_ids in by_sub.items():
            if sub.error is not None:
                continue
            if self._shared:
                self.discard_queued(sub, set(entry_ids))
                sub.redeliver(entry_ids)
            else:
                self.rewind(sub)

    def rewind(self, sub: PartitionConsumer) -> None:
        """Everything ``sub`` holds unacknowledged comes again: drop its buffered messages and tracking."""
        self.discard_queued(sub, None)
        self.forget(lambda key: key[0] is sub)
        sub.redeliver()

    def redeliver_later(self, sub: PartitionConsumer) -> None:
        """Have ``sub``'s unacknowledged messages redelivered after ``negative_ack_redelivery_delay_ms``
        (chunked messages given up for now)."""
        key = id(sub)
        if key not in self._later:
            self._later.add(key)
            self._timer.call_later(self._nack_delay_s, self._rewind_later, sub)

    def _rewind_later(self, sub: PartitionConsumer) -> None:
        self._later.discard(id(sub))
        if not self.closed and sub.error is None:
            self.rewind(sub)

    def forget(self, doomed: Callable[[Any], bool]) -> None:
        """Stop tracking the keys for which ``doomed(key)`` is true (they come back anyway)."""
        with self._lock:
            self._nacks.remove_if(doomed)
            if self.unacked is not None:
                self.unacked.remove_if(doomed)
        if self._dead_letters is not None:
            self._dead_letters.forget(doomed)

    def forget_partition(self, sub: PartitionConsumer) -> None:
        self.forget(lambda key: key[0] is sub)

    def discard_queued(self, sub: PartitionConsumer, entry_ids: set[int] | None) -> None:
        """Buffered messages of ``sub`` (of these entries, or all) are skipped when taken."""
        for msg in self._queue.snapshot():
            entry = msg._entry
            if entry.sub is sub and (entry_ids is None or entry.entry_id in entry_ids):
                entry.discard()

    def close(self) -> None:
        self.closed = True

