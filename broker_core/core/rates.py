"""Rates in topic stats, computed as Pulsar computes them: per-second averages over the last stats interval.

Every ``statsUpdateFrequencyInSecs`` (Pulsar's key, default 60) :class:`StatsUpdater` takes each loaded
topic's stats -- counters the topics already keep; nothing is added on the produce or dispatch path but a
per-batch timestamp -- and its :class:`TopicRates` keeps, per series, the rates over the interval that just
ended. ``topics stats`` and ``/metrics`` read those rates: they do not depend on how often anyone asks, and
two scrapers see the same figures. The first interval of a topic counts from when it was loaded; a
producer, subscription or consumer that appeared during an interval counts from 0.

Worked example: a topic loaded at t=0 takes 600 messages (60 000 bytes) by t=60 s; at the sample at t=60 s
``msgRateIn`` becomes 10.0, ``msgThroughputIn`` 1000.0 and ``averageMsgSize`` 100.0, and they stay so until
the sample at t=120 s.

Fields (Pulsar's names), with the counter each is measured from:

- topic: ``msgRateIn`` (``msgInCounter``), ``msgThroughputIn`` (``bytesInCounter``), ``msgRateOut``
  (``msgOutCounter``), ``msgThroughputOut`` (``bytesOutCounter``), and ``averageMsgSize`` =
  ``msgThroughputIn / msgRateIn`` (0 without messages);
- publisher: ``msgRateIn``, ``msgThroughputIn``, ``averageMsgSize``;
- subscription: ``msgRateOut``, ``msgThroughputOut``, ``msgRateRedeliver`` (``msgRedeliverCounter``),
  ``msgRateExpired`` (``totalMsgExpired``), and on non-persistent topics ``msgDropRate`` (``msgDropCount``);
- consumer: ``msgRateOut``, ``msgThroughputOut``, ``msgRateRedeliver``.
"""
from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any, Iterable, Mapping

from broker_core.clock import Clock

if TYPE_CHECKING:
    from broker_core.core.registry import TopicRegistry

log = logging.getLogger(__name__)

TOPIC_RATES = (("msgInCounter", "msgRateIn"), ("bytesInCounter", "msgThroughputIn"),
               ("msgOutCounter", "msgRateOut"), ("bytesOutCounter", "msgThroughputOut"))
PUBLISHER_RATES = (("msgInCounter", "msgRateIn"), ("bytesInCounter", "msgThroughputIn"))
SUBSCRIPTION_RATES = (("msgOutCounter", "msgRateOut"), ("bytesOutCounter", "msgThroughputOut"),
                      ("msgRedeliverCounter", "msgRateRedeliver"), ("totalMsgExpired", "msgRateExpired"),
                      ("msgDropCount", "msgDropRate"))
CONSUMER_RATES = (("msgOutCounter", "msgRateOut"), ("bytesOutCounter", "msgThroughputOut"),
                  ("msgRedeliverCounter", "msgRateRedeliver"))
def _series(stats: Mapping[str, Any]) -> Iterable[tuple[tuple, Mapping[str, Any], tuple]]:
    """``(key, dict, fields)`` of every level of a topic's stats: the topic, each publisher (by id), each
    subscription (by name) and each of its consumers (by id)."""
    yield ("topic",), stats, TOPIC_RATES
    for publisher in stats.get("publishers") or ():
        yield ("publisher", publisher.get("producerId")), publisher, PUBLISHER_RATES
    for name, sub in (stats.get("subscriptions") or {}).items():
        yield ("subscription", name), sub, SUBSCRIPTION_RATES
        for consumer in sub.get("consumers") or ():
            yield ("consumer", name, consumer.get("consumerId")), consumer, CONSUMER_RATES


class TopicRates:
    """The rates of one topic: measured by :meth:`sample`, added to a stats dict by :meth:`apply`."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._at_ms = clock.monotonic_ms()
        self._counters: dict[tuple, tuple[int, ...]] = {}
        self._rates: dict[tuple, tuple[float, ...]] = {}

    def sample(self, stats: Mapping[str, Any]) -> None:
        """Close the interval: rates from the counters' growth since the previous sample."""
        now = self._clock.monotonic_ms()
        elapsed_s = (now - self._at_ms) / 1000.0
        if elapsed_s <= 0:
            return
        counters: dict[tuple, tuple[int, ...]] = {}
        rates: dict[tuple, tuple[float, ...]] = {}
        for key, values, fields in _series(stats):
            current = tuple(int(values.get(counter) or 0) for counter, _ in fields)
            before = self._counters.get(key, (0,) * len(fields))
            counters[key] = current
            rates[key] = tuple(max(c - b, 0) / elapsed_s for c, b in zip(current, before))
        self._counters, self._rates, self._at_ms = counters, rates, now

    def publish_rate(self) -> tuple[float, float]:
        """The topic's ``msgRateIn`` and ``msgThroughputIn`` over the last interval (what a dispatch rate
        ``relativeToPublishRate`` adds)."""
        rates = self._rates.get(("topic",))
        return (rates[0], rates[1]) if rates else (0.0, 0.0)

    def apply(self, stats: dict[str, Any]) -> dict[str, Any]:
        """``stats`` with the rate fields of every level set (0.0 for what was not measured yet)."""
        for key, values, fields in _series(stats):
            measured = self._rates.get(key, (0.0,) * len(fields))
            for (counter, rate), value in zip(fields, measured):
                if fields is SUBSCRIPTION_RATES and counter == "msgDropCount" and counter not in values:
                    continue  # persistent subscriptions drop nothing
                values[rate] = value  # type: ignore[index]
            if fields in (TOPIC_RATES, PUBLISHER_RATES):
                values["averageMsgSize"] = average_size(values)  # type: ignore[index]
        return stats


def average_size(values: Mapping[str, Any]) -> float:
    rate = float(values.get("msgRateIn") or 0.0)
    return float(values.get("msgThroughputIn") or 0.0) / rate if rate else 0.0


class StatsUpdater:
    """Every ``interval_s``: sample the rates of every loaded topic (on the broker's event loop)."""

    def __init__(self, registry: "TopicRegistry", interval_s: float) -> None:
        self._registry = registry
        self._interval_s = interval_s
        self._handle: asyncio.TimerHandle | None = None

    def start(self) -> None:
        self._handle = asyncio.get_running_loop().call_later(self._interval_s, self._turn)

    def stop(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def _turn(self) -> None:
        try:
            self.update()
        except Exception:  # a failed round must not stop the next ones
            log.exception("event=stats_update_failed")
        self._handle = asyncio.get_running_loop().call_later(self._interval_s, self._turn)

    def update(self) -> None:
        for topic in self._registry.loaded_topics().values():
            topic.rates.sample(topic.raw_stats())
            topic.throttling.sampled()  # publishRateLimitedTimes counts per interval, as Pulsar's
