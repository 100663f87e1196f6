"""Subscriptions managed without consumers (create, reset, acknowledge up to an offset) and subscription
modes: a durable and a non-durable subscription with one name are independent."""
from __future__ import annotations

import pytest

from connector import (ConsumerType, InitialPosition, MessageId, NotAllowedError, SubscriptionMode,
                       SubscriptionNotFound, Timeout)


def fill(client, topic, n):
    producer = client.create_producer(topic, batching_enabled=False)
    ids = [producer.send(b"m%d" % i) for i in range(n)]
    producer.close()
    return ids


def backlog(admin, topic, sub):
    return admin.topic_stats(topic)["subscriptions"][sub]["msgBacklog"]


def test_create_subscription_at_earliest_and_latest(client, admin, topic):
    fill(client, topic, 3)
    admin.create_subscription(topic, "from-start", MessageId.earliest)
    admin.create_subscription(topic, "from-now")
    assert backlog(admin, topic, "from-start") == 3 and backlog(admin, topic, "from-now") == 0
    with pytest.raises(NotAllowedError, match="already exists"):
        admin.create_subscription(topic, "from-now")
    consumer = client.subscribe(topic, "from-start")
    assert consumer.receive(timeout_millis=5000).data() == b"m0"


def test_acknowledge_up_to_moves_forward_only_and_creates_the_subscription(client, admin, topic):
    fill(client, topic, 5)
    assert admin.acknowledge_up_to(topic, "spark", 3) == 3  # created there
    assert backlog(admin, topic, "spark") == 2
    assert admin.acknowledge_up_to(topic, "spark", 1) == 3  # never back
    assert admin.acknowledge_up_to(topic, "spark", 99) == 5  # clamped to the end
    assert backlog(admin, topic, "spark") == 0


def test_reset_cursor_to_a_message_or_a_time(client, admin, topic):
    ids = fill(client, topic, 4)
    admin.create_subscription(topic, "s")
    admin.reset_cursor(topic, "s", ids[1])
    assert backlog(admin, topic, "s") == 3
    admin.reset_cursor(topic, "s", timestamp_ms=0)
    assert backlog(admin, topic, "s") == 4
    with pytest.raises(SubscriptionNotFound):
        admin.reset_cursor(topic, "missing", MessageId.earliest)


def test_durable_and_non_durable_subscriptions_with_one_name_are_independent(client, admin, topic):
    fill(client, topic, 3)
    durable = client.subscribe(topic, "same", initial_position=InitialPosition.Earliest)
    reader = client.subscribe(topic, "same", initial_position=InitialPosition.Earliest,
                              subscription_mode=SubscriptionMode.NonDurable)
    got_durable = [durable.receive(timeout_millis=5000).data() for _ in range(3)]
    got_reader = [reader.receive(timeout_millis=5000).data() for _ in range(3)]
    assert got_durable == got_reader == [b"m0", b"m1", b"m2"]
    reader.close()
    stats = admin.topic_stats(topic)["subscriptions"]
    assert "same" in stats and stats["same"]["isDurable"] is True
    durable.close()
    # the durable one kept its cursor: nothing was acknowledged
    again = client.subscribe(topic, "same")
    assert again.receive(timeout_millis=5000).data() == b"m0"
    with pytest.raises(Timeout):
        client.subscribe(topic, "other", consumer_type=ConsumerType.Shared).receive(timeout_millis=200)
