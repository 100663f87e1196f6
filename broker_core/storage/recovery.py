"""Recovery of a topic partition's log: what :class:`~broker_core.storage.log.ManagedLog` runs when it opens.

Damage is a range, never a log state (:mod:`broker_core.storage.damage`): a frame that does not verify costs
the bytes up to the next frame that does and the offsets between, nothing else. Recovery never refuses a
log and never deletes damage; it maps what it reads, and reads find the rest.

Procedure
---------
1. List ``*.log`` files and order them by base offset. Stray temp files (``*.tmp``) and indexes
   without a log are removed. Read ``start-offset`` (the first offset retention kept, written before
   retention unlinks anything): segments wholly below it are leftovers of an interrupted retention run
   and are removed; a first segment that starts above it means segment files went missing, which is
   logged at ERROR with the offsets lost. An empty directory gets a fresh segment at the recorded start
   (0 for a new log).
2. Sealed segments (all but the last) are trusted through their index: the index's longest consistent
   prefix is kept (rebuilt from the log when missing or when its last entry does not point at a frame
   that verifies), and only the frames after its last entry are scanned. Each sealed segment ends exactly
   at the next segment's base offset: when its frames end before that (a truncated segment, a segment file
   missing after it), the offsets between are a damaged range of it, so the log stays readable around
   them and writable after its end. Frames in sealed segments are otherwise verified lazily: every read
   checks each frame's CRC and offset, a wrong index entry is caught when a read uses it (the index is
   then rebuilt), and a frame found invalid becomes a damaged range the moment a read meets it (one ERROR
   line, ``event=log_range_damaged``, with the offsets and messages lost).
3. The last segment is scanned frame by frame from byte 0, verifying magic, the length bound (before
   allocating), the CRC and offset continuity; at a frame that fails, the scan resyncs on the next frame
   that verifies (see :mod:`broker_core.storage.segment_repair`). Shortcut: when ``clean-close`` (written by
   :meth:`ManagedLog.close` after its final fsync) names the last segment with its current size, nothing was
   appended or torn since: the segment opens like a sealed one (step 2, ending where the record says) and
   steps 4-5 are skipped; before the first append lands in it, it is verified once (when larger than
   ``VERIFY_BEFORE_APPEND_MAX_BYTES``, on a worker thread while it takes appends). After a clean close
   every byte had been fsynced: what does not verify then is damage, never a torn write -- and a last
   segment now *smaller* than the record lost fsynced bytes: its missing frames are a damaged range up to
   the record's end (step 4c), never offsets handed out again.
4. What the scan of step 3 found: (a) a last range that no valid frame follows, whose first frame fails its
   CRC, is a torn tail: the file is cut there, fsynced, and the first offset removed is logged at ERROR.
   (b) Every other range (a bad frame with valid frames after it, a frame written twice, a valid frame
   out of sequence) is damage: kept, never truncated. (c) A last segment with damage takes no more
   appends: its end offset is the largest of the end of its last valid frame, the end the ``clean-close``
   record names (records of earlier versions name none: then its base + its entry count), one past the
   last offset its old index listed, and its base + 1, so no offset is ever handed out twice; the offsets
   between its last valid frame and that end are a damaged range, and the topic takes writes in a new
   active segment there (the new base is above every existing one).
5. Rebuild the last segment's index from the scan. If the old index listed frames beyond the recovered
   end, the log lost data the index had seen: logged at ERROR with how many messages at least.
6. ``end_offset`` is the last segment's end; ``durable_end_offset = end_offset`` (everything that survived
   is on disk); ``start_offset`` is the first segment's base offset.

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

from broker_core.storage import segment_repair
from broker_core.storage.atomic import atomic_write
from broker_core.storage.damage import DamagedRange
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
        seg.load_sealed(nxt.base_offset)
    if not segments:
        fresh = Segment.create(directory, recorded_start(directory), now_ms, files=files, label=name)
        return Recovered([fresh], False)  # a new log, or one whose files are all gone: nothing to prove
    last = segments[-1]
    record = _clean_close_record(directory, last)
    listed = last.index.stored_entries()  # step 4c: what the index knew before anything rewrites it
    if record is not None:  # step 3, shortcut (or a segment that shrank since its clean close: damage)
        last.load_sealed(record.end_offset)
        if not last.damage and record.size == last.size:
            last.verified = False  # ManagedLog verifies it before its first append (step 3)
            last.entry_count = record.entries
            last.max_publish_time = record.newest_publish_ms if record.newest_publish_ms >= 0 else None
    else:
        result = last.recover_last()  # steps 3-5
        _report_index_beyond(last, listed)
        if result.damage:
            segment_repair.record_scan(last, result, _fenced_end(last, record, listed))
    if not last.damage:
        last.open_for_append()
        return Recovered(segments, record is not None and record.end_offset == last.end_offset)
    end = _fenced_end(last, record, listed)  # step 4c: writes go on in a new segment
    if end > last.end_offset:
        last.add_damage([DamagedRange(last.end_offset, end, last.size, last.size,
                                      f"offsets up to {end} were stored once (the clean-close record or the old"
                                      f" index says so); the segment's frames end at {last.end_offset}")])
        last.end_offset = end
    segments.append(Segment.create(directory, last.end_offset, now_ms, files=files, label=name))
    return Recovered(segments, False)


def _report_index_beyond(last: Segment, listed: list[tuple[int, int]]) -> None:
    """Step 5: the old index listed frames beyond the recovered end: the log file lost data."""
    beyond = [offset for offset, position in listed if position >= last.size and offset >= last.end_offset]
    if beyond:
        log.error("event=log_tail_lost segment=%s log_end_offset=%d indexed_offset=%d lost_messages_at_least=%d"
                  " detail=%r", last.path, last.end_offset, max(beyond), max(beyond) - last.end_offset + 1,
                  "the segment's index lists frames beyond the end of its log: the log file lost data")


def _clean_close_record(directory: Path, last: Segment) -> CleanClose | None:
    """Step 3, shortcut: the record, when the log was closed cleanly and its last segment has not grown
    since (appends only grow it), so it opens like a sealed segment, through its index, lazily verified,
    ending where the record says. A segment *smaller* than the record lost bytes that were fsynced before
    the close: not a torn write but damage, so its missing frames become a damaged range, never offsets
    handed out again."""
    try:
        fields = [int(field) for field in (directory / CLEAN_CLOSE_FILE).read_text().split()]
    except (OSError, ValueError):
        return None
    if len(fields) not in (4, 5):
        return None
    record = CleanClose(*fields[:4], fields[4] if len(fields) == 5 else None)
    size = os.path.getsize(last.path)
    if record.base != last.base_offset or size > record.size:  # appended to since: scanned (steps 3-5)
        return None
    if size < record.size and record.end_offset is None:
        return None
    return record  # the same size, or less: bytes fsynced before the close are gone (a damaged range)


def _fenced_end(last: Segment, record: CleanClose | None, listed: list[tuple[int, int]]) -> int:
    """Step 4c: the end offset of a damaged last segment, so that none of its offsets is handed out again.
    Always above its base: the new segment never lands on an existing file."""
    floors = [last.end_offset, last.base_offset + 1]
    if record is not None:
        floors.append(record.end_offset if record.end_offset is not None else last.base_offset + record.entries)
    floors += [offset + 1 for offset, _ in listed[-1:]]
    return max(floors)


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
