"""The one interface of the Key_Shared consumer selectors (Pulsar's ``StickyKeyConsumerSelector``).

A selector maps a sticky key hash to the consumer that owns it. Three implementations follow Pulsar 4.0:
:class:`~dispatch.selectors.auto_split.HashRangeAutoSplitSelector` (AUTO_SPLIT, the default),
:class:`~dispatch.selectors.consistent_hashing.ConsistentHashingSelector` (AUTO_SPLIT with broker config
``subscriptionKeySharedUseConsistentHashing``) and
:class:`~dispatch.selectors.sticky.HashRangeExclusiveSelector` (STICKY, consumer-supplied ranges).

Every membership change returns what it changed, as a list of :class:`OwnerChange` (the maximal inclusive
hash ranges whose owner is not the same consumer before and after), computed by diffing the assignment
before and after (:func:`diff_assignments`) as Pulsar's ``ConsumerHashAssignmentsSnapshot`` does. The
draining-hashes tracker (:mod:`dispatch.draining`) turns the ranges a consumer *lost* into draining hashes.

A dispatcher walking entries in offset order does, per entry (one hash per entry, a key-based batch having
one key)::

    h = selector.make_hash(sticky_key_of(entry.metadata))   # once per entry; cache it with the entry
    consumer = selector.select(h)                            # None: nobody owns h (STICKY gap) -> wait
    if consumer is None or tracker.should_block(consumer, h):
        ...keep the entry for later...

Consumers are opaque hashable objects with a ``consumer_name``; they are compared by identity (``is``),
as Pulsar 4.0 does, so two consumers with the same name are still two consumers.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Hashable, NamedTuple, Sequence

from dispatch.sticky_key import FULL_RANGE, sticky_key_hash

Consumer = Hashable
"""Any hashable object with a ``consumer_name`` attribute (``dispatch.consumer.Consumer`` in the broker)."""


class OwnerChange(NamedTuple):
    """Hashes ``start..end`` (inclusive) moved from ``previous`` to ``current`` (either may be None)."""

    start: int
    end: int
    previous: Any
    """Owner before the change; None if nobody owned these hashes."""
    current: Any
    """Owner after the change; None if nobody owns them now (a STICKY consumer left)."""


Assignment = tuple[int, int, Any]
"""``(start, end, consumer)``: one inclusive hash range and its owner."""


def diff_assignments(before: Sequence[Assignment], after: Sequence[Assignment]) -> list[OwnerChange]:
    """The hash ranges whose owner differs between two sorted, non-overlapping assignment lists.

    >>> a, b = "A", "B"
    >>> diff_assignments([(0, 9, a)], [(0, 4, b), (5, 9, a)])
    [OwnerChange(start=0, end=4, previous='A', current='B')]
    """
    cuts = sorted({s for s, _, _ in before} | {e + 1 for _, e, _ in before}
                  | {s for s, _, _ in after} | {e + 1 for _, e, _ in after})
    changes: list[OwnerChange] = []
    bi = ai = 0
    for lo, nxt in zip(cuts, cuts[1:]):
        # each [lo, nxt) lies wholly inside or outside every range of both lists
        while bi < len(before) and before[bi][1] < lo:
            bi += 1
        while ai < len(after) and after[ai][1] < lo:
            ai += 1
        previous = before[bi][2] if bi < len(before) and before[bi][0] <= lo else None
        current = after[ai][2] if ai < len(after) and after[ai][0] <= lo else None
        if previous is current:
            continue
        last = changes[-1] if changes else None
        if last is not None and last.end == lo - 1 and last.previous is previous and last.current is current:
            changes[-1] = last._replace(end=nxt - 1)
        else:
            changes.append(OwnerChange(lo, nxt - 1, previous, current))
    return changes


def lost_ranges(changes: Sequence[OwnerChange]) -> dict[Any, list[tuple[int, int]]]:
    """Per previous owner, the inclusive ranges it lost (sorted): Pulsar's "removed hash ranges"."""
    lost: dict[Any, list[tuple[int, int]]] = {}
    for change in changes:
        if change.previous is not None:
            lost.setdefault(change.previous, []).append((change.start, change.end))
    for ranges in lost.values():
        ranges.sort()
    return lost


class StickyKeyConsumerSelector(ABC):
    """Maps a sticky key hash to its consumer.

    ``add_consumer(c)`` / ``remove_consumer(c)`` return the :class:`OwnerChange` list (a failed add raises
    ``ConsumerAssignError`` and changes nothing); ``select(h)`` is the hot path; ``key_hash_ranges()``
    feeds the consumer stat ``keyHashRangeArrays``. Adding a consumer twice is a programming error.

    Example with :class:`~dispatch.selectors.auto_split.HashRangeAutoSplitSelector`::

        >>> from dispatch.selectors import HashRangeAutoSplitSelector
        >>> class C:
        ...     def __init__(self, name): self.consumer_name = name
        ...     def __repr__(self): return self.consumer_name
        >>> sel, c1, c2 = HashRangeAutoSplitSelector(), C("c1"), C("c2")
        >>> sel.add_consumer(c1)
        [OwnerChange(start=0, end=65536, previous=None, current=c1)]
        >>> sel.add_consumer(c2)
        [OwnerChange(start=0, end=32768, previous=c1, current=c2)]
        >>> sel.select(sel.make_hash(b"Order-3459134"))   # hash 6067
        c2
        >>> sel.key_hash_ranges()
        {c2: [(0, 32768)], c1: [(32769, 65536)]}
    """

    key_hash_range: tuple[int, int] = FULL_RANGE
    """The inclusive range :meth:`make_hash` maps keys into."""

    def make_hash(self, key: bytes) -> int:
        """The sticky key hash of ``key`` for this selector (see :mod:`dispatch.sticky_key`)."""
        return sticky_key_hash(key, self.key_hash_range)

    @abstractmethod
    def add_consumer(self, consumer: Any) -> list[OwnerChange]:
        """Give ``consumer`` its share of the hash space; returns what moved."""

    @abstractmethod
    def remove_consumer(self, consumer: Any) -> list[OwnerChange]:
        """Take ``consumer``'s hashes away (unknown consumers: no-op, ``[]``); returns what moved."""

    @abstractmethod
    def select(self, hash_: int) -> Any | None:
        """The consumer that owns ``hash_``, or None (no consumers, or a STICKY gap)."""

    @abstractmethod
    def assignments(self) -> list[Assignment]:
        """Every owned range as ``(start, end, consumer)``, sorted, non-overlapping, adjacent same-owner
        ranges joined."""

    @abstractmethod
    def consumers(self) -> list[Any]:
        """The consumers, in the order they were added."""

    def key_hash_ranges(self) -> dict[Any, list[tuple[int, int]]]:
        """Per consumer, its inclusive ``(start, end)`` ranges in hash order: ``keyHashRangeArrays``."""
        result: dict[Any, list[tuple[int, int]]] = {}
        for start, end, consumer in self.assignments():
            result.setdefault(consumer, []).append((start, end))
        return result

    def _changes_since(self, before: list[Assignment]) -> list[OwnerChange]:
        return diff_assignments(before, self.assignments())
