"""Dispatch rate limits: how many messages and bytes a subscription may send per period (Pulsar's
``DispatchRate``: ``dispatchThrottlingRateInMsg``, ``dispatchThrottlingRateInByte`` per ``ratePeriodInSecond``).

A :class:`RateLimit` is one limit: a budget of messages and one of bytes, renewed at each period's end
(Pulsar's dispatch ``RateLimiter``). What was sent beyond a budget is owed: the next period's budget is that
much smaller ("10 per second, 11 sent in the first second: 9 in the next", Pulsar's cookbook), so over time the
rate holds even though whole entries (batches) are sent. A budget never exceeds one period's worth: time
without traffic saves nothing up. A limit may be shared: the topic's by every subscription of the topic, the
broker's by every topic, a resource group's by the topics of its namespaces.

A subscription dispatches under a :class:`DispatchThrottle` (``Subscription.throttle``; None: no limit, the
usual case, which costs dispatch one attribute test per read). Before each read the dispatcher asks
:meth:`DispatchThrottle.read_budget` how much it may read -- the entries (the messages left divided by the
messages an entry held lately, at least one) and bytes left under every limit -- and reads no more; with a
budget spent it reads nothing and a timer calls it again when the first period renews. What is sent is charged
per delivery group (``Dispatcher.send``), never per message.

Worked example: 10 messages per 1 s period, entries of 4 messages. At t=0 the budget is 10: the first read
takes 1 entry (nothing is known yet), 4 messages are sent, 6 are left; the next read takes ceil(6 / 4) = 2
entries, 8 messages are sent: -2. Nothing more is read until t=1 s, when the budget becomes 10 - 2 = 8.
"""
from __future__ import annotations

from typing import Any, Callable

from broker_core.clock import SYSTEM_CLOCK, Clock

Scheduler = Callable[[float, Callable[[], None]], Any]
"""``scheduler(delay_s, callback)`` -> a handle with ``cancel()`` (the event loop's ``call_later``)."""


class RateLimit:
    """Messages and bytes per ``period_s`` (a rate <= 0: not limited that way); ``relative_to()``, when
    given, is added to each rate at every renewal (Pulsar's ``relativeToPublishRate``: the topic's publish
    rate, messages and bytes per second, measured over the last stats interval)."""

    __slots__ = ("msg_rate", "byte_rate", "period_ms", "relative_to", "_clock", "_msgs", "_bytes", "_period_start")

    def __init__(self, msg_rate: int, byte_rate: int, period_s: int = 1, *, clock: Clock = SYSTEM_CLOCK,
                 relative_to: Callable[[], tuple[float, float]] | None = None) -> None:
        self._clock = clock
        self._period_start = clock.monotonic_ms()
        self.msg_rate = self.byte_rate = 0
        self.period_ms = 1000.0
        self.relative_to = relative_to
        self.set_rate(msg_rate, byte_rate, period_s, relative_to=relative_to)

    def set_rate(self, msg_rate: int, byte_rate: int, period_s: int = 1, *,
                 relative_to: Callable[[], tuple[float, float]] | None = None) -> None:
        """New rates from the next period on (what is owed stays owed); the current budgets shrink to them."""
        if period_s < 1:
            raise ValueError(f"ratePeriodInSecond must be >= 1, not {period_s}")
        self.msg_rate, self.byte_rate = max(int(msg_rate), 0), max(int(byte_rate), 0)
        self.period_ms = period_s * 1000.0
        self.relative_to = relative_to
        msgs, nbytes = self._rates()
        self._msgs = min(getattr(self, "_msgs", msgs), msgs)
        self._bytes = min(getattr(self, "_bytes", nbytes), nbytes)

    @property
    def enabled(self) -> bool:
        return self.msg_rate > 0 or self.byte_rate > 0

    def _rates(self) -> tuple[int, int]:
        msgs, nbytes = self.msg_rate, self.byte_rate
        if self.relative_to is not None:
            extra_msgs, extra_bytes = self.relative_to()
            msgs = msgs + int(extra_msgs) if msgs > 0 else 0
            nbytes = nbytes + int(extra_bytes) if nbytes > 0 else 0
        return msgs, nbytes

    def _renew(self) -> None:
        periods = int((self._clock.monotonic_ms() - self._period_start) // self.period_ms)
        if periods > 0:
            self._period_start += periods * self.period_ms
            msgs, nbytes = self._rates()
            self._msgs = min(msgs, self._msgs + periods * msgs)
            self._bytes = min(nbytes, self._bytes + periods * nbytes)

    def available(self) -> tuple[int | None, int | None]:
        """Messages and bytes left in this period (None: not limited that way; <= 0: spent)."""
        self._renew()
        return (self._msgs if self.msg_rate > 0 else None), (self._bytes if self.byte_rate > 0 else None)

    def consume(self, messages: int, nbytes: int) -> None:
        """Charge what was sent (it may go below zero: owed by the next periods)."""
        self._renew()
        if self.msg_rate > 0:
            self._msgs -= messages
        if self.byte_rate > 0:
            self._bytes -= nbytes

    def ms_to_renewal(self) -> float:
        """Milliseconds until the current period ends."""
        return max(self._period_start + self.period_ms - self._clock.monotonic_ms(), 0.0)

    def __repr__(self) -> str:
        return (f"RateLimit(msgs={self.msg_rate}, bytes={self.byte_rate}, period_s={self.period_ms / 1000:g},"
                f" left=({self._msgs}, {self._bytes}))")


class DispatchThrottle:
    """The limits one subscription's dispatch obeys (its own, its topic's, the broker's, a resource group's),
    the messages per entry it saw lately, and the timer that resumes it (see the module docstring)."""

    __slots__ = ("limits", "_scheduler", "_timer", "_msgs_per_entry", "throttled")

    def __init__(self, limits: tuple[RateLimit, ...], scheduler: Scheduler | None) -> None:
        self.limits = limits
        self._scheduler = scheduler
        self._timer: Any = None
        self._msgs_per_entry = 0.0
        """Messages per entry sent lately (0: nothing sent yet, so the first read takes one entry)."""
        self.throttled = 0
        """Times a read waited for a budget to renew (a pulsarlike extension to the subscription's stats)."""

    def read_budget(self, max_entries: int, max_bytes: int,
                    resume: Callable[[], None]) -> tuple[int, int] | None:
        """``(entries, bytes)`` the next read may take; None when a budget is spent: ``resume()`` is then
        called once the first spent limit renews (one timer at a time)."""
        msgs_left: int | None = None
        bytes_left = max_bytes
        wait_ms = -1.0
        for limit in self.limits:
            msgs, nbytes = limit.available()
            if (msgs is not None and msgs <= 0) or (nbytes is not None and nbytes <= 0):
                renewal = limit.ms_to_renewal()
                wait_ms = renewal if wait_ms < 0 else min(wait_ms, renewal)
                continue
            if msgs is not None:
                msgs_left = msgs if msgs_left is None else min(msgs_left, msgs)
            if nbytes is not None:
                bytes_left = min(bytes_left, nbytes)
        if wait_ms >= 0:
            self.throttled += 1
            self._arm(wait_ms, resume)
            return None
        if msgs_left is None:
            return max_entries, bytes_left
        per_entry = self._msgs_per_entry
        entries = 1 if per_entry <= 0 else max(1, int(msgs_left // per_entry))
        return min(max_entries, entries), bytes_left

    def charge(self, messages: int, nbytes: int, entries: int) -> None:
        """``messages`` in ``entries`` entries (``nbytes``) were sent."""
        for limit in self.limits:
            limit.consume(messages, nbytes)
        if entries:
            seen = messages / entries
            self._msgs_per_entry = seen if self._msgs_per_entry <= 0 else 0.9 * self._msgs_per_entry + 0.1 * seen

    def _arm(self, wait_ms: float, resume: Callable[[], None]) -> None:
        if self._timer is not None or self._scheduler is None:
            return

        def renewed() -> None:
            self._timer = None
            resume()
        # a millisecond past the renewal, so the budget read then is the new one
        self._timer = self._scheduler((wait_ms + 1.0) / 1000.0, renewed)

    def cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
