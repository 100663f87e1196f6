"""Partitioned topics: routing (key hashes, round robin on batch boundaries, single partition, custom
routers), merged consumption, acks per partition."""
from __future__ import annotations

import pytest

from connector import (
    HashingScheme, InitialPosition, InvalidConfiguration, MessageId, PartitionsRoutingMode, Timeout)
from connector.client.producer.routing import java_string_hash, murmur3_32_hash

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


@pytest.mark.transports
def test_client_lists_partition_topics(client, partitioned):
    assert client.get_topic_partitions(partitioned) == [
        f"{partitioned}-partition-{i}" for i in range(PARTITIONS)]


@pytest.mark.transports
def test_keyed_messages_go_to_java_string_hash_partition(client, partitioned):
    producer = client.create_producer(partitioned)
    for key in ["hello", "a", "b", "user-42"]:
        assert producer.send(key.encode(), partition_key=key).partition() == \
            java_string_hash(key) % PARTITIONS


def test_keyless_sync_sends_rotate_over_partitions(client, partitioned):
    producer = client.create_producer(partitioned)
    partitions = [producer.send(b"x").partition() for _ in range(PARTITIONS * 2)]
    assert sorted(set(partitions)) == list(range(PARTITIONS))


def test_single_partition_mode_uses_one_partition(client, partitioned):
    producer = client.create_producer(partitioned,
                                      message_routing_mode=PartitionsRoutingMode.UseSinglePartition)
    assert len({producer.send(b"x").partition() for _ in range(6)}) == 1


def test_custom_router_picks_the_partition(client, partitioned):
    producer = client.create_producer(partitioned, message_router=lambda msg, n: int(msg.data()) % n)
    assert [producer.send(b"%d" % i).partition() for i in range(4)] == [0, 1, 2, 0]


@pytest.mark.transports
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
        assert m.message_id().partition() == int(m.topic_name().rsplit("-", 1)[1])
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


@pytest.mark.transports
def test_multi_topic_consumer_receives_from_every_topic(client, topic):
    other = topic + "-other"
    consumer = client.subscribe([topic, other], "sub", initial_position=InitialPosition.Earliest)
    client.create_producer(topic).send(b"a")
    client.create_producer(other).send(b"b")
    got = _drain(consumer)
    assert sorted(m.data() for m in got) == [b"a", b"b"]
    for m in got:
        consumer.acknowledge(m)


@pytest.mark.transports
def test_reader_on_partitioned_topic_from_earliest(client, partitioned):
    producer = client.create_producer(partitioned)
    for i in range(6):
        producer.send(b"%d" % i)
    reader = client.create_reader(partitioned, MessageId.earliest)
    seen = []
    while reader.has_message_available():
        seen.append(int(reader.read_next(5000).data()))
    assert sorted(seen) == list(range(6))


@pytest.mark.parametrize("scheme,hash_of", [(HashingScheme.JavaStringHash, java_string_hash),
                                            (HashingScheme.Murmur3_32Hash, murmur3_32_hash)])
def test_each_key_lands_in_its_hash_partition_in_order(client, partitioned, scheme, hash_of):
    consumer = client.subscribe(partitioned, "sub", initial_position=InitialPosition.Earliest)
    producer = client.create_producer(partitioned, hashing_scheme=scheme, batching_max_messages=7)
    keys = [f"user-{i}" for i in range(9)]
    for i in range(90):
        producer.send_async(b"%d" % i, None, partition_key=keys[i % 9])
    producer.flush()
    got = _drain(consumer)
    assert len(got) == 90
    for key in keys:
        mine = [m for m in got if m.partition_key() == key]
        assert {m.message_id().partition() for m in mine} == {hash_of(key) % PARTITIONS}
        assert [int(m.data()) for m in mine] == list(range(keys.index(key), 90, 9))


def test_round_robin_rotates_keyless_batches_not_messages(client, partitioned):
    consumer = client.subscribe(partitioned, "sub", initial_position=InitialPosition.Earliest)
    producer = client.create_producer(partitioned, batching_enabled=True, batching_max_messages=10,
                                      batching_max_publish_delay_ms=5000)
    for i in range(60):
        producer.send_async(b"%d" % i, None)
    producer.flush()
    got = sorted(_drain(consumer), key=lambda m: int(m.data()))
    partitions = [m.message_id().partition() for m in got]
    runs = [partitions[i:i + 10] for i in range(0, 60, 10)]
    assert all(len(set(run)) == 1 for run in runs)  # a batch of 10 stays on one partition
    firsts = [run[0] for run in runs]
    assert firsts == [(firsts[0] + i) % PARTITIONS for i in range(6)]  # then the next partition


def test_single_partition_mode_keeps_keyless_batches_on_one_partition(client, partitioned):
    consumer = client.subscribe(partitioned, "sub", initial_position=InitialPosition.Earliest)
    producer = client.create_producer(partitioned, batching_max_messages=5,
                                      message_routing_mode=PartitionsRoutingMode.UseSinglePartition)
    for i in range(30):
        producer.send_async(b"%d" % i, None)
    producer.send(b"keyed", partition_key="hello")
    got = _drain(consumer)
    keyless = [m for m in got if m.data() != b"keyed"]
    assert len(keyless) == 30 and len({m.message_id().partition() for m in keyless}) == 1
    assert [int(m.data()) for m in keyless] == list(range(30))  # per-producer order
    (keyed,) = [m for m in got if m.data() == b"keyed"]
    assert keyed.message_id().partition() == java_string_hash("hello") % PARTITIONS


def test_a_bad_custom_router_result_fails_the_send_and_the_producer_goes_on(client, partitioned):
    def router(msg, n):
        return {"a": 2, "b": n, "c": "1"}[msg.partition_key()]
    producer = client.create_producer(partitioned, message_router=router)
    with pytest.raises(InvalidConfiguration, match="message_router returned partition 3"):
        producer.send(b"x", partition_key="b")
    with pytest.raises(InvalidConfiguration, match="message_router returned partition '1'"):
        producer.send_async(b"x", None, partition_key="c")
    assert producer.send(b"x", partition_key="a").partition() == 2
