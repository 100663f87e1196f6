"""STICKY (hash range exclusive) selector (seed 003: Key_Shared, Sticky)."""
from __future__ import annotations

import pytest

from broker_core.errors import ConsumerAssignError
from dispatch.selectors import HashRangeExclusiveSelector, OwnerChange


class C:
    """A stand-in consumer: identity-hashed, with a name and optionally its sticky ranges."""

    def __init__(self, name: str, sticky_ranges: list[tuple[int, int]] | None = None) -> None:
        self.consumer_name = name
        self.sticky_ranges = sticky_ranges

    def __repr__(self) -> str:
        return self.consumer_name


def seed_pair() -> tuple[HashRangeExclusiveSelector, C, C]:
    sel = HashRangeExclusiveSelector()
    c1, c2 = C("C1"), C("C2")
    sel.add_consumer(c1, [(0, 16383), (32768, 49151)])
    sel.add_consumer(c2, [(16384, 32767), (49152, 65535)])
    return sel, c1, c2


def test_seed_example_order_3459134_goes_to_c1() -> None:
    sel, c1, c2 = seed_pair()
    assert sel.make_hash(b"Order-3459134") == 6067
    assert sel.select(6067) is c1


def test_each_hash_goes_to_the_consumer_whose_range_holds_it() -> None:
    sel, c1, c2 = seed_pair()
    assert [sel.select(h) for h in (0, 16383, 16384, 32767, 32768, 49151, 49152, 65535)] == \
        [c1, c1, c2, c2, c1, c1, c2, c2]


def test_a_hash_in_no_range_selects_nobody_so_its_messages_wait() -> None:
    sel = HashRangeExclusiveSelector()
    c1 = C("c1")
    sel.add_consumer(c1, [(0, 9999), (20000, 29999)])
    assert sel.select(15000) is None  # a gap between two ranges of the same consumer
    assert sel.select(30000) is None
    assert sel.select(20000) is c1


def test_ranges_default_to_the_consumers_sticky_ranges() -> None:
    sel = HashRangeExclusiveSelector()
    c1 = C("c1", [(100, 200)])
    sel.add_consumer(c1)
    assert sel.key_hash_ranges() == {c1: [(100, 200)]}


def test_missing_ranges_are_refused() -> None:
    sel = HashRangeExclusiveSelector()
    with pytest.raises(ConsumerAssignError, match="at least one hash range"):
        sel.add_consumer(C("c1"))
    with pytest.raises(ConsumerAssignError, match="at least one hash range"):
        sel.add_consumer(C("c1"), [])
    assert sel.consumers() == []


@pytest.mark.parametrize("bad", [(-1, 10), (0, 65536), (10, 5), (70000, 70001)])
def test_out_of_range_or_reversed_ranges_are_refused(bad: tuple[int, int]) -> None:
    sel = HashRangeExclusiveSelector()
    with pytest.raises(ConsumerAssignError, match=r"0 <= start <= end <= 65535") as info:
        sel.add_consumer(C("c1"), [(0, 5), bad] if bad[0] > 5 else [bad])
    assert info.value.range == list(bad)
    assert sel.assignments() == []


def test_a_malformed_range_is_refused() -> None:
    with pytest.raises(ConsumerAssignError, match="pair of ints"):
        HashRangeExclusiveSelector().add_consumer(C("c1"), [(1, 2, 3)])


def test_a_consumers_own_overlapping_ranges_are_refused() -> None:
    with pytest.raises(ConsumerAssignError, match=r"own sticky hash ranges \[0, 100\] and \[100, 200\]"):
        HashRangeExclusiveSelector().add_consumer(C("c1"), [(100, 200), (0, 100)])


def test_overlap_with_another_consumer_is_refused_naming_it_and_nothing_changes() -> None:
    sel, c1, c2 = seed_pair()
    before = sel.assignments()
    c3 = C("C3")
    with pytest.raises(ConsumerAssignError) as info:
        sel.add_consumer(c3, [(60000, 60010), (40000, 40000)])
    err = info.value
    assert "'C1'" in err.message and "[32768, 49151]" in err.message and "[40000, 40000]" in err.message
    assert err.conflicting_consumer == "C1" and err.conflicting_range == [32768, 49151]
    assert err.consumer == "C3" and err.range == [40000, 40000]
    assert sel.assignments() == before and sel.consumers() == [c1, c2]


@pytest.mark.parametrize("new", [(16383, 16383), (16000, 17000), (0, 65535), (49151, 49152)])
def test_any_touching_overlap_is_a_conflict(new: tuple[int, int]) -> None:
    sel, _, _ = seed_pair()
    with pytest.raises(ConsumerAssignError, match="overlaps range"):
        sel.add_consumer(C("C3"), [new])


def test_adjacent_ranges_do_not_conflict() -> None:
    sel = HashRangeExclusiveSelector()
    a, b = C("a"), C("b")
    sel.add_consumer(a, [(0, 99)])
    sel.add_consumer(b, [(100, 199)])
    assert sel.select(99) is a and sel.select(100) is b


def test_a_refused_consumer_can_retry_with_free_ranges() -> None:
    sel = HashRangeExclusiveSelector()
    sel.add_consumer(C("a"), [(0, 99)])
    b = C("b")
    with pytest.raises(ConsumerAssignError):
        sel.add_consumer(b, [(50, 150)])
    assert sel.add_consumer(b, [(100, 150)]) == [OwnerChange(100, 150, None, b)]


def test_removing_a_consumer_leaves_its_ranges_unowned_and_free() -> None:
    sel, c1, c2 = seed_pair()
    changes = sel.remove_consumer(c1)
    assert changes == [OwnerChange(0, 16383, c1, None), OwnerChange(32768, 49151, c1, None)]
    assert sel.select(6067) is None and sel.select(20000) is c2
    c3 = C("C3")
    sel.add_consumer(c3, [(0, 49151 - 16384 * 2)])
    assert sel.select(6067) is c3
    assert sel.remove_consumer(c1) == []


def test_key_hash_ranges_report_each_consumers_ranges_as_given() -> None:
    sel, c1, c2 = seed_pair()
    assert sel.key_hash_ranges() == {c1: [(0, 16383), (32768, 49151)],
                                     c2: [(16384, 32767), (49152, 65535)]}


def test_more_ranges_than_hashes_are_refused_before_any_is_read() -> None:
    sel = HashRangeExclusiveSelector()
    with pytest.raises(ConsumerAssignError, match="cannot be disjoint"):
        sel.add_consumer(C("many"), [(0, 0)] * 65_537)
    assert sel.consumers() == []


def test_one_range_per_hash_is_accepted_and_changes_exactly_those_hashes() -> None:
    sel = HashRangeExclusiveSelector()
    evens, odds = C("evens"), C("odds")
    sel.add_consumer(evens, [(h, h) for h in range(0, 65536, 2)])
    changes = sel.add_consumer(odds, [(h, h) for h in range(1, 65536, 2)])
    assert len(changes) == 32768 and changes[0] == OwnerChange(1, 1, None, odds)
    assert (sel.select(6), sel.select(7)) == (evens, odds)
    assert sel.remove_consumer(evens)[-1] == OwnerChange(65534, 65534, evens, None)
