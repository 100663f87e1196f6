"""topics stats carries Pulsar's rates and sizes, computed by the broker at the end of each stats interval
(a test clock moves time; the interval timer fires every real second)."""
from __future__ import annotations

import pytest

from broker_core import Broker
from broker_core.clock import FakeClock
from connector import Admin, Client, ConsumerType, InitialPosition
from tests.waiting import wait_until


@pytest.fixture(scope="module")
def clock():
    return FakeClock()


@pytest.fixture(scope="module")
def timed_broker(tmp_path_factory, clock):
    with Broker(data_dir=tmp_path_factory.mktemp("rates"), port=0, clock=clock,
                statsUpdateFrequencyInSecs=1) as running:
        yield running


def test_stats_show_rates_and_sizes_over_the_last_interval(timed_broker, clock, topic):
    with Client(timed_broker.service_url) as client, Admin(timed_broker.service_url) as admin:
        consumer = client.subscribe(topic, "sub", consumer_type=ConsumerType.Shared,
                                    initial_position=InitialPosition.Earliest)
        producer = client.create_producer(topic, batching_enabled=False)
        for i in range(100):
            producer.send(b"x" * 90)
        for _ in range(100):
            consumer.acknowledge(consumer.receive(timeout_millis=5000))
        bytes_in = admin.topic_stats(topic)["bytesInCounter"]
        clock.advance(10_000)
        stats = wait_until(lambda: (s := admin.topic_stats(topic))["msgRateIn"] and s)
        assert (stats["msgRateIn"], stats["msgThroughputIn"]) == (10.0, bytes_in / 10)
        assert stats["averageMsgSize"] == bytes_in / 100
        assert (stats["msgRateOut"], stats["msgThroughputOut"]) == (10.0, stats["bytesOutCounter"] / 10)
        assert stats["publishers"][0]["msgRateIn"] == 10.0
        sub = stats["subscriptions"]["sub"]
        assert (sub["msgRateOut"], sub["msgRateRedeliver"], sub["msgRateExpired"]) == (10.0, 0.0, 0.0)
        assert sub["unackedMessages"] == 0 and sub["lastConsumedTimestamp"] > 0
        assert wait_until(lambda: admin.topic_stats(topic)["subscriptions"]["sub"]["lastAckedTimestamp"] > 0)
        assert sub["consumers"][0]["msgRateOut"] == 10.0
        assert admin.topic_stats(topic)["msgRateIn"] == 10.0  # the same until the next interval ends


def test_a_partitioned_topics_rates_are_the_sum_of_its_partitions(timed_broker, clock, topic):
    with Client(timed_broker.service_url) as client, Admin(timed_broker.service_url) as admin:
        admin.create_partitioned_topic(topic, 2)
        producer = client.create_producer(topic, batching_enabled=False)
        for i in range(40):
            producer.send(b"m", partition_key=str(i))
        clock.advance(10_000)
        stats = wait_until(lambda: (s := admin.topic_stats(topic))["msgRateIn"] and s)
        assert stats["msgRateIn"] == 4.0
        assert sum(p["msgRateIn"] for p in stats["partitions"].values()) == 4.0
