"""Growing a partitioned topic (``topics update-partitioned-topic``, Pulsar's rules: partitions are only
added) and listing partitioned topics."""
from __future__ import annotations

import re

import pytest

from connector import (Client, InitialPosition, MessageId, NotAllowedError, SubscriptionMode, Timeout,
                       TopicAlreadyExists, TopicNotFound)
from connector.cli.admin import main as admin_main
from tests.waiting import wait_until


def test_a_partitioned_topic_grows_and_a_new_producer_writes_to_every_partition(client, admin, topic):
    admin.create_partitioned_topic(topic, 2)
    admin.update_partitioned_topic(topic, 4)
    assert admin.get_partitioned_topic_metadata(topic) == {"partitions": 4}
    producer = client.create_producer(topic, batching_enabled=False)
    assert {producer.send(b"x").partition() for _ in range(8)} == {0, 1, 2, 3}


@pytest.mark.parametrize("partitions", [2, 3])
def test_the_same_or_fewer_partitions_are_refused(admin, topic, partitions):
    admin.create_partitioned_topic(topic, 3)
    with pytest.raises(NotAllowedError, match="can only be added") as refused:
        admin.update_partitioned_topic(topic, partitions)
    assert (refused.value.current, refused.value.partitions) == (3, partitions)
    assert admin.get_partitioned_topic_metadata(topic) == {"partitions": 3}


def test_a_non_partitioned_topic_cannot_be_grown(admin, topic):
    admin.create_topic(topic)
    with pytest.raises(NotAllowedError, match="not a partitioned topic"):
        admin.update_partitioned_topic(topic, 2)


def test_growing_a_topic_that_does_not_exist_is_topic_not_found(admin, topic):
    with pytest.raises(TopicNotFound):
        admin.update_partitioned_topic(topic, 2)


def test_a_topic_already_named_like_a_new_partition_is_never_adopted(admin, topic):
    admin.create_topic(f"{topic}-partition-2")
    admin.create_partitioned_topic(topic, 2)
    with pytest.raises(TopicAlreadyExists, match="delete it first"):
        admin.update_partitioned_topic(topic, 3)
    assert admin.get_partitioned_topic_metadata(topic) == {"partitions": 2}


def test_new_partitions_carry_the_topics_subscriptions_from_their_first_message(client, admin, topic):
    admin.create_partitioned_topic(topic, 1)
    client.subscribe(topic, "audit").close()
    admin.update_partitioned_topic(topic, 2)
    producer = client.create_producer(f"{topic}-partition-1", batching_enabled=False)
    producer.send(b"early")  # before any consumer of the subscription looks at partition 1
    assert admin.list_subscriptions(f"{topic}-partition-1") == ["audit"]
    consumer = client.subscribe(topic, "audit", initial_position=InitialPosition.Latest)
    assert consumer.receive(timeout_millis=5000).data() == b"early"


def test_list_partitioned_topics_names_the_base_topics_of_the_namespace(admin):
    admin.create_namespace("public/parted")
    admin.create_partitioned_topic("persistent://public/parted/a", 2)
    admin.create_partitioned_topic("persistent://public/parted/b", 1)
    admin.create_topic("persistent://public/parted/plain")
    assert admin.list_partitioned_topics("public/parted") == ["persistent://public/parted/a",
                                                              "persistent://public/parted/b"]


def test_the_admin_command_grows_a_topic_and_lists_partitioned_topics(broker, admin, topic, capsys):
    admin.create_partitioned_topic(topic, 1)
    assert admin_main(["admin", "--url", broker.service_url, "topics", "update-partitioned-topic", topic,
                       "-p", "3"]) == 0
    assert admin.get_partitioned_topic_metadata(topic) == {"partitions": 3}
    capsys.readouterr()
    assert admin_main(["admin", "--url", broker.service_url, "topics", "list-partitioned-topics",
                       "public/default"]) == 0
    assert topic in capsys.readouterr().out.split()
    assert admin_main(["admin", "--url", broker.service_url, "topics", "update-partitioned-topic", topic,
                       "-p", "2"]) == 1
    assert "NotAllowedError" in capsys.readouterr().err


# --- running producers and consumers pick the new partitions up (every partitions_update_interval_seconds) ---

@pytest.fixture
def quick_client(broker):
    """A client that looks for added partitions every 0.2 s instead of every minute."""
    c = Client(broker.service_url, partitions_update_interval_seconds=0.2)
    yield c
    c.close()


def test_a_running_producer_spreads_over_partitions_added_after_it_was_created(quick_client, admin, topic):
    admin.create_partitioned_topic(topic, 2)
    producer = quick_client.create_producer(topic, batching_enabled=False)
    assert {producer.send(b"x").partition() for _ in range(4)} == {0, 1}
    admin.update_partitioned_topic(topic, 4)
    seen: set[int] = set()

    def all_partitions_used() -> bool:
        seen.update(producer.send(b"y").partition() for _ in range(4))
        return seen >= {2, 3}
    assert wait_until(all_partitions_used), seen
    stats = admin.topic_stats(f"{topic}-partition-3")
    assert [p["producerName"] for p in stats["publishers"]] == [producer.producer_name()]


def test_a_keyed_message_routes_over_the_new_partition_count(quick_client, admin, topic):
    admin.create_partitioned_topic(topic, 1)
    producer = quick_client.create_producer(topic, batching_enabled=False)
    assert producer.send(b"k", partition_key="hello").partition() == 0
    admin.update_partitioned_topic(topic, 3)
    # JavaStringHash("hello") = 99162322, and 99162322 % 3 == 1
    assert wait_until(lambda: producer.send(b"k", partition_key="hello").partition() == 1)


def test_a_running_consumer_reads_new_partitions_from_their_first_message(quick_client, client, admin, topic):
    admin.create_partitioned_topic(topic, 1)
    consumer = quick_client.subscribe(topic, "grows", initial_position=InitialPosition.Latest)
    admin.update_partitioned_topic(topic, 3)
    for partition in (1, 2):  # written before the consumer can have looked
        client.create_producer(f"{topic}-partition-{partition}").send(f"p{partition}".encode())
    got = sorted(consumer.receive(timeout_millis=10000).data() for _ in range(2))
    assert got == [b"p1", b"p2"]
    assert sorted(consumer.partition_topics()) == [f"{topic}-partition-{i}" for i in range(3)]


def test_a_non_durable_consumer_and_a_reader_read_new_partitions_from_their_first_message(
        quick_client, client, admin, topic):
    admin.create_partitioned_topic(topic, 1)
    consumer = quick_client.subscribe(topic, "nd", subscription_mode=SubscriptionMode.NonDurable)
    reader = quick_client.create_reader(topic, MessageId.latest)
    admin.update_partitioned_topic(topic, 2)
    client.create_producer(f"{topic}-partition-1").send(b"new")
    assert consumer.receive(timeout_millis=10000).data() == b"new"
    assert reader.read_next(timeout_millis=10000).data() == b"new"


def test_a_consumer_of_one_named_partition_keeps_to_it(quick_client, client, admin, topic):
    admin.create_partitioned_topic(topic, 1)
    consumer = quick_client.subscribe(f"{topic}-partition-0", "one")
    admin.update_partitioned_topic(topic, 2)
    client.create_producer(f"{topic}-partition-1").send(b"elsewhere")
    client.create_producer(f"{topic}-partition-0").send(b"here")
    assert consumer.receive(timeout_millis=10000).data() == b"here"
    with pytest.raises(Timeout):
        consumer.receive(timeout_millis=600)  # 3 update rounds
    assert consumer.partition_topics() == [f"{topic}-partition-0"]


def test_a_pattern_consumer_picks_up_partitions_added_to_a_matched_topic(broker, client, admin):
    admin.create_namespace("public/growing")
    topic = "persistent://public/growing/orders"
    admin.create_partitioned_topic(topic, 1)
    with Client(broker.service_url, partitions_update_interval_seconds=0.2) as quick:
        consumer = quick.subscribe(re.compile("persistent://public/growing/ord.*"), "pat",
                                   pattern_auto_discovery_period=1)
        admin.update_partitioned_topic(topic, 2)
        client.create_producer(f"{topic}-partition-1").send(b"new")
        assert consumer.receive(timeout_millis=10000).data() == b"new"


def test_with_updates_off_nothing_changes(broker, client, admin, topic):
    admin.create_partitioned_topic(topic, 1)
    with Client(broker.service_url, partitions_update_interval_seconds=0) as still:
        producer = still.create_producer(topic, batching_enabled=False)
        admin.update_partitioned_topic(topic, 2)
        assert {producer.send(b"x").partition() for _ in range(6)} == {0}


@pytest.mark.parametrize("value", [-1, "60", True, float("nan")])
def test_a_bad_update_interval_is_refused(broker, value):
    with pytest.raises(ValueError, match="partitions_update_interval_seconds"):
        Client(broker.service_url, partitions_update_interval_seconds=value)
