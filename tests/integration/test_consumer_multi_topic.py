"""Multi-topic subscriptions: topic lists and patterns, discovery of new topics, acks to the right topic (seed:
"Multi-topic subscriptions")."""
from __future__ import annotations

import re
import time
import uuid

import pytest

from connector import ConsumerType, InitialPosition, Timeout
from tests.waiting import wait_until


@pytest.fixture
def prefix():
    return f"mt-{uuid.uuid4().hex[:8]}"


def _receive_all(consumer, n, timeout_s=5.0):
    out = []
    deadline = time.monotonic() + timeout_s
    while len(out) < n and time.monotonic() < deadline:
        try:
            out.append(consumer.receive(timeout_millis=100))
        except Timeout:
            pass
    return out


def _backlog(admin, topic, subscription):
    return admin.topic_stats(topic)["subscriptions"][subscription]["msgBacklog"]


def _wait(condition, timeout_s=5.0):
    return wait_until(condition, timeout_s)


def test_acks_of_a_topic_list_go_to_each_messages_topic(client, admin, prefix):
    topics = [f"persistent://public/default/{prefix}-{name}" for name in ("a", "b")]
    consumer = client.subscribe(topics, "multi", initial_position=InitialPosition.Earliest)
    for topic in topics:
        producer = client.create_producer(topic, batching_enabled=False)
        for i in range(3):
            producer.send(f"{topic}:{i}".encode())
    got = _receive_all(consumer, 6)
    assert sorted(m.data().decode() for m in got) == sorted(f"{t}:{i}" for t in topics for i in range(3))
    assert all(m.data().decode().startswith(m.topic_name()) for m in got)
    for msg in got[:3]:
        consumer.acknowledge(msg)
    for msg in got[3:]:
        consumer.acknowledge(msg.message_id())  # by id: the id names its topic
    assert _wait(lambda: all(_backlog(admin, t, "multi") == 0 for t in topics))


def test_a_pattern_picks_up_topics_created_later(client, prefix):
    consumer = client.subscribe(re.compile(f"persistent://public/default/{prefix}-.*"), "pattern",
                                consumer_type=ConsumerType.Shared, initial_position=InitialPosition.Earliest,
                                pattern_auto_discovery_period=1)
    client.create_producer(f"{prefix}-early", batching_enabled=False).send(b"early")
    first = _receive_all(consumer, 1)
    client.create_producer(f"{prefix}-late", batching_enabled=False).send(b"late")
    got = first + _receive_all(consumer, 2 - len(first), timeout_s=5)
    assert sorted(m.data() for m in got) == [b"early", b"late"]
    for msg in got:
        consumer.acknowledge(msg)


def test_a_pattern_subscribes_every_partition_of_a_matching_partitioned_topic(client, admin, prefix):
    admin.create_partitioned_topic(f"persistent://public/default/{prefix}-parted", 3)
    consumer = client.subscribe(re.compile(f"{prefix}-.*"), "pattern", initial_position=InitialPosition.Earliest)
    assert sorted(consumer.partition_topics()) == [
        f"persistent://public/default/{prefix}-parted-partition-{i}" for i in range(3)]
    producer = client.create_producer(f"{prefix}-parted", batching_enabled=False)
    for key in "abcdef":
        producer.send(key.encode(), partition_key=key)
    assert sorted(m.data() for m in _receive_all(consumer, 6)) == [k.encode() for k in "abcdef"]


@pytest.mark.transports
def test_topics_deleted_leave_a_pattern_consumer(client, admin, prefix):
    gone = f"persistent://public/default/{prefix}-gone"
    kept = f"persistent://public/default/{prefix}-kept"
    for topic in (gone, kept):
        admin.create_topic(topic)
    consumer = client.subscribe(re.compile(f"persistent://public/default/{prefix}-.*"), "pattern",
                                pattern_auto_discovery_period=1)
    assert len(consumer.partition_topics()) == 2
    admin.delete_topic(gone, force=True)
    assert _wait(lambda: consumer.partition_topics() == [kept])
    client.create_producer(kept).send(b"still here")
    assert consumer.receive(timeout_millis=5000).data() == b"still here"


@pytest.mark.parametrize("pattern", ["persistent://public/.*/orders", "persistent://.*/default/orders",
                                     "persistent://public/default/a/b.*"])
def test_a_pattern_spanning_namespaces_is_refused_with_a_clear_error(client, pattern):
    with pytest.raises(ValueError, match="one namespace"):
        client.subscribe(re.compile(pattern), "s")
