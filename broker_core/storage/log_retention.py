"""Retention's half of a log: the view of its segments that retention decides on, and the removal of the
segments it detached.

Retention removes whole segments from the front only (never the active one): the owner thread detaches
them (:meth:`~broker_core.storage.log.ManagedLog.detach_segments_before`; readers stop seeing them at
once), then any thread may unlink their files (:func:`remove_segments`), oldest first with a directory
fsync after each, so a crash never leaves a gap between segments (recovery step 2 would refuse it); a
crash before the unlinks merely brings detached segments back, to be deleted again.
"""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from broker_core.storage.atomic import fsync_directory
from broker_core.storage.recovery import record_start
from broker_core.storage.segment import Segment


class SegmentView:
    """One segment's offsets, size and newest publish time (scanned lazily, once per sealed segment)."""

    __slots__ = ("_seg", "base_offset", "end_offset", "size")

    def __init__(self, seg: Segment) -> None:
        self._seg = seg
        self.base_offset = seg.base_offset
        self.end_offset = seg.end_offset
        self.size = seg.size

    @property
    def last_publish_ms(self) -> int:
        return self._seg.publish_time_max()


def remove_segments(directory: Path, segments: Sequence[Segment]) -> int:
    """Close and unlink detached ``segments`` of the log in ``directory`` oldest first, fsyncing the
    directory after each; returns bytes freed. ``start-offset`` is recorded first (recovery step 1 tells a
    segment lost from one removed by retention)."""
    if not segments:
        return 0
    record_start(directory, max(s.end_offset for s in segments))
    freed = 0
    for seg in sorted(segments, key=lambda s: s.base_offset):
        freed += seg.size
        seg.remove()
        fsync_directory(directory)
    return freed
