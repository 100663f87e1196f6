"""Growing a partitioned topic (``topics update-partitioned-topic``, Pulsar's rules: partitions are only
added) and listing partitioned topics."""
from __future__ import annotations

import pytest

from connector import InitialPosition, NotAllowedError, TopicAlreadyExists, TopicNotFound
from connector.cli.admin import main as admin_main


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
