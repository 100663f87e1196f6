"""Partitioned topics: routing by key and round robin, merged consumption, acks per partition."""
from __future__ import annotations

import pytest

from connector import InitialPosition, MessageId, PartitionsRoutingMode, Timeout
from connector.client.routing import java_string_hash

PARTITIONS = 3


@pytest.fixture
def partitioned(admin, topic):
    admin.create_partitioned_topic(topic, PARTITIONS)
    return topic


def _drain(consumer, timeout_ms=500):
    out = []
    while True:
        try:
            out.append(consumer.receive(timeout_ms))
        except Timeout:
            return out


def test_admin_reports_the_partition_count(admin, partitioned):
    assert admin.get_partitioned_topic_metadata(partitioned) == {"partitions": PARTITIONS}


def test_client_lists_partition_topics(client, partitioned):
    assert client.get_topic_partitions(partitioned) == [
        f"{partitioned}-partition-{i}" for i in range(PARTITIONS)]


def test_keyed_messages_go_to_java_string_hash_partition(client, partitioned):
    producer = client.create_producer(partitioned)
    for key in ["hello", "a", "b", "user-42"]:
        assert producer.send(key.encode(), partition_key=key).partition == \
            java_string_hash(key) % PARTITIONS


def test_keyless_sync_sends_rotate_over_partitions(client, partitioned):
    producer = client.create_producer(partitioned)
    partitions = [producer.send(b"x").partition for _ in range(PARTITIONS * 2)]
    assert sorted(set(partitions)) == list(range(PARTITIONS))


def test_single_partition_mode_uses_one_partition(client, partitioned):
    producer = client.create_producer(partitioned,
                                      message_routing_mode=PartitionsRoutingMode.UseSinglePartition)
    assert len({producer.send(b"x").partition for _ in range(6)}) == 1


def test_custom_router_picks_the_partition(client, partitioned):
    producer = client.create_producer(partitioned, message_router=lambda msg, n: int(msg.data()) % n)
    assert [producer.send(b"%d" % i).partition for i in range(4)] == [0, 1, 2, 0]


def test_partitioned_round_trip_with_acks_per_partition(client, partitioned):
    consumer = client.subscribe(partitioned, "sub", initial_position=InitialPosition.Earliest)
    producer = client.create_producer(partitioned, batching_max_publish_delay_ms=50)
    for i in range(60):
        producer.send_async(b"%d" % i, None, partition_key=f"k{i % 7}")
    producer.flush()
    got = _drain(consumer)
    assert sorted(int(m.data()) for m in got) == list(range(60))
    assert {m.topic_name() for m in got} == {f"{partitioned}-partition-{i}" for i in range(PARTITIONS)}
    for m in got:
        assert m.message_id().partition == int(m.topic_name().rsplit("-", 1)[1])
        consumer.acknowledge(m)
    consumer.close()
    consumer = client.subscribe(partitioned, "sub", initial_position=InitialPosition.Earliest)
    assert _drain(consumer, 300) == []


def test_messages_of_one_key_keep_their_order(client, partitioned):
    consumer = client.subscribe(partitioned, "sub", initial_position=InitialPosition.Earliest)
    producer = client.create_producer(partitioned)
    for i in range(30):
        producer.send_async(b"%d" % i, None, partition_key="same")
    producer.flush()
    assert [int(m.data()) for m in _drain(consumer)] == list(range(30))


def test_multi_topic_consumer_receives_from_every_topic(client, topic):
    other = topic + "-other"
    consumer = client.subscribe([topic, other], "sub", initial_position=InitialPosition.Earliest)
    client.create_producer(topic).send(b"a")
    client.create_producer(other).send(b"b")
    got = _drain(consumer)
    assert sorted(m.data() for m in got) == [b"a", b"b"]
    for m in got:
        consumer.acknowledge(m)


def test_reader_on_partitioned_topic_from_earliest(client, partitioned):
    producer = client.create_producer(partitioned)
    for i in range(6):
        producer.send(b"%d" % i)
    reader = client.create_reader(partitioned, MessageId.earliest)
    seen = []
    while reader.has_message_available():
        seen.append(int(reader.read_next(5000).data()))
    assert sorted(seen) == list(range(6))
