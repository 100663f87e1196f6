"""Exclusive and Failover subscriptions (seed 003: Subscription types, Exclusive, Failover)."""
from __future__ import annotations

import pytest

from broker_core.errors import ConsumerBusy, NotAllowedError
from dispatch import SubType, Subscription, pick_active
from dispatch.testing import MemoryEntrySource, RecordingConsumer, make_cursor


def make_sub(partition_index: int = -1, **kwargs: object) -> tuple[Subscription, MemoryEntrySource]:
    source = MemoryEntrySource()
    sub = Subscription("sub", "persistent://public/default/t", partition_index, source, make_cursor(),
                       **kwargs)  # type: ignore[arg-type]
    return sub, source


def test_second_exclusive_consumer_is_rejected() -> None:
    sub, _ = make_sub()
    sub.add_consumer(RecordingConsumer(1), SubType.EXCLUSIVE)
    with pytest.raises(ConsumerBusy):
        sub.add_consumer(RecordingConsumer(2), SubType.EXCLUSIVE)
    assert [c.consumer_id for c in sub.consumers] == [1]


def test_consumer_type_mismatch_is_rejected() -> None:
    sub, _ = make_sub()
    sub.add_consumer(RecordingConsumer(1), SubType.FAILOVER)
    with pytest.raises(ConsumerBusy, match="is of type Failover"):
        sub.add_consumer(RecordingConsumer(2), SubType.EXCLUSIVE)
    assert sub.sub_type is SubType.FAILOVER


def test_subscription_type_can_change_once_every_consumer_left() -> None:
    sub, _ = make_sub()
    first = RecordingConsumer(1)
    sub.add_consumer(first, SubType.FAILOVER)
    sub.remove_consumer(first)
    sub.add_consumer(RecordingConsumer(2), "Exclusive")
    assert sub.sub_type is SubType.EXCLUSIVE


def names(consumers: list[RecordingConsumer]) -> str:
    return "".join(c.consumer_name for c in consumers)


def test_failover_assigns_partitions_by_priority_then_name_modulo() -> None:
    a, b, c, d = (RecordingConsumer(i, n) for i, n in enumerate("ABCD"))
    # 2 partitions, 4 consumers (subscribe order must not matter)
    assert pick_active([d, c, b, a], 0) is a
    assert pick_active([d, c, b, a], 1) is b
    # A and B disconnected
    assert pick_active([d, c], 0) is c
    assert pick_active([d, c], 1) is d
    # 9 partitions, 3 consumers
    owners = "".join(pick_active([c, a, b], p).consumer_name for p in range(9))  # type: ignore[union-attr]
    assert owners == "ABCABCABC"
    # only the highest priority (lowest number) consumers are candidates
    e = RecordingConsumer(9, "E", priority_level=0)
    for x in (a, b, c, d):
        x.priority_level = 1
    assert all(pick_active([a, b, c, d, e], p) is e for p in range(4))


def test_failover_partition_subscription_activates_the_assigned_consumer() -> None:
    sub, source = make_sub(partition_index=1)
    source.append_many(3)
    consumers = [RecordingConsumer(i, n) for i, n in enumerate("DCBA")]
    for c in consumers:
        sub.add_consumer(c, SubType.FAILOVER)
    for c in consumers:
        sub.flow(c, 10)
    b = consumers[2]
    assert sub.active_consumer is b
    assert b.received() == [0, 1, 2]
    assert all(c.received() == [] for c in consumers if c is not b)
    assert all(c.active[-1] is (c is b) for c in consumers)


def test_failover_non_partitioned_first_subscriber_is_active() -> None:
    sub, source = make_sub()
    a, b = RecordingConsumer(1, "B-first"), RecordingConsumer(2, "A-second")
    sub.add_consumer(a, SubType.FAILOVER)
    sub.add_consumer(b, SubType.FAILOVER)
    sub.flow(a, 5)
    sub.flow(b, 5)
    source.append_many(2)
    sub.on_new_entries()
    assert sub.active_consumer is a
    assert (a.received(), b.received()) == ([0, 1], [])
    assert (a.active, b.active) == ([True], [False])


def test_failover_higher_priority_consumer_takes_over() -> None:
    sub, _ = make_sub()
    low = RecordingConsumer(1, "low", priority_level=5)
    high = RecordingConsumer(2, "high", priority_level=0)
    sub.add_consumer(low, SubType.FAILOVER)
    sub.add_consumer(high, SubType.FAILOVER)
    assert sub.active_consumer is high
    assert (low.active, high.active) == ([True, False], [True])


def test_new_active_consumer_starts_after_acked_messages() -> None:
    # seed: A read 0,1,2,3 (and acknowledged them) then disconnected; C becomes active and reads 4,5,6,7
    sub, source = make_sub(partition_index=0)
    source.append_many(8)
    a = RecordingConsumer(1, "A")
    sub.add_consumer(a, SubType.FAILOVER)
    sub.flow(a, 4)
    assert a.received() == [0, 1, 2, 3]
    sub.acknowledge_cumulative(a, 3)
    c = RecordingConsumer(3, "C")
    sub.add_consumer(c, SubType.FAILOVER)
    sub.flow(c, 10)
    assert c.received() == []  # standby while A is connected
    sub.remove_consumer(a)
    assert sub.active_consumer is c
    assert c.received() == [4, 5, 6, 7]
    assert c.active == [False, True]


def test_new_active_consumer_starts_at_first_message_when_nothing_was_read() -> None:
    sub, source = make_sub(partition_index=0)
    source.append_many(3)
    a, c = RecordingConsumer(1, "A"), RecordingConsumer(3, "C")
    sub.add_consumer(a, SubType.FAILOVER)
    sub.add_consumer(c, SubType.FAILOVER)
    sub.flow(c, 10)
    sub.remove_consumer(a)
    assert c.received() == [0, 1, 2]


def test_failover_switch_redelivers_what_the_old_consumer_did_not_acknowledge() -> None:
    sub, source = make_sub(partition_index=0)
    source.append_many(6)
    b = RecordingConsumer(2, "B")
    sub.add_consumer(b, SubType.FAILOVER)
    sub.flow(b, 10)
    sub.acknowledge(b, [(0, 2), (3, 4)])
    assert b.unacked_messages == 3
    a = RecordingConsumer(1, "A")  # sorts first: takes partition 0 over
    sub.add_consumer(a, SubType.FAILOVER)
    sub.flow(a, 10)
    assert b.unacked_messages == 0  # the old active consumer's pending list is dropped
    assert a.received() == [2, 4, 5]
    assert [d.redelivery_count for d in a.deliveries()] == [1, 1, 1]
    assert (a.active, b.active) == ([True], [True, False])


def test_exclusive_consumer_that_reconnects_gets_every_unacked_message_again() -> None:
    sub, source = make_sub()
    source.append_many(5)
    first = RecordingConsumer(1)
    sub.add_consumer(first, SubType.EXCLUSIVE)
    sub.flow(first, 5)
    sub.acknowledge(first, [(1, 2)])
    sub.acknowledge_cumulative(first, 0)
    sub.remove_consumer(first)
    again = RecordingConsumer(2)
    sub.add_consumer(again, SubType.EXCLUSIVE)
    sub.flow(again, 5)
    assert again.received() == [2, 3, 4]


def test_inactive_failover_consumer_gets_nothing_and_redeliver_is_ignored_for_it() -> None:
    sub, source = make_sub()
    source.append_many(2)
    a, b = RecordingConsumer(1, "A"), RecordingConsumer(2, "B")
    sub.add_consumer(a, SubType.FAILOVER)
    sub.add_consumer(b, SubType.FAILOVER)
    sub.flow(b, 10)
    sub.redeliver_unacknowledged(b)
    assert b.received() == []
    sub.flow(a, 10)
    assert a.received() == [0, 1]


def test_redeliver_unacknowledged_rewinds_to_the_first_unacked_message() -> None:
    sub, source = make_sub()
    source.append_many(4)
    c = RecordingConsumer(1)
    sub.add_consumer(c, SubType.EXCLUSIVE)
    sub.flow(c, 4)
    sub.acknowledge(c, [(0, 1), (2, 3)])
    assert c.take() == [0, 1, 2, 3]
    sub.redeliver_unacknowledged(c)
    assert c.take() == []  # permits are spent: the client grants them back after clearing its queue
    sub.flow(c, 4)
    assert c.received() == [1, 3]
    assert [d.redelivery_count for d in c.deliveries()] == [1, 1]


def test_sink_that_removes_its_consumer_stops_the_round() -> None:
    sub, source = make_sub(max_delivery_bytes=10)
    source.append_many(4)
    c = RecordingConsumer(1)

    def sink(deliveries: list) -> None:
        c.batches.append(deliveries)
        sub.remove_consumer(c)

    c.sink = sink
    sub.add_consumer(c, SubType.EXCLUSIVE)
    sub.flow(c, 10)
    assert c.received() == [0]
    assert sub.consumers == []
    again = RecordingConsumer(2)
    sub.add_consumer(again, SubType.EXCLUSIVE)
    sub.flow(again, 10)
    assert again.received() == [0, 1, 2, 3]


def test_failover_over_several_non_partitioned_topics_spreads_topics_by_name_hashes():
    from dispatch import Consumer

    a = Consumer(1, "A", lambda deliveries: None, multi_topic=True)
    b = Consumer(2, "B", lambda deliveries: None, multi_topic=True)
    topics = [f"persistent://public/default/topic-{i}" for i in range(1, 9)]
    chosen = {t: pick_active([a, b], -1, t).consumer_name for t in topics}
    # the choice depends on names only: subscribe order does not matter, and both consumers get topics
    assert chosen == {t: pick_active([b, a], -1, t).consumer_name for t in topics}
    assert set(chosen.values()) == {"A", "B"}
    # a single-topic subscription keeps "the order they subscribe"
    single = [Consumer(3, "Z", lambda d: None), Consumer(4, "A", lambda d: None)]
    assert all(pick_active(single, -1, t).consumer_name == "Z" for t in topics)
