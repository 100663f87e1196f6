"""The index half of ``verify`` (:mod:`broker_core.storage.verify`): each entry of a segment's sparse index
(:mod:`broker_core.storage.index`) checked against the frames a verifying scan of the segment meets, read
from the file in chunks as the scan goes (never the whole index at once), nothing written.

An entry is right when it is whole, the first one is ``(base offset, 0)``, offsets and positions strictly
increase, and it points at the first byte of a frame that verifies and holds the indexed offset. A wrong
index costs no message -- recovery and reads rebuild it from the log -- but it says the disk did not keep
what was written: ``verify`` reports it.

Example: frames at bytes 0, 40, 80 holding offsets 0, 1, 2; an index ``(0, 0) (1, 50)`` has one problem,
entry 1: "points inside the frame at byte 40 (offset 1), not at its start".
"""
from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from broker_core.storage.damage import DamagedRange
from broker_core.storage.format import FrameHeader
from broker_core.storage.index import ENTRY

READ_ENTRIES = 4096
"""Entries read from the index file at a time."""
MAX_LISTED = 10
"""Problems listed per index file; the rest are counted in one last line."""


@dataclass(frozen=True, slots=True)
class IndexProblem:
    """One wrong entry (or a whole index file missing)."""

    index: str
    """the index file's name"""
    entry: int | None
    """the entry's number, from 0 (None: the file as a whole)"""
    offset: int | None
    """the offset the entry names"""
    position: int | None
    """the byte of the segment file it points at"""
    problem: str
    """what is wrong with it"""

    def as_dict(self) -> dict[str, object]:
        return {"index": self.index, "entry": self.entry, "offset": self.offset, "position": self.position,
                "problem": self.problem}


def _entries(path: Path, size: int) -> Iterator[tuple[int, int, int]]:
    """``(number, offset, position)`` of the whole entries in the first ``size`` bytes of the file."""
    whole = size - size % ENTRY.size
    number = 0
    with open(path, "rb") as f:
        done = 0
        while done < whole:
            raw = f.read(min(READ_ENTRIES * ENTRY.size, whole - done))
            if not raw:
                return  # shorter than it was: the rest is checked no further
            raw = raw[:len(raw) - len(raw) % ENTRY.size]
            done += len(raw)
            for offset, position in ENTRY.iter_unpack(raw):
                yield number, offset, position
                number += 1


class IndexCheck:
    """Checks one index file while the scan of its segment goes: :meth:`frame` and :meth:`damaged` for each
    frame and damaged range in byte order, then :meth:`finish`. ``growing``: the active segment of a running
    broker, whose index may list frames appended after the scan's end (those entries are not checked)."""

    def __init__(self, path: Path, base_offset: int, *, growing: bool = False) -> None:
        self.name = path.name
        self.entries = 0
        self.problems: list[IndexProblem] = []
        self.problem_count = 0
        self._base = base_offset
        self._growing = growing
        self._last = (-1, -1)
        try:
            size = os.path.getsize(path)
        except FileNotFoundError:
            self._size = 0
            self._pending: tuple[int, int, int] | None = None
            self._read: Iterator[tuple[int, int, int]] = iter(())
            self._add(None, None, None, "missing: recovery rebuilds it from the log at the next load")
            return
        self._size = size
        self._read = _entries(path, size)
        self._pending = self._next()

    def _add(self, entry: int | None, offset: int | None, position: int | None, problem: str) -> None:
        self.problem_count += 1
        if len(self.problems) < MAX_LISTED:
            self.problems.append(IndexProblem(self.name, entry, offset, position, problem))

    def _next(self) -> tuple[int, int, int] | None:
        """The next entry in order (first checks); entries out of order are reported and passed over."""
        for number, offset, position in self._read:
            self.entries += 1
            if number == 0 and (offset, position) != (self._base, 0):
                self._add(number, offset, position, f"the first entry must be ({self._base}, 0)")
            elif offset <= self._last[0] or position <= self._last[1]:
                self._add(number, offset, position, "not after the entry before it (offsets and positions must"
                          " increase)")
                continue
            self._last = (offset, position)
            return number, offset, position
        return None

    def frame(self, position: int, header: FrameHeader) -> None:
        """The scan met a frame that verifies at byte ``position``."""
        end = position + header.frame_size
        while self._pending is not None and self._pending[2] < end:
            number, offset, at = self._pending
            if at != position:
                self._add(number, offset, at, f"points inside the frame at byte {position} (offset {header.offset}),"
                          " not at its start")
            elif offset != header.offset:
                self._add(number, offset, at, f"points at the frame of offset {header.offset}, not of offset {offset}")
            self._pending = self._next()

    def damaged(self, found: DamagedRange) -> None:
        """The scan met a damaged range."""
        while self._pending is not None and self._pending[2] < found.resume_position:
            number, offset, at = self._pending
            self._add(number, offset, at, f"points into the damaged bytes {found.position}..{found.resume_position - 1}")
            self._pending = self._next()

    def close(self) -> None:
        """Close the index file (what :meth:`finish` has not read stays unread)."""
        close = getattr(self._read, "close", None)
        if close is not None:
            close()

    def finish(self, scanned: int) -> None:
        """The scan ended at byte ``scanned``: entries beyond it point past the log (unless ``growing``), and a
        partial entry at the end of the file is a torn write."""
        while self._pending is not None:
            if self._growing:
                return  # frames appended after the scan's end
            number, offset, at = self._pending
            self._add(number, offset, at, f"points beyond the end of the log (byte {scanned})")
            self._pending = self._next()
        torn = self._size % ENTRY.size
        if torn and not self._growing:
            self._add(self.entries, None, None, f"{torn} bytes of a partial entry at its end")
        if self.problem_count > len(self.problems):
            self.problems.append(IndexProblem(self.name, None, None, None,
                                              f"and {self.problem_count - len(self.problems)} more problems"))
