"""The rate limits one loaded topic partition enforces: a :class:`TopicThrottling` each topic owns
(``topic.throttling``), given its :class:`RateSettings` whenever they change (by
:class:`~broker_core.core.rate_settings.BrokerThrottling`, from the policies, the broker's configuration and
the topic's resource group):

- **dispatch** (:mod:`dispatch.throttle`): each subscription dispatches under the topic's limit (shared by its
  subscriptions: Pulsar's topic ``dispatchRate``), its own (``subscriptionDispatchRate``, or the topic's
  ``subscriptionPolicies`` for that subscription), the broker's and the resource group's (shared by their
  topics); :meth:`TopicThrottling.attach` sets them on a subscription when it is made, :meth:`~TopicThrottling.apply`
  on every subscription when they change;
- **publish** (:mod:`broker_core.core.publish_throttle`): :attr:`TopicThrottling.publish`, the limiters each
  publish is charged to (the topic's own, the broker's, the resource group's; empty: none, the usual case),
  read by the producer sessions, which throttle their producers; :attr:`~TopicThrottling.limited_times` counts
  the throttlings (``publishRateLimitedTimes``: since the last stats sample, as Pulsar resets it);
- the dispatch settings of the dynamic configuration (``dispatcherMaxReadBatchSize``,
  ``autoSkipNonRecoverableData``), set on each subscription with its limits;
- **subscribe** (``subscribeRate``): :meth:`TopicThrottling.check_subscribe` lets each consumer -- its client's
  host and its name (Pulsar's ``ConsumerIdentifier`` adds the client's consumer id, which a gRPC consumer does
  not have) -- subscribe ``subscribeThrottlingRatePerConsumer`` times per ``ratePeriodInSecond``, and refuses
  the next ones with Pulsar's ``NotAllowedError`` ("Subscribe limited by subscribe rate limit per consumer.").

Pulsar throttles dispatch and subscribes on persistent topics only; here a non-persistent topic enforces
them too (its subscriptions drop what comes over their budget: nothing can wait there).
"""
from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping

from broker_core.clock import Clock
from broker_core.core.publish_throttle import Later, PublishLimiter
from broker_core.core.rate_policies import dispatch_enabled
from broker_core.errors import NotAllowedError
from dispatch.throttle import DispatchThrottle, RateLimit, Scheduler

SUBSCRIBE_LIMITED = "Subscribe limited by subscribe rate limit per consumer."
"""Pulsar's reason, word for word."""


def call_later(delay_s: float, callback: Callable[[], None]) -> asyncio.TimerHandle:
    """Timers on the broker's event loop, where topics live."""
    return asyncio.get_running_loop().call_later(delay_s, callback)


@dataclass(frozen=True)
class RateSettings:
    """One topic partition's rates in force (Pulsar's models as dicts, None: not limited)."""

    dispatch: dict | None = None
    """The topic's ``DispatchRate`` (shared by its subscriptions)."""
    subscription_dispatch: dict | None = None
    """Each subscription's ``DispatchRate``, but those of ``subscription_overrides``."""
    subscription_overrides: Mapping[str, dict] = field(default_factory=dict)
    """Subscription name -> its own ``DispatchRate`` (the topic's ``subscriptionPolicies``)."""
    publish: dict | None = None
    """The topic's ``PublishRate``."""
    subscribe: dict | None = None
    """The ``SubscribeRate`` of each consumer."""
    shared_dispatch: tuple[RateLimit, ...] = ()
    """Dispatch limits shared with other topics (the broker's, a resource group's)."""
    shared_publish: tuple[PublishLimiter, ...] = ()
    """Publish limiters shared with other topics."""
    read_entries: int | None = None
    """``dispatcherMaxReadBatchSize`` in force (None: as the subscription was made); a dynamic key, applied
    with the rates since it sizes the same reads."""
    skip_damaged: bool | None = None
    """``autoSkipNonRecoverableData`` in force (None: as the subscription was made); a dynamic key."""


NONE = RateSettings()


class SubscribeLimiter:
    """``rate`` subscribes per consumer identity per ``period_s`` (Pulsar resets every count each period)."""

    def __init__(self, rate: int, period_s: int, clock: Clock) -> None:
        self.rate, self.period_ms = rate, period_s * 1000.0
        self._clock = clock
        self._start = clock.monotonic_ms()
        self._counts: dict[tuple, int] = {}

    def allow(self, identity: tuple) -> bool:
        now = self._clock.monotonic_ms()
        if now - self._start >= self.period_ms:
            self._start += (now - self._start) // self.period_ms * self.period_ms
            self._counts.clear()
        count = self._counts.get(identity, 0)
        if count >= self.rate:
            return False
        self._counts[identity] = count + 1
        return True


class TopicThrottling:
    """The rate limits of one topic partition (see the module docstring). ``scheduler`` resumes a throttled
    dispatch (None: nothing waits, a non-persistent topic's); ``later`` a throttled producer; ``publish_rate()``
    is the topic's measured publish rate (messages/s, bytes/s) a ``relativeToPublishRate`` adds."""

    def __init__(self, clock: Clock, *, scheduler: Scheduler | None = call_later, later: Later = call_later,
                 publish_rate: Callable[[], tuple[float, float]] = lambda: (0.0, 0.0)) -> None:
        self._clock = clock
        self._scheduler = scheduler
        self._later = later
        self._publish_rate = publish_rate
        self.settings = NONE
        self._topic_dispatch: RateLimit | None = None
        self._sub_limits: dict[str, RateLimit] = {}
        self._own_publish: PublishLimiter | None = None
        self.publish: tuple[PublishLimiter, ...] = ()
        """The limiters each publish is charged to (empty: publishing is not limited)."""
        self._subscribe: SubscribeLimiter | None = None
        self.limited_times = 0
        """Producers throttled since the last stats sample (Pulsar's ``publishRateLimitedTimes``)."""

    # ------------------------------------------------------------------ settings
    def apply(self, settings: RateSettings, subscriptions: Iterable[Any]) -> None:
        """Enforce ``settings`` from now on, on the topic's ``subscriptions`` too."""
        old, self.settings = self.settings, settings
        self._topic_dispatch = self._limit(self._topic_dispatch, settings.dispatch)
        if (settings.subscription_dispatch, settings.subscription_overrides) != (
                old.subscription_dispatch, old.subscription_overrides):
            for name in list(self._sub_limits):
                self._sub_limits[name] = self._limit(self._sub_limits[name], self._sub_rate(name))
        self._own_publish = self._publisher(self._own_publish, settings.publish)
        self.publish = tuple(p for p in (self._own_publish, *settings.shared_publish) if p is not None)
        subscribe = settings.subscribe
        if subscribe != old.subscribe:
            enabled = subscribe is not None and subscribe["subscribeThrottlingRatePerConsumer"] > 0
            self._subscribe = SubscribeLimiter(subscribe["subscribeThrottlingRatePerConsumer"],
                                               subscribe["ratePeriodInSecond"], self._clock) if enabled else None
        subs = list(subscriptions)
        names = {sub.name for sub in subs}
        for name in [n for n in self._sub_limits if n not in names]:
            del self._sub_limits[name]
        for sub in subs:
            was_throttled = sub.throttle is not None
            self.attach(sub)
            if was_throttled and hasattr(sub, "on_new_entries"):
                sub.on_new_entries()  # a limit raised or gone: what waited may go now

    def _sub_rate(self, name: str) -> dict | None:
        return self.settings.subscription_overrides.get(name, self.settings.subscription_dispatch)

    def _limit(self, limit: RateLimit | None, rate: dict | None) -> RateLimit | None:
        """``limit`` set to ``rate`` (made when None; None when ``rate`` limits nothing)."""
        if not dispatch_enabled(rate):
            return None
        assert rate is not None
        msgs, nbytes = rate["dispatchThrottlingRateInMsg"], rate["dispatchThrottlingRateInByte"]
        period = rate["ratePeriodInSecond"]
        relative = self._publish_rate if rate["relativeToPublishRate"] else None
        if limit is None:
            return RateLimit(msgs, nbytes, period, clock=self._clock, relative_to=relative)
        if (limit.msg_rate, limit.byte_rate, limit.period_ms, limit.relative_to is None) != (
                max(msgs, 0), max(nbytes, 0), period * 1000.0, relative is None):
            limit.set_rate(msgs, nbytes, period, relative_to=relative)
        return limit

    def _publisher(self, limiter: PublishLimiter | None, rate: dict | None) -> PublishLimiter | None:
        msgs = rate["publishThrottlingRateInMsg"] if rate is not None else 0
        nbytes = rate["publishThrottlingRateInByte"] if rate is not None else 0
        if msgs <= 0 and nbytes <= 0:
            if limiter is not None:
                limiter.close()
            return None
        if limiter is None:
            return PublishLimiter(msgs, nbytes, self._clock, self._later)
        if (limiter.msg_rate, limiter.byte_rate) != (max(msgs, 0), max(nbytes, 0)):
            limiter.set_rate(msgs, nbytes)
        return limiter

    # ------------------------------------------------------------------ dispatch
    def attach(self, sub: Any) -> None:
        """Set subscription ``sub``'s dispatch limits (``sub.throttle``; None when it has none) and the dynamic
        dispatch settings (a persistent subscription's)."""
        settings = self.settings
        if settings.read_entries is not None and hasattr(sub, "max_read_entries"):
            sub.max_read_entries = settings.read_entries
        if settings.skip_damaged is not None and hasattr(sub, "skip_damaged_ranges"):
            sub.skip_damaged_ranges = settings.skip_damaged
        limits = [self._topic_dispatch]
        rate = self._sub_rate(sub.name)
        if dispatch_enabled(rate):
            limit = self._sub_limits[sub.name] = self._limit(self._sub_limits.get(sub.name), rate)
            limits.append(limit)
        limits.extend(self.settings.shared_dispatch)
        found = tuple(limit for limit in limits if limit is not None)
        if not found:
            sub.throttle = None
        elif sub.throttle is None:
            sub.throttle = DispatchThrottle(found, self._scheduler)
        else:
            sub.throttle.limits = found

    # ------------------------------------------------------------------ subscribe and publish
    def check_subscribe(self, host: str, consumer_name: str) -> None:
        """``NotAllowedError`` when this consumer subscribed its ``subscribeRate`` times this period already."""
        limiter = self._subscribe
        if limiter is not None and not limiter.allow((host, consumer_name)):
            raise NotAllowedError(SUBSCRIBE_LIMITED, consumer=consumer_name[:200])

    def sampled(self) -> None:
        """A stats sample was taken: ``publishRateLimitedTimes`` counts from 0 again (as Pulsar's)."""
        self.limited_times = 0

    def close(self) -> None:
        """The topic closes: producers it throttled resume (their sessions end), timers stop."""
        if self._own_publish is not None:
            self._own_publish.close()
