"""ManagedCursor: individual and cumulative acks, merging, backlog and ack sets."""
import random

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


def _ranges_of(offsets: set[int], above: int) -> list[tuple[int, int]]:
    """``offsets`` greater than ``above`` as sorted, maximal ``[start, end)`` ranges."""
    out: list[tuple[int, int]] = []
    for o in sorted(o for o in offsets if o > above):
        if out and out[-1][1] == o:
            out[-1] = (out[-1][0], o + 1)
        else:
            out.append((o, o + 1))
    return out


@pytest.mark.parametrize("seed", range(40))
def test_random_acks_cumulative_acks_and_resets_match_a_set_of_acked_offsets(seed):
    rnd = random.Random(seed)
    span = rnd.choice([16, 64, 200])
    c = ManagedCursor("s")
    acked: set[int] = set()
    for step in range(300):
        c.dirty = False
        op = rnd.random()
        if op < 0.75:
            start = rnd.randrange(-3, span)
            end = start + rnd.choice([-1, 0, 1, 1, 1, 2, 3, rnd.randrange(1, span // 4 + 2)])
            new = set(range(max(start, 0), end)) - acked
            assert c.ack(start, end) == len(new), (seed, step, start, end)
            acked |= new
            dirtied = bool(new)
        elif op < 0.88:
            offset = rnd.randrange(-2, span)
            new = set(range(offset + 1)) - acked
            assert c.ack_cumulative(offset) == len(new), (seed, step, offset)
            acked |= new
            dirtied = bool(new)
        elif op < 0.95:
            offset = rnd.randrange(-1, span)
            c.reset(offset)
            acked, dirtied = set(range(offset + 1)), True
        else:
            c = ManagedCursor.from_bytes("s", c.to_bytes())
            dirtied = False
        assert c.dirty == dirtied, (seed, step)

        mark_delete = -1
        while mark_delete + 1 in acked:
            mark_delete += 1
        assert c.mark_delete_offset == mark_delete, (seed, step)
        assert c.individually_acked == _ranges_of(acked, mark_delete + 1), (seed, step)
        limit = span + span // 4 + 4  # past the furthest offset an ack can reach
        first_unacked = limit  # every offset past the span is unacked, so the scan stops at the limit
        for offset in reversed(range(limit)):
            if offset not in acked:
                first_unacked = offset
            assert c.is_acked(offset) == (offset in acked), (seed, step, offset)
            assert c.next_unacked(offset) == first_unacked, (seed, step, offset)
        unacked_below = 0
        for offset in range(mark_delete + 1, limit + 1):
            assert c.backlog(offset) == unacked_below, (seed, step, offset)
            unacked_below += offset not in acked
        assert all(c.backlog(offset) == 0 for offset in range(-1, mark_delete + 1))
        for _ in range(5):
            start = rnd.randrange(0, span)
            end = rnd.randrange(start + 1, span + 5)
            expected = [(max(s, start), min(e, end)) for s, e in _ranges_of(acked & set(range(start, end)), -1)]
            assert c.acked_within(start, end) == expected, (seed, step, start, end)


def test_subscription_properties_are_saved_with_the_cursor_apart_from_the_brokers_own() -> None:
    cursor = ManagedCursor("sub", 4, properties={"pulsarlike.lastActiveMs": "7"},
                           subscription_properties={"team": "billing"})
    again = ManagedCursor.from_bytes("sub", cursor.to_bytes())
    assert again.subscription_properties == {"team": "billing"}
    assert again.properties == {"pulsarlike.lastActiveMs": "7"}
    assert b"subscriptionProperties" not in ManagedCursor("sub", 4).to_bytes()  # as older versions wrote it
    assert ManagedCursor.from_bytes("sub", ManagedCursor("sub", 4).to_bytes()).subscription_properties == {}
