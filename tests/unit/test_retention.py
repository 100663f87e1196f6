"""Retention and message expiry (seed 002/003: Message retention and expiry): the pure decisions of
:mod:`broker_core.service.retention` with crafted segments and an injected clock, and a subscription's
``expire_through`` (TTL acknowledges on the cursor whoever holds the messages)."""
from __future__ import annotations

from dispatch import SubType, Subscription
from dispatch.testing import MemoryEntrySource, RecordingConsumer, make_cursor


def shared_subscription() -> tuple[Subscription, MemoryEntrySource, list[int]]:
    source = MemoryEntrySource()
    changes: list[int] = []
    sub = Subscription("sub", "persistent://public/default/t", -1, source, make_cursor(),
                       on_cursor_changed=lambda: changes.append(1), scheduler=None)
    return sub, source, changes


def test_expiry_acknowledges_through_the_offset_even_what_consumers_hold() -> None:
    sub, source, changes = shared_subscription()
    source.append_many(6, num_messages=2)  # entries at 0, 2, 4, 6, 8, 10
    c = RecordingConsumer(1, permits=6)
    sub.add_consumer(c, SubType.SHARED)
    assert c.take() == [0, 2, 4]
    assert sub.unacked_messages == 6 and sub.backlog == 12
    assert sub.expire_through(7) == 8
    assert sub.cursor.mark_delete_offset == 7 and sub.backlog == 4
    assert sub.unacked_messages == 0 and changes
    sub.flow(c, 4)
    assert c.take() == [8, 10]  # the expired entry at 6 is skipped


def test_expiry_of_part_of_a_pending_batch_keeps_its_later_messages_pending() -> None:
    sub, source, _ = shared_subscription()
    source.append(4)  # offsets 0..3
    c = RecordingConsumer(1, permits=4)
    sub.add_consumer(c, SubType.SHARED)
    assert c.take() == [0]
    assert sub.expire_through(1) == 2
    assert sub.unacked_messages == 2 and sub.backlog == 2


def test_expiry_below_the_mark_delete_offset_changes_nothing() -> None:
    sub, source, changes = shared_subscription()
    source.append_many(3)
    sub.cursor.ack_cumulative(1)
    assert sub.expire_through(1) == 0 and sub.expire_through(-1) == 0
    assert not changes and sub.cursor.mark_delete_offset == 1
