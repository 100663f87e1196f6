"""``key_shared_policy=ConsumerKeySharedPolicy(...)`` end to end: STICKY ranges, their rejection, AUTO_SPLIT
(seed: "Key_Shared")."""
from __future__ import annotations

import pytest

from connector import (
    ConsumerAssignError, ConsumerBusy, ConsumerKeySharedPolicy, ConsumerType, InitialPosition, KeySharedMode, Timeout)
from dispatch.sticky_key import sticky_key_hash


def _sticky(client, topic, ranges, name="ks"):
    return client.subscribe(topic, name, consumer_type=ConsumerType.KeyShared,
                            initial_position=InitialPosition.Earliest,
                            key_shared_policy=ConsumerKeySharedPolicy(KeySharedMode.Sticky,
                                                                      sticky_ranges=ranges))


def _drain(consumer):
    out = []
    while True:
        try:
            out.append(consumer.receive(timeout_millis=300))
        except Timeout:
            return out


def test_sticky_consumers_get_exactly_the_keys_of_their_ranges(client, topic):
    low = _sticky(client, topic, [(0, 32767)])
    high = _sticky(client, topic, [(32768, 65535)])
    producer = client.create_producer(topic, batching_enabled=False)
    keys = [f"key-{i}" for i in range(40)]
    for key in keys:
        producer.send_async(key.encode(), None, partition_key=key)
    producer.flush()
    for consumer, lo, hi in ((low, 0, 32767), (high, 32768, 65535)):
        for msg in _drain(consumer):
            assert lo <= sticky_key_hash(msg.partition_key().encode()) <= hi
            consumer.acknowledge(msg)


def test_overlapping_sticky_ranges_fail_the_subscribe_with_consumer_assign_error(client, topic):
    first = _sticky(client, topic, [(0, 40000)])
    with pytest.raises(ConsumerAssignError):
        _sticky(client, topic, [(30000, 65535)])
    # the first consumer is untouched, and a consumer with free ranges still joins
    second = _sticky(client, topic, [(40001, 65535)])
    assert first.is_connected() and second.is_connected()


@pytest.mark.parametrize("ranges", [[(0, 70000)], [(-1, 10)], [(500, 100)], [(0, 10), (5, 20)]])
def test_out_of_range_reversed_or_self_overlapping_sticky_ranges_are_refused(client, topic, ranges):
    with pytest.raises(ConsumerAssignError):
        _sticky(client, topic, ranges)


def test_auto_split_policy_splits_the_keys_between_consumers(client, topic):
    policy = ConsumerKeySharedPolicy(KeySharedMode.AutoSplit, allow_out_of_order_delivery=False)
    consumers = [client.subscribe(topic, "auto", consumer_type=ConsumerType.KeyShared, key_shared_policy=policy,
                                  initial_position=InitialPosition.Earliest) for _ in range(2)]
    producer = client.create_producer(topic, batching_enabled=False)
    for i in range(60):
        producer.send_async(b"x", None, partition_key=f"k{i % 20}")
    producer.flush()
    owners: dict[str, int] = {}
    for n, consumer in enumerate(consumers):
        for msg in _drain(consumer):
            assert owners.setdefault(msg.partition_key(), n) == n
            consumer.acknowledge(msg)
    assert len(owners) == 20 and set(owners.values()) == {0, 1}


def test_a_sticky_consumer_cannot_join_an_auto_split_subscription(client, topic):
    client.subscribe(topic, "mixed", consumer_type=ConsumerType.KeyShared)
    with pytest.raises(ConsumerBusy, match="AUTO_SPLIT"):
        _sticky(client, topic, [(0, 100)], name="mixed")
