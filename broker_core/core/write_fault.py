"""Whether a topic can write now: the state a failed append or fsync (disk full, I/O error) puts it in.

Pulsar's broker *fences* a topic whose ledger add fails: it disconnects the topic's producers
(``CLOSE_PRODUCER``) and refuses new ones with ``ServiceNotReady`` until the topic can write again. The
official clients react to that with a backoff, and their send timer fails what is pending with a timeout;
whereas a ``SEND_ERROR`` for each failed send makes them drop the connection, reconnect at once and send
again, which never lets ``send_timeout`` fire (a reconnection storm, one log line each).

:class:`WriteFault` is that state, for one topic::

    writable --failed(error, needed)--> cannot write --probe succeeded, or a write did--> writable

- :meth:`WriteFault.failed` is called for every failed write (counted in one rate-limited log line);
- while the topic cannot write, a *probe* runs every ``interval_ms`` on the executor: it reserves the
  bytes of the failed write in a scratch file in the topic's folder, fsyncs it and removes it
  (:func:`room_for`), so the state ends soon after space is freed, not on the next send;
- :meth:`WriteFault.wait` registers a callback run once the topic can write again (producers of the
  binary front end held ``producer_ready=false`` meanwhile).

The gRPC front end needs none of this: its sends keep trying, and fail with ``PersistenceError`` each.
"""
from __future__ import annotations

import asyncio
import logging
import os
from concurrent.futures import Executor, Future
from pathlib import Path
from typing import Any, Callable

from broker_core.clock import Clock
from broker_core.errors import PersistenceError
from broker_core.log_limits import LogLimiter

log = logging.getLogger(__name__)

PROBE_INTERVAL_MS = 1000
"""How often a topic that cannot write checks whether it could again."""
PROBE_FILE = "write-probe.tmp"
"""The probe's scratch file; recovery step 1 removes ``*.tmp`` files a crash may have left."""
_ZEROS = bytes(64 << 10)


def room_for(directory: Path, size: int) -> None:
    """Raise ``OSError`` unless ``size`` bytes can be stored and synced in ``directory`` now (blocking:
    run it on a worker thread)."""
    path = directory / PROBE_FILE
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        if hasattr(os, "posix_fallocate"):
            os.posix_fallocate(fd, 0, max(size, 1))  # reserves the blocks without writing them all
            os.write(fd, _ZEROS[:min(size, len(_ZEROS))] or b"\0")
        else:
            left = max(size, 1)
            while left > 0:
                left -= os.write(fd, _ZEROS[:min(left, len(_ZEROS))])
        os.fsync(fd)
    finally:
        os.close(fd)
        try:
            path.unlink()
        except FileNotFoundError:
            pass


class WriteFault:
    """One topic's write state. Lives on the event loop; only :attr:`probe` runs on the executor."""

    def __init__(self, topic: str, probe: Callable[[int], Any], executor: Executor, clock: Clock,
                 scheduler: Callable[[float, Callable[[], None]], asyncio.Handle],
                 interval_ms: float = PROBE_INTERVAL_MS) -> None:
        """``probe(size)`` raises unless ``size`` bytes could be written now; ``scheduler(delay_s, callback)``
        is the event loop's ``call_later``."""
        self.topic = topic
        self.probe = probe
        self._executor = executor
        self._clock = clock
        self._scheduler = scheduler
        self._interval_s = interval_ms / 1000.0
        self.error: PersistenceError | None = None
        """Why the topic cannot write (None: it can)."""
        self._needed = 0
        self._since_ms = 0.0
        self._timer: asyncio.Handle | None = None
        self._probing = False
        self._closed = False
        self._waiters: list[Callable[[], None]] = []
        self._lines = LogLimiter(log, clock=clock)

    @property
    def can_write(self) -> bool:
        return self.error is None

    def failed(self, error: PersistenceError, needed: int) -> None:
        """A write of ``needed`` bytes failed with ``error``: the topic cannot write until a probe of that
        size (the largest failed one) succeeds, or a write does."""
        self._lines.error("write_failed", "event=topic_write_failed topic=%s error=%s", self.topic,
                          getattr(error, "reason", None) or error.message)
        if self.error is None:
            self._since_ms = self._clock.monotonic_ms()
            self._needed = 0
            log.warning("event=topic_cannot_write topic=%s error=%s probe_every_ms=%d", self.topic, error.message,
                        self._interval_s * 1000)
        self.error = error
        self._needed = max(self._needed, needed)
        self._arm()

    def succeeded(self) -> None:
        """A write succeeded (or a probe did): the topic can write; run the waiting callbacks."""
        if self.error is None:
            return
        self.error = None
        self._lines.flush()
        log.info("event=topic_can_write_again topic=%s after_ms=%d", self.topic,
                 self._clock.monotonic_ms() - self._since_ms)
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            try:
                waiter()
            except Exception:  # one producer's trouble must not keep the others waiting
                log.exception("event=write_waiter_failed topic=%s", self.topic)

    def wait(self, callback: Callable[[], None]) -> None:
        """Run ``callback()`` once the topic can write again (at once when it can)."""
        if self.error is None:
            callback()
        else:
            self._waiters.append(callback)

    def forget(self, callback: Callable[[], None]) -> None:
        """Do not run ``callback`` (its producer closed meanwhile)."""
        try:
            self._waiters.remove(callback)
        except ValueError:
            pass

    def close(self) -> None:
        """The topic closes: no more probes; waiters are dropped (their sessions end with the topic)."""
        self._closed = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._waiters.clear()
        self._lines.flush()

    # ------------------------------------------------------------------ probing
    def _arm(self) -> None:
        if self._timer is None and not self._probing and not self._closed:
            self._timer = self._scheduler(self._interval_s, self._probe)

    def _probe(self) -> None:
        self._timer = None
        if self.error is None or self._closed:
            return
        self._probing = True
        loop = asyncio.get_running_loop()
        try:
            future = self._executor.submit(self.probe, self._needed)
        except RuntimeError:  # the pool is shut down: the broker is stopping
            self._probing = False
            return
        future.add_done_callback(lambda done: loop.call_soon_threadsafe(self._probed, done))

    def _probed(self, done: Future) -> None:
        self._probing = False
        if self.error is None or self._closed:
            return
        if done.exception() is None:
            self.succeeded()
        else:
            log.debug("event=topic_write_probe_failed topic=%s error=%r", self.topic, done.exception())
            self._arm()
