"""Exclusive and Failover consumers are capped by max_unacked_per_consumer like Shared ones: at the cap
dispatch stops, acknowledgments resume it; readers (non-durable) are not capped."""
from __future__ import annotations

from dispatch import SubType, Subscription
from dispatch.testing import MemoryEntrySource, RecordingConsumer, make_cursor


def make_sub(limit: int, *, durable: bool = True, partition_index: int = -1) -> tuple[Subscription, MemoryEntrySource]:
    source = MemoryEntrySource()
    sub = Subscription("sub", "persistent://public/default/t", partition_index, source, make_cursor(),
                       durable=durable, max_unacked_per_consumer=limit)
    return sub, source


def test_an_exclusive_consumer_stops_at_the_unacked_limit() -> None:
    sub, source = make_sub(3)
    c = RecordingConsumer(1, permits=100)
    sub.add_consumer(c, SubType.EXCLUSIVE)
    source.append_many(10)
    sub.on_new_entries()
    assert c.received() == [0, 1, 2] and c.permits == 97


def test_an_individual_ack_below_the_limit_resumes_dispatch() -> None:
    sub, source = make_sub(3)
    c = RecordingConsumer(1, permits=100)
    sub.add_consumer(c, SubType.EXCLUSIVE)
    source.append_many(10)
    sub.on_new_entries()
    c.take()
    sub.acknowledge(c, [(1, 2)])
    assert c.take() == [3]
    sub.acknowledge(c, [(0, 1), (2, 4)])
    assert c.take() == [4, 5, 6]


def test_a_cumulative_ack_resumes_dispatch() -> None:
    sub, source = make_sub(4)
    c = RecordingConsumer(1, permits=100)
    sub.add_consumer(c, SubType.EXCLUSIVE)
    source.append_many(10)
    sub.on_new_entries()
    assert c.take() == [0, 1, 2, 3]
    sub.acknowledge_cumulative(c, 3)
    assert c.take() == [4, 5, 6, 7]


def test_the_failover_active_consumer_is_capped_too() -> None:
    sub, source = make_sub(2)
    a, b = RecordingConsumer(1, "A", permits=100), RecordingConsumer(2, "B", permits=100)
    sub.add_consumer(a, SubType.FAILOVER)
    sub.add_consumer(b, SubType.FAILOVER)
    source.append_many(5)
    sub.on_new_entries()
    assert a.received() == [0, 1] and b.received() == []
    sub.remove_consumer(a)  # the new active consumer starts at the first unacknowledged message
    assert b.received() == [0, 1]


def test_a_batch_that_crosses_the_limit_goes_whole() -> None:
    sub, source = make_sub(3)
    c = RecordingConsumer(1, permits=100)
    sub.add_consumer(c, SubType.EXCLUSIVE)
    source.append(2)
    source.append(5)
    source.append(1)
    sub.on_new_entries()
    assert c.received() == [0, 2] and c.unacked_messages == 7


def test_a_reader_is_not_capped() -> None:
    sub, source = make_sub(3, durable=False)
    c = RecordingConsumer(1, permits=100)
    sub.add_consumer(c, SubType.EXCLUSIVE)
    source.append_many(10)
    sub.on_new_entries()
    assert c.received() == list(range(10))


def test_zero_means_no_limit() -> None:
    sub, source = make_sub(0)
    c = RecordingConsumer(1, permits=100)
    sub.add_consumer(c, SubType.EXCLUSIVE)
    source.append_many(10)
    sub.on_new_entries()
    assert len(c.received()) == 10
