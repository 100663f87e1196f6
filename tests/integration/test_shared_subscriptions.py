"""Shared and Key_Shared subscriptions end to end (seed "Subscription types"), with real clients."""
from __future__ import annotations

import pytest

from connector import ConsumerType, CumulativeAcknowledgementNotAllowedError, InitialPosition, Timeout


def drain(consumer, limit_ms=500):
    out = []
    while True:
        try:
            out.append(consumer.receive(timeout_millis=limit_ms))
        except Timeout:
            return out


@pytest.mark.transports
def test_shared_consumers_split_the_messages_and_each_message_goes_to_one(client, topic):
    a = client.subscribe(topic, "shared", consumer_type=ConsumerType.Shared, receiver_queue_size=10)
    b = client.subscribe(topic, "shared", consumer_type=ConsumerType.Shared, receiver_queue_size=10)
    producer = client.create_producer(topic, batching_enabled=False)
    for i in range(40):
        producer.send_async(b"m%d" % i, None)
    producer.flush()
    got_a, got_b = drain(a), drain(b)
    for msg in got_a:
        a.acknowledge(msg)
    for msg in got_b:
        b.acknowledge(msg)
    payloads_a = {m.data() for m in got_a}
    payloads_b = {m.data() for m in got_b}
    assert payloads_a and payloads_b and not payloads_a & payloads_b
    assert payloads_a | payloads_b == {b"m%d" % i for i in range(40)}


@pytest.mark.transports
def test_a_closing_shared_consumers_unacked_messages_go_to_the_others(client, topic):
    a = client.subscribe(topic, "shared", consumer_type=ConsumerType.Shared, receiver_queue_size=5)
    producer = client.create_producer(topic, batching_enabled=False)
    for i in range(5):
        producer.send(b"m%d" % i)
    held = drain(a)
    assert len(held) == 5
    a.acknowledge(held[0])
    b = client.subscribe(topic, "shared", consumer_type=ConsumerType.Shared)
    a.close()  # four unacknowledged messages go back
    got = drain(b)
    assert sorted(m.data() for m in got) == [b"m1", b"m2", b"m3", b"m4"]
    assert all(m.redelivery_count() == 1 for m in got)


def test_cumulative_ack_is_rejected_on_shared_and_key_shared(client, topic):
    for ctype in (ConsumerType.Shared, ConsumerType.KeyShared):
        consumer = client.subscribe(topic, f"cumulative-{int(ctype)}", consumer_type=ctype,
                                    initial_position=InitialPosition.Earliest)
        producer = client.create_producer(topic)
        producer.send(b"x")
        msg = consumer.receive(timeout_millis=5000)
        with pytest.raises(CumulativeAcknowledgementNotAllowedError):
            consumer.acknowledge_cumulative(msg)
        producer.close()
        consumer.close()


@pytest.mark.transports
def test_key_shared_delivers_each_key_to_one_consumer_in_order(client, topic):
    a = client.subscribe(topic, "ks", consumer_type=ConsumerType.KeyShared)
    b = client.subscribe(topic, "ks", consumer_type=ConsumerType.KeyShared)
    producer = client.create_producer(topic, batching_enabled=False)
    keys = [f"k{i}" for i in range(20)]
    for n in range(5):
        for key in keys:
            producer.send_async(f"{key}:{n}".encode(), None, partition_key=key)
    producer.flush()
    owners: dict[str, str] = {}
    seen: dict[str, list[int]] = {}
    for name, consumer in (("a", a), ("b", b)):
        for msg in drain(consumer):
            key, n = msg.data().decode().split(":")
            assert owners.setdefault(key, name) == name  # one consumer per key
            seen.setdefault(key, []).append(int(n))
            consumer.acknowledge(msg)
    assert set(owners.values()) == {"a", "b"}
    assert all(seen[key] == [0, 1, 2, 3, 4] for key in keys)


def test_key_shared_joiner_waits_for_the_keys_the_first_consumer_holds(client, admin, topic):
    """Issue 4: a consumer joins while the first holds unacked messages; it gets nothing for the keys it
    took over until the first acknowledges them, then gets them in order."""
    first = client.subscribe(topic, "ks", consumer_type=ConsumerType.KeyShared, consumer_name="first")
    producer = client.create_producer(topic, batching_enabled=False)
    keys = [f"key-{i}" for i in range(16)]
    for key in keys:
        producer.send(f"{key}:0".encode(), partition_key=key)
    held = drain(first)
    assert len(held) == 16  # first holds one unacked message of every key
    second = client.subscribe(topic, "ks", consumer_type=ConsumerType.KeyShared, consumer_name="second")
    for n in (1, 2):
        for key in keys:
            producer.send(f"{key}:{n}".encode(), partition_key=key)
    kept = drain(first)  # keys first still owns flow on
    assert drain(second) == []  # every key second took over is draining on first
    kept_keys = {m.data().decode().split(":")[0] for m in kept}
    moved_keys = set(keys) - kept_keys
    assert kept_keys and moved_keys
    stats = {c["consumerName"]: c for c in admin.topic_stats(topic)["subscriptions"]["ks"]["consumers"]}
    assert stats["first"]["drainingHashesCount"] > 0
    assert stats["first"]["drainingHashesUnackedMessages"] >= len(stats["first"]["drainingHashes"])
    assert stats["second"]["keyHashRangeArrays"]
    for msg in held:
        first.acknowledge(msg)
    later = drain(second)
    got = {}
    for msg in later:
        key, n = msg.data().decode().split(":")
        got.setdefault(key, []).append(int(n))
    assert set(got) == moved_keys and all(ns == [1, 2] for ns in got.values())
