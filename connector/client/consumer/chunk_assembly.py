"""Chunked messages of one partition consumer: the pure reassembler
(:class:`~broker_core.protocol.chunks.ChunkedMessageTracker`) plus what it asks the consumer to do.

A completed message is one message with its last chunk's id; acknowledging it (or that id) acknowledges
every chunk (:meth:`ChunkAssembly.chunk_offsets`). A chunk that completes nothing counts as settled at once
(its permit goes back), so a message of more chunks than ``receiver_queue_size`` still arrives. Incomplete
messages expire on later chunks and on the client's timer; what the tracker gives up is acknowledged or
redelivered as it says.
"""
from __future__ import annotations

import threading
import time
from typing import Callable, Iterable

from broker_core.protocol.chunks import Chunk, ChunkedMessageTracker, ChunkOutcome, CompletedMessage

from connector.client.timer import TimerThread

CHUNKED_IDS_MAX = 10_000
"""Delivered, unacknowledged chunked messages whose chunk offsets are remembered (a Reader never acks);
acknowledging an older one acknowledges its last chunk only (its other chunks come back and expire)."""


def _now_ms() -> int:
    return int(time.time() * 1000)


class ChunkAssembly:
    """Reassembly, chunk-id bookkeeping and expiry for one topic partition."""

    def __init__(self, topic: str, timer: TimerThread, max_pending: int, auto_ack_oldest: bool, expiry_ms: int,
                 ack_all: Callable[[Iterable[int]], None], redeliver_later: Callable[[], None],
                 now_ms: Callable[[], int] | None = None) -> None:
        self._timer = timer
        self._ack_all = ack_all
        self._redeliver_later = redeliver_later
        self._now_ms = now_ms or (lambda: _now_ms())  # looked up at each call: tests replace the module's
        self._lock = threading.Lock()
        self._tracker = ChunkedMessageTracker(max_pending, auto_ack_oldest, expiry_ms, now_ms=self._now_ms,
                                              label=f"{topic}: ")
        self._ids: dict[int, tuple[int, ...]] = {}
        """Last-chunk offset of a delivered, unacknowledged chunked message -> every chunk's offset."""
        self._expiry_scheduled = False
        self.closed = False

    def add(self, chunk: Chunk) -> CompletedMessage | None:
        """Take one chunk; the message it completes, if any."""
        with self._lock:
            outcome = self._tracker.add(chunk)
            self._schedule_expiry_check()
        self._settle(outcome)
        return outcome.completed

    def remember(self, last_offset: int, offsets: tuple[int, ...]) -> None:
        """A completed message was handed on: its id (``last_offset``) stands for all its chunks."""
        with self._lock:
            ids = self._ids
            ids[last_offset] = offsets
            if len(ids) > CHUNKED_IDS_MAX:
                ids.pop(next(iter(ids)), None)

    def chunk_offsets(self, last_offset: int) -> tuple[int, ...] | None:
        """The chunks of the message whose id is ``last_offset`` (forgotten: it is being acknowledged)."""
        if not self._ids:
            return None
        with self._lock:
            return self._ids.pop(last_offset, None)

    def offsets_of(self, entry_id: int) -> tuple[int, ...]:
        """The offsets naming a message for a redelivery: every chunk of a chunked message, else itself."""
        return self._ids.get(entry_id, (entry_id,))

    def forget_through(self, offset: int) -> None:
        """A cumulative ack through ``offset`` acknowledged these messages' chunks."""
        if self._ids:
            with self._lock:
                for last in [last for last in self._ids if last <= offset]:
                    del self._ids[last]

    def clear(self) -> None:
        """Buffered chunks are from before a seek or a reconnection (the broker sends them again)."""
        with self._lock:
            self._tracker.clear()

    def _settle(self, outcome: ChunkOutcome) -> None:
        """Acknowledge or have redelivered the chunks the tracker gave up."""
        if outcome.ack:
            self._ack_all(outcome.ack)
        if outcome.redeliver and not self.closed:
            self._redeliver_later()

    def _schedule_expiry_check(self) -> None:
        """One timer task at a time, due when the oldest incomplete message expires (under the lock)."""
        if self._expiry_scheduled:
            return
        deadline = self._tracker.next_expiry_ms()
        if deadline is not None:
            self._expiry_scheduled = True
            self._timer.call_later(max(0, deadline - self._now_ms() + 1) / 1000.0, self._check_expiry)

    def _check_expiry(self) -> None:
        if self.closed:
            return
        with self._lock:
            self._expiry_scheduled = False
            outcome = self._tracker.expire()
            self._schedule_expiry_check()
        self._settle(outcome)
