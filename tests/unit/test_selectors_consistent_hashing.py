"""Consistent hashing selector (seed 003: Key_Shared, Auto-split Consistent Hashing)."""
from __future__ import annotations

from collections import Counter

import pytest

from dispatch.selectors import ConsistentHashingSelector, OwnerChange, ring_point
from dispatch.sticky_key import RING_RANGE, sticky_key_hash


class C:
    """A stand-in consumer: identity-hashed, with a name."""

    def __init__(self, name: str) -> None:
        self.consumer_name = name

    def __repr__(self) -> str:
        return self.consumer_name


def owner_by_assignments(sel: ConsistentHashingSelector, hash_: int) -> object:
    return next(c for s, e, c in sel.assignments() if s <= hash_ <= e)


def colliding_names() -> tuple[str, str, int]:
    """Two consumer names (first name index) with a ring point in common, and that point."""
    seen: dict[int, str] = {}
    for n in range(100):
        name = f"c{n}"
        mine = {ring_point(name, 0, i) for i in range(100)}
        for point in mine:
            if point in seen:
                return seen[point], name, point
        for point in mine:
            seen[point] = name
    raise AssertionError("no collision among 100 names")


def test_points_are_murmur3_of_name_nul_index_nul_point_in_the_1_to_65535_range() -> None:
    assert ring_point("orders-aggregator-pod-2345-consumer", 0, 1) == sticky_key_hash(
        b"orders-aggregator-pod-2345-consumer\x000\x001", RING_RANGE)
    assert ring_point("c", 0, 0) != ring_point("c", 1, 0)


def test_each_consumer_marks_100_points_by_default() -> None:
    sel = ConsistentHashingSelector()
    sel.add_consumer(C("only"))
    assert len(sel._sorted_points) == 100
    assert ConsistentHashingSelector(points=7).points == 7


def test_no_consumer_selects_nobody() -> None:
    assert ConsistentHashingSelector().select(100) is None


def test_a_hash_goes_to_the_first_point_clockwise_at_or_after_it() -> None:
    sel = ConsistentHashingSelector(points=10)
    a, b = C("a"), C("b")
    sel.add_consumer(a)
    sel.add_consumer(b)
    points = sel._sorted_points
    owner = {p: sel.select(p) for p in points}
    for p, q in zip(points, points[1:]):
        assert sel.select(p + 1) is owner[q]  # just past a point: the next point's owner
        assert sel.select(q) is owner[q]


def test_hashes_past_the_last_point_wrap_to_the_first_point() -> None:
    sel = ConsistentHashingSelector(points=10)
    a, b = C("a"), C("b")
    sel.add_consumer(a)
    sel.add_consumer(b)
    first_point, last_point = sel._sorted_points[0], sel._sorted_points[-1]
    assert last_point < 65535
    assert sel.select(last_point + 1) is sel.select(first_point)
    assert sel.select(65535) is sel.select(first_point)


def test_select_agrees_with_the_reported_ranges_which_cover_1_to_65535() -> None:
    sel = ConsistentHashingSelector()
    for i in range(5):
        sel.add_consumer(C(f"consumer-{i}"))
    spans = sel.assignments()
    assert spans[0][0] == 1 and spans[-1][1] == 65535
    assert all(x[1] + 1 == y[0] for x, y in zip(spans, spans[1:]))
    for h in range(1, 65536, 97):
        assert sel.select(h) is owner_by_assignments(sel, h)
    assert sum(len(r) for r in sel.key_hash_ranges().values()) == len(spans)


def test_keys_spread_evenly_over_ten_consumers() -> None:
    sel = ConsistentHashingSelector()
    for i in range(10):
        sel.add_consumer(C(f"consumer-{i}"))
    counts = Counter(sel.select(sel.make_hash(f"key-{i}".encode())) for i in range(50000))
    shares = sorted(n / 50000 for n in counts.values())
    assert len(shares) == 10
    assert shares[0] > 0.06 and shares[-1] < 0.15


def test_a_newcomer_takes_a_slice_from_each_consumer_and_nothing_else_moves() -> None:
    sel = ConsistentHashingSelector()
    old = [C(f"consumer-{i}") for i in range(5)]
    for c in old:
        sel.add_consumer(c)
    newcomer = C("newcomer")
    changes = sel.add_consumer(newcomer)
    assert changes and all(ch.current is newcomer for ch in changes)
    assert {ch.previous for ch in changes} == set(old)
    moved = sum(ch.end - ch.start + 1 for ch in changes)
    assert 65535 / 6 * 0.6 < moved < 65535 / 6 * 1.4


def test_a_leaver_only_hands_out_its_own_hashes() -> None:
    sel = ConsistentHashingSelector()
    consumers = [C(f"consumer-{i}") for i in range(5)]
    for c in consumers:
        sel.add_consumer(c)
    before = {h: sel.select(h) for h in range(1, 65536, 13)}
    leaver = consumers[2]
    changes = sel.remove_consumer(leaver)
    assert changes and all(ch.previous is leaver and ch.current is not None for ch in changes)
    for h, owner in before.items():
        if owner is not leaver:
            assert sel.select(h) is owner


def test_change_report_matches_the_hashes_that_moved() -> None:
    sel = ConsistentHashingSelector(points=20)
    a, b = C("a"), C("b")
    sel.add_consumer(a)
    before = {h: sel.select(h) for h in range(1, 65536)}
    changes = sel.add_consumer(b)
    moved = {h for h in range(1, 65536) if sel.select(h) is not before[h]}
    reported = {h for ch in changes for h in range(ch.start, ch.end + 1)}
    assert moved == reported
    assert all(ch == OwnerChange(ch.start, ch.end, a, b) for ch in changes)


def test_a_colliding_point_belongs_to_the_first_added_consumer() -> None:
    first_name, second_name, point = colliding_names()
    sel = ConsistentHashingSelector()
    first, second = C(first_name), C(second_name)
    sel.add_consumer(first)
    sel.add_consumer(second)
    assert sel.select(point) is first
    other = ConsistentHashingSelector()
    other.add_consumer(second)
    other.add_consumer(first)
    assert other.select(point) is second


def test_a_colliding_point_passes_to_the_next_consumer_when_its_owner_leaves() -> None:
    first_name, second_name, point = colliding_names()
    sel = ConsistentHashingSelector()
    first, second = C(first_name), C(second_name)
    sel.add_consumer(first)
    sel.add_consumer(second)
    sel.remove_consumer(first)
    assert sel.select(point) is second
    assert point in sel._sorted_points
    sel.add_consumer(first)  # back, but now it waits behind the second
    assert sel.select(point) is second
    sel.remove_consumer(second)
    assert sel.select(point) is first


def test_consumers_with_the_same_name_get_different_points() -> None:
    sel = ConsistentHashingSelector()
    a, b = C("same"), C("same")
    sel.add_consumer(a)
    sel.add_consumer(b)
    assert len(sel._sorted_points) >= 195  # a few may collide, never all
    shares = Counter(sel.select(h) for h in range(1, 65536, 7))
    assert set(shares) == {a, b}


def test_a_rejoining_name_gets_its_old_points_back() -> None:
    sel = ConsistentHashingSelector()
    first = C("pod")
    sel.add_consumer(first)
    sel.add_consumer(C("other"))
    ranges_before = sel.key_hash_ranges()[first]
    sel.remove_consumer(first)
    again = C("pod")
    sel.add_consumer(again)
    assert sel.key_hash_ranges()[again] == ranges_before


def test_removing_every_consumer_empties_the_ring() -> None:
    sel = ConsistentHashingSelector()
    consumers = [C("a"), C("a"), C("b")]
    for c in consumers:
        sel.add_consumer(c)
    for c in consumers:
        sel.remove_consumer(c)
    assert sel._ring == {} and sel.select(5) is None and sel.assignments() == []
    assert sel.remove_consumer(consumers[0]) == []


def test_points_must_be_positive() -> None:
    with pytest.raises(ValueError, match="ReplicaPoints"):
        ConsistentHashingSelector(points=0)
