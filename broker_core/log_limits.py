"""Rate-limited log lines: what a client can make happen many times a second is logged at most once per
event and interval, with a count.

A client that sends one frame naming 100,000 bad ids, or opens connections in a loop, must not write
100,000 lines: each owner of such events (a connection, the listener, the limits) keeps one
:class:`LogLimiter`, and logs through it. The first occurrence of an event is logged at once; the ones
that follow within ``interval_ms`` are counted, and the next line logged for that event (the first after
the interval) says how many it stands for (``occurrences=N``). Example, interval 10 s::

    t=0.0 s  bad_ack x1        -> logged, occurrences=1
    t=0.1 s  bad_ack x99,999   -> counted
    t=12 s   bad_ack x1        -> logged, occurrences=100000

:meth:`LogLimiter.flush` logs what is still counted (a closing connection calls it), so no count is lost.
"""
from __future__ import annotations

import logging

from broker_core.clock import SYSTEM_CLOCK, Clock

LOG_EVERY_MS = 10_000
"""The default interval: one line per event every 10 s at most."""


class LogLimiter:
    """One logger's lines, limited per event key (a short fixed string such as ``"bad_ack"``)."""

    __slots__ = ("_log", "_every_ms", "_clock", "_events", "_max_keys")

    def __init__(self, logger: logging.Logger, every_ms: float = LOG_EVERY_MS, clock: Clock = SYSTEM_CLOCK,
                 max_keys: int = 1024) -> None:
        """``max_keys``: distinct keys tracked; past it, new keys share one (keys built from what clients
        send must not grow without bound)."""
        self._log = logger
        self._every_ms = every_ms
        self._clock = clock
        self._max_keys = max_keys
        self._events: dict[str, list] = {}  # key -> [occurrences not logged yet, last line's ms, level, msg, args]

    def log(self, level: int, key: str, msg: str, *args: object, count: int = 1, exc_info: bool = False) -> bool:
        """Log ``msg % args`` with ``occurrences=N`` appended, unless ``key`` was logged within the interval
        (then only count it). ``count``: how many occurrences this call stands for; ``exc_info``: the
        exception being handled goes with the line when one is written. Returns whether a line was written."""
        now = self._clock.monotonic_ms()
        state = self._events.get(key)
        if state is None:
            if len(self._events) >= self._max_keys:
                key = "\0more"
                state = self._events.get(key)
            if state is None:
                state = self._events[key] = [0, -self._every_ms * 2, level, msg, args]
        state[0] += count
        if now - state[1] < self._every_ms:
            state[2:] = [level, msg, args]  # the latest occurrence describes the next line
            return False
        self._write(state, now, level, msg, args, exc_info)
        return True

    def warning(self, key: str, msg: str, *args: object, count: int = 1) -> bool:
        return self.log(logging.WARNING, key, msg, *args, count=count)

    def error(self, key: str, msg: str, *args: object, count: int = 1, exc_info: bool = False) -> bool:
        return self.log(logging.ERROR, key, msg, *args, count=count, exc_info=exc_info)

    def flush(self) -> None:
        """Log every event with occurrences counted but not logged yet (one line each)."""
        now = self._clock.monotonic_ms()
        for state in self._events.values():
            if state[0]:
                self._write(state, now, state[2], state[3], state[4])

    def _write(self, state: list, now: float, level: int, msg: str, args: tuple, exc_info: bool = False) -> None:
        self._log.log(level, msg + " occurrences=%d", *args, state[0], exc_info=exc_info)
        state[0] = 0
        state[1] = now
