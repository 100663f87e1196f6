"""Injected time. Logic that depends on time takes a :class:`Clock`; tests pass a :class:`FakeClock`."""
from __future__ import annotations

import time


class Clock:
    """Wall-clock milliseconds (for publish times) and monotonic milliseconds (for timers)."""

    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000

    def monotonic_ms(self) -> float:
        return time.monotonic() * 1000.0


class FakeClock(Clock):
    """A clock that only moves when told to."""

    def __init__(self, start_ms: int = 1_700_000_000_000) -> None:
        self._now = start_ms
        self._mono = 0.0

    def now_ms(self) -> int:
        return self._now

    def monotonic_ms(self) -> float:
        return self._mono

    def advance(self, ms: float) -> None:
        self._now += int(ms)
        self._mono += ms


SYSTEM_CLOCK = Clock()
