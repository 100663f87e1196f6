"""Acknowledgements on one subscription stream: individual acks grouped into ranges, and batch acks held
until the whole batch is acknowledged.

**Grouping.** Individual acks are collected for :data:`ACK_GROUP_S` (or until :data:`ACK_GROUP_MAX` of them)
and go out as one ``Ack`` of offset ranges. Example: acks of 7, 3, 4, 5, 10, 8 become the ranges
``[3, 6) [7, 9) [10, 11)``.

**Held batch acks** (``batch_index_ack_enabled=False``, the default, as in Pulsar): acknowledging one message
of a batch is held (a bit mask per entry) until every message of the batch is acknowledged; then the entry
is acknowledged whole. A partly acknowledged batch therefore comes back whole after a redelivery. Messages a
delivery's ack set leaves out were acknowledged before and count as acknowledged here.
"""
from __future__ import annotations

import threading
from typing import Callable, Iterable

from connector.client.transport.events import Ack
from connector.client.timer import TimerThread

ACK_GROUP_S = 0.01
"""Individual acks are grouped for this long (or up to ACK_GROUP_MAX) into one Ack request."""
ACK_GROUP_MAX = 1000
BATCH_MASKS_MAX = 10_000
"""Partly acknowledged batches whose held acks are remembered; past it the oldest is forgotten (its batch
comes back whole after a redelivery, as if none of its messages were acknowledged)."""


def offset_ranges(offsets: list[int]) -> tuple[tuple[int, int], ...]:
    """Sorted, merged ``[start, end)`` ranges covering ``offsets`` (sorted in place)."""
    offsets.sort()
    ranges: list[tuple[int, int]] = []
    start = end = offsets[0]
    for offset in offsets[1:]:
        if offset <= end + 1:
            end = max(end, offset)
        else:
            ranges.append((start, end + 1))
            start = end = offset
    ranges.append((start, end + 1))
    return tuple(ranges)


class AckGroup:
    """Individual acks of one stream, sent as ranges by ``send(request)`` (see the module docstring)."""

    def __init__(self, timer: TimerThread, send: Callable[[Ack], None]) -> None:
        self._timer = timer
        self._send = send
        self._lock = threading.Lock()
        self._offsets: list[int] = []

    def add(self, offset: int) -> None:
        with self._lock:
            offsets = self._offsets
            offsets.append(offset)
            first = len(offsets) == 1
            full = len(offsets) >= ACK_GROUP_MAX
        if full:
            self.flush()
        elif first:
            self._timer.call_later(ACK_GROUP_S, self.flush)

    def add_all(self, offsets: Iterable[int]) -> None:
        """Acknowledge these offsets; a long ``range`` (an undecodable entry's, maybe 2**31 long) goes out at
        once as one range, never as a list of its offsets."""
        if isinstance(offsets, range) and len(offsets) > ACK_GROUP_MAX and offsets.step == 1:
            self.flush()
            self._send(Ack(((offsets.start, offsets.stop),)))
            return
        with self._lock:
            group = self._offsets
            first = not group
            group.extend(offsets)
            full = len(group) >= ACK_GROUP_MAX
        if full:
            self.flush()
        elif first:
            self._timer.call_later(ACK_GROUP_S, self.flush)

    def flush(self) -> None:
        with self._lock:
            offsets, self._offsets = self._offsets, []
        if offsets:
            self._send(Ack(offset_ranges(offsets)))

    def drop(self) -> None:
        """Forget the acks not sent yet (they name positions of a cluster the consumer left)."""
        with self._lock:
            self._offsets = []


class HeldBatchAcks:
    """Acknowledged messages of partly acknowledged batches: entry offset -> bits of its acked messages."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._masks: dict[int, int] = {}

    def acknowledge(self, entry_id: int, index: int, size: int) -> bool:
        """Message ``index`` of the batch at ``entry_id`` (of ``size`` messages) is acknowledged; True when
        that completes the batch (the caller then acknowledges the whole entry)."""
        with self._lock:
            masks = self._masks
            mask = masks.get(entry_id, 0) | (1 << index)
            if mask != (1 << size) - 1:
                masks[entry_id] = mask
                if len(masks) > BATCH_MASKS_MAX:
                    masks.pop(next(iter(masks)))
                return False
            masks.pop(entry_id, None)
            return True

    def acknowledged_before(self, entry_id: int, size: int, kept: list[int]) -> None:
        """A delivery of the batch at ``entry_id`` holds only the messages ``kept``: the others were
        acknowledged before."""
        acked = ((1 << size) - 1) & ~sum(1 << i for i in kept)
        if acked:
            with self._lock:
                self._masks[entry_id] = self._masks.get(entry_id, 0) | acked

    def forget(self, through: int | None = None) -> None:
        """Drop held acks (of entries at or before ``through``; all when None)."""
        with self._lock:
            masks = self._masks
            if not masks:
                return
            if through is None:
                masks.clear()
            else:
                for entry_id in [e for e in masks if e <= through]:
                    del masks[entry_id]
