"""Durability policy of one topic partition: when an appended entry counts as written.

``journalSyncMode`` decides when a send receipt may be released and when consumers may see an entry
(both only once the entry is as durable as the policy promises, never earlier):

- ``always``: every append call is fsynced before it returns (one fsync per producer request);
- ``group``: appends return at once; one fsync covers every append made while the previous fsync of the
  topic was running (natural group commit), at most one fsync per ``journalSyncIntervalMs``; receipts
  wait for the fsync that covers them. The fsyncs run on the broker's few shared sync threads
  (:class:`~broker_core.storage.sync_threads.SyncThreads`, or any ``Executor``), not on a thread per
  topic, and report back to the event loop;
- ``never``: an entry is confirmed as soon as it is in the page cache.

``confirmed_end_offset`` is the offset below which everything is confirmed; dispatch reads only below it.

A failed fsync fails the receipts it covered with ``PersistenceError`` and nothing else: the log is cut
back to what is durable (so a failed send is not stored, and a retry is not a duplicate), and the next
append tries again (a full disk fails every fsync: it is logged once per interval with a count,
:mod:`broker_core.log_limits`). Only when even that cut fails is the journal *fenced*: every later append
fails until the topic is reloaded, whose recovery works out what the disk holds.
"""
from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from concurrent.futures import Executor
from typing import Callable, Protocol

from broker_core.errors import PersistenceError
from broker_core.log_limits import LogLimiter
from broker_core.storage.sync_threads import SyncThreads

log = logging.getLogger(__name__)

Waiter = Callable[[BaseException | None], None]


class SyncedLog(Protocol):
    """What the journal needs of :class:`~broker_core.storage.log.ManagedLog`."""

    end_offset: int
    durable_end_offset: int

    def sync(self) -> int: ...

    def rollback_to(self, offset: int) -> int: ...


class Journal:
    def __init__(self, managed_log: SyncedLog, mode: str, interval_ms: int, sync_pool: Executor,
                 on_confirmed: Callable[[], None]) -> None:
        self._log = managed_log
        self._mode = mode
        self._interval_s = interval_ms / 1000.0
        # SyncThreads.run: no Future per fsync (nobody reads it: the job reports to the loop itself)
        self._run: Callable[[Callable[[], None]], object] = \
            sync_pool.run if isinstance(sync_pool, SyncThreads) else sync_pool.submit
        self._on_confirmed = on_confirmed
        self._waiters: deque[tuple[int, Waiter]] = deque()
        self._loop = asyncio.get_running_loop()
        self._syncing = False
        self._idle: asyncio.Future | None = None  # set while close() waits for the running fsync
        self._last_sync = 0.0
        self.fenced: PersistenceError | None = None
        """Set when a failed fsync could not be undone: appends fail until the topic is reloaded."""
        self.confirmed_end_offset = managed_log.end_offset
        self._lines = LogLimiter(log)  # a full disk fails every fsync: one line per interval, with a count

    @property
    def idle(self) -> bool:
        """Nothing waits for an fsync (the topic may be unloaded)."""
        return not self._waiters and not self._syncing

    # ------------------------------------------------------------------ appends
    def appended(self, end_offset: int, waiter: Waiter) -> None:
        """Entries below ``end_offset`` were appended; call ``waiter(None)`` once they are confirmed
        (or ``waiter(error)`` if they can never be)."""
        if self.fenced is not None:
            waiter(self.fenced)
            return
        if self._mode == "never":
            self._confirm(end_offset)
            waiter(None)
        elif self._mode == "always":
            try:
                self._log.sync()
            except PersistenceError as exc:
                self._waiters.append((end_offset, waiter))
                self._sync_failed(exc)
                return
            self._confirm(end_offset)
            waiter(None)
        else:
            self._waiters.append((end_offset, waiter))
            if not self._syncing:
                self._start_sync()

    def _confirm(self, end_offset: int) -> None:
        if end_offset > self.confirmed_end_offset:
            self.confirmed_end_offset = end_offset
            try:
                self._on_confirmed()
            except Exception:  # a consumer's trouble must never keep receipts from their producers
                log.exception("event=dispatch_after_confirm_failed")

    # ------------------------------------------------------------------ group commit
    def _start_sync(self) -> None:
        self._syncing = True
        delay = self._last_sync + self._interval_s - time.monotonic() if self._interval_s else 0.0
        if delay > 0:
            self._loop.call_later(delay, self._submit)
        else:
            self._submit()

    def _submit(self) -> None:
        self._last_sync = time.monotonic()
        try:
            self._run(self._sync_job)
        except RuntimeError as exc:  # the pool is shut down: the broker is stopping
            self._sync_failed(PersistenceError(f"cannot persist entries: {exc}"))

    def _sync_job(self) -> None:
        """On a pool thread: one fsync, reported to the event loop."""
        try:
            durable = self._log.sync()
        except Exception as exc:  # disk full, I/O error, EMFILE: fail what waits, keep the broker up
            self._loop.call_soon_threadsafe(self._sync_failed, exc)
        else:
            self._loop.call_soon_threadsafe(self._release, durable)

    def _release(self, durable: int) -> None:
        self._syncing = False
        self._confirm(durable)
        waiters = self._waiters
        while waiters and waiters[0][0] <= durable:
            _, waiter = waiters.popleft()
            waiter(None)
        if waiters and self._idle is None:
            self._start_sync()
        self._wake_close()

    def _sync_failed(self, exc: BaseException) -> None:
        """Fail the receipts the fsync covered; cut the log back to what is durable."""
        self._syncing = False
        error = exc if isinstance(exc, PersistenceError) else PersistenceError(f"cannot persist entries: {exc}")
        self._lines.error("sync_failed", "event=journal_sync_failed error=%r", exc)
        try:
            durable = self._log.rollback_to(self.confirmed_end_offset)
        except Exception as cut:
            self.fenced = PersistenceError(
                f"the topic's storage failed and could not be restored ({cut}); it accepts no more"
                " entries until it is reloaded (unload the topic or restart the broker)")
            log.error("event=journal_fenced error=%r", cut)
            durable = self.confirmed_end_offset
        self._confirm(min(durable, self._log.durable_end_offset))
        waiters = self._waiters
        while waiters:
            end, waiter = waiters.popleft()
            waiter(None if end <= self.confirmed_end_offset else error)
        self._wake_close()

    def _wake_close(self) -> None:
        if self._idle is not None and not self._syncing and not self._idle.done():
            self._idle.set_result(None)

    async def close(self) -> None:
        """Wait for the running fsync, confirm everything appended with a final one, release waiters."""
        if self._syncing:
            self._idle = self._loop.create_future()
            await self._idle
        if self._waiters and self.fenced is None:
            self._idle = self._loop.create_future()
            self._syncing = True
            self._submit()
            await self._idle
        self._lines.flush()
