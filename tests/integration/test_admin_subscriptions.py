"""Subscriptions handled without a consumer, like pulsar-admin topics skip / clear-backlog / peek-messages /
subscriptions / stats-internal / partitioned-stats: positions are message offsets, individually
acknowledged messages are skipped over, peeking moves nothing."""
from __future__ import annotations

import pytest

from connector import (CompressionType, ConsumerType, MessageId, NotAllowedError, SubscriptionNotFound)
from tests.waiting import wait_until


def fill(client, topic, n, **options):
    producer = client.create_producer(topic, batching_enabled=False, **options)
    ids = [producer.send(b"m%d" % i, partition_key=f"k{i}", properties={"i": str(i)}) for i in range(n)]
    producer.close()
    return ids


def backlog(admin, topic, sub):
    return admin.topic_stats(topic)["subscriptions"][sub]["msgBacklog"]


def ack_some(client, topic, sub, wanted):
    """A Shared consumer acknowledges the messages whose payload is in ``wanted``, then closes."""
    consumer = client.subscribe(topic, sub, consumer_type=ConsumerType.Shared)
    seen = 0
    while seen < len(wanted):
        msg = consumer.receive(timeout_millis=5000)
        if msg.data() in wanted:
            consumer.acknowledge(msg)
            seen += 1
    consumer.close()


def test_peek_shows_the_next_unacknowledged_messages_with_their_metadata_and_moves_nothing(client, admin, topic):
    ids = fill(client, topic, 3)
    admin.create_subscription(topic, "sub", MessageId.earliest)
    first = admin.peek_messages(topic, "sub", 2)
    assert [m.data for m in first] == [b"m0", b"m1"]
    m0 = first[0]
    assert (m0.message_id.ledger_id(), m0.message_id.entry_id()) == (ids[0].ledger_id(), ids[0].entry_id())
    assert (m0.offset, m0.key, m0.properties, m0.sequence_id) == (0, "k0", {"i": "0"}, 0)
    assert m0.publish_time > 0 and m0.broker_publish_time >= m0.publish_time - 1000 and m0.producer_name
    assert admin.peek_messages(topic, "sub", 2) == first  # nothing moved
    assert backlog(admin, topic, "sub") == 3
    assert [m.data for m in admin.peek_messages(topic, "sub", 10)] == [b"m0", b"m1", b"m2"]


def test_peek_and_skip_step_over_individually_acknowledged_messages(client, admin, topic):
    fill(client, topic, 6)
    admin.create_subscription(topic, "sub", MessageId.earliest)
    ack_some(client, topic, "sub", {b"m1", b"m3"})
    assert wait_until(lambda: backlog(admin, topic, "sub") == 4)
    assert [m.data for m in admin.peek_messages(topic, "sub", 3)] == [b"m0", b"m2", b"m4"]
    assert admin.skip_messages(topic, "sub", 2) == 2  # m0 and m2: everything through m3 is acknowledged
    internal = admin.topic_internal_stats(topic)["cursors"]["sub"]
    assert internal["markDeletePosition"] == "0:3" and internal["individuallyDeletedMessages"] == "[]"
    assert [m.data for m in admin.peek_messages(topic, "sub", 5)] == [b"m4", b"m5"]
    assert admin.skip_messages(topic, "sub", 10) == 2  # only what is left
    assert backlog(admin, topic, "sub") == 0 and admin.peek_messages(topic, "sub", 1) == []


def test_peek_splits_compressed_batches_and_leaves_out_acknowledged_members(client, admin, topic):
    admin.create_topic(topic)
    admin.create_subscription(topic, "sub", MessageId.earliest)
    producer = client.create_producer(topic, compression_type=CompressionType.LZ4, batching_enabled=True,
                                      batching_max_publish_delay_ms=1000, batching_max_messages=4)
    for i in range(4):
        producer.send_async(b"b%d" % i, None, properties={"n": str(i)})
    producer.flush()
    producer.close()
    peeked = admin.peek_messages(topic, "sub", 4)
    assert [m.data for m in peeked] == [b"b0", b"b1", b"b2", b"b3"]
    assert [m.batch_index for m in peeked] == [0, 1, 2, 3] and peeked[2].properties == {"n": "2"}
    consumer = client.subscribe(topic, "sub", consumer_type=ConsumerType.Shared, batch_index_ack_enabled=True)
    for _ in range(4):
        msg = consumer.receive(timeout_millis=5000)
        if msg.data() in (b"b0", b"b2"):
            consumer.acknowledge(msg)
    consumer.close()
    assert wait_until(lambda: backlog(admin, topic, "sub") == 2)
    assert [(m.data, m.offset) for m in admin.peek_messages(topic, "sub", 4)] == [(b"b1", 1), (b"b3", 3)]


def test_clear_backlog_acknowledges_everything_on_every_partition(client, admin, topic):
    admin.create_partitioned_topic(topic, 2)
    admin.create_subscription(topic, "sub", MessageId.earliest)
    producer = client.create_producer(topic, batching_enabled=False)
    for i in range(6):
        producer.send(b"x", partition_key=str(i))
    producer.close()
    assert backlog(admin, topic, "sub") == 6
    assert admin.clear_backlog(topic, "sub") == 6
    assert backlog(admin, topic, "sub") == 0
    assert admin.clear_backlog(topic, "sub") == 0


def test_skip_and_peek_refuse_a_partitioned_topic_as_pulsar_does(admin, topic):
    admin.create_partitioned_topic(topic, 2)
    with pytest.raises(NotAllowedError, match="partitioned topic is not allowed.*-partition-0"):
        admin.skip_messages(topic, "sub", 1)
    with pytest.raises(NotAllowedError, match="peek-messages on a partitioned topic"):
        admin.peek_messages(topic, "sub", 1)


def test_subscription_calls_on_a_missing_subscription_are_typed_errors(client, admin, topic):
    fill(client, topic, 1)
    for call in (lambda: admin.skip_messages(topic, "nope", 1), lambda: admin.clear_backlog(topic, "nope"),
                 lambda: admin.peek_messages(topic, "nope", 1)):
        with pytest.raises(SubscriptionNotFound, match="'nope' does not exist"):
            call()
    with pytest.raises(ValueError, match="count"):
        admin.peek_messages(topic, "sub", 0)
    with pytest.raises(ValueError, match="count"):
        admin.skip_messages(topic, "sub", -1)


def test_subscriptions_lists_durable_ones_and_readers_of_every_partition(client, admin, topic):
    admin.create_partitioned_topic(topic, 2)
    admin.create_subscription(topic, "a")
    consumer = client.subscribe(f"{topic}-partition-1", "b")
    assert admin.list_subscriptions(topic) == ["a", "b"]
    assert admin.list_subscriptions(f"{topic}-partition-0") == ["a"]
    consumer.close()
    admin.delete_subscription(topic, "b")  # on the partition that has it
    admin.delete_subscription(topic, "a")  # on both
    assert admin.list_subscriptions(topic) == []
    with pytest.raises(SubscriptionNotFound):
        admin.delete_subscription(topic, "a")


def test_internal_stats_show_segments_and_cursors(client, admin, topic):
    fill(client, topic, 4)
    admin.create_subscription(topic, "sub", MessageId.earliest)
    ack_some(client, topic, "sub", {b"m1", b"m2"})
    assert wait_until(lambda: backlog(admin, topic, "sub") == 2)
    internal = admin.topic_internal_stats(topic)
    assert internal["numberOfEntries"] == 4 and internal["state"] == "LedgerOpened"
    assert internal["lastConfirmedEntry"] == "0:3" and internal["lastConfirmedOffset"] == 3
    assert internal["ledgers"] == [{"ledgerId": 0, "entries": 4, "size": internal["totalSize"], "offloaded": False,
                                    "metadata": None, "underReplicated": False, "firstOffset": 0, "lastOffset": 3}]
    assert internal["entriesAddedCounter"] == 4 and internal["schemaLedgers"] == []
    cursor = internal["cursors"]["sub"]
    assert cursor["markDeletePosition"] == "0:-1" and cursor["individuallyDeletedMessages"] == "[(0:0..0:2]]"
    assert cursor["readPosition"] == "0:0" and cursor["messagesConsumedCounter"] == 2  # 4 added, 2 to go
    assert cursor["totalNonContiguousDeletedMessagesRange"] == 1 and cursor["state"] == "Open"


def test_partitioned_stats_sum_the_partitions_and_show_them_on_request(client, admin, topic):
    admin.create_partitioned_topic(topic, 3)
    producer = client.create_producer(topic, batching_enabled=False)
    for i in range(9):
        producer.send(b"x", partition_key=str(i))
    producer.close()
    summed = admin.partitioned_topic_stats(topic)
    assert summed["metadata"] == {"partitions": 3} and summed["msgInCounter"] == 9 and summed["partitions"] == {}
    assert len(admin.partitioned_topic_stats(topic, per_partition=True)["partitions"]) == 3
    internal = admin.topic_internal_stats(topic)
    assert internal["metadata"] == {"partitions": 3} and len(internal["partitions"]) == 3
    fill(client, topic + "-plain", 1)
    with pytest.raises(NotAllowedError, match="not a partitioned topic"):
        admin.partitioned_topic_stats(topic + "-plain")
