"""Subscription bookkeeping: permits, acknowledgments, ack sets, seek, stats (seed 003: Acknowledgment)."""
from __future__ import annotations

import pytest

from broker_core.clock import FakeClock
from broker_core.errors import AlreadyClosed, InvalidMessage
from dispatch import SubType, Subscription
from broker_core.protocol.ack_set import from_words
from dispatch.testing import MemoryEntrySource, RecordingConsumer, make_cursor


def exclusive(**kwargs: object) -> tuple[Subscription, MemoryEntrySource, RecordingConsumer, list[int]]:
    source = MemoryEntrySource()
    changes: list[int] = []
    sub = Subscription("sub", "persistent://public/default/t", -1, source, make_cursor(),
                       on_cursor_changed=lambda: changes.append(1), **kwargs)  # type: ignore[arg-type]
    consumer = RecordingConsumer(1, "c1")
    sub.add_consumer(consumer, SubType.EXCLUSIVE)
    return sub, source, consumer, changes


def test_permits_bound_delivery() -> None:
    sub, source, c, _ = exclusive()
    source.append_many(5)
    sub.flow(c, 3)
    assert c.take() == [0, 1, 2]
    assert c.permits == 0
    sub.on_new_entries()
    assert c.take() == []
    sub.flow(c, 1)
    assert c.take() == [3]


def test_an_entry_larger_than_the_permits_is_still_delivered_and_permits_go_negative() -> None:
    sub, source, c, _ = exclusive()
    source.append(10)
    source.append(10)
    sub.flow(c, 4)
    assert c.take() == [0]
    assert c.permits == -6
    sub.flow(c, 6)
    assert c.take() == []
    sub.flow(c, 1)
    assert c.take() == [10]


def test_one_dispatch_round_is_one_sink_call() -> None:
    sub, source, c, _ = exclusive(max_read_entries=3)
    source.append_many(7)
    sub.flow(c, 100)
    assert [[d.entry.offset for d in batch] for batch in c.batches] == [[0, 1, 2], [3, 4, 5], [6]]


def test_sink_calls_are_bounded_by_max_delivery_bytes() -> None:
    sub, source, c, _ = exclusive(max_delivery_bytes=25)
    source.append_many(5)  # 10 bytes each
    sub.flow(c, 100)
    assert [len(batch) for batch in c.batches] == [2, 2, 1]


def test_dispatch_reads_only_up_to_durable_end() -> None:
    sub, source, c, _ = exclusive()
    source.append(2)
    source.append(2, durable=False)
    sub.flow(c, 100)
    assert c.take() == [0]
    source.make_durable()
    sub.on_new_entries()
    assert c.take() == [2]


def test_dispatch_skips_trimmed_offsets() -> None:
    sub, source, c, _ = exclusive()
    source.append_many(4)
    source.start_offset = 2
    sub.flow(c, 100)
    assert c.take() == [2, 3]


def test_deliveries_count_messages_and_bytes() -> None:
    sub, source, c, _ = exclusive()
    source.append(3, b"abc")
    source.append(2, b"de")
    sub.flow(c, 100)
    assert (c.msg_out_counter, c.bytes_out_counter, c.unacked_messages) == (5, 5, 5)
    assert c.highest_delivered_end == 5


def test_an_ack_past_the_topics_durable_end_is_rejected_and_changes_nothing() -> None:
    sub, source, c, changes = exclusive()
    source.append_many(4)
    source.append(1, durable=False)  # appended, not durable: nobody was sent it
    sub.flow(c, 2)
    with pytest.raises(InvalidMessage, match="holds offsets below 4"):
        sub.acknowledge_cumulative(c, 4)
    with pytest.raises(InvalidMessage, match="holds offsets below 4"):
        sub.acknowledge(c, [(0, 1), (1, 5)])
    with pytest.raises(InvalidMessage, match="an empty range"):
        sub.acknowledge(c, [(2, 2)])
    assert sub.cursor.mark_delete_offset == -1
    assert not sub.cursor.is_acked(0)
    assert (c.unacked_messages, sub.backlog, changes) == (2, 5, [])


def test_an_individual_ack_of_a_message_not_sent_to_this_consumer_yet_is_applied() -> None:
    # a client re-sending its pending acks right after a reconnect, before the broker sent them again
    sub, source, c, changes = exclusive()
    source.append_many(4)
    assert sub.acknowledge(c, [(1, 2), (3, 4)]) == 2
    assert sub.cursor.is_acked(1) and sub.cursor.is_acked(3) and changes == [1]
    sub.flow(c, 10)
    assert c.take() == [0, 2]  # dispatch passes over what the cursor holds acknowledged


def test_a_cumulative_ack_past_the_read_position_moves_dispatch_past_it() -> None:
    # Pulsar's cursor: a mark-delete past the read position moves the read position ("skipped entries")
    sub, source, c, _ = exclusive()
    source.append_many(3)
    source.append(3)  # a batch [3, 6)
    sub.flow(c, 1)
    assert c.take() == [0]
    assert sub.acknowledge_cumulative(c, 4) == 5  # inside the batch: its first two messages
    assert sub.cursor.mark_delete_offset == 4 and c.unacked_messages == 0
    sub.flow(c, 10)
    deliveries = [d for batch in c.batches for d in batch]
    assert [d.entry.offset for d in deliveries] == [3] and deliveries[0].messages == 1  # its last message


def test_an_ack_of_an_entry_another_consumer_holds_is_applied_and_that_one_is_not_sent_it_again() -> None:
    source = MemoryEntrySource()
    sub = Subscription("sub", "persistent://public/default/t", -1, source, make_cursor())
    first, second = RecordingConsumer(1, "c1"), RecordingConsumer(2, "c2")
    sub.add_consumer(first, SubType.SHARED)
    sub.add_consumer(second, SubType.SHARED)
    source.append_many(2)
    sub.flow(first, 1)
    assert first.take() == [0]
    assert sub.acknowledge(second, [(0, 1)]) == 1  # second reconnected under another id, say
    assert sub.backlog == 1
    sub.remove_consumer(first)  # what first held goes back for delivery: not the acknowledged entry
    sub.flow(second, 10)
    assert second.take() == [1]


def test_cumulative_ack_moves_mark_delete_and_clears_pending() -> None:
    sub, source, c, changes = exclusive()
    source.append_many(2, num_messages=3)
    sub.flow(c, 6)
    assert sub.acknowledge_cumulative(c, 4) == 5
    assert sub.cursor.mark_delete_offset == 4
    assert (c.unacked_messages, len(c.pending), sub.backlog) == (1, 1, 1)
    assert changes == [1]
    assert sub.acknowledge_cumulative(c, 2) == 0
    assert changes == [1]  # nothing new: no cursor write


def test_individual_acks_reduce_pending_per_entry() -> None:
    sub, source, c, _ = exclusive()
    source.append(4)
    source.append(4)
    sub.flow(c, 8)
    assert sub.acknowledge(c, [(1, 3), (3, 6)]) == 5
    assert c.pending.entries() == [(0, 4, 1), (4, 8, 2)]
    assert sub.acknowledge(c, [(0, 1), (6, 8)]) == 3
    assert (len(c.pending), c.unacked_messages, sub.backlog) == (0, 0, 0)
    assert sub.cursor.mark_delete_offset == 7


def test_partially_acked_entry_is_redelivered_with_ack_set() -> None:
    sub, source, c, _ = exclusive()
    source.append(4)   # 0..3
    source.append(70)  # 4..73: two ack-set words
    sub.flow(c, 100)
    sub.acknowledge(c, [(1, 3), (4, 5), (70, 72)])
    sub.remove_consumer(c)
    again = RecordingConsumer(2)
    sub.add_consumer(again, SubType.EXCLUSIVE)
    sub.flow(again, 100)
    first, second = again.deliveries()
    assert from_words(first.ack_set) == 0b1001
    assert first.messages == 2
    assert len(second.ack_set) == 2
    bits = from_words(second.ack_set)
    assert [i for i in range(70) if not bits >> i & 1] == [0, 66, 67]
    assert second.messages == 67
    assert again.permits == 100 - 69
    assert again.unacked_messages == 69


def test_ack_set_words_are_signed_int64() -> None:
    sub, source, c, _ = exclusive()
    source.append(64)
    sub.flow(c, 64)
    sub.acknowledge(c, [(0, 1)])
    sub.redeliver_unacknowledged(c)
    sub.flow(c, 64)
    assert c.deliveries()[-1].ack_set == [-2]  # 0xFFFF_FFFF_FFFF_FFFE


def test_fully_acked_entries_are_skipped_on_rewind() -> None:
    sub, source, c, _ = exclusive()
    source.append_many(3, num_messages=2)  # 0-1, 2-3, 4-5
    sub.flow(c, 6)
    sub.acknowledge(c, [(2, 4), (5, 6)])
    c.take()
    sub.redeliver_unacknowledged(c)
    sub.flow(c, 6)
    delivered = c.deliveries()
    assert [d.entry.offset for d in delivered] == [0, 4]
    assert delivered[0].ack_set is None
    assert from_words(delivered[1].ack_set) == 0b01


def test_seek_rewinds_to_the_given_offset_and_forgets_acks() -> None:
    sub, source, c, changes = exclusive()
    source.append_many(6)
    sub.flow(c, 6)
    sub.acknowledge_cumulative(c, 3)
    sub.acknowledge(c, [(5, 6)])
    changes.clear()
    c.take()
    sub.seek(1)
    assert sub.cursor.mark_delete_offset == 0
    assert (c.unacked_messages, sub.backlog, changes) == (0, 5, [1])
    sub.flow(c, 10)
    assert c.take() == [1, 2, 3, 4, 5]
    assert [d.redelivery_count for d in c.deliveries()] == []
    assert sub.stats()["seekCount"] == 1


def test_seek_forward_skips_messages() -> None:
    sub, source, c, _ = exclusive()
    source.append_many(6)
    sub.seek(4)
    sub.flow(c, 10)
    assert c.take() == [4, 5]
    assert sub.acknowledge_cumulative(c, 5) == 2


def test_cumulative_ack_is_rejected_on_a_subscription_without_cumulative_acks() -> None:
    from broker_core.errors import CumulativeAcknowledgementNotAllowedError

    sub, source, c, _ = exclusive()
    source.append(1)
    sub.flow(c, 1)
    type(sub._dispatcher).allows_cumulative_ack = False  # how Shared declares it
    try:
        with pytest.raises(CumulativeAcknowledgementNotAllowedError):
            sub.acknowledge_cumulative(c, 0)
    finally:
        type(sub._dispatcher).allows_cumulative_ack = True


def test_stats_use_pulsar_field_names() -> None:
    clock = FakeClock()
    sub, source, c, _ = exclusive(clock=clock)
    source.append(3, b"abcd")
    source.append(1, b"e", durable=False)
    sub.flow(c, 10)
    clock.advance(5)
    sub.acknowledge(c, [(0, 1)])
    sent, acked = clock.now_ms() - 5, clock.now_ms()
    assert sub.stats() == {
        "msgBacklog": 3,
        "unackedMessages": 2,
        "type": "Exclusive",
        "msgOutCounter": 3,
        "bytesOutCounter": 4,
        "msgRedeliverCounter": 0,
        "lastConsumedTimestamp": sent,
        "lastAckedTimestamp": acked,
        "consumers": [{"consumerName": "c1", "consumerId": 1, "availablePermits": 7, "unackedMessages": 2,
                       "msgOutCounter": 3, "bytesOutCounter": 4, "msgRedeliverCounter": 0,
                       "lastConsumedTimestamp": sent, "lastAckedTimestamp": acked, "priorityLevel": 0}],
        "activeConsumerName": "c1",
        "isDurable": True,
        "markDeleteOffset": 0,
        "seekCount": 0,
        "nonRecoverableMessagesSkipped": 0,
        "subscriptionProperties": {},
    }


def test_messages_sent_again_count_as_redelivered() -> None:
    sub, source, c, _ = exclusive()
    source.append_many(2)
    sub.flow(c, 10)
    sub.redeliver_unacknowledged(c)
    stats = sub.stats()
    assert (stats["msgRedeliverCounter"], stats["consumers"][0]["msgRedeliverCounter"]) == (2, 2)


def test_closed_subscription_rejects_consumers_and_stops_dispatching() -> None:
    sub, source, c, _ = exclusive()
    sub.close()
    source.append(1)
    sub.on_new_entries()
    sub.flow(c, 5)
    assert c.received() == []
    with pytest.raises(AlreadyClosed):
        sub.add_consumer(RecordingConsumer(2), SubType.EXCLUSIVE)
