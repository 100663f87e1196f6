"""Recovery of a topic partition's log: what :class:`~broker_core.storage.log.ManagedLog` runs when it opens.

Procedure
---------
1. List ``*.log`` files and order them by base offset. Stray temp files (``*.tmp``) and indexes
   without a log are removed. Read ``start-offset`` (the first offset retention kept, written before
   retention unlinks anything): segments wholly below it are leftovers of an interrupted retention run
   and are removed; a first segment that starts above it means segment files went missing, which is
   logged at ERROR with the offsets lost. An empty directory gets a fresh segment at the recorded start
   (0 for a new log).
2. Sealed segments (all but the last) are trusted through their index: the index's longest consistent
   prefix is kept (rebuilt from the log when missing or when its last entry does not point at a
   frame), and only the frames after its last entry are scanned. Each sealed segment must end
   exactly at the next segment's base offset, otherwise ``CorruptLog`` is raised (a missing segment). A
   sealed segment that does not verify is marked *damaged* and logged at ERROR: its reads raise
   ``CorruptLog(path, position)``, the rest of the log stays readable and writable. Frames in sealed
   segments are otherwise verified lazily: every read checks each frame's CRC, a wrong index entry is
   caught when a read uses it (the index is then rebuilt), and a frame found invalid marks the segment
   damaged.
3. The last segment is scanned frame by frame from byte 0, verifying magic, the length bound (before
   allocating), the CRC, and offset continuity (each frame's offset is the previous offset + count;
   the first one's is the base offset). Shortcut: when ``clean-close`` (written by :meth:`ManagedLog.close`
   after its final fsync) names the last segment with its current size, nothing was appended or torn
   since: the segment opens like a sealed one (step 2) and steps 4-5 are skipped. A topic unloaded when
   idle loads again without reading its active segment.
4. At the first invalid frame, at byte ``p``: search forward (on the magic, then the full check) for
   any later valid frame. (a) If none exists and the frame at ``p`` does not have a valid CRC, it is a
   torn tail: truncate the file at ``p``, fsync it, and log at ERROR the first offset removed. (b)
   Otherwise it is corruption, not a torn write: the segment is marked damaged (step 2), its end offset
   is the end of the last valid frame found after ``p`` (so no offset is ever handed out twice), and a
   new active segment starts there.
5. Rebuild the last segment's index from the scan. If the old index listed frames beyond the recovered
   end, the log lost data the index had seen: logged at ERROR with how many messages at least.
6. ``end_offset`` is the last valid frame's offset + count (the base offset if the segment is empty);
   ``durable_end_offset = end_offset`` (everything that survived is on disk); ``start_offset`` is the
   first segment's base offset.

The owner of the log then compares what else it stored (cursors, deduplication snapshots) with the
recovered end and calls :meth:`ManagedLog.skip_to` when they had seen offsets the log lost: a *gap
frame* (no data, see :mod:`broker_core.storage.format`) moves the end past them, so offsets are never
reused.

"""
from __future__ import annotations

import logging
import os
import re
from pathlib import Path

from broker_core.errors import CorruptLog
from broker_core.storage.atomic import atomic_write
from broker_core.storage.files import FileBudget
from broker_core.storage.segment import INDEX_SUFFIX, Segment

log = logging.getLogger("broker_core.storage.log")

_SEGMENT_FILE = re.compile(r"^(\d{20})\.(log|index)$")
START_OFFSET_FILE = "start-offset"
"""The first offset retention kept (text, written atomically before segments are unlinked)."""
CLEAN_CLOSE_FILE = "clean-close"
"""``base size entries newest-publish-time`` of the last segment when the log was closed cleanly."""


def recover_segments(directory: Path, now_ms: int, files: FileBudget, name: str) -> list[Segment]:
    """Steps 1-5: the log's segments, oldest first, the last one open for appends (never empty)."""
    bases: set[int] = set()
    indexes: set[int] = set()
    for path in directory.iterdir():  # step 1
        match = _SEGMENT_FILE.match(path.name)
        if path.name.endswith(".tmp"):
            path.unlink()
        elif match and match.group(2) == "log":
            bases.add(int(match.group(1)))
        elif match:
            indexes.add(int(match.group(1)))
    for base in indexes - bases:
        (directory / f"{base:020d}{INDEX_SUFFIX}").unlink()
    segments = [Segment(directory, base, now_ms, files=files, label=name) for base in sorted(bases)]
    segments = _check_start(directory, segments)
    for seg, nxt in zip(segments, segments[1:]):  # step 2
        seg.load_sealed()
        if seg.damaged is not None:
            seg.end_offset = nxt.base_offset
        elif seg.end_offset != nxt.base_offset:
            log.error("event=log_segment_missing log=%s segment=%s end_offset=%d next_base_offset=%d",
                      directory, seg.path, seg.end_offset, nxt.base_offset)
            raise CorruptLog(
                f"{name}: stored segment {seg.path.name} ends at offset {seg.end_offset} but the next segment"
                f" starts at {nxt.base_offset}; a segment is missing: restore it from a backup",
                path=seg.path.name, position=seg.size)
    if not segments:
        return [Segment.create(directory, recorded_start(directory), now_ms, files=files, label=name)]
    last = segments[-1]
    if not _closed_cleanly(directory, last):
        last.recover_last()  # steps 3-5
    if last.damaged is None:
        last.open_for_append()
    else:  # step 4b: writes go on in a new segment
        segments.append(Segment.create(directory, last.end_offset, now_ms, files=files, label=name))
    return segments


def _closed_cleanly(directory: Path, last: Segment) -> bool:
    """Step 3, shortcut: the log was closed cleanly and its last segment has not changed since (same size:
    appends only grow it), so it opens like a sealed segment, through its index, lazily verified."""
    try:
        base, size, entries, newest = map(int, (directory / CLEAN_CLOSE_FILE).read_text().split())
    except (OSError, ValueError):
        return False
    if (base, size) != (last.base_offset, os.path.getsize(last.path)):
        return False
    last.load_sealed()
    if last.damaged is None:
        last.entry_count, last.max_publish_time = entries, (newest if newest >= 0 else None)
    return True


def record_clean_close(directory: Path, base: int, size: int, entries: int, newest_publish_ms: int) -> None:
    """What :func:`_closed_cleanly` reads: written after the final fsync of a clean close."""
    atomic_write(directory / CLEAN_CLOSE_FILE, f"{base} {size} {entries} {newest_publish_ms}".encode())


def recorded_start(directory: Path) -> int:
    try:
        return int((directory / START_OFFSET_FILE).read_text())
    except FileNotFoundError:
        return 0
    except ValueError:
        log.error("event=log_start_offset_unreadable log=%s action=ignored", directory)
        return 0


def record_start(directory: Path, offset: int) -> None:
    """Retention's new start, written before it unlinks anything (step 1 tells loss from retention)."""
    atomic_write(directory / START_OFFSET_FILE, str(offset).encode())


def _check_start(directory: Path, segments: list[Segment]) -> list[Segment]:
    """Step 1, second half: compare the segments found with the start retention recorded."""
    start = recorded_start(directory)
    while len(segments) > 1 and segments[1].base_offset <= start:  # retention was interrupted
        leftover = segments.pop(0)
        log.info("event=retention_leftover_removed segment=%s", leftover.path)
        leftover.remove()
    if segments and segments[0].base_offset > start:
        log.error("event=log_segments_missing log=%s first_missing_offset=%d first_stored_offset=%d"
                  " lost_messages=%d detail=%r", directory, start, segments[0].base_offset,
                  segments[0].base_offset - start, "the log's first segment files are gone")
        record_start(directory, segments[0].base_offset)
    return segments
