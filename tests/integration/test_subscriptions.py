"""Exclusive and Failover subscriptions, flow permits, durability across restarts (seed 003)."""
from __future__ import annotations

import pytest

from broker_core import Broker
from connector import (Admin, Client, ConsumerBusy, ConsumerType, InitialPosition, MessageTooBig, Timeout,
                       TopicNotFound)


def _produce(client, topic, n, prefix="m", **kwargs):
    producer = client.create_producer(topic, **kwargs)
    ids = [producer.send(f"{prefix}-{i}".encode()) for i in range(n)]
    producer.close()
    return ids


def _drain(consumer, timeout_millis=300):
    received = []
    while True:
        try:
            received.append(consumer.receive(timeout_millis=timeout_millis))
        except Timeout:
            return received


@pytest.mark.transports
def test_second_exclusive_consumer_is_rejected_with_consumer_busy(client, topic):
    client.subscribe(topic, "sub", consumer_type=ConsumerType.Exclusive)
    with pytest.raises(ConsumerBusy):
        client.subscribe(topic, "sub", consumer_type=ConsumerType.Exclusive)


@pytest.mark.transports
def test_consumer_of_another_type_is_rejected_while_the_subscription_is_in_use(client, topic):
    client.subscribe(topic, "sub", consumer_type=ConsumerType.Failover)
    with pytest.raises(ConsumerBusy):
        client.subscribe(topic, "sub", consumer_type=ConsumerType.Exclusive)


@pytest.mark.transports
def test_failover_on_non_partitioned_topic_first_subscriber_is_active_and_standby_takes_over(client, topic):
    a = client.subscribe(topic, "fo", consumer_type=ConsumerType.Failover, consumer_name="A",
                         initial_position=InitialPosition.Earliest)
    b = client.subscribe(topic, "fo", consumer_type=ConsumerType.Failover, consumer_name="B",
                         initial_position=InitialPosition.Earliest)
    _produce(client, topic, 8)
    got_a = [a.receive(timeout_millis=5000) for _ in range(8)]
    assert [m.data() for m in got_a] == [f"m-{i}".encode() for i in range(8)]
    with pytest.raises(Timeout):
        b.receive(timeout_millis=200)
    # A acknowledges 0..3 and disconnects: B starts at 4 (seed: "Consumer C will start reading 4,5,6,7")
    a.acknowledge_cumulative(got_a[3])
    a.close()
    got_b = [b.receive(timeout_millis=5000).data() for _ in range(4)]
    assert got_b == [f"m-{i}".encode() for i in range(4, 8)]


@pytest.mark.transports
def test_failover_partitions_go_to_highest_priority_consumers_sorted_by_name(client, admin, topic):
    admin.create_partitioned_topic(topic, 4)
    consumers = {}
    for name, priority in (("B", 0), ("A", 0), ("C", 1)):
        consumers[name] = client.subscribe(topic, "fo", consumer_type=ConsumerType.Failover, consumer_name=name,
                                           priority_level=priority, initial_position=InitialPosition.Earliest)
    producer = client.create_producer(topic, batching_enabled=False)
    for p in range(4):
        # one keyed message per partition: find keys that route to each partition
        key = next(k for k in (f"k{i}" for i in range(1000)) if _java_hash(k) % 4 == p)
        producer.send(f"p{p}".encode(), partition_key=key)
    seen = {name: sorted(m.data().decode() for m in _drain(c)) for name, c in consumers.items()}
    # candidates A, B (priority 0) sorted by name: partition i -> [A, B][i % 2]; C (priority 1) is standby
    assert seen == {"A": ["p0", "p2"], "B": ["p1", "p3"], "C": []}


def _java_hash(text: str) -> int:
    h = 0
    for ch in text:
        h = (31 * h + ord(ch)) & 0xFFFFFFFF
    return h & 0x7FFFFFFF


@pytest.mark.transports
def test_receiver_queue_size_bounds_what_the_broker_sends(client, admin, topic):
    consumer = client.subscribe(topic, "q", receiver_queue_size=10, initial_position=InitialPosition.Earliest)
    _produce(client, topic, 50, batching_enabled=False)
    first = consumer.receive(timeout_millis=5000)
    stats = admin.topic_stats(topic)["subscriptions"]["q"]
    assert stats["consumers"][0]["unackedMessages"] <= 10
    assert stats["msgBacklog"] == 50
    consumer.acknowledge(first)
    rest = [consumer.receive(timeout_millis=5000) for _ in range(49)]
    assert [m.data() for m in [first, *rest]] == [f"m-{i}".encode() for i in range(50)]


def test_topic_stats_use_pulsar_field_names(client, admin, topic):
    consumer = client.subscribe(topic, "stats-sub", consumer_name="c1", initial_position=InitialPosition.Earliest)
    _produce(client, topic, 5)
    for _ in range(5):
        consumer.acknowledge(consumer.receive(timeout_millis=5000))
    stats = admin.topic_stats(topic)
    for key in ("msgInCounter", "msgOutCounter", "bytesInCounter", "storageSize", "backlogSize", "publishers",
                "subscriptions"):
        assert key in stats
    assert stats["msgInCounter"] == 5 and stats["msgOutCounter"] == 5 and stats["storageSize"] > 0
    sub = stats["subscriptions"]["stats-sub"]
    assert sub["type"] == "Exclusive"
    consumer_stats = sub["consumers"][0]
    assert consumer_stats["consumerName"] == "c1"
    assert {"availablePermits", "unackedMessages", "msgOutCounter"} <= set(consumer_stats)


def test_unsubscribe_deletes_the_subscription(client, admin, topic):
    consumer = client.subscribe(topic, "gone")
    consumer.unsubscribe()
    assert "gone" not in admin.topic_stats(topic)["subscriptions"]


def test_message_listener_receives_every_message(client, topic):
    import threading

    got, done = [], threading.Event()

    def listener(consumer, msg):
        got.append(msg.data())
        consumer.acknowledge(msg)
        if len(got) == 20:
            done.set()

    client.subscribe(topic, "listen", message_listener=listener, initial_position=InitialPosition.Earliest)
    _produce(client, topic, 20)
    assert done.wait(10)
    assert got == [f"m-{i}".encode() for i in range(20)]


def test_oversized_message_is_rejected_and_nothing_is_lost(tmp_path):
    with Broker(data_dir=tmp_path, port=0, maxMessageSize=1024) as broker:
        client = Client(broker.service_url)
        try:
            consumer = client.subscribe("big", "s", initial_position=InitialPosition.Earliest)
            producer = client.create_producer("big", batching_enabled=False)
            producer.send(b"before")
            with pytest.raises(MessageTooBig) as info:
                producer.send(b"x" * 2000)
            assert info.value.limit == 1024 and info.value.size >= 2000
            producer.send(b"after")
            assert [consumer.receive(timeout_millis=5000).data() for _ in range(2)] == [b"before", b"after"]
        finally:
            client.close()


@pytest.mark.transports
def test_subscribe_to_missing_topic_without_auto_creation_is_topic_not_found(tmp_path, transport):
    with Broker(data_dir=tmp_path, port=0, allowAutoTopicCreation=False) as broker:
        client = Client(broker.service_url, transport=transport)
        try:
            with pytest.raises(TopicNotFound):
                client.subscribe("never-created", "s")
            with pytest.raises(TopicNotFound):
                client.create_producer("never-created")
        finally:
            client.close()


@pytest.mark.transports
def test_durable_subscription_and_partitioned_metadata_survive_broker_restart(tmp_path, transport):
    with Broker(data_dir=tmp_path, port=0) as broker:
        client, admin = Client(broker.service_url, transport=transport), Admin(broker.service_url)
        admin.create_partitioned_topic("parted", 3)
        consumer = client.subscribe("durable", "keep", initial_position=InitialPosition.Earliest)
        _produce(client, "durable", 10)
        received = [consumer.receive(timeout_millis=5000) for _ in range(10)]
        consumer.acknowledge_cumulative(received[5])
        consumer.close()
        client.close()
        admin.close()
    with Broker(data_dir=tmp_path, port=0) as broker:
        client, admin = Client(broker.service_url, transport=transport), Admin(broker.service_url)
        try:
            assert admin.get_partitioned_topic_metadata("parted") == {"partitions": 3}
            consumer = client.subscribe("durable", "keep", initial_position=InitialPosition.Latest)
            again = [consumer.receive(timeout_millis=5000).data() for _ in range(4)]
            assert again == [f"m-{i}".encode() for i in range(6, 10)]
            assert admin.topic_stats("durable")["subscriptions"]["keep"]["msgBacklog"] == 4
        finally:
            client.close()
            admin.close()


# gRPC: a subscribe says it is one of several topics, which Pulsar's binary protocol cannot say (its brokers then
# pick by subscribe order on a non-partitioned topic; docs/pulsar-compatibility.md)
@pytest.mark.transports("grpc")
def test_failover_over_several_non_partitioned_topics_assigns_each_topic_by_hash(client):
    import uuid

    from dispatch import Consumer as DispatchConsumer
    from dispatch import pick_active

    run = uuid.uuid4().hex[:8]
    topics = [f"persistent://public/default/multi-{run}-{i}" for i in range(6)]
    consumers = {name: client.subscribe(topics, "fo-multi", consumer_type=ConsumerType.Failover,
                                        consumer_name=name, initial_position=InitialPosition.Earliest)
                 for name in ("A", "B")}
    for t in topics:
        _produce(client, t, 1, prefix=t)
    seen = {name: sorted(m.topic_name() for m in _drain(c)) for name, c in consumers.items()}
    ring = [DispatchConsumer(i, n, lambda d: None, multi_topic=True) for i, n in enumerate(("A", "B"))]
    expected = {"A": [], "B": []}
    for t in topics:
        expected[pick_active(ring, -1, t).consumer_name].append(t)
    assert seen == {k: sorted(v) for k, v in expected.items()}
