"""Rates in topic stats: per-second averages over the last stats interval, measured when the interval ends
(never per request), for the topic, its publishers, subscriptions and consumers; averageMsgSize from them."""
from __future__ import annotations

from broker_core.clock import FakeClock
from broker_core.core.rates import TopicRates


def stats(msg_in=0, bytes_in=0, out=0, out_bytes=0, redelivered=0, expired=0, consumer_out=None):
    consumers = [] if consumer_out is None else [{"consumerId": 7, "msgOutCounter": consumer_out,
                                                  "bytesOutCounter": 0, "msgRedeliverCounter": 0}]
    return {"msgInCounter": msg_in, "bytesInCounter": bytes_in, "msgOutCounter": out, "bytesOutCounter": out_bytes,
            "publishers": [{"producerId": 1, "msgInCounter": msg_in, "bytesInCounter": bytes_in}],
            "subscriptions": {"sub": {"msgOutCounter": out, "bytesOutCounter": out_bytes,
                                      "msgRedeliverCounter": redelivered, "totalMsgExpired": expired,
                                      "consumers": consumers}}}


def test_rates_are_zero_until_the_first_interval_ends():
    rates = TopicRates(FakeClock())
    shown = rates.apply(stats(msg_in=100, bytes_in=5000))
    assert (shown["msgRateIn"], shown["msgThroughputIn"], shown["averageMsgSize"]) == (0.0, 0.0, 0.0)


def test_the_first_interval_counts_from_when_the_topic_was_loaded():
    clock = FakeClock()
    rates = TopicRates(clock)
    clock.advance(60_000)
    rates.sample(stats(msg_in=600, bytes_in=60_000, out=300, out_bytes=30_000, redelivered=60, expired=120))
    shown = rates.apply(stats())
    assert (shown["msgRateIn"], shown["msgThroughputIn"], shown["averageMsgSize"]) == (10.0, 1000.0, 100.0)
    assert (shown["msgRateOut"], shown["msgThroughputOut"]) == (5.0, 500.0)
    assert shown["publishers"][0]["msgRateIn"] == 10.0 and shown["publishers"][0]["averageMsgSize"] == 100.0
    sub = shown["subscriptions"]["sub"]
    assert (sub["msgRateOut"], sub["msgRateRedeliver"], sub["msgRateExpired"]) == (5.0, 1.0, 2.0)
    assert "msgDropRate" not in sub  # persistent subscriptions drop nothing


def test_rates_stay_those_of_the_last_interval_however_often_stats_are_read():
    clock = FakeClock()
    rates = TopicRates(clock)
    clock.advance(10_000)
    rates.sample(stats(msg_in=100))
    clock.advance(5_000)
    assert rates.apply(stats(msg_in=900))["msgRateIn"] == 10.0
    rates.sample(stats(msg_in=150))  # the next interval: 50 messages in 5 s
    assert rates.apply(stats(msg_in=150))["msgRateIn"] == 10.0
    clock.advance(5_000)
    rates.sample(stats(msg_in=150))
    assert rates.apply(stats(msg_in=150))["msgRateIn"] == 0.0


def test_a_consumer_that_appeared_during_the_interval_counts_from_zero():
    clock = FakeClock()
    rates = TopicRates(clock)
    clock.advance(10_000)
    rates.sample(stats(out=40, consumer_out=40))
    assert rates.apply(stats(consumer_out=40))["subscriptions"]["sub"]["consumers"][0]["msgRateOut"] == 4.0


def test_a_sample_without_time_passing_keeps_the_previous_rates():
    clock = FakeClock()
    rates = TopicRates(clock)
    clock.advance(1_000)
    rates.sample(stats(msg_in=10))
    rates.sample(stats(msg_in=20))
    assert rates.apply(stats())["msgRateIn"] == 10.0
