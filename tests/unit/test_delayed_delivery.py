"""DelayedDeliveryTracker: the seed's delayedDeliveryTickTimeMillis / isDelayedDeliveryDeliverAtTimeStrict
semantics, with a fake clock (no sleeping)."""
from __future__ import annotations

import random
import tracemalloc
from array import array

import pytest

from broker_core.clock import FakeClock
from dispatch.delayed import INT64_MAX, DelayedDeliveryTracker, precision_ms

START = 10_000


def make(tick_ms: int = 1000, strict: bool = False, lookahead: int = 50_000,
         ) -> tuple[FakeClock, DelayedDeliveryTracker]:
    clock = FakeClock(start_ms=START)
    return clock, DelayedDeliveryTracker(clock, tick_ms=tick_ms, strict=strict,
                                         fixed_delay_detection_lookahead=lookahead)


def test_bucket_width_is_the_largest_power_of_two_not_above_the_tick() -> None:
    assert [precision_ms(t) for t in (0, 1, 2, 3, 1000, 1023, 1024, 1500)] == [1, 1, 2, 2, 512, 512, 1024, 1024]
    assert make(tick_ms=1000)[1].precision_ms == 512


def test_deliver_at_in_the_past_is_delivered_now() -> None:
    _, tracker = make(strict=True)
    assert tracker.add(1, START - 5000) is False
    assert tracker.add(2, START) is False
    assert len(tracker) == 0 and tracker.next_delivery_time() is None


def test_negative_deliver_at_is_delivered_now() -> None:
    _, tracker = make(strict=True)
    assert tracker.add(1, -1) is False
    assert len(tracker) == 0


def test_not_strict_delivers_now_a_message_due_within_one_tick() -> None:
    _, tracker = make(tick_ms=1000)
    assert tracker.add(1, START + 1000) is False
    assert tracker.add(2, START + 1001) is True
    assert len(tracker) == 1


def test_strict_holds_a_message_due_one_millisecond_from_now() -> None:
    _, tracker = make(tick_ms=1000, strict=True)
    assert tracker.add(1, START + 1) is True
    assert tracker.pop_ready() == []


def test_module_example_two_messages_share_a_bucket_and_leave_together() -> None:
    clock, tracker = make(tick_ms=1000)
    assert tracker.add(7, 10_900) is False
    assert tracker.add(8, 12_300) is True
    assert tracker.add(5, 12_700) is True
    assert tracker.next_delivery_time() == 12_288
    clock.advance(1798)
    assert not tracker.has_ready() and tracker.pop_ready() == []
    clock.advance(1)
    assert tracker.has_ready()
    assert tracker.pop_ready() == [5, 8]
    assert len(tracker) == 0


def test_strict_rounds_bucket_times_up_so_a_bucket_never_opens_early() -> None:
    clock, tracker = make(tick_ms=1000, strict=True)
    tracker.add(1, 12_300)
    assert tracker.next_delivery_time() == 12_800
    clock.advance(12_799 - START)
    assert tracker.pop_ready() == []
    clock.advance(1)
    assert tracker.pop_ready() == [1]


@pytest.mark.parametrize("tick_ms", [1, 7, 100, 1000])
def test_not_strict_never_delivers_earlier_than_deliver_at_minus_one_tick(tick_ms: int) -> None:
    clock, tracker = make(tick_ms=tick_ms)
    rng = random.Random(tick_ms)
    deliver_at = {}
    for offset in range(2000):
        deliver_at[offset] = START + rng.randrange(0, 20 * tick_ms + 50)
        if not tracker.add(offset, deliver_at[offset]):
            assert deliver_at[offset] <= START + tick_ms
            del deliver_at[offset]
    while len(tracker):
        clock.advance(rng.randrange(1, tick_ms + 1))
        now = clock.now_ms()
        for offset in tracker.pop_ready():
            assert deliver_at[offset] - tick_ms <= now
            # bucket time never runs ahead of the add cutoff: a re-read is delivered, not held again
            assert tracker.add(offset, deliver_at[offset]) is False


@pytest.mark.parametrize("tick_ms", [1, 7, 100, 1000])
def test_strict_never_delivers_before_deliver_at_nor_a_bucket_after_it_when_polled(tick_ms: int) -> None:
    clock, tracker = make(tick_ms=tick_ms, strict=True)
    rng = random.Random(tick_ms)
    deliver_at = {offset: START + rng.randrange(1, 20 * tick_ms + 50) for offset in range(2000)}
    assert tracker.add_many(deliver_at.items()) == len(deliver_at)
    while len(tracker):
        clock.advance(1)
        now = clock.now_ms()
        for offset in tracker.pop_ready():
            assert deliver_at[offset] <= now <= deliver_at[offset] + tracker.precision_ms - 1
            assert tracker.add(offset, deliver_at[offset]) is False


def test_ready_offsets_come_in_offset_order_across_buckets() -> None:
    clock, tracker = make(tick_ms=1, strict=True)
    for offset, at in [(9, START + 30), (3, START + 10), (6, START + 20), (1, START + 30), (4, START + 10)]:
        tracker.add(offset, at)
    clock.advance(30)
    assert tracker.ready() == [1, 3, 4, 6, 9]
    assert len(tracker) == 5  # ready() only looks
    assert tracker.pop_ready() == [1, 3, 4, 6, 9]


def test_pop_ready_with_max_count_takes_earliest_buckets_then_lowest_offsets() -> None:
    clock, tracker = make(tick_ms=1, strict=True)
    for offset in (10, 11, 12):
        tracker.add(offset, START + 20)
    for offset in (1, 2, 3):
        tracker.add(offset, START + 10)
    clock.advance(20)
    assert tracker.pop_ready(4) == [1, 2, 3, 10]
    assert tracker.pop_ready(4) == [11, 12]
    assert tracker.pop_ready(4) == []


def test_pop_ready_leaves_future_buckets_alone() -> None:
    clock, tracker = make(tick_ms=1, strict=True)
    tracker.add(1, START + 10)
    tracker.add(2, START + 11)
    clock.advance(10)
    assert tracker.pop_ready() == [1]
    assert tracker.next_delivery_time() == START + 11 and len(tracker) == 1


def test_next_delivery_time_is_the_earliest_bucket_and_none_when_empty() -> None:
    clock, tracker = make(tick_ms=1000)
    assert tracker.next_delivery_time() is None
    tracker.add(1, START + 60_000)
    tracker.add(2, START + 5_000)
    assert tracker.next_delivery_time() == (START + 5_000) & -512
    tracker.remove(2)
    assert tracker.next_delivery_time() == (START + 60_000) & -512
    clock.advance(60_000)
    tracker.pop_ready()
    assert tracker.next_delivery_time() is None


def test_one_timer_waits_for_the_first_bucket_but_at_least_a_tick_after_it_last_fired() -> None:
    clock, tracker = make(tick_ms=1000, strict=True)
    assert tracker.next_timer_delay_ms() is None
    tracker.add(1, 11_776)  # a bucket boundary (23 * 512)
    assert tracker.next_timer_delay_ms() == 1776
    assert tracker.next_timer_delay_ms(last_tick_ms=START + 900) == 1900
    clock.advance(2000)
    assert tracker.next_timer_delay_ms(last_tick_ms=START + 1800) == 0


def test_the_same_offset_added_twice_is_held_once() -> None:
    clock, tracker = make(tick_ms=1, strict=True)
    assert tracker.add(5, START + 10) and tracker.add(7, START + 10)
    assert tracker.add(5, START + 10) is True
    assert tracker.add_many([(7, START + 10), (5, START + 10), (8, START + 10)]) == 1
    assert len(tracker) == 3
    clock.advance(10)
    assert tracker.pop_ready() == [5, 7, 8]


def test_offsets_arriving_out_of_order_stay_sorted() -> None:
    clock, tracker = make(tick_ms=1000, strict=True)
    for offset in (50, 10, 30, 20, 40):
        tracker.add(offset, START + 2000)
    tracker.add_many([(5, START + 2000), (45, START + 2000), (60, START + 2000)])
    clock.advance(3000)
    assert tracker.pop_ready() == [5, 10, 20, 30, 40, 45, 50, 60]


def test_add_many_matches_one_add_at_a_time() -> None:
    rng = random.Random(7)
    offsets = rng.sample(range(10_000), 3000)
    deliver_at = {offset: START + rng.randrange(-500, 30_000) for offset in offsets}
    pairs = [(offset, deliver_at[offset]) for offset in offsets + offsets[:300]]  # some read twice
    rng.shuffle(pairs)
    clock_a, one_by_one = make(tick_ms=100)
    clock_b, bulk = make(tick_ms=100)
    for offset, at in pairs:
        one_by_one.add(offset, at)
    assert bulk.add_many(pairs) == len(bulk) == len(one_by_one) == sum(at > START + 100 for at in deliver_at.values())
    for _ in range(40):
        clock_a.advance(1000)
        clock_b.advance(1000)
        assert bulk.pop_ready() == one_by_one.pop_ready()
    assert len(bulk) == len(one_by_one) == 0


def test_add_many_skips_due_pairs() -> None:
    _, tracker = make(tick_ms=1000)
    assert tracker.add_many([(1, START - 1), (2, -5), (3, START + 1000), (4, START + 1001)]) == 1
    assert tracker.contains(4) and not tracker.contains(3)


def test_contains_finds_an_offset_with_or_without_its_deliver_at() -> None:
    _, tracker = make(tick_ms=1000)
    tracker.add(3, START + 5000)
    assert tracker.contains(3) and 3 in tracker
    assert tracker.contains(3, START + 5000)
    assert not tracker.contains(3, START + 9000)  # wrong bucket
    assert not tracker.contains(4)


def test_remove_stops_holding_an_offset() -> None:
    clock, tracker = make(tick_ms=1000)
    tracker.add(1, START + 5000)
    tracker.add(2, START + 5000)
    tracker.add(3, START + 8000)
    assert tracker.remove(2) is True
    assert tracker.remove(3, START + 8000) is True
    assert tracker.remove(2) is False
    assert len(tracker) == 1
    clock.advance(10_000)
    assert tracker.pop_ready() == [1]


def test_remove_through_drops_offsets_up_to_the_mark_delete_offset() -> None:
    clock, tracker = make(tick_ms=1000)
    for offset in range(10):
        tracker.add(offset, START + 2000 + 1000 * (offset % 3))
    assert tracker.remove_through(5) == 6
    assert len(tracker) == 4
    clock.advance(10_000)
    assert tracker.pop_ready() == [6, 7, 8, 9]


def test_clear_forgets_everything() -> None:
    clock, tracker = make(tick_ms=1000)
    tracker.add_many((offset, START + 5000 + offset) for offset in range(100))
    tracker.clear()
    assert len(tracker) == 0 and tracker.next_delivery_time() is None
    clock.advance(10_000)
    assert tracker.pop_ready() == []


def test_deliver_at_beyond_int64_is_held_until_removed() -> None:
    clock, tracker = make(tick_ms=1000, strict=True)
    assert tracker.add(1, 1 << 70) is True
    assert tracker.add_many([(2, 1 << 70)]) == 1
    clock.advance(10 ** 12)
    assert tracker.pop_ready() == []
    assert tracker.remove(1) and tracker.remove(2, 1 << 70)


@pytest.mark.parametrize("offset", [-1, 1 << 63])
def test_an_offset_outside_int64_is_rejected(offset: int) -> None:
    _, tracker = make()
    with pytest.raises(ValueError, match="offset"):
        tracker.add(offset, START + 5000)
    with pytest.raises(ValueError, match="offset"):
        tracker.add_many([(offset, START + 5000)])
    assert len(tracker) == 0


def test_add_many_keeps_the_index_sorted_when_a_bad_pair_stops_it() -> None:
    clock, tracker = make(tick_ms=1000)
    with pytest.raises(ValueError):
        tracker.add_many([(5, START + 5000), (3, START + 5000), (5, START + 5000), (-1, START + 5000)])
    assert len(tracker) == 2
    clock.advance(10_000)
    assert tracker.pop_ready() == [3, 5]


def test_negative_tick_is_rejected_naming_the_option() -> None:
    with pytest.raises(ValueError, match="delayedDeliveryTickTimeMillis"):
        DelayedDeliveryTracker(FakeClock(), tick_ms=-1)


def test_tick_zero_behaves_as_strict_to_the_millisecond() -> None:
    clock, tracker = make(tick_ms=0)
    assert tracker.add(1, START) is False
    assert tracker.add(2, START + 1) is True
    assert tracker.pop_ready() == []
    clock.advance(1)
    assert tracker.pop_ready() == [2]


def test_fixed_delays_pause_reading_once_the_lookahead_is_full() -> None:
    clock, tracker = make(tick_ms=1000, lookahead=10)
    for offset in range(10):
        tracker.add(offset, START + 60_000 + offset * 100)
    assert tracker.should_pause_all_deliveries()
    clock.advance(60_000)
    assert not tracker.should_pause_all_deliveries()  # something is ready: keep dispatching


def test_a_message_due_earlier_than_the_highest_by_more_than_a_tick_ends_fixed_delay_detection() -> None:
    _, tracker = make(tick_ms=1000, lookahead=3)
    tracker.add(1, START + 60_000)
    tracker.add(2, START + 59_500)  # within one tick: still fixed
    tracker.add(3, START + 58_000)
    assert not tracker.should_pause_all_deliveries()
    tracker.clear()
    for offset in range(3):
        tracker.add(offset, START + 60_000)
    assert tracker.should_pause_all_deliveries()


def test_lookahead_zero_never_pauses() -> None:
    _, tracker = make(tick_ms=1000, lookahead=0)
    tracker.add(1, START + 60_000)
    assert not tracker.should_pause_all_deliveries()


def test_memory_per_tracked_message_is_small() -> None:
    n = 100_000
    rng = random.Random(1)
    deliver_at = array("q", (START + 2000 + rng.randrange(60_000) for _ in range(n)))
    clock = FakeClock(start_ms=START)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        tracker = DelayedDeliveryTracker(clock, tick_ms=1000)
        for offset in range(n):
            tracker.add(offset, deliver_at[offset])
        used = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert len(tracker) == n
    assert used / n < 100, f"{used / n:.1f} bytes per message"
    assert tracker.memory_bytes() <= used
