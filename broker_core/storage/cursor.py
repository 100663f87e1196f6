"""ManagedCursor: a durable subscription's acknowledgment state (pure logic, no I/O).

State, as in Pulsar's ManagedCursor:

- ``mark_delete_offset``: every offset ``<=`` it is acknowledged (``-1``: nothing is).
- ``individually_acked``: sorted, disjoint, non-adjacent ``[start, end)`` ranges acknowledged out of
  order, all strictly above ``mark_delete_offset + 1`` (a range touching the mark-delete point is
  folded into it).

Every message (batched or not) has its own offset, so acknowledging one message of a batch is the
range ``[offset, offset + 1)``: no separate batch-index bitsets are needed.

Example::

    c = ManagedCursor("sub")   # mark_delete -1
    c.ack(2, 4)                # individually_acked [(2, 4)]
    c.ack(0, 2)                # contiguous: mark_delete 3, individually_acked []
"""
from __future__ import annotations

import bisect
import json

MAX_OFFSET = (1 << 63) - 1
"""Offsets are 64-bit (as Pulsar's entry ids): a stored position above it is impossible."""


def _is_offset(value: object, low: int) -> bool:
    """``value`` is an int (not a bool) in ``low .. MAX_OFFSET``."""
    return type(value) is int and low <= value <= MAX_OFFSET


class ManagedCursor:
    def __init__(self, name: str, mark_delete_offset: int = -1,
                 individually_acked: list[tuple[int, int]] | None = None,
                 properties: dict[str, str] | None = None,
                 subscription_properties: dict[str, str] | None = None) -> None:
        self.name = name
        self.mark_delete_offset = mark_delete_offset
        self.properties = dict(properties or {})
        """The broker's own (subscription activity): Pulsar's cursor properties."""
        self.subscription_properties = dict(subscription_properties or {})
        """The user's, set by the admin API or a subscribing client: Pulsar's subscription properties."""
        self._starts: list[int] = []
        self._ends: list[int] = []
        self._individual_count = 0  # offsets inside the ranges
        for start, end in individually_acked or ():
            self.ack(start, end)
        self.dirty = False

    @property
    def individually_acked(self) -> list[tuple[int, int]]:
        return list(zip(self._starts, self._ends))

    # -- acknowledging -------------------------------------------------------------------------
    def ack(self, start: int, end: int) -> int:
        """Acknowledge ``[start, end)``; returns how many offsets were newly acknowledged.

        Two bisects find the ranges ``[start, end)`` overlaps or touches; only those are replaced, in
        place (each range is removed once, so merging many is amortized). Inserting or dropping a range
        shifts the list tail (a memmove: cheap, but it dominates beyond ~10^5 disjoint ranges).
        """
        floor = self.mark_delete_offset + 1
        if start < floor:
            start = floor
        if start >= end:
            return 0
        starts, ends = self._starts, self._ends
        i = bisect.bisect_left(ends, start)  # first range ending at or after start (touching)
        j = bisect.bisect_right(starts, end, i)  # past the last range starting at or before end (touching)
        if i == j:  # touches no range
            self.dirty = True
            if start == floor:
                self.mark_delete_offset = end - 1
            else:
                starts.insert(i, start)
                ends.insert(i, end)
                self._individual_count += end - start
            return end - start
        merged_start = start if start < starts[i] else starts[i]
        merged_end = end if end > ends[j - 1] else ends[j - 1]
        if j == i + 1:
            removed = ends[i] - starts[i]
        else:
            removed = 0
            for k in range(i, j):
                removed += ends[k] - starts[k]
        # the union of the new range and the touched ones is contiguous, so what is new is the rest
        newly = merged_end - merged_start - removed
        if newly:
            self.dirty = True
        if merged_start == floor:
            # ranges lie above mark_delete + 1, so only a merge starting at index 0 reaches it
            del starts[:j], ends[:j]
            self._individual_count -= removed
            self.mark_delete_offset = merged_end - 1
        elif j == i + 1:
            starts[i] = merged_start
            ends[i] = merged_end
            self._individual_count += newly
        else:
            starts[i:j] = (merged_start,)
            ends[i:j] = (merged_end,)
            self._individual_count += newly
        return newly

    def ack_cumulative(self, offset: int) -> int:
        """Acknowledge every offset ``<= offset``; returns how many were newly acknowledged."""
        return self.ack(self.mark_delete_offset + 1, offset + 1)

    def reset(self, mark_delete_offset: int) -> None:
        """Seek: everything ``<= mark_delete_offset`` acknowledged, nothing above (individual acks cleared)."""
        self.mark_delete_offset = mark_delete_offset
        self._starts, self._ends, self._individual_count = [], [], 0
        self.dirty = True

    # -- queries ---------------------------------------------------------------------------------
    def is_acked(self, offset: int) -> bool:
        if offset <= self.mark_delete_offset:
            return True
        i = bisect.bisect_right(self._starts, offset) - 1
        return i >= 0 and offset < self._ends[i]

    def acked_within(self, start: int, end: int) -> list[tuple[int, int]]:
        """The acknowledged sub-ranges of ``[start, end)``, sorted (for an entry's ack set)."""
        out: list[tuple[int, int]] = []
        if start <= self.mark_delete_offset:
            out.append((start, min(end, self.mark_delete_offset + 1)))
        i = max(0, bisect.bisect_right(self._starts, start) - 1)
        while i < len(self._starts) and self._starts[i] < end:
            s, e = max(self._starts[i], start), min(self._ends[i], end)
            if s < e:
                out.append((s, e))
            i += 1
        return out

    def next_unacked(self, offset: int) -> int:
        """The first offset ``>= offset`` that is not acknowledged."""
        offset = max(offset, self.mark_delete_offset + 1)
        i = bisect.bisect_right(self._starts, offset) - 1
        return self._ends[i] if i >= 0 and offset < self._ends[i] else offset

    def backlog(self, end_offset: int) -> int:
        """Messages in ``(mark_delete_offset, end_offset)`` not acknowledged."""
        if end_offset <= self.mark_delete_offset + 1:
            return 0
        acked = self._individual_count
        k = len(self._starts) - 1
        while k >= 0 and self._ends[k] > end_offset:  # ranges past the end: usually none
            acked -= self._ends[k] - max(self._starts[k], end_offset)
            k -= 1
        return end_offset - self.mark_delete_offset - 1 - acked

    # -- persistence ------------------------------------------------------------------------------
    def to_bytes(self) -> bytes:
        state = {"v": 1, "name": self.name, "markDelete": self.mark_delete_offset,
                 "acked": [[s, e] for s, e in zip(self._starts, self._ends)], "properties": self.properties}
        if self.subscription_properties:  # absent when empty: the state of older versions, unchanged
            state["subscriptionProperties"] = self.subscription_properties
        return json.dumps(state, separators=(",", ":")).encode()

    @classmethod
    def from_bytes(cls, name: str, data: bytes) -> ManagedCursor:
        """Rebuild a cursor; raises ``ValueError`` on anything malformed or impossible in itself: a
        position that is not an int in ``-1 .. MAX_OFFSET``, or ranges that are not what :meth:`ack` keeps
        (sorted, disjoint, non-adjacent, ``start < end``, all strictly above ``markDelete + 1``)."""
        try:
            doc = json.loads(data)
            mark_delete = doc["markDelete"]
            if not isinstance(doc["acked"], list):
                raise TypeError(f"acked={doc['acked']!r}")
            ranges = [(s, e) for s, e in doc["acked"]]
            properties = {str(k): str(v) for k, v in doc.get("properties", {}).items()}
            subscription_properties = {str(k): str(v) for k, v in doc.get("subscriptionProperties", {}).items()}
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ValueError(f"malformed cursor state for {name!r}: {exc}") from None
        if not _is_offset(mark_delete, -1):
            raise ValueError(f"impossible cursor state for {name!r}: markDelete={mark_delete!r}")
        floor = mark_delete + 2  # a range touching mark_delete + 1 would have been folded into it
        for start, end in ranges:
            if not (_is_offset(start, floor) and _is_offset(end, start + 1)):
                raise ValueError(f"impossible cursor state for {name!r}: acknowledged range {[start, end]!r}"
                                 f" (markDelete={mark_delete})")
            floor = end + 1
        return cls(name, mark_delete, ranges, properties, subscription_properties)

    def __repr__(self) -> str:
        return (f"ManagedCursor({self.name!r}, mark_delete_offset={self.mark_delete_offset}, "
                f"individually_acked={self.individually_acked[:8]}{'...' if len(self._starts) > 8 else ''})")
