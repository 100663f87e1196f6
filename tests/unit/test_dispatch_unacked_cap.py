"""max_unacked_per_consumer does not cap Exclusive and Failover consumers (as in Pulsar, which caps only
Shared and Key_Shared); what the active consumer's pending list tracks is bounded instead, and what it
forgets stays unacknowledged and is redelivered."""
from __future__ import annotations

from dispatch import SubType, Subscription, single_active
from dispatch.testing import MemoryEntrySource, RecordingConsumer, make_cursor


def make_sub(limit: int, *, durable: bool = True, partition_index: int = -1) -> tuple[Subscription, MemoryEntrySource]:
    source = MemoryEntrySource()
    sub = Subscription("sub", "persistent://public/default/t", partition_index, source, make_cursor(),
                       durable=durable, max_unacked_per_consumer=limit)
    return sub, source


def test_an_exclusive_consumer_receives_past_the_unacked_limit() -> None:
    sub, source = make_sub(3)
    c = RecordingConsumer(1, permits=100)
    sub.add_consumer(c, SubType.EXCLUSIVE)
    source.append_many(10)
    sub.on_new_entries()
    assert c.received() == list(range(10)) and c.permits == 90


def test_the_failover_active_consumer_is_not_capped_either() -> None:
    sub, source = make_sub(2)
    a, b = RecordingConsumer(1, "A", permits=100), RecordingConsumer(2, "B", permits=100)
    sub.add_consumer(a, SubType.FAILOVER)
    sub.add_consumer(b, SubType.FAILOVER)
    source.append_many(5)
    sub.on_new_entries()
    assert a.received() == [0, 1, 2, 3, 4] and b.received() == []
    sub.acknowledge_cumulative(a, 1)
    sub.remove_consumer(a)  # the new active consumer starts at the first unacknowledged message
    assert b.received() == [2, 3, 4]


def test_a_consumer_that_never_acknowledges_is_tracked_up_to_a_bound(monkeypatch) -> None:
    monkeypatch.setattr(single_active, "MAX_TRACKED_ENTRIES", 4)
    sub, source = make_sub(0)
    c = RecordingConsumer(1, permits=100)
    sub.add_consumer(c, SubType.EXCLUSIVE)
    source.append_many(10)
    sub.on_new_entries()
    assert len(c.received()) == 10 and len(c.pending) == 4 and c.unacked_messages == 4


def test_forgotten_entries_stay_unacknowledged_and_are_redelivered(monkeypatch) -> None:
    monkeypatch.setattr(single_active, "MAX_TRACKED_ENTRIES", 4)
    sub, source = make_sub(0)
    c = RecordingConsumer(1, permits=100)
    sub.add_consumer(c, SubType.EXCLUSIVE)
    source.append_many(10)
    sub.on_new_entries()
    c.take()
    sub.acknowledge(c, [(1, 2)])  # an entry no longer tracked is acknowledged on the cursor all the same
    sub.redeliver_unacknowledged(c)
    assert c.take() == [0, 2, 3, 4, 5, 6, 7, 8, 9]
    assert sub.backlog == 9


def test_a_reader_that_never_acknowledges_is_tracked_up_to_the_bound_too(monkeypatch) -> None:
    monkeypatch.setattr(single_active, "MAX_TRACKED_ENTRIES", 1_000)
    sub, source = make_sub(0, durable=False)
    c = RecordingConsumer(1, permits=10**6)
    sub.add_consumer(c, SubType.EXCLUSIVE)
    source.append_many(20_000)
    sub.on_new_entries()
    assert len(c.received()) == 20_000 and len(c.pending) == 1_000


def test_a_batch_is_never_split() -> None:
    sub, source = make_sub(3)
    c = RecordingConsumer(1, permits=100)
    sub.add_consumer(c, SubType.EXCLUSIVE)
    source.append(2)
    source.append(5)
    source.append(1)
    sub.on_new_entries()
    assert c.received() == [0, 2, 7] and c.unacked_messages == 8
