"""Delayed delivery across wall-clock steps (NTP, an operator): ``deliver_at`` is wall time but the
subscription's timer runs on the event loop's monotonic clock, so it never sleeps longer than a tick
before reading the wall clock again. A fake clock and a fake loop: nothing sleeps."""
from __future__ import annotations

import heapq
import itertools

import pytest

from broker_core.clock import FakeClock
from dispatch import Subscription, SubType
from dispatch.delayed import DelayedDeliveryTracker
from dispatch.shared import DelayedDelivery
from dispatch.testing import MemoryEntrySource, RecordingConsumer, entry_bytes, make_cursor

W0 = 1_000_000_000
TICK = 1000


class SteppingClock(FakeClock):
    def step(self, ms: int) -> None:
        """Move the wall clock only: monotonic time (the loop's timers) goes on undisturbed."""
        self._now += ms


class FakeLoop:
    """``call_later`` on monotonic time, as asyncio's loop: :meth:`run_for` moves both clocks and fires
    the timers that come due, in order."""

    def __init__(self, clock: SteppingClock) -> None:
        self.clock = clock
        self._timers: list[tuple[float, int, _Handle]] = []
        self._seq = itertools.count()

    def call_later(self, delay_s: float, callback) -> "_Handle":
        handle = _Handle(callback)
        heapq.heappush(self._timers, (self.clock.monotonic_ms() + delay_s * 1000, next(self._seq), handle))
        return handle

    def run_for(self, ms: float) -> None:
        until = self.clock.monotonic_ms() + ms
        while self._timers and self._timers[0][0] <= until:
            due, _, handle = heapq.heappop(self._timers)
            self.clock.advance(due - self.clock.monotonic_ms())
            if not handle.cancelled:
                handle.callback()
        self.clock.advance(until - self.clock.monotonic_ms())

    def run_until(self, check, limit_ms: float) -> bool:
        """Run in 10 ms steps until ``check()``; False if ``limit_ms`` passed first."""
        start = self.clock.monotonic_ms()
        while not check():
            if self.clock.monotonic_ms() - start > limit_ms:
                return False
            self.run_for(10)
        return True


class _Handle:
    def __init__(self, callback) -> None:
        self.callback, self.cancelled = callback, False

    def cancel(self) -> None:
        self.cancelled = True


def subscription_holding(clock: SteppingClock, loop: FakeLoop, *deliver_at: int, strict: bool = False):
    source = MemoryEntrySource()
    sub = Subscription("sub", "persistent://public/default/t", -1, source, make_cursor(), clock=clock,
                       scheduler=loop.call_later, delayed_delivery=DelayedDelivery(True, TICK, strict))
    consumer = RecordingConsumer(1, permits=100)
    sub.add_consumer(consumer, SubType.SHARED)
    for at in deliver_at:
        source.append(1, entry_bytes(deliver_at=at))
    sub.on_new_entries()
    assert consumer.received() == [] and sub.stats()["msgDelayed"] == len(deliver_at)
    return sub, consumer


@pytest.mark.parametrize("strict", [False, True], ids=["default", "strict"])
def test_after_the_clock_steps_back_120_s_and_is_put_back_messages_go_out_within_a_tick_of_their_time(strict):
    clock = SteppingClock(W0)
    loop = FakeLoop(clock)
    _, consumer = subscription_holding(clock, loop, W0 + 5_000, W0 + 30_000, strict=strict)
    loop.run_for(1_000)
    clock.step(-120_000)
    loop.run_for(19_000)  # timers fire while the clock is back: the messages seem two minutes away
    clock.step(+120_000)  # put right: wall time W0 + 20 s, the first message is overdue

    assert loop.run_until(lambda: consumer.received(), limit_ms=TICK)
    assert consumer.take() == [0]
    assert loop.run_until(lambda: consumer.received(), limit_ms=30_000)
    assert consumer.take() == [1] and clock.now_ms() <= W0 + 30_000 + TICK
    assert strict is False or clock.now_ms() >= W0 + 30_000


def test_after_the_clock_steps_forward_what_became_due_goes_out_at_once():
    clock = SteppingClock(W0)
    loop = FakeLoop(clock)
    _, consumer = subscription_holding(clock, loop, W0 + 60_000, W0 + 90_000, W0 + 600_000)
    loop.run_for(500)
    clock.step(+120_000)

    assert loop.run_until(lambda: consumer.received(), limit_ms=TICK)
    assert consumer.take() == [0, 1]  # the third is still ten minutes away
    loop.run_for(60_000)
    assert consumer.take() == []


def test_the_timer_is_never_armed_for_longer_than_a_tick_of_the_loop_clock():
    clock = SteppingClock(W0)
    loop = FakeLoop(clock)
    subscription_holding(clock, loop, W0 + 3_600_000)
    assert [delay for delay, _, _ in loop._timers] == [TICK]


def test_a_tiny_tick_still_lets_the_loop_sleep_between_clock_checks():
    tracker = DelayedDeliveryTracker(SteppingClock(W0), tick_ms=0)
    assert tracker.clock_check_ms == 100
    assert DelayedDeliveryTracker(SteppingClock(W0), tick_ms=TICK).clock_check_ms == TICK
