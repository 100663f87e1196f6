"""``verify``: a topic partition's stored files checked without changing them (``pulsarlike admin topics
verify``), on a running broker (off its event loop) or on a stopped broker's data dir.

:func:`verify_files` reads a topic partition's folder and reports what is damaged, changing nothing: no file
is written, truncated, renamed or removed, no index rebuilt, not even a temp file cleaned. It reads:

1. The listing of the folder: ``<20 digits>.log`` segments by base offset, ``start-offset``, ``clean-close``.
   Files a load would remove are reported as stray and not read further (temp files, an index without its
   segment, segments wholly below ``start-offset`` that an interrupted retention run left).
2. Every frame of every segment, from byte 0 up to the size the file had when the verification started (the
   active segment of a running broker grows meanwhile), checked as reads and recovery check them (magic,
   length bound before allocating, CRC, offset continuity: :func:`segment_repair.verified`), one read buffer
   at a time, never a whole segment. What does not verify is a :class:`DamagedRange`, the same range a read
   reaching it would map (:mod:`broker_core.storage.damage`).
3. That segments follow each other: a sealed segment ends where the next starts (frames missing before that
   are a range at its end, as recovery step 2 maps it); the first starts at ``start-offset`` (when it starts
   above, the offsets between are a range holding no bytes at byte 0 of the first). The last segment ends
   where a running broker's log says; on a stopped broker's data dir, where the ``clean-close`` record says
   after a clean close, else where its frames end -- and there, a last range no valid frame follows is a
   torn write, which the next load cuts (recovery step 4a): reported as ``tornTail``, not as damage.
4. Each index entry (:mod:`broker_core.storage.verify_index`).
5. Each cursor copy (:func:`broker_core.storage.cursor_store.read_copy`), which copy is the newest, and what
   the next load does with damaged ones (:mod:`broker_core.core.persistent.recovery` step 1).

The report is ``ok`` when it found no damaged range, no wrong index entry and no damaged cursor copy; a
torn tail and stray files are shown but are not damage.
"""
from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple
from urllib.parse import unquote

from broker_core.storage import segment_repair
from broker_core.storage.cursor_store import (SET_ASIDE_SUFFIX, SLOT_SUFFIXES, SUFFIX, CursorCopy, StoredCursor,
                                               read_copy)
from broker_core.storage.damage import DamagedRange
from broker_core.storage.recovery import CLEAN_CLOSE_FILE, START_OFFSET_FILE
from broker_core.storage.segment import Segment, segment_name
from broker_core.storage.verify_index import IndexCheck, IndexProblem

_SEGMENT_FILE = re.compile(r"^(\d{20})\.(log|index)$")
_HASHED = re.compile(r"~[0-9a-f]{64}")


class Stopped(Exception):
    """The verification was stopped before its end (its caller went away)."""


class LiveSegment(NamedTuple):
    """A running broker's view of one segment when the verification starts."""

    base_offset: int
    size: int
    """bytes written so far: the scan stops there"""
    end_offset: int
    """the offset after its last message, as the log knows it"""


@dataclass
class SegmentReport:
    """One segment as verified."""

    base_offset: int
    size: int
    """bytes verified"""
    frames: int = 0
    """frames that verify"""
    end_offset: int = 0
    """where it ends (the next segment's base for a sealed one)"""
    damaged: list[DamagedRange] = field(default_factory=list)
    removed: bool = False
    """the file went away while it was verified (retention, or the topic deleted): not damage"""

    def as_dict(self) -> dict[str, object]:
        return {"baseOffset": self.base_offset, "file": segment_name(self.base_offset) + ".log", "size": self.size,
                "frames": self.frames, "firstOffset": self.base_offset, "lastOffset": self.end_offset - 1,
                "damaged": [found.as_dict() for found in self.damaged],
                **({"removedWhileVerifying": True} if self.removed else {})}


@dataclass(frozen=True)
class CursorReport:
    """One subscription's cursor copies."""

    subscription: str | None
    """None when no copy is usable and its file name is a hash"""
    copies: tuple[CursorCopy, ...]
    newest: str | None
    """the file of the newest copy that verifies"""
    newest_lost: bool
    """a damaged copy may have held a newer state"""

    @property
    def damaged(self) -> list[CursorCopy]:
        return [copy for copy in self.copies if copy.cursor is None]

    @property
    def outcome(self) -> str:
        """What the next load of the topic does with these copies."""
        if not self.damaged:
            return "ok"
        if self.newest is not None and not self.newest_lost:
            return "an older copy is damaged: the newest is used, nothing is lost"
        if self.newest is not None:
            return (f"recovered to its last good copy ({self.newest}) at the next load: what was acknowledged after"
                    " it is delivered again")
        if self.subscription is not None:
            return "no copy is usable: recovered to the log's start at the next load (everything is delivered again)"
        return "no copy is usable and its subscription's name is unknown: set aside (*.damaged) at the next load"

    def as_dict(self) -> dict[str, object]:
        return {"subscription": self.subscription, "newest": self.newest, "newestLost": self.newest_lost,
                "outcome": self.outcome,
                "copies": [{"slot": c.slot, "file": c.file, "generation": c.generation, "ok": c.cursor is not None,
                            **({"damage": c.damage} if c.damage else {})} for c in self.copies]}


class StrayFile(NamedTuple):
    file: str
    """its path inside the topic's folder"""
    note: str
    """what it is and what a load does with it"""


@dataclass
class TopicReport:
    """What :func:`verify_files` found in one topic partition's folder."""

    label: str
    live: bool
    """verified under a running broker's log (its segments' sizes and ends) rather than from the files alone"""
    start_offset: int = 0
    segments: list[SegmentReport] = field(default_factory=list)
    index_problems: list[IndexProblem] = field(default_factory=list)
    index_problem_count: int = 0
    cursors: list[CursorReport] = field(default_factory=list)
    stray_files: list[StrayFile] = field(default_factory=list)
    torn_tail: DamagedRange | None = None

    @property
    def damaged_ranges(self) -> list[DamagedRange]:
        return [found for seg in self.segments for found in seg.damaged]

    @property
    def messages_lost(self) -> int:
        return sum(found.messages for found in self.damaged_ranges)

    @property
    def cursor_problems(self) -> int:
        return sum(len(c.damaged) for c in self.cursors)

    @property
    def ok(self) -> bool:
        return not self.damaged_ranges and not self.index_problem_count and not self.cursor_problems

    def as_dict(self) -> dict[str, object]:
        end = self.segments[-1].end_offset if self.segments else self.start_offset
        return {
            "topic": self.label, "ok": self.ok, "live": self.live, "startOffset": self.start_offset, "endOffset": end,
            "segments": [seg.as_dict() for seg in self.segments],
            "indexProblems": [problem.as_dict() for problem in self.index_problems],
            "cursors": [cursor.as_dict() for cursor in self.cursors],
            "strayFiles": [{"file": s.file, "note": s.note} for s in self.stray_files],
            "tornTail": None if self.torn_tail is None else self.torn_tail.as_dict(),
            "totals": {"segments": len(self.segments), "bytes": sum(s.size for s in self.segments),
                       "frames": sum(s.frames for s in self.segments), "damagedRanges": len(self.damaged_ranges),
                       "messagesLost": self.messages_lost, "indexProblems": self.index_problem_count,
                       "cursorProblems": self.cursor_problems}}


def _never() -> bool:
    return False


def verify_files(directory: Path, cursors: Path | None, *, live: Sequence[LiveSegment] | None = None,
                 label: str = "", stop: Callable[[], bool] = _never) -> TopicReport:
    """Verify the topic partition stored in ``directory`` (its cursors in ``cursors``) without changing it
    (module doc). ``live``: a running broker's segments, oldest first, the last one active (their files are
    verified up to these sizes); None for files at rest. ``stop`` is asked between frames: True raises
    :class:`Stopped`. ``FileNotFoundError`` when ``directory`` does not exist."""
    report = TopicReport(label or directory.name, live is not None)
    listed = _listing(directory, report, live is not None)
    if live is not None:
        segments = [(s.base_offset, s.size) for s in live]
        last_end, clean = (live[-1].end_offset if live else None), True
    else:
        segments, last_end, clean = _at_rest(directory, listed, report)
    for i, (base, size) in enumerate(segments):
        last = i == len(segments) - 1
        end = segments[i + 1][0] if not last else last_end
        report.segments.append(_verify_segment(directory, base, size, end, report, label=report.label, stop=stop,
                                               growing=last and live is not None, torn_allowed=last and not clean))
    if report.segments and (live is not None or report.start_offset >= report.segments[0].base_offset):
        report.start_offset = report.segments[0].base_offset
    elif report.segments:  # recovery step 1: the first segments are gone
        first = report.segments[0]
        first.damaged.insert(0, DamagedRange(report.start_offset, first.base_offset, 0, 0,
                                             f"segment files before offset {first.base_offset} are missing: the log"
                                             f" starts at {report.start_offset} ({START_OFFSET_FILE})"))
    if cursors is not None:
        report.cursors = _verify_cursors(cursors, report, live is not None)
    return report


def _listing(directory: Path, report: TopicReport, live: bool) -> dict[int, int]:
    """``{base: size}`` of the segment files; temp files and indexes without a segment are stray (at rest only:
    under a running broker they come and go)."""
    logs: dict[int, int] = {}
    indexes: set[int] = set()
    with os.scandir(directory) as found:
        for entry in sorted(found, key=lambda e: e.name):
            match = _SEGMENT_FILE.match(entry.name)
            if entry.name.endswith(".tmp") and entry.is_file():
                if not live:
                    report.stray_files.append(StrayFile(entry.name, "a temp file of an interrupted write: removed at"
                                                        " the next load"))
            elif match and match.group(2) == "log":
                logs[int(match.group(1))] = entry.stat().st_size
            elif match:
                indexes.add(int(match.group(1)))
    if not live:
        for base in sorted(indexes - logs.keys()):
            report.stray_files.append(StrayFile(segment_name(base) + ".index", "an index without its segment:"
                                                " removed at the next load"))
    return logs


def _at_rest(directory: Path, listed: dict[int, int], report: TopicReport
             ) -> tuple[list[tuple[int, int]], int | None, bool]:
    """``(base, size)`` of the segments of a log at rest as its next load takes them, where the last one must
    end (None: where its frames end), and whether the log was closed cleanly since its last append (else the
    last segment's tail may be torn)."""
    start = _read_ints(directory / START_OFFSET_FILE, report)
    report.start_offset = start[0] if start else 0
    bases = sorted(listed)
    while len(bases) > 1 and bases[1] <= report.start_offset:  # recovery step 1: retention was interrupted
        leftover = bases.pop(0)
        report.stray_files.append(StrayFile(segment_name(leftover) + ".log", f"wholly below {START_OFFSET_FILE}"
                                            f" ({report.start_offset}): left by an interrupted retention run,"
                                            " removed at the next load"))
    segments = [(base, listed[base]) for base in bases]
    record = _read_ints(directory / CLEAN_CLOSE_FILE, report)
    if not segments or record is None or len(record) not in (4, 5):
        return segments, None, False
    base, size = segments[-1]
    end = record[4] if len(record) == 5 else None  # records of earlier versions name no end
    if record[0] != base or size > record[1] or (size < record[1] and end is None):
        return segments, None, False  # appended to since the clean close (recovery step 3)
    return segments, end, True


def _read_ints(path: Path, report: TopicReport) -> list[int] | None:
    try:
        return [int(word) for word in path.read_text().split()]
    except FileNotFoundError:
        return None
    except (OSError, ValueError, UnicodeDecodeError):
        report.stray_files.append(StrayFile(path.name, "unreadable: the next load ignores it"))
        return None


def _verify_segment(directory: Path, base: int, size: int, end: int | None, report: TopicReport, *, label: str,
                    stop: Callable[[], bool], growing: bool, torn_allowed: bool,
                    check_index: bool = True) -> SegmentReport:
    """Steps 2-4 for one segment. ``end``: where it must end (None: where its frames end); ``torn_allowed``: a
    last range no valid frame follows is a torn tail."""
    seg_report = SegmentReport(base, size)
    seg = Segment(directory, base, 0, label=label)  # a reader of its own: never the log's segment object
    expected, tail = base, None
    index: IndexCheck | None = None
    try:
        if check_index:
            index = IndexCheck(seg.index.path, base, growing=growing)
        for item in segment_repair.verified(seg, 0, base, size, end_limit=end):
            if stop():
                raise Stopped(label)
            if isinstance(item, DamagedRange):
                if index is not None:
                    index.damaged(item)
                seg_report.damaged.append(item)
                tail = item if item.resume_position >= size else None
                expected = item.end_offset
                continue
            position, header = item
            if index is not None:
                index.frame(position, header)
            seg_report.frames += 1
            expected = header.end_offset
        if index is not None:
            index.finish(size)
    except FileNotFoundError:  # retention removed it, or the topic was deleted, while it was read
        return SegmentReport(base, size, removed=True, end_offset=end if end is not None else base)
    finally:
        seg.close()
        if index is not None:
            index.close()
    if index is not None:
        report.index_problems += index.problems
        report.index_problem_count += index.problem_count
    if end is None:  # the last segment, ending where its frames end
        if tail is not None and torn_allowed:
            report.torn_tail = seg_report.damaged.pop()
        seg_report.end_offset = expected
        return seg_report
    if tail is not None:  # nothing valid after it: it lost the offsets up to the segment's end
        seg_report.damaged[-1] = tail.ending_at(end)
    elif expected < end:
        seg_report.damaged.append(DamagedRange(
            expected, end, size, size, f"frames up to offset {end} are missing: the segment file ends at"
            f" offset {expected} (truncated, or segment files after it are missing)"))
    seg_report.end_offset = end
    return seg_report


def _verify_cursors(folder: Path, report: TopicReport, live: bool) -> list[CursorReport]:
    """Step 5: each cursor's copies, grouped by subscription as :meth:`CursorStore.load` groups them."""
    slots: dict[str, dict[int, Path]] = {}
    try:
        found = sorted(folder.iterdir())
    except FileNotFoundError:
        return []
    for path in found:
        inside = f"{folder.name}/{path.name}"
        if path.name.endswith(".tmp"):
            if not live:
                report.stray_files.append(StrayFile(inside, "a temp file of an interrupted cursor save: removed at"
                                                    " the next load"))
            continue
        if path.name.endswith(SET_ASIDE_SUFFIX):
            report.stray_files.append(StrayFile(inside, "a cursor an earlier load set aside (no copy was usable"
                                                " and its subscription's name was unknown)"))
            continue
        for slot, suffix in enumerate(SLOT_SUFFIXES):
            if path.name.endswith(suffix):
                slots.setdefault(path.name[:-len(suffix)], {})[slot] = path
                break
        else:
            report.stray_files.append(StrayFile(inside, "not a cursor file: ignored"))
    cursors = []
    for base, paths in slots.items():
        copies = tuple(read_copy(path, slot, base + SUFFIX) for slot, path in sorted(paths.items()))
        usable = tuple(sorted((c for c in copies if c.cursor is not None), key=lambda c: c.generation or 0,
                              reverse=True))
        newest = usable[0].cursor if usable else None
        name = newest.name if newest is not None else _name_of(base)
        stored = StoredCursor(name, usable, tuple(c for c in copies if c.cursor is None))
        cursors.append(CursorReport(name, copies, usable[0].file if usable else None, stored.newest_lost))
    return cursors


def _name_of(base: str) -> str | None:
    """A subscription's name from its file name (None when it is a hash)."""
    if _HASHED.fullmatch(base):
        return None
    return unquote(base)


def segment_damage(directory: Path, base: int, size: int, end_offset: int, *, label: str = "",
                   stop: Callable[[], bool] = _never) -> list[DamagedRange]:
    """The damaged ranges of the first ``size`` bytes of segment ``base`` of the log in ``directory``, which ends
    at ``end_offset`` (what the background check of a reloaded last segment runs on a worker thread: see
    :meth:`~broker_core.storage.log.ManagedLog.background_check`); read through a segment object of its own,
    nothing changed. Raises :class:`Stopped` when ``stop()``."""
    found = _verify_segment(directory, base, size, end_offset, TopicReport(label, True), label=label, stop=stop,
                            growing=True, torn_allowed=False, check_index=False)
    return found.damaged
