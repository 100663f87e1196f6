"""ManagedCursor: individual and cumulative acks, merging, backlog and ack sets."""
import pytest

from broker_core.storage.cursor import ManagedCursor


def test_a_new_cursor_has_acknowledged_nothing():
    c = ManagedCursor("s")
    assert c.mark_delete_offset == -1 and c.individually_acked == [] and not c.dirty
    assert not c.is_acked(0) and c.backlog(10) == 10


def test_an_out_of_order_ack_is_kept_as_a_range():
    c = ManagedCursor("s")
    assert c.ack(5, 8) == 3
    assert c.mark_delete_offset == -1 and c.individually_acked == [(5, 8)] and c.dirty
    assert c.is_acked(5) and c.is_acked(7) and not c.is_acked(8) and not c.is_acked(4)


def test_filling_the_gap_advances_mark_delete_through_the_range():
    c = ManagedCursor("s")
    c.ack(2, 4)
    c.ack(5, 6)
    assert c.ack(0, 2) == 2
    assert c.mark_delete_offset == 3 and c.individually_acked == [(5, 6)]
    c.ack(4, 5)
    assert c.mark_delete_offset == 5 and c.individually_acked == []


def test_adjacent_and_overlapping_ranges_merge_and_count_only_new_offsets():
    c = ManagedCursor("s")
    c.ack(10, 12)
    c.ack(14, 16)
    assert c.ack(12, 14) == 2
    assert c.individually_acked == [(10, 16)]
    assert c.ack(8, 20) == 6
    assert c.individually_acked == [(8, 20)]
    assert c.ack(9, 15) == 0


def test_acking_below_mark_delete_is_a_no_op():
    c = ManagedCursor("s", mark_delete_offset=9)
    assert c.ack(0, 10) == 0 and not c.dirty


def test_cumulative_ack_covers_everything_up_to_the_offset_and_absorbs_ranges():
    c = ManagedCursor("s")
    c.ack(3, 5)
    c.ack(8, 9)
    c.ack(11, 13)
    assert c.ack_cumulative(8) == 9 - 3
    assert c.mark_delete_offset == 8 and c.individually_acked == [(11, 13)]
    assert c.ack_cumulative(11) == 2  # 9 and 10 are new, 11 was acked: mark delete runs to 12
    assert c.mark_delete_offset == 12 and c.individually_acked == []
    assert c.ack_cumulative(5) == 0


def test_backlog_counts_unacknowledged_messages_below_the_end():
    c = ManagedCursor("s", mark_delete_offset=4)
    c.ack(6, 8)
    c.ack(20, 30)
    assert c.backlog(10) == 10 - 5 - 2
    assert c.backlog(25) == 25 - 5 - 2 - 5
    assert c.backlog(3) == 0


def test_acked_within_returns_the_acked_sub_ranges_of_an_entry():
    c = ManagedCursor("s", mark_delete_offset=2)
    c.ack(5, 7)
    c.ack(9, 20)
    assert c.acked_within(0, 10) == [(0, 3), (5, 7), (9, 10)]
    assert c.acked_within(3, 5) == []
    assert c.acked_within(6, 12) == [(6, 7), (9, 12)]


def test_next_unacked_skips_mark_delete_and_acked_ranges():
    c = ManagedCursor("s", mark_delete_offset=2)
    c.ack(4, 7)
    assert c.next_unacked(0) == 3
    assert c.next_unacked(4) == 7
    assert c.next_unacked(8) == 8


def test_reset_seeks_and_clears_individual_acks():
    c = ManagedCursor("s")
    c.ack(5, 10)
    c.dirty = False
    c.reset(2)
    assert c.mark_delete_offset == 2 and c.individually_acked == [] and c.dirty
    assert c.backlog(10) == 7


def test_constructor_ranges_are_normalised():
    c = ManagedCursor("s", 3, [(4, 6), (10, 12), (11, 15)])
    assert c.mark_delete_offset == 5 and c.individually_acked == [(10, 15)] and not c.dirty


def test_a_million_contiguous_single_acks_stay_cheap_and_collapse():
    c = ManagedCursor("s")
    for offset in range(1_000_000):
        c.ack(offset, offset + 1)
    assert c.mark_delete_offset == 999_999 and c.individually_acked == []


def test_out_of_order_single_acks_merge_into_one_range():
    c = ManagedCursor("s")
    for offset in range(1, 100_001):
        c.ack(offset, offset + 1)
    assert c.individually_acked == [(1, 100_001)]
    c.ack(0, 1)
    assert c.mark_delete_offset == 100_000


def test_state_round_trips_through_bytes():
    c = ManagedCursor("sub/ä", 7, [(9, 11), (20, 25)], {"k": "v"})
    again = ManagedCursor.from_bytes("sub/ä", c.to_bytes())
    assert (again.mark_delete_offset, again.individually_acked, again.properties) == (7, [(9, 11), (20, 25)], {"k": "v"})


@pytest.mark.parametrize("raw", [b"", b"{", b'{"markDelete": "x", "acked": []}', b'{"acked": []}', b"[1]"])
def test_malformed_state_raises_value_error(raw):
    with pytest.raises(ValueError):
        ManagedCursor.from_bytes("s", raw)
