"""Password hashes computed on worker threads, never on the broker's event loop.

A Basic login's check is pure Python (:mod:`.password_hashes`): ~1.5-3.5 ms for APR1, ~6-15 ms for
SHA-512-crypt, ~25-80 ms with ``rounds=20000``. On the event loop, one client failing logins in a loop held
every other client's answers back (PING p99 over 100 ms). Here the front end awaits it instead:

- one pool of :data:`HASHING_THREADS` threads for the whole process (started at the first check, shared by
  every broker in it): a flood of logins queues, it never adds threads;
- at most ``max_pending`` checks queued or running per broker (:class:`PasswordChecks`); one more is refused
  at once with ``TooManyRequests``, nothing hashed;
- a check of credentials already being checked awaits that check's answer (keyed by their digest): ten
  connections opened at once with the same password cost one hash.

The hashing threads hold the GIL while they hash (hashlib releases it only for inputs over 2 KiB). Left
alone, the interpreter would hand it to the event loop's thread only after ``sys.getswitchinterval()`` (5 ms)
each time the loop wakes; so a hash hands it over itself every
:data:`~broker_core.security.password_hashes.PAUSE_EVERY` rounds (:func:`hand_over`, ~0.3-0.6 ms apart):
the loop waits that long at most, and the hash waits while the loop works.

Example::

    checks = PasswordChecks()
    matches = await checks.run(digest, functools.partial(verify, password, stored))
"""
from __future__ import annotations

import asyncio
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Callable

from broker_core.errors import TooManyRequests

HASHING_THREADS = 1
"""The hashes hold the GIL: a second thread would hash no faster, and would contend with the event loop."""
MAX_PENDING = 64
"""Checks queued or running per broker, at most (at ~15 ms each, a second's work)."""

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def hashing_pool() -> ThreadPoolExecutor:
    """The process's hashing threads (made at the first call)."""
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=HASHING_THREADS, thread_name_prefix="password-check")
        return _pool


def hand_over() -> None:
    """Let the event loop's thread take the GIL if it waits for it (``time.sleep`` releases it)."""
    time.sleep(0)


class PasswordChecks:
    """One broker's checks under way (used on its event loop only)."""

    def __init__(self, max_pending: int = MAX_PENDING) -> None:
        self.max_pending = max_pending
        self._running: dict[bytes, asyncio.Future[bool]] = {}

    def __len__(self) -> int:
        return len(self._running)

    def submit(self, key: bytes, check: Callable[[], bool]) -> asyncio.Future[bool]:
        """``check()``'s answer, computed on a hashing thread; the future of the check of ``key`` already
        under way, if there is one. ``TooManyRequests`` when ``max_pending`` checks are under way."""
        loop = asyncio.get_running_loop()
        running = self._running.get(key)
        if running is not None and running.get_loop() is loop:
            return running
        if len(self._running) >= self.max_pending:
            raise TooManyRequests(f"authentication refused: the broker is checking {len(self._running)} passwords "
                                  "already; retry in a moment", limit="password checks under way",
                                  allowed=self.max_pending)
        future = loop.run_in_executor(hashing_pool(), check)
        self._running[key] = future
        future.add_done_callback(lambda done: self._done(key, done))
        return future

    async def run(self, key: bytes, check: Callable[[], bool]) -> bool:
        """:meth:`submit`, awaited; a caller cancelled leaves the check (and its other callers) alone."""
        return await asyncio.shield(self.submit(key, check))

    async def idle(self) -> None:
        """Returns once every check under way is done, and what waited on it was told."""
        while self._running:
            await asyncio.wait(list(self._running.values()))

    def _done(self, key: bytes, future: asyncio.Future[bool]) -> None:
        if self._running.get(key) is future:
            del self._running[key]
        if not future.cancelled():
            future.exception()  # retrieved: its callers may all have gone
