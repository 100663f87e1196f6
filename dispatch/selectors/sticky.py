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


MAX_STICKY_RANGES = FULL_RANGE[1] - FULL_RANGE[0] + 1
"""One range per hash at most: a consumer asking for more has overlapping ones (front ends read no more than
one past this from a request, so the refusal costs no more than that)."""


def _start(assignment: tuple) -> int:
    return assignment[0]


def _owner_changes(ranges: Sequence[tuple[int, int]], previous: Any, current: Any) -> list[OwnerChange]:
    """``ranges`` (sorted, disjoint) passing from ``previous`` to ``current``, adjacent ones joined: what
    :func:`~dispatch.selectors.base.diff_assignments` finds when only they change."""
    changes: list[OwnerChange] = []
    for start, end in ranges:
        if changes and changes[-1].end == start - 1:
            changes[-1] = changes[-1]._replace(end=end)
        else:
            changes.append(OwnerChange(start, end, previous, current))
    return changes


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
        # one merge of two sorted runs (an insert per range moved the lists' tails once per range)
        merged = sorted([*zip(self._starts, self._ends, self._owners), *((s, e, consumer) for s, e in checked)],
                        key=_start)
        self._starts = [m[0] for m in merged]
        self._ends = [m[1] for m in merged]
        self._owners = [m[2] for m in merged]
        self._ranges_of[consumer] = checked
        # overlaps are refused, so exactly the newcomer's ranges change owner (from none): no diff of the
        # whole assignment, whose size is every consumer's ranges
        return _owner_changes(checked, None, consumer)

    def remove_consumer(self, consumer: Any) -> list[OwnerChange]:
        ranges = self._ranges_of.pop(consumer, None)
        if ranges is None:
            return []
        keep = [i for i, owner in enumerate(self._owners) if owner is not consumer]
        self._starts = [self._starts[i] for i in keep]
        self._ends = [self._ends[i] for i in keep]
        self._owners = [self._owners[i] for i in keep]
        return _owner_changes(ranges, consumer, None)

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
        items = list(ranges or ())
        if len(items) > last - first + 1:  # more ranges than hashes: some overlap, whatever they are
            raise ConsumerAssignError(
                f"Consumer {name!r}: {len(items)} sticky hash ranges cannot be disjoint within {first}..{last}",
                consumer=name)
        checked: list[tuple[int, int]] = []
        for item in items:
            try:
                start, end = item
                start, end = int(start), int(end)
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
