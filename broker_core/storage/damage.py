"""Damaged ranges of a segment: what a frame that does not verify costs, as offsets and bytes.

Damage is a range, never a segment state: a frame that fails its checks (magic, length bound, CRC, offset
continuity) is mapped to the bytes up to the next frame that verifies, and to the message offsets between
the last good frame before it and that next good frame. Reads below and above the range go on; a read of an
offset inside it raises :class:`~broker_core.errors.DataLost` naming exactly those offsets.

Example: frames of offsets 0..9, one message each, 40 bytes each; byte 170 (inside the frame of offset 4)
flipped::

    bytes   0    40   80   120  160  200  240 ...
    offsets 0    1    2    3    4    5    6   ...
                                ^ CRC mismatch at byte 160
    DamagedRange(start_offset=4, end_offset=5, position=160, resume_position=200)

A range may hold no offsets at all (``start_offset == end_offset``): bytes that belong to no message, such as
a frame written twice or garbage after a segment's last frame. Reads step over it without an error.
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass, replace


@dataclass(frozen=True, slots=True)
class DamagedRange:
    """One damaged stretch of a segment file."""

    start_offset: int
    """first message offset that cannot be read"""
    end_offset: int
    """first offset readable again (``start_offset`` when no message is lost)"""
    position: int
    """byte of the segment file where the damage starts"""
    resume_position: int
    """byte of the next frame that verifies (the file's size when none follows)"""
    reason: str
    """which check failed first (``CRC mismatch``, ``bad magic``, ``segment file missing`` ...)"""

    @property
    def messages(self) -> int:
        """Messages lost in the range (0: only stray bytes)."""
        return self.end_offset - self.start_offset

    def ending_at(self, end_offset: int) -> DamagedRange:
        """This range, losing the offsets up to ``end_offset`` (a range no valid frame follows: how many
        messages the bytes held is known only from where the segment must end)."""
        return replace(self, end_offset=max(self.start_offset, end_offset))

    def covers(self, offset: int) -> bool:
        return self.start_offset <= offset < self.end_offset

    def as_dict(self) -> dict[str, object]:
        """The JSON view the admin API and ``verify`` show."""
        return {"firstOffset": self.start_offset, "lastOffset": self.end_offset - 1, "messages": self.messages,
                "position": self.position, "resumePosition": self.resume_position, "reason": self.reason}


class DamageMap:
    """The damaged ranges of one segment, disjoint and sorted by position (so by offset too)."""

    __slots__ = ("_ranges", "_positions")

    def __init__(self) -> None:
        self._ranges: list[DamagedRange] = []
        self._positions: list[int] = []

    def __bool__(self) -> bool:
        return bool(self._ranges)

    def __iter__(self):
        return iter(self._ranges)

    def __len__(self) -> int:
        return len(self._ranges)

    @property
    def messages(self) -> int:
        """Messages lost in every range."""
        return sum(r.messages for r in self._ranges)

    def add(self, found: DamagedRange) -> DamagedRange:
        """Record ``found``; a range already known that covers its bytes wins, ranges inside it are replaced.
        Returns the range recorded."""
        if found in self._ranges:
            return found
        known = self.at_position(found.position)
        if known is not None and known.resume_position >= found.resume_position:
            return known
        keep = [r for r in self._ranges if r.resume_position <= found.position or r.position >= found.resume_position]
        i = bisect.bisect_left([r.position for r in keep], found.position)
        keep.insert(i, found)
        self._ranges = keep
        self._positions = [r.position for r in keep]
        return found

    def at_position(self, position: int) -> DamagedRange | None:
        """The range whose bytes hold ``position``."""
        i = bisect.bisect_right(self._positions, position) - 1
        if i >= 0 and position < self._ranges[i].resume_position:
            return self._ranges[i]
        return None

    def starting_after(self, position: int) -> DamagedRange | None:
        """The first range of damaged bytes starting at or after byte ``position`` (a range that holds no
        bytes, offsets no frame holds, is found by the frame after it, whose offset is out of sequence)."""
        i = bisect.bisect_left(self._positions, position)
        while i < len(self._ranges) and self._ranges[i].resume_position == self._ranges[i].position:
            i += 1
        return self._ranges[i] if i < len(self._ranges) else None

    def at_offset(self, offset: int) -> DamagedRange | None:
        """The range that lost message ``offset``."""
        for r in self._ranges:  # a segment holds very few ranges
            if r.covers(offset):
                return r
            if r.start_offset > offset:
                break
        return None

    def before(self, position: int) -> DamagedRange | None:
        """The last range ending at or before byte ``position`` (a walk may start again at its end)."""
        i = bisect.bisect_right(self._positions, position) - 1
        while i >= 0 and self._ranges[i].resume_position > position:
            i -= 1
        return self._ranges[i] if i >= 0 else None
