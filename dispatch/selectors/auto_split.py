"""AUTO_SPLIT hash range selector (Pulsar ``HashRangeAutoSplitStickyKeyConsumerSelector``).

Design: the hash space is cut into contiguous ranges, one per consumer. The state is a sorted list of
range *ends* (inclusive) with the owner of each; range i is ``(end[i-1] + 1) .. end[i]`` and the first
starts at 0. As in Pulsar, the first consumer's end is the range size 65536 (hashes never reach it;
``keyHashRangeArrays`` shows it, as Pulsar's stats do). ``select(h)`` is one bisection: the owner of the
first end >= h.

- **Add**: the first consumer owns everything. A newcomer splits the largest range -- measured as
  ``end - previous end`` (``end - 0`` for the first), ties going to the lowest range -- at
  ``end - (size >> 1)``: the newcomer takes the lower half, the owner keeps the upper half. A range of
  size 1 cannot split: ``ConsumerAssignError``.
- **Remove**: the leaving consumer's range merges into the range on its right; if it owned the last range
  (the one ending at 65536) the consumer on its left takes it over instead.

The seed's walk-through (boundaries are inclusive ends)::

    C1 joins  |------------------------------- C1 0..65536 ---------------------------------|
    C2 joins  |------------ C2 0..32768 ------------|-------- C1 32769..65536 -------------|
    C3 joins  |-- C3 0..16384 --|-- C2 ..32768 ----|-------- C1 32769..65536 -------------|
    C4 joins  |-- C3 0..16384 --|-- C2 ..32768 ----|-- C4 ..49152 --|-- C1 49153..65536 ----|
    C4 leaves |-- C3 0..16384 --|-- C2 ..32768 ----|-------- C1 32769..65536 -------------|
    C1 leaves |-- C3 0..16384 --|------------------ C2 16385..65536 ------------------------|

``murmur32("Order-3459134") % 65536 = 6067`` falls in ``0..16384``: with four consumers it goes to C3.
Each add or remove moves hashes between two consumers only; the price is uneven range sizes.
"""
from __future__ import annotations

import bisect
from typing import Any

from broker_core.errors import ConsumerAssignError
from dispatch.selectors.base import Assignment, OwnerChange, StickyKeyConsumerSelector
from dispatch.sticky_key import DEFAULT_RANGE_SIZE, FULL_RANGE


class HashRangeAutoSplitSelector(StickyKeyConsumerSelector):
    """AUTO_SPLIT: split the largest range for a newcomer; merge a leaver's range into its right neighbour."""

    def __init__(self, range_size: int = DEFAULT_RANGE_SIZE) -> None:
        if range_size < 2 or range_size & (range_size - 1):
            raise ValueError(f"range_size must be a power of 2 and at least 2, not {range_size}")
        self.range_size = range_size
        self.key_hash_range = FULL_RANGE if range_size == DEFAULT_RANGE_SIZE else (0, range_size - 1)
        self._ends: list[int] = []  # sorted inclusive range ends
        self._owners: list[Any] = []  # owner of each range, parallel to _ends
        self._end_of: dict[Any, int] = {}  # consumer -> the end of its range

    def add_consumer(self, consumer: Any) -> list[OwnerChange]:
        if consumer in self._end_of:
            raise ValueError(f"consumer {consumer.consumer_name!r} was already added")
        before = self.assignments()
        if not self._ends:
            self._insert(0, self.range_size, consumer)
            return self._changes_since(before)
        i = self._largest_range()
        lower = self._ends[i - 1] if i else 0
        end = self._ends[i]
        if end - lower <= 1:
            raise ConsumerAssignError(
                f"No hash range left for consumer {consumer.consumer_name!r}: every one of the "
                f"{len(self._ends)} ranges has a single hash", consumer=consumer.consumer_name)
        self._insert(i, end - ((end - lower) >> 1), consumer)
        return self._changes_since(before)

    def remove_consumer(self, consumer: Any) -> list[OwnerChange]:
        end = self._end_of.pop(consumer, None)
        if end is None:
            return []
        before = self.assignments()
        i = bisect.bisect_left(self._ends, end)
        if end == self.range_size and len(self._ends) > 1:
            # the last range has no right neighbour: the consumer on its left extends over it
            left = self._owners[i - 1]
            self._owners[i] = left
            self._end_of[left] = end
            del self._ends[i - 1], self._owners[i - 1]
        else:
            del self._ends[i], self._owners[i]
        return self._changes_since(before)

    def select(self, hash_: int) -> Any | None:
        ends = self._ends
        if not ends:
            return None
        i = bisect.bisect_left(ends, hash_)
        return self._owners[i] if i < len(ends) else None

    def assignments(self) -> list[Assignment]:
        result: list[Assignment] = []
        start = 0
        for end, owner in zip(self._ends, self._owners):
            result.append((start, end, owner))
            start = end + 1
        return result

    def consumers(self) -> list[Any]:
        return list(self._end_of)

    def _largest_range(self) -> int:
        best, best_size, lower = 0, 0, 0
        for i, end in enumerate(self._ends):
            if end - lower > best_size:  # strict: the lowest of equal ranges wins, as in Pulsar
                best, best_size = i, end - lower
            lower = end
        return best

    def _insert(self, i: int, end: int, consumer: Any) -> None:
        self._ends.insert(i, end)
        self._owners.insert(i, consumer)
        self._end_of[consumer] = end
