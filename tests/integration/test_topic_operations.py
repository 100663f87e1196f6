"""pulsar-admin's operator verbs against a real broker: terminate (TopicTerminated for producers, end of
topic for consumers and readers, kept across restarts), unload (clients disconnected), examine-message,
last-message-id, lookup, expire-messages, namespaces clear-backlog and unsubscribe."""
from __future__ import annotations

import pytest

from broker_core import Broker
from connector import (Client, ConsumerType, InitialPosition, MessageId, NotAllowedError,
                       SubscriptionNotFound, TopicNotFound, TopicTerminated)
from connector.cli.admin import main as admin_main
from tests.waiting import wait_for_backlog, wait_until


def fill(client, topic, n, **options):
    producer = client.create_producer(topic, batching_enabled=False, **options)
    ids = [producer.send(b"m%d" % i) for i in range(n)]
    producer.close()
    return ids


# ------------------------------------------------------------------------------------------- terminate
def test_terminate_returns_the_last_message_id_and_later_sends_fail_with_topic_terminated(client, admin, topic):
    producer = client.create_producer(topic, batching_enabled=False)
    last = [producer.send(b"m%d" % i) for i in range(3)][-1]
    terminated_at = admin.terminate_topic(topic)
    assert (terminated_at.ledger_id(), terminated_at.entry_id()) == (last.ledger_id(), last.entry_id())
    with pytest.raises(TopicTerminated):
        producer.send(b"late")
    with pytest.raises(TopicTerminated):
        client.create_producer(topic)


def test_terminating_twice_returns_the_same_last_message(client, admin, topic):
    fill(client, topic, 2)
    first = admin.terminate_topic(topic)
    assert str(admin.terminate_topic(topic)) == str(first)


def test_a_consumer_reaches_the_end_of_a_terminated_topic_once_it_has_received_everything(client, admin, topic):
    consumer = client.subscribe(topic, "sub", initial_position=InitialPosition.Earliest, receiver_queue_size=1)
    fill(client, topic, 3)
    admin.terminate_topic(topic)
    received = []
    for _ in range(2):
        received.append(consumer.receive(timeout_millis=5000))
        assert not consumer.has_reached_end_of_topic()
    received.append(consumer.receive(timeout_millis=5000))
    assert [m.data() for m in received] == [b"m0", b"m1", b"m2"]
    assert wait_until(consumer.has_reached_end_of_topic)


def test_a_reader_reaches_the_end_of_a_terminated_topic(client, admin, topic):
    fill(client, topic, 2)
    admin.terminate_topic(topic)
    reader = client.create_reader(topic, MessageId.earliest)
    assert [reader.read_next(5000).data() for _ in range(2)] == [b"m0", b"m1"]
    assert wait_until(reader.has_reached_end_of_topic)


def test_a_shared_subscription_reaches_the_end_only_when_nothing_is_left_to_deliver(client, admin, topic):
    fill(client, topic, 2)
    admin.terminate_topic(topic)
    consumer = client.subscribe(topic, "shared", consumer_type=ConsumerType.Shared,
                                initial_position=InitialPosition.Earliest, negative_ack_redelivery_delay_ms=0)
    first = consumer.receive(timeout_millis=5000)
    consumer.negative_acknowledge(first)
    messages = {consumer.receive(timeout_millis=5000).data() for _ in range(2)}
    assert messages == {b"m0", b"m1"}
    assert wait_until(consumer.has_reached_end_of_topic)


def test_a_terminated_topic_stays_terminated_after_a_restart(tmp_path):
    with Broker(data_dir=tmp_path, port=0) as broker, Client(broker.service_url) as client:
        fill(client, "orders", 1)
        from connector import Admin
        with Admin(broker.service_url) as admin:
            admin.terminate_topic("orders")
    with Broker(data_dir=tmp_path, port=0) as broker, Client(broker.service_url) as client:
        with pytest.raises(TopicTerminated):
            client.create_producer("orders")
        consumer = client.subscribe("orders", "late", initial_position=InitialPosition.Earliest)
        assert consumer.receive(timeout_millis=5000).data() == b"m0"
        assert wait_until(consumer.has_reached_end_of_topic)


def test_a_partitioned_topic_is_terminated_partition_by_partition(admin, topic):
    admin.create_partitioned_topic(topic, 2)
    with pytest.raises(NotAllowedError, match="partition"):
        admin.terminate_topic(topic)
    admin.terminate_topic(f"{topic}-partition-0")


# ------------------------------------------------------------------------------------------- unload
def test_unload_disconnects_producers_and_consumers_which_reconnect_as_the_topic_loads_again_with_its_data(
        client, admin, topic):
    producer = client.create_producer(topic, batching_enabled=False)
    consumer = client.subscribe(topic, "sub", initial_position=InitialPosition.Earliest)
    producer.send(b"before")
    consumer.acknowledge(consumer.receive(timeout_millis=5000))
    assert wait_for_backlog(admin, topic, "sub", 0) == 0  # acknowledgments travel grouped
    admin.unload_topic(topic)
    producer.send(b"after")  # the producer reconnected (ServiceNotReady is retried, as in Pulsar)
    assert consumer.receive(timeout_millis=5000).data() == b"after"  # its cursor was saved with the ack
    assert wait_until(consumer.is_connected)
    assert admin.topic_stats(topic)["msgInCounter"] == 1  # counted since it was loaded again


def test_unloading_a_topic_that_is_not_loaded_does_nothing_and_a_missing_one_is_not_found(client, admin, topic):
    fill(client, topic, 1)
    admin.unload_topic(topic)
    admin.unload_topic(topic)
    with pytest.raises(TopicNotFound):
        admin.unload_topic(f"{topic}-missing")


# ------------------------------------------------------------------------------------------- messages
def test_examine_message_counts_from_the_newest_or_the_oldest_message_batches_included(client, admin, topic):
    fill(client, topic, 2)
    producer = client.create_producer(topic, batching_enabled=True, batching_max_publish_delay_ms=60000)
    for payload in (b"b0", b"b1", b"b2"):
        producer.send_async(payload, None)
    producer.flush()
    assert admin.examine_message(topic).data == b"b2"
    assert admin.examine_message(topic, "latest", 2).data == b"b1"
    assert admin.examine_message(topic, "earliest", 1).data == b"m0"
    middle = admin.examine_message(topic, "earliest", 4)
    assert (middle.data, middle.offset, middle.batch_index) == (b"b1", 3, 1)
    with pytest.raises(NotAllowedError, match="position 6"):
        admin.examine_message(topic, "earliest", 6)


def test_last_message_id_names_the_last_stored_message(client, admin, topic):
    admin.create_topic(topic)
    assert (admin.get_last_message_id(topic).ledger_id(), admin.get_last_message_id(topic).entry_id()) == (-1, -1)
    last = fill(client, topic, 3)[-1]
    found = admin.get_last_message_id(topic)
    assert (found.ledger_id(), found.entry_id()) == (last.ledger_id(), last.entry_id())


def test_lookup_names_the_broker_serving_the_topic(broker, admin, topic):
    assert admin.lookup_topic(topic) == broker.service_url


def test_expire_messages_by_time_or_up_to_a_message(client, admin, topic):
    ids = fill(client, topic, 5)
    admin.create_subscription(topic, "a", MessageId.earliest)
    admin.create_subscription(topic, "b", MessageId.earliest)
    assert admin.expire_messages(topic, "a", message_id=ids[1]) == 2
    assert wait_for_backlog(admin, topic, "a", 3) == 3
    assert admin.expire_messages(topic, "b", expire_time_seconds=0) == 5  # published before now: all
    assert admin.topic_stats(topic)["subscriptions"]["b"]["totalMsgExpired"] == 5
    assert admin.expire_messages(topic, "b", expire_time_seconds=3600) == 0


def test_expire_messages_for_all_subscriptions(client, admin, topic):
    fill(client, topic, 3)
    for sub in ("a", "b"):
        admin.create_subscription(topic, sub, MessageId.earliest)
    assert admin.expire_messages_for_all_subscriptions(topic, 0) == 6
    with pytest.raises(SubscriptionNotFound):
        admin.expire_messages(topic, "missing", expire_time_seconds=0)


# ------------------------------------------------------------------------------------------- namespaces
def test_namespace_clear_backlog_acknowledges_every_subscription_or_one(client, admin):
    admin.create_namespace("public/clearing")
    topics = [f"persistent://public/clearing/t{i}" for i in range(2)]
    for t in topics:
        fill(client, t, 2)
        for sub in ("a", "b"):
            admin.create_subscription(t, sub, MessageId.earliest)
    assert admin.clear_namespace_backlog("public/clearing", "a") == 4
    assert [wait_for_backlog(admin, t, "b", 2) for t in topics] == [2, 2]
    assert admin.clear_namespace_backlog("public/clearing") == 4
    assert [wait_for_backlog(admin, t, "b", 0) for t in topics] == [0, 0]


def test_namespace_unsubscribe_deletes_the_subscription_everywhere_unless_a_consumer_holds_it(client, admin):
    admin.create_namespace("public/unsub")
    topics = [f"persistent://public/unsub/t{i}" for i in range(2)]
    for t in topics:
        admin.create_topic(t)
        admin.create_subscription(t, "old")
    consumer = client.subscribe(topics[1], "old")
    with pytest.raises(NotAllowedError, match="connected consumers"):
        admin.unsubscribe_namespace("public/unsub", "old")
    assert admin.list_subscriptions(topics[0]) == ["old"]
    consumer.close()
    assert admin.unsubscribe_namespace("public/unsub", "old") == topics
    assert [admin.list_subscriptions(t) for t in topics] == [[], []]
    with pytest.raises(SubscriptionNotFound):
        admin.unsubscribe_namespace("public/unsub", "old")


# ------------------------------------------------------------------------------------------- command line
def test_the_admin_verbs_print_as_pulsar_admin(broker, client, admin, topic, capsys):
    fill(client, topic, 2)
    url = ["admin", "--url", broker.service_url]
    capsys.readouterr()
    assert admin_main([*url, "topics", "lookup", topic]) == 0
    assert capsys.readouterr().out.strip() == broker.service_url
    assert admin_main([*url, "topics", "examine-message", topic, "-i", "earliest", "-m", "2"]) == 0
    assert "Offset: 1" in capsys.readouterr().out
    assert admin_main([*url, "topics", "last-message-id", topic]) == 0
    assert '"entryId" : 1' in capsys.readouterr().out
    assert admin_main([*url, "topics", "terminate", topic]) == 0
    assert capsys.readouterr().out.startswith("Topic successfully terminated at ")
    assert admin_main([*url, "topics", "unload", topic]) == 0
    assert admin_main([*url, "namespaces", "clear-backlog", "public/default"]) == 2  # no terminal to confirm on
    assert "--force" in capsys.readouterr().err
    assert admin_main([*url, "namespaces", "clear-backlog", "public/default", "--force"]) == 0
