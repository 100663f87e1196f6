"""Per-consumer pending acks (one record per entry) and batch-index ack sets."""
from __future__ import annotations

from broker_core.protocol.ack_set import from_words, to_words, unacked_bits
from dispatch.consumer import PendingAcks


def test_pending_acks_track_entries_not_messages() -> None:
    pending = PendingAcks()
    pending.add(0, 100, 100)
    pending.add(100, 101, 1)
    assert (len(pending), pending.unacked_messages) == (2, 101)


def test_pending_range_lookup_finds_the_entries_a_range_touches() -> None:
    pending = PendingAcks()
    for start in (0, 10, 20, 30):
        pending.add(start, start + 10, 10)
    assert pending.overlapping(5, 21) == [(0, 10), (10, 20), (20, 30)]
    assert pending.overlapping(10, 11) == [(10, 20)]
    assert pending.overlapping(40, 50) == []


def test_pending_entry_leaves_when_its_last_message_is_acked() -> None:
    pending = PendingAcks()
    pending.add(0, 3, 3)
    assert not pending.acked(0, 2)
    assert pending.unacked_messages == 1
    assert pending.acked(0, 1)
    assert (len(pending), pending.unacked_messages) == (0, 0)


def test_pending_remove_through_drops_only_whole_entries() -> None:
    pending = PendingAcks()
    pending.add(0, 5, 5)
    pending.add(5, 10, 5)
    assert pending.remove_through(7) == [0]
    assert pending.entries() == [(5, 10, 5)]


def test_pending_keeps_offset_order_when_entries_come_back_out_of_order() -> None:
    pending = PendingAcks()
    pending.add(20, 30, 10)
    pending.add(0, 10, 10)
    pending.add(0, 10, 4)  # the same entry handed out again, partly acked
    assert pending.entries() == [(0, 10, 4), (20, 30, 10)]
    assert pending.unacked_messages == 14
    assert sorted(pending.clear()) == [0, 20]


def test_ack_set_marks_unacked_messages_with_set_bits() -> None:
    # entry at offset 10 with 4 messages; 11 and 12 acknowledged
    bits = unacked_bits(10, 14, -1, [(11, 13)])
    assert bits == 0b1001
    assert to_words(bits, 4) == [9]


def test_ack_set_accounts_for_the_mark_delete_offset() -> None:
    assert unacked_bits(10, 14, 11, []) == 0b1100
    assert unacked_bits(10, 14, 13, []) == 0


def test_ack_set_words_round_trip_over_several_words() -> None:
    bits = unacked_bits(0, 130, -1, [(0, 1), (63, 65), (129, 130)])
    words = to_words(bits, 130)
    assert words == [(1 << 63) - 2, -2, 1]  # int64 words: bit 63 set reads as a negative number
    assert from_words(words) == bits


def test_pending_survives_many_out_of_order_removals() -> None:
    pending = PendingAcks()
    for start in range(1000):
        pending.add(start, start + 1, 1)
    for start in range(1, 1000, 2):
        assert pending.acked(start, 1)
    pending.add(1, 2, 1)  # handed out again after its removal
    assert pending.overlapping(0, 4) == [(0, 1), (1, 2), (2, 3)]
    assert pending.remove_through(9) == [0, 1, 2, 4, 6, 8]
    assert (len(pending), pending.unacked_messages) == (495, 495)
    assert pending.entries()[:2] == [(10, 11, 1), (12, 13, 1)]
