"""AUTO_SPLIT hash range selector (seed 003: Key_Shared, Auto-split Hash Range)."""
from __future__ import annotations

import doctest

import pytest

import dispatch.selectors.base
from broker_core.errors import ConsumerAssignError
from dispatch.selectors import HashRangeAutoSplitSelector, OwnerChange


class C:
    """A stand-in consumer: identity-hashed, with a name."""

    def __init__(self, name: str) -> None:
        self.consumer_name = name

    def __repr__(self) -> str:
        return self.consumer_name


def ranges(sel: HashRangeAutoSplitSelector) -> list[tuple[int, int, str]]:
    return [(s, e, c.consumer_name) for s, e, c in sel.assignments()]


def test_interface_example_holds() -> None:
    assert doctest.testmod(dispatch.selectors.base).failed == 0


def test_no_consumer_selects_nobody() -> None:
    assert HashRangeAutoSplitSelector().select(6067) is None


def test_seed_walk_through_c1_to_c4_then_c4_and_c1_leave() -> None:
    sel = HashRangeAutoSplitSelector()
    c1, c2, c3, c4 = C("C1"), C("C2"), C("C3"), C("C4")
    sel.add_consumer(c1)
    assert ranges(sel) == [(0, 65536, "C1")]
    sel.add_consumer(c2)
    assert ranges(sel) == [(0, 32768, "C2"), (32769, 65536, "C1")]
    sel.add_consumer(c3)
    assert ranges(sel) == [(0, 16384, "C3"), (16385, 32768, "C2"), (32769, 65536, "C1")]
    sel.add_consumer(c4)
    assert ranges(sel) == [(0, 16384, "C3"), (16385, 32768, "C2"), (32769, 49152, "C4"),
                           (49153, 65536, "C1")]
    assert sel.select(sel.make_hash(b"Order-3459134")) is c3  # 6067, as in the seed
    sel.remove_consumer(c4)
    assert ranges(sel) == [(0, 16384, "C3"), (16385, 32768, "C2"), (32769, 65536, "C1")]
    sel.remove_consumer(c1)
    assert ranges(sel) == [(0, 16384, "C3"), (16385, 65536, "C2")]


def test_range_boundaries_are_inclusive_ends() -> None:
    sel = HashRangeAutoSplitSelector()
    c1, c2 = C("c1"), C("c2")
    sel.add_consumer(c1)
    sel.add_consumer(c2)
    assert sel.select(1) is c2 and sel.select(32768) is c2
    assert sel.select(32769) is c1 and sel.select(65535) is c1


def test_equal_largest_ranges_split_the_lowest_first() -> None:
    sel = HashRangeAutoSplitSelector()
    c1, c2, c3 = C("c1"), C("c2"), C("c3")
    for c in (c1, c2, c3):
        sel.add_consumer(c)
    sel.remove_consumer(c3)  # back to two halves of equal size
    c4 = C("c4")
    sel.add_consumer(c4)
    assert ranges(sel)[0] == (0, 16384, "c4")


def test_adding_reports_only_the_lower_half_moving_to_the_newcomer() -> None:
    sel = HashRangeAutoSplitSelector()
    c1, c2 = C("c1"), C("c2")
    assert sel.add_consumer(c1) == [OwnerChange(0, 65536, None, c1)]
    assert sel.add_consumer(c2) == [OwnerChange(0, 32768, c1, c2)]


def test_a_leaving_consumer_merges_into_the_range_on_its_right() -> None:
    sel = HashRangeAutoSplitSelector()
    c1, c2, c3 = C("c1"), C("c2"), C("c3")
    for c in (c1, c2, c3):
        sel.add_consumer(c)
    assert sel.remove_consumer(c3) == [OwnerChange(0, 16384, c3, c2)]
    assert ranges(sel) == [(0, 32768, "c2"), (32769, 65536, "c1")]


def test_the_last_range_merges_into_the_range_on_its_left() -> None:
    sel = HashRangeAutoSplitSelector()
    c1, c2 = C("c1"), C("c2")
    sel.add_consumer(c1)
    sel.add_consumer(c2)
    assert sel.remove_consumer(c1) == [OwnerChange(32769, 65536, c1, c2)]
    assert ranges(sel) == [(0, 65536, "c2")]
    c3 = C("c3")
    sel.add_consumer(c3)
    assert ranges(sel) == [(0, 32768, "c3"), (32769, 65536, "c2")]


def test_removing_the_only_consumer_empties_the_selector() -> None:
    sel = HashRangeAutoSplitSelector()
    c1 = C("c1")
    sel.add_consumer(c1)
    assert sel.remove_consumer(c1) == [OwnerChange(0, 65536, c1, None)]
    assert sel.select(1) is None and sel.key_hash_ranges() == {}


def test_removing_an_unknown_consumer_changes_nothing() -> None:
    sel = HashRangeAutoSplitSelector()
    sel.add_consumer(C("c1"))
    assert sel.remove_consumer(C("c1")) == []  # same name, another consumer
    assert len(sel.consumers()) == 1


def test_consumers_with_the_same_name_are_distinct() -> None:
    sel = HashRangeAutoSplitSelector()
    a, b = C("same"), C("same")
    sel.add_consumer(a)
    sel.add_consumer(b)
    assert sel.select(1) is b and sel.select(65535) is a


def test_adding_the_same_consumer_twice_is_a_programming_error() -> None:
    sel = HashRangeAutoSplitSelector()
    c1 = C("c1")
    sel.add_consumer(c1)
    with pytest.raises(ValueError):
        sel.add_consumer(c1)


def test_key_hash_ranges_are_the_keyHashRangeArrays_stat() -> None:
    sel = HashRangeAutoSplitSelector()
    c1, c2 = C("c1"), C("c2")
    sel.add_consumer(c1)
    sel.add_consumer(c2)
    assert sel.key_hash_ranges() == {c2: [(0, 32768)], c1: [(32769, 65536)]}


def test_when_no_range_can_split_the_consumer_is_refused_and_nothing_changes() -> None:
    sel = HashRangeAutoSplitSelector(range_size=4)
    consumers = [C(f"c{i}") for i in range(4)]
    for c in consumers:
        sel.add_consumer(c)
    before = ranges(sel)
    with pytest.raises(ConsumerAssignError, match="No hash range left"):
        sel.add_consumer(C("c5"))
    assert ranges(sel) == before and len(sel.consumers()) == 4


def test_range_size_must_be_a_power_of_two() -> None:
    with pytest.raises(ValueError):
        HashRangeAutoSplitSelector(range_size=1000)


def test_many_joins_and_leaves_keep_the_whole_space_covered() -> None:
    sel = HashRangeAutoSplitSelector()
    live = []
    for i in range(40):
        c = C(f"c{i}")
        sel.add_consumer(c)
        live.append(c)
        if i % 3 == 2:
            sel.remove_consumer(live.pop(i % len(live)))
        spans = sel.assignments()
        assert spans[0][0] == 0 and spans[-1][1] == 65536
        assert all(a[1] + 1 == b[0] for a, b in zip(spans, spans[1:]))
        assert {c for _, _, c in spans} == set(live)
