"""Consistent hashing selector (Pulsar 4.0 ``ConsistentHashingStickyKeyConsumerSelector``).

Used for AUTO_SPLIT when the broker config ``subscriptionKeySharedUseConsistentHashing`` is on.

Design: a ring over the key hash range ``1..65535`` (PIP-379's 2^16 - 1 ring; keys hash with
``murmur % 65535 + 1``). Each consumer marks ``points`` points (broker config
``subscriptionKeySharedConsistentHashingReplicaPoints``, default 100); point ``i`` (0-based) of a
consumer is the sticky key hash of the UTF-8 bytes ``f"{name}\\0{name_index}\\0{i}"``. The NUL separators
keep ``consumer1`` + ``11`` apart from ``consumer11`` + ``1``; ``name_index`` is the smallest index not in
use by another live consumer of the same name, so duplicate names get different points and a consumer that
leaves and rejoins gets its old points back. (The seed's text numbers the points 1..100 and shows
illustrative values; Pulsar's code uses ``i`` in ``0..points-1``, which we follow.)

``select(h)`` returns the owner of the first point at or after ``h`` clockwise, wrapping to the first point.
When points collide, the consumer added first keeps the point and the later ones queue behind it; when the
owner leaves, the next one in the queue takes the point over. A newcomer's ~100 points each cut a slice
out of whichever consumer owned the arc, so it takes a little from everyone and nothing else moves.

Example (the ring is sorted points with their selected owner; one bisection per select)::

    points:  ... 6028:c1   9100:c2   12001:c1 ...
    select(7000) -> c2 (first point >= 7000 is 9100)   select(65535) -> owner of the lowest point
"""
from __future__ import annotations

import bisect
import logging
from typing import Any

from dispatch.selectors.base import Assignment, OwnerChange, StickyKeyConsumerSelector
from dispatch.sticky_key import RING_RANGE, sticky_key_hash

log = logging.getLogger(__name__)

DEFAULT_REPLICA_POINTS = 100


def ring_point(consumer_name: str, name_index: int, point_index: int) -> int:
    """Where point ``point_index`` of the ``name_index``-th live consumer named ``consumer_name`` sits."""
    key = f"{consumer_name}\0{name_index}\0{point_index}".encode("utf-8")
    return sticky_key_hash(key, RING_RANGE)


class ConsistentHashingSelector(StickyKeyConsumerSelector):
    """AUTO_SPLIT by consistent hashing: ``points`` ring points per consumer, first added wins a collision."""

    def __init__(self, points: int = DEFAULT_REPLICA_POINTS) -> None:
        if points < 1:
            raise ValueError(f"points (subscriptionKeySharedConsistentHashingReplicaPoints) must be >= 1, "
                             f"not {points}")
        self.points = points
        self.key_hash_range = RING_RANGE
        self._ring: dict[int, list[Any]] = {}  # point -> [selected owner, *colliding in add order]
        self._sorted_points: list[int] = []
        self._selected: list[Any] = []  # owner of each point in _sorted_points
        self._name_index: dict[Any, int] = {}  # consumer -> its name index, in add order
        self._indexes_in_use: dict[str, set[int]] = {}

    def add_consumer(self, consumer: Any) -> list[OwnerChange]:
        if consumer in self._name_index:
            raise ValueError(f"consumer {consumer.consumer_name!r} was already added")
        before = self.assignments()
        name = consumer.consumer_name
        in_use = self._indexes_in_use.setdefault(name, set())
        index = next(i for i in range(len(in_use) + 1) if i not in in_use)
        in_use.add(index)
        self._name_index[consumer] = index
        added = 0
        for i in range(self.points):
            point = ring_point(name, index, i)
            owners = self._ring.get(point)
            if owners is None:
                self._ring[point] = [consumer]
                added += 1
            else:
                owners.append(consumer)  # collision: waits behind the current owner
        if added == 0:
            log.error("event=hash_ring_no_point consumer=%s points=%d hint=raise_"
                      "subscriptionKeySharedConsistentHashingReplicaPoints", name, self.points)
        self._rebuild()
        return self._changes_since(before)

    def remove_consumer(self, consumer: Any) -> list[OwnerChange]:
        index = self._name_index.pop(consumer, None)
        if index is None:
            return []
        before = self.assignments()
        name = consumer.consumer_name
        for i in range(self.points):
            point = ring_point(name, index, i)
            owners = self._ring[point]
            for k, owner in enumerate(owners):
                if owner is consumer:
                    del owners[k]  # if it was owners[0], the next colliding consumer takes the point
                    break
            if not owners:
                del self._ring[point]
        in_use = self._indexes_in_use[name]
        in_use.discard(index)
        if not in_use:
            del self._indexes_in_use[name]
        self._rebuild()
        return self._changes_since(before)

    def select(self, hash_: int) -> Any | None:
        points = self._sorted_points
        if not points:
            return None
        i = bisect.bisect_left(points, hash_)
        return self._selected[i if i < len(points) else 0]

    def assignments(self) -> list[Assignment]:
        points, selected = self._sorted_points, self._selected
        if not points:
            return []
        first, last = self.key_hash_range
        result: list[Assignment] = []
        start = first
        for point, owner in zip(points, selected):
            if result and result[-1][2] is owner:
                result[-1] = (result[-1][0], point, owner)
            else:
                result.append((start, point, owner))
            start = point + 1
        if points[-1] != last:  # the arc after the last point wraps to the first point's owner
            owner = selected[0]
            if result[-1][2] is owner:
                result[-1] = (result[-1][0], last, owner)
            else:
                result.append((points[-1] + 1, last, owner))
        return result

    def consumers(self) -> list[Any]:
        return list(self._name_index)

    def _rebuild(self) -> None:
        self._sorted_points = sorted(self._ring)
        self._selected = [self._ring[p][0] for p in self._sorted_points]
