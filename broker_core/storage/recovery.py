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
   sealed segment that does not verify is marked *damaged* and logged at ERROR with the offsets it
   fences (``event=log_segment_fenced``): its reads raise ``CorruptLog(path, position)``, the rest of the
   log stays readable and writable. Frames in sealed segments are otherwise verified lazily: every read
   checks each frame's CRC, a wrong index entry is caught when a read uses it (the index is then rebuilt), and a frame found invalid marks the segment
   damaged (the same ERROR line; an active segment found damaged so is sealed by the next append, which
   starts a new segment at the log's end).
3. The last segment is scanned frame by frame from byte 0, verifying magic, the length bound (before
   allocating), the CRC, and offset continuity (each frame's offset is the previous offset + count;
   the first one's is the base offset). Shortcut: when ``clean-close`` (written by :meth:`ManagedLog.close`
   after its final fsync) names the last segment with its current size, nothing was appended or torn
   since: the segment opens like a sealed one (step 2) and steps 4-5 are skipped. A topic unloaded when
   idle loads again without reading its active segment. Before the first append lands in it, it is
   verified once (when larger than ``VERIFY_BEFORE_APPEND_MAX_BYTES``, not: it takes appends and its
   frames are verified lazily by reads, as a sealed segment's are; damage found then fences it whole). If it does not verify, at load or then (zeroed
   blocks, a flipped bit: after a clean close every byte had been fsynced, so this is damage, never a
   torn write), it is fenced as in step 4c and writes go to a new segment: a new entry never lands in
   a segment whose reads fail.
4. At the first invalid frame, at byte ``p``: search forward (on the magic, then the full check) for
   any later valid frame. (a) If none exists and the frame at ``p`` does not have a valid CRC, it is a
   torn tail: truncate the file at ``p``, fsync it, and log at ERROR the first offset removed. (b)
   Otherwise it is corruption, not a torn write: the segment is marked damaged (step 2), its end offset
   is the end of the last valid frame found after ``p`` (so no offset is ever handed out twice), and a
   new active segment starts there. (c) A damaged last segment (4b, or the shortcut of step 3) is
   fenced like a damaged sealed one and never truncated. Its end offset is the largest of: the end the
   ``clean-close`` record names (records of earlier versions name none: then its base + its entry
   count, each entry holding at least one message), the end of the last valid frame found anywhere in
   it, one past the last offset its old index listed, and its base + 1 (it held a message). The fenced
   range is logged at ERROR with its message count (``event=log_segment_fenced``), and the topic takes
   writes in a new active segment at that end: recovery never creates a segment where one exists (the
   new base is above every existing one).
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
from typing import NamedTuple

from broker_core.errors import CorruptLog
from broker_core.storage.atomic import atomic_write
from broker_core.storage.files import FileBudget
from broker_core.storage.segment import INDEX_SUFFIX, Segment

log = logging.getLogger("broker_core.storage.log")

_SEGMENT_FILE = re.compile(r"^(\d{20})\.(log|index)$")
START_OFFSET_FILE = "start-offset"
"""The first offset retention kept (text, written atomically before segments are unlinked)."""
CLEAN_CLOSE_FILE = "clean-close"
"""``base size entries newest-publish-time end-offset`` of the last segment when the log was closed
cleanly (records of earlier versions lack ``end-offset``)."""


class CleanClose(NamedTuple):
    """What :meth:`ManagedLog.close` recorded of its last segment after the final fsync."""

    base: int
    """the last segment's base offset"""
    size: int
    """its size in bytes"""
    entries: int
    """its frames"""
    newest_publish_ms: int
    """its newest publish time (-1: unknown)"""
    end_offset: int | None
    """the log's end offset (None: a record of an earlier version)"""


class Recovered(NamedTuple):
    """What :func:`recover_segments` found."""

    segments: list[Segment]
    """the log's segments, oldest first, the last one open for appends (never empty)"""
    end_proven: bool
    """the log provably lost nothing at its end: it was closed cleanly (the ``clean-close`` record matched its
    last segment) and that segment verified, so no offset at or beyond the end was ever handed out"""


def recover_segments(directory: Path, now_ms: int, files: FileBudget, name: str) -> Recovered:
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
            report_fenced(directory, seg)
        elif seg.end_offset != nxt.base_offset:
            log.error("event=log_segment_missing log=%s segment=%s end_offset=%d next_base_offset=%d",
                      directory, seg.path, seg.end_offset, nxt.base_offset)
            raise CorruptLog(
                f"{name}: stored segment {seg.path.name} ends at offset {seg.end_offset} but the next segment"
                f" starts at {nxt.base_offset}; a segment is missing: restore it from a backup",
                path=seg.path.name, position=seg.size)
    if not segments:
        fresh = Segment.create(directory, recorded_start(directory), now_ms, files=files, label=name)
        return Recovered([fresh], False)  # a new log, or one whose files are all gone: nothing to prove
    last = segments[-1]
    record = _clean_close_record(directory, last)
    listed = last.index.stored_entries()  # step 4c: what the index knew before anything rewrites it
    if record is not None:  # step 3, shortcut
        last.load_sealed()
        if last.damaged is None:
            last.verified = False  # ManagedLog verifies it before its first append (step 3)
            last.entry_count = record.entries
            last.max_publish_time = record.newest_publish_ms if record.newest_publish_ms >= 0 else None
    else:
        last.recover_last()  # steps 3-5
    if last.damaged is None:
        last.open_for_append()
        return Recovered(segments, record is not None and record.end_offset == last.end_offset)
    last.end_offset = _fenced_end(last, record, listed)  # step 4c: writes go on in a new segment
    report_fenced(directory, last)
    segments.append(Segment.create(directory, last.end_offset, now_ms, files=files, label=name))
    return Recovered(segments, False)


def _clean_close_record(directory: Path, last: Segment) -> CleanClose | None:
    """Step 3, shortcut: the record, when the log was closed cleanly and its last segment has not changed
    since (same size: appends only grow it), so it opens like a sealed segment, through its index,
    lazily verified."""
    try:
        fields = [int(field) for field in (directory / CLEAN_CLOSE_FILE).read_text().split()]
    except (OSError, ValueError):
        return None
    if len(fields) not in (4, 5):
        return None
    record = CleanClose(*fields[:4], fields[4] if len(fields) == 5 else None)
    if (record.base, record.size) != (last.base_offset, os.path.getsize(last.path)):
        return None
    return record


def _fenced_end(last: Segment, record: CleanClose | None, listed: list[tuple[int, int]]) -> int:
    """Step 4c: the end offset of a damaged last segment, so that none of its offsets is handed out again.
    Always above its base: the new segment never lands on an existing file."""
    floors = [last.end_offset, last.base_offset + 1, last.valid_frames_end()]
    if record is not None:
        floors.append(record.end_offset if record.end_offset is not None else last.base_offset + record.entries)
    floors += [offset + 1 for offset, _ in listed[-1:]]
    return max(floors)


def report_fenced(directory: Path, seg: Segment) -> None:
    """Steps 2 and 4c (and a read that finds a segment damaged later): the ERROR line that counts what a
    damaged segment fences."""
    damaged = seg.damaged
    log.error("event=log_segment_fenced log=%s segment=%s first_offset=%d end_offset=%d fenced_messages=%d"
              " damaged_at_byte=%d detail=%r", directory, seg.path, seg.base_offset, seg.end_offset,
              seg.end_offset - seg.base_offset, damaged.position if damaged is not None else -1,
              "the segment does not verify: reading these offsets fails until it is restored from a backup"
              " or subscriptions are moved past it; the rest of the log is read and written as before")


def record_clean_close(directory: Path, base: int, size: int, entries: int, newest_publish_ms: int,
                       end_offset: int) -> None:
    """What :func:`_clean_close_record` reads: written after the final fsync of a clean close."""
    atomic_write(directory / CLEAN_CLOSE_FILE,
                 f"{base} {size} {entries} {newest_publish_ms} {end_offset}".encode())


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
