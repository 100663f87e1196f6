"""Publish rate limits: messages and bytes per second published to a topic (its ``publishRate``, else
``maxPublishRatePerTopicInMessages``/``...InBytes``), to the whole broker (``brokerPublisherThrottlingMaxMessageRate``
/ ``...MaxByteRate``) or to the topics of a resource group (its ``publishRateInMsgs``/``...InBytes``).

As Pulsar's ``PublishRateLimiterImpl`` (its ``AsyncTokenBucket``): a :class:`PublishLimiter` is a bucket of
tokens per rate, holding at most one second's worth and refilled continuously; what is published takes its
tokens, after it was accepted (a send is never refused, nor held back itself). When a publish leaves a bucket
empty the producer is throttled: its front end reads nothing more from it -- the binary protocol pauses the
producer's connection (Pulsar's autoread off), gRPC the producer's stream -- until the bucket holds tokens again,
when every producer it throttled resumes. Each throttling counts once in the topic's ``publishRateLimitedTimes``.
Nothing is charged per message: one charge per publish, of the messages and bytes it stored.

Worked example: 100 messages per second; a producer sends batches of 40. The first two publishes leave 20 tokens,
the third -20: the producer is throttled, and resumes (20 + 1) / 100 s = 210 ms later, when the bucket holds a
token again. Over a second the topic takes about 100 messages, whatever the batch size.
"""
from __future__ import annotations

from typing import Any, Callable

from broker_core.clock import Clock

Later = Callable[[float, Callable[[], None]], Any]
"""``later(delay_s, callback)`` -> a handle with ``cancel()`` (the event loop's ``call_later``)."""
MIN_THROTTLE_MS = 10.0
"""The shortest pause: a bucket a few tokens short resumes no sooner (Pulsar's token bucket has a resolution)."""


class TokenBucket:
    """``rate`` tokens per second, at most ``rate`` held; it may go below zero (what was taken beyond it)."""

    __slots__ = ("rate", "_tokens", "_at", "_clock")

    def __init__(self, rate: int, clock: Clock) -> None:
        self.rate = rate
        self._clock = clock
        self._tokens = float(rate)
        self._at = clock.monotonic_ms()

    def tokens(self) -> float:
        now = self._clock.monotonic_ms()
        self._tokens = min(float(self.rate), self._tokens + (now - self._at) * self.rate / 1000.0)
        self._at = now
        return self._tokens

    def take(self, amount: int) -> bool:
        """Take ``amount`` tokens; whether any are left."""
        left = self.tokens() - amount
        self._tokens = left
        return left > 0

    def ms_to_tokens(self) -> float:
        """Milliseconds until the bucket holds a token again."""
        tokens = self.tokens()
        return 0.0 if tokens > 0 else (1.0 - tokens) * 1000.0 / self.rate


class PublishLimiter:
    """Messages and bytes per second (a rate <= 0: not limited that way) over whatever publishes through it;
    ``later`` schedules the resumption of the producers it throttled."""

    def __init__(self, msg_rate: int, byte_rate: int, clock: Clock, later: Later) -> None:
        self._clock = clock
        self._later = later
        self._msgs: TokenBucket | None = None
        self._bytes: TokenBucket | None = None
        self._waiting: list[Callable[[], None]] = []
        self._timer: Any = None
        self.set_rate(msg_rate, byte_rate)

    def set_rate(self, msg_rate: int, byte_rate: int) -> None:
        """New rates, with full buckets (as Pulsar replaces its buckets on a policy change)."""
        self.msg_rate, self.byte_rate = max(int(msg_rate), 0), max(int(byte_rate), 0)
        self._msgs = TokenBucket(self.msg_rate, self._clock) if self.msg_rate > 0 else None
        self._bytes = TokenBucket(self.byte_rate, self._clock) if self.byte_rate > 0 else None
        if self._waiting:
            if self._timer is not None:
                self._timer.cancel()
            self._check()

    @property
    def enabled(self) -> bool:
        return self._msgs is not None or self._bytes is not None

    def charge(self, messages: int, nbytes: int) -> bool:
        """Take what was published; True when a bucket is now empty (the producer must be throttled)."""
        empty = False
        if self._msgs is not None and messages:
            empty = not self._msgs.take(messages)
        if self._bytes is not None and nbytes:
            empty = not self._bytes.take(nbytes) or empty
        return empty

    def hold(self, resume: Callable[[], None]) -> None:
        """Call ``resume()`` once every bucket holds tokens again."""
        self._waiting.append(resume)
        if self._timer is None:
            self._arm()

    def _wait_ms(self) -> float:
        wait = 0.0
        for bucket in (self._msgs, self._bytes):
            if bucket is not None:
                wait = max(wait, bucket.ms_to_tokens())
        return wait

    def _arm(self) -> None:
        self._timer = self._later(max(self._wait_ms(), MIN_THROTTLE_MS) / 1000.0, self._check)

    def _check(self) -> None:
        self._timer = None
        if self._wait_ms() > 0:
            self._arm()
            return
        waiting, self._waiting = self._waiting, []
        for resume in waiting:
            resume()

    def close(self) -> None:
        """Resume whoever waits (the limit is gone)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        waiting, self._waiting = self._waiting, []
        for resume in waiting:
            resume()

    def __repr__(self) -> str:
        return f"PublishLimiter(msgs={self.msg_rate}/s, bytes={self.byte_rate}/s, waiting={len(self._waiting)})"
