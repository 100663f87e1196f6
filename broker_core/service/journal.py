"""Durability policy of one topic partition: when an appended entry counts as written.

``journalSyncMode`` decides when a send receipt may be released and when consumers may see an entry
(both only once the entry is as durable as the policy promises, never earlier):

- ``always``: every append call is fsynced before it returns (one fsync per producer request);
- ``group``: appends return at once; the topic's sync thread runs one fsync covering every append made
  while the previous fsync was running (natural group commit), at most one fsync per
  ``journalSyncIntervalMs``; receipts wait for the fsync that covers them. A dedicated thread woken by a
  ``threading.Event`` (rather than an executor job) keeps the hand-offs off the latency path;
- ``never``: an entry is confirmed as soon as it is in the page cache.

``confirmed_end_offset`` is the offset below which everything is confirmed; dispatch reads only below it.
"""
from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections import deque
from concurrent.futures import Executor
from typing import Callable

from broker_core.errors import BrokerPersistenceError
from broker_core.storage.log import ManagedLog

log = logging.getLogger(__name__)

Waiter = Callable[[BaseException | None], None]


class Journal:
    def __init__(self, managed_log: ManagedLog, mode: str, interval_ms: int, executor: Executor,
                 on_confirmed: Callable[[], None]) -> None:
        self._log = managed_log
        self._mode = mode
        self._interval_s = interval_ms / 1000.0
        self._executor = executor
        self._on_confirmed = on_confirmed
        self._waiters: deque[tuple[int, Waiter]] = deque()
        self._loop = asyncio.get_running_loop()
        self._wakeup = threading.Event()
        self._closed = False
        self._failed: BaseException | None = None
        self.confirmed_end_offset = managed_log.end_offset
        self._thread: threading.Thread | None = None
        if mode == "group":
            self._thread = threading.Thread(target=self._sync_loop, name="pulsarlike-journal", daemon=True)
            self._thread.start()

    # ------------------------------------------------------------------ appends
    def appended(self, end_offset: int, waiter: Waiter) -> None:
        """Entries below ``end_offset`` were appended; call ``waiter(None)`` once they are confirmed
        (or ``waiter(error)`` if they can never be)."""
        if self._failed is not None:
            waiter(self._failed)
            return
        if self._mode == "never":
            self._confirm(end_offset)
            waiter(None)
        elif self._mode == "always":
            try:
                self._log.sync()
            except OSError as exc:
                self._fail(exc)
                waiter(self._failed)
                return
            self._confirm(end_offset)
            waiter(None)
        else:
            self._waiters.append((end_offset, waiter))
            self._wakeup.set()

    def _confirm(self, end_offset: int) -> None:
        if end_offset > self.confirmed_end_offset:
            self.confirmed_end_offset = end_offset
            self._on_confirmed()

    # ------------------------------------------------------------------ group commit (sync thread)
    def _sync_loop(self) -> None:
        last = 0.0
        while True:
            self._wakeup.wait()
            self._wakeup.clear()
            if self._closed:
                return
            if self._interval_s:
                delay = last + self._interval_s - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
            last = time.monotonic()
            try:
                durable = self._log.sync()
            except Exception as exc:  # disk full, I/O error: fail what waits, keep the broker up
                self._loop.call_soon_threadsafe(self._fail, exc)
                return
            self._loop.call_soon_threadsafe(self._release, durable)

    def _release(self, durable: int) -> None:
        self._confirm(durable)
        waiters = self._waiters
        while waiters and waiters[0][0] <= durable:
            _, waiter = waiters.popleft()
            waiter(None)
        if waiters:
            self._wakeup.set()

    def _fail(self, exc: BaseException) -> None:
        log.error("event=journal_sync_failed error=%r", exc)
        self._failed = BrokerPersistenceError(f"cannot persist entries: {exc}")
        while self._waiters:
            self._waiters.popleft()[1](self._failed)

    async def close(self) -> None:
        """Confirm everything appended (a final sync), release waiters, stop the sync thread."""
        self._closed = True
        self._wakeup.set()
        if self._thread is not None:
            await self._loop.run_in_executor(self._executor, self._thread.join)
            self._thread = None
        if self._failed is None and self._waiters:
            try:
                durable = await self._loop.run_in_executor(self._executor, self._log.sync)
            except Exception as exc:
                self._fail(exc)
            else:
                self._release(durable)
