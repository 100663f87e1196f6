"""STICKY selector: consumer-supplied hash ranges (Pulsar ``HashRangeExclusiveStickyKeyConsumerSelector``).

Design: each consumer brings its own inclusive ranges within ``0..65535`` (the client's
``KeySharedPolicy.stickyHashRange().ranges(...)``). They are kept as a list sorted by start with the end and
owner of each; ``select(h)`` bisects for the last range starting at or before ``h`` and checks that ``h``
is inside it -- a hash in no range selects None and its messages wait (the user is responsible for covering
the whole space). Keys hash with ``murmur % 65536`` (0 bumped to 1), as for AUTO_SPLIT.

A consumer is rejected with ``ConsumerAssignError``, and the selector is left exactly as it was, when its
ranges are missing (empty), out of ``0..65535``, reversed (start > end), overlap each other, or overlap a
range of a consumer already added; the message names the offending range and the conflicting consumer.
Removing a consumer leaves its ranges unowned. Pulsar applies draining hashes only to AUTO_SPLIT, but the
change report works here too.

Example (the seed's)::

    C1 = [0, 16383], [32768, 49151]        0        16384      32768      49152      65535
    C2 = [16384, 32767], [49152, 65535]    |-- C1 ---|-- C2 ----|-- C1 ----|-- C2 ----|

``Order-3459134`` hashes to 6067, inside ``[0, 16383]``: C1.
"""
from __future__ import annotations

import bisect
from typing import Any, Iterable, Sequence

from broker_core.errors import ConsumerAssignError
from dispatch.selectors.base import Assignment, OwnerChange, StickyKeyConsumerSelector
from dispatch.sticky_key import FULL_RANGE


class HashRangeExclusiveSelector(StickyKeyConsumerSelector):
    """STICKY: every consumer owns exactly the ranges it asked for; overlaps are refused."""

    def __init__(self) -> None:
        self.key_hash_range = FULL_RANGE
        self._starts: list[int] = []
        self._ends: list[int] = []  # parallel to _starts
        self._owners: list[Any] = []  # parallel to _starts
        self._ranges_of: dict[Any, list[tuple[int, int]]] = {}  # consumer -> its sorted ranges, add order

    def add_consumer(self, consumer: Any,
                     ranges: Iterable[Sequence[int]] | None = None) -> list[OwnerChange]:
        """Add ``consumer`` with ``ranges`` (default: ``consumer.sticky_ranges``), inclusive ``(start, end)``.

        Raises ``ConsumerAssignError`` (nothing changes) for missing, out-of-range, reversed or
        overlapping ranges.
        """
        if consumer in self._ranges_of:
            raise ValueError(f"consumer {consumer.consumer_name!r} was already added")
        if ranges is None:
            ranges = getattr(consumer, "sticky_ranges", None)
        checked = self._validate(consumer.consumer_name, ranges)
        before = self.assignments()
        for start, end in checked:
            i = bisect.bisect_left(self._starts, start)
            self._starts.insert(i, start)
            self._ends.insert(i, end)
            self._owners.insert(i, consumer)
        self._ranges_of[consumer] = checked
        return self._changes_since(before)

    def remove_consumer(self, consumer: Any) -> list[OwnerChange]:
        if self._ranges_of.pop(consumer, None) is None:
            return []
        before = self.assignments()
        keep = [i for i, owner in enumerate(self._owners) if owner is not consumer]
        self._starts = [self._starts[i] for i in keep]
        self._ends = [self._ends[i] for i in keep]
        self._owners = [self._owners[i] for i in keep]
        return self._changes_since(before)

    def select(self, hash_: int) -> Any | None:
        i = bisect.bisect_right(self._starts, hash_) - 1
        if i >= 0 and hash_ <= self._ends[i]:
            return self._owners[i]
        return None

    def assignments(self) -> list[Assignment]:
        result: list[Assignment] = []
        for start, end, owner in zip(self._starts, self._ends, self._owners):
            if result and result[-1][2] is owner and result[-1][1] == start - 1:
                result[-1] = (result[-1][0], end, owner)
            else:
                result.append((start, end, owner))
        return result

    def key_hash_ranges(self) -> dict[Any, list[tuple[int, int]]]:
        # the ranges as the consumer asked for them (adjacent ones are not joined), as Pulsar reports them
        return {consumer: list(ranges) for consumer, ranges in self._ranges_of.items()}

    def consumers(self) -> list[Any]:
        return list(self._ranges_of)

    def _validate(self, name: str, ranges: Iterable[Sequence[int]] | None) -> list[tuple[int, int]]:
        first, last = self.key_hash_range
        checked: list[tuple[int, int]] = []
        for item in ranges or ():
            try:
                start, end = (int(v) for v in item)
            except (TypeError, ValueError):
                raise ConsumerAssignError(
                    f"Consumer {name!r}: a sticky hash range must be a (start, end) pair of ints, got "
                    f"{item!r}", consumer=name) from None
            if not first <= start <= end <= last:
                raise ConsumerAssignError(
                    f"Consumer {name!r}: sticky hash range [{start}, {end}] must satisfy "
                    f"{first} <= start <= end <= {last}", consumer=name, range=[start, end])
            checked.append((start, end))
        if not checked:
            raise ConsumerAssignError(
                f"Consumer {name!r}: Key_Shared STICKY mode needs at least one hash range "
                f"(key_shared_policy sticky_ranges), got none", consumer=name)
        checked.sort()
        for (s1, e1), (s2, e2) in zip(checked, checked[1:]):
            if s2 <= e1:
                raise ConsumerAssignError(
                    f"Consumer {name!r}: its own sticky hash ranges [{s1}, {e1}] and [{s2}, {e2}] overlap",
                    consumer=name, range=[s2, e2], conflicting_range=[s1, e1])
        for start, end in checked:
            i = bisect.bisect_right(self._starts, end) - 1  # the last existing range starting <= end
            if i >= 0 and self._ends[i] >= start:
                other = self._owners[i]
                raise ConsumerAssignError(
                    f"Consumer {name!r}: sticky hash range [{start}, {end}] overlaps range "
                    f"[{self._starts[i]}, {self._ends[i]}] of consumer {other.consumer_name!r}",
                    consumer=name, range=[start, end], conflicting_consumer=other.consumer_name,
                    conflicting_range=[self._starts[i], self._ends[i]])
        return checked
