"""The sparse offset index of one segment (``<base>.index``).

Layout: a flat array of entries (big-endian, declared once as :data:`ENTRY`)::

     0                8                16
     +----------------+----------------+
     | offset         | position       |   repeated; offsets and positions strictly increasing
     +----------------+----------------+

An entry says "the frame whose first message is ``offset`` starts at byte ``position`` of the .log".
The first frame of a segment is always indexed, then one frame every :data:`INTERVAL_BYTES` of log
(so every frame when frames are large). The index is written without fsync: it is a cache of the log,
validated on open and rebuilt from the log when missing or inconsistent. It is never trusted blindly: a
reader checks that the frame an entry points at has the entry's offset, and the segment rebuilds the
index when it does not (:meth:`broker_core.storage.segment.Segment.locate`).
"""
from __future__ import annotations

import bisect
import os
import struct
from pathlib import Path

from broker_core.storage.files import UNLIMITED, FileBudget, FileHandle

ENTRY = struct.Struct(
    ">"
    "Q"  # offset: first message offset of the indexed frame
    "Q"  # position: byte position of that frame in the .log file
)
INTERVAL_BYTES = 4096


class SparseIndex:
    """In-memory sparse index mirrored to an append-only file."""

    def __init__(self, path: Path, files: FileBudget = UNLIMITED) -> None:
        self.path = path
        self.offsets: list[int] = []
        self.positions: list[int] = []
        self._files = files
        self._writer: FileHandle | None = None

    # -- building -----------------------------------------------------------------------------
    def should_index(self, position: int) -> bool:
        """Whether the frame starting at ``position`` gets an index entry."""
        return not self.positions or position >= self.positions[-1] + INTERVAL_BYTES

    def add(self, offset: int, position: int, *, persist: bool = True) -> None:
        self.offsets.append(offset)
        self.positions.append(position)
        if persist:
            if self._writer is None:
                self._writer = self._files.handle(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
            with self._writer as fd:
                os.write(fd, ENTRY.pack(offset, position))

    def observe(self, offset: int, position: int) -> None:
        """Index the frame at ``position`` if the sparse rule asks for it."""
        if self.should_index(position):
            self.add(offset, position)

    def rewrite(self) -> None:
        """Write the in-memory entries as the whole file (temp file + rename; no fsync: rebuildable)."""
        self.close()
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_bytes(b"".join(ENTRY.pack(o, p) for o, p in zip(self.offsets, self.positions)))
        os.replace(tmp, self.path)

    def truncate_after(self, position: int) -> None:
        """Drop entries for frames at or beyond ``position`` (the log was truncated there)."""
        keep = bisect.bisect_left(self.positions, position)
        if keep != len(self.positions):
            del self.offsets[keep:], self.positions[keep:]
            self.rewrite()

    # -- loading ------------------------------------------------------------------------------
    def load(self, base_offset: int, log_size: int) -> bool:
        """Load the file, keeping its longest consistent prefix; returns False if nothing usable.

        Consistent: whole entries, first entry ``(base_offset, 0)``, offsets and positions strictly
        increasing, positions inside the log. A prefix is enough: the caller scans past the last entry.
        """
        self.offsets, self.positions = [], []
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return False
        usable = len(raw) - len(raw) % ENTRY.size
        last_offset, last_position = base_offset - 1, -1
        for offset, position in ENTRY.iter_unpack(raw[:usable]):
            first = not self.offsets
            if first and (offset, position) != (base_offset, 0):
                break
            if offset <= last_offset or position <= last_position or position >= log_size:
                break
            self.offsets.append(offset)
            self.positions.append(position)
            last_offset, last_position = offset, position
        if len(self.offsets) * ENTRY.size != len(raw):
            self.rewrite()  # drop the inconsistent suffix so appends extend a clean file
        return bool(self.offsets)

    def clear(self) -> None:
        self.offsets, self.positions = [], []

    # -- lookup -------------------------------------------------------------------------------
    def floor(self, offset: int) -> tuple[int, int]:
        """``(offset, position)`` of the last indexed frame starting at or before ``offset``."""
        i = bisect.bisect_right(self.offsets, offset) - 1
        if i < 0:
            return (self.offsets[0], self.positions[0]) if self.offsets else (offset, 0)
        return self.offsets[i], self.positions[i]

    def stored_entries(self) -> list[tuple[int, int]]:
        """The file's ``(offset, position)`` entries as they are, unchecked (loss detection reads them
        before recovery rewrites the file)."""
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return []
        return list(ENTRY.iter_unpack(raw[:len(raw) - len(raw) % ENTRY.size]))

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None

    def remove(self) -> None:
        self.close()
        self.path.unlink(missing_ok=True)
