"""One segment of a managed log: ``<base offset, 20 digits>.log`` plus its sparse ``.index``.

A segment is a sequence of frames (:mod:`broker_core.storage.format`) whose offsets are contiguous:
each frame's offset is the previous frame's offset + count, the first one's is the base offset.
This module reads and appends one segment; :mod:`broker_core.storage.segment_repair` scans and repairs
it at recovery, :mod:`broker_core.storage.log` owns the list of segments, and
:mod:`broker_core.storage.recovery` the procedure that calls :meth:`Segment.load_sealed` and
:meth:`Segment.recover_last`.
"""
from __future__ import annotations

import bisect
import logging
import os
from collections.abc import Iterator
from pathlib import Path

from broker_core.errors import DataLost
from broker_core.storage import segment_repair
from broker_core.storage.atomic import fsync_directory
from broker_core.storage.bad_frame import BadFrame
from broker_core.storage.damage import DamagedRange, DamageMap
from broker_core.storage.files import UNLIMITED, FileBudget, FileHandle
from broker_core.storage.format import HEADER_SIZE, MAX_FRAME_DATA, FrameHeader, InvalidFrame, decode_header, verify
from broker_core.storage.index import SparseIndex
from broker_core.storage.stored_entry import StoredEntry

log = logging.getLogger(__name__)

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
READ_CHUNK = 256 << 10


def segment_name(base_offset: int) -> str:
    return f"{base_offset:020d}"


class Segment:
    """A segment file; ``end_offset`` is the offset after its last frame, ``size`` its byte length.

    ``label`` names the segment in errors sent to clients (the topic, never a server path); ``damage``
    maps what of it does not verify (:mod:`broker_core.storage.damage`): a read of an offset in a damaged
    range raises :class:`~broker_core.errors.DataLost` for that range, every other read goes on.
    """

    def __init__(self, directory: Path, base_offset: int, created_ms: int, *,
                 files: FileBudget = UNLIMITED, label: str = "") -> None:
        self.base_offset = base_offset
        self.path = directory / (segment_name(base_offset) + LOG_SUFFIX)
        self.index = SparseIndex(directory / (segment_name(base_offset) + INDEX_SUFFIX), files)
        self.size = 0
        self.end_offset = base_offset
        self.entry_count: int | None = 0  # None: not known yet (sealed, opened through its index)
        self.max_publish_time: int | None = None  # cached for sealed segments, for seek by time
        self.created_ms = created_ms
        self.label = label or str(directory.name)
        self.damage = DamageMap()
        self.verified = True
        """False for a last segment opened through the clean-close shortcut: :meth:`verify` runs before the
        first append lands in it (when small enough: see ``VERIFY_BEFORE_APPEND_MAX_BYTES``)."""
        self._reported: set[DamagedRange] = set()
        self._files = files
        self._writer: FileHandle | None = None
        self._reader: FileHandle | None = None

    # -- creation and appends -------------------------------------------------------------------
    @classmethod
    def create(cls, directory: Path, base_offset: int, created_ms: int, *,
               files: FileBudget = UNLIMITED, label: str = "") -> Segment:
        seg = cls(directory, base_offset, created_ms, files=files, label=label)
        fd = os.open(seg.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o644)
        os.close(fd)
        seg.open_for_append()
        seg.index.rewrite()  # an empty index, replacing any stale one
        fsync_directory(directory)
        return seg

    def open_for_append(self) -> None:
        if self._writer is None:
            self._writer = self._files.handle(self.path, os.O_WRONLY | os.O_APPEND)

    @property
    def writer(self) -> FileHandle:
        """The append handle (``with seg.writer as fd``); only the active segment has one."""
        assert self._writer is not None, "segment is sealed"
        return self._writer

    @property
    def sealed(self) -> bool:
        return self._writer is None

    def appended(self, header: FrameHeader) -> int:
        """Account for a frame just written at the old end; returns its position."""
        position = self.size
        self.index.observe(header.offset, position)
        self.size += header.frame_size
        self.end_offset = header.end_offset
        if self.entry_count is not None:
            self.entry_count += 1
        return position

    def fsync(self) -> None:
        if self._writer is not None:
            self._writer.sync()

    def seal(self) -> None:
        """fsync and close the write handle: the segment becomes immutable."""
        if self._writer is not None:
            self._writer.sync()
            self._writer.close()
            self._writer = None
        self.index.close()

    def truncate(self, position: int, end_offset: int, entry_count: int | None) -> None:
        """Cut the active segment back to ``position`` (appends the journal could not make durable),
        fsynced; ``end_offset`` and ``entry_count`` describe what remains."""
        with self.writer as fd:
            os.ftruncate(fd, position)
            os.fsync(fd)
        self.size, self.end_offset, self.entry_count = position, end_offset, entry_count
        self.index.truncate_after(position)

    # -- reading --------------------------------------------------------------------------------
    def _pread(self, size: int, position: int) -> bytes:
        if self._reader is None:
            self._reader = self._files.handle(self.path, os.O_RDONLY)
        with self._reader as fd:
            return os.pread(fd, size, position)

    def frames(self, position: int = 0, stop: int | None = None, *, check_crc: bool = True,
               chunk: int = READ_CHUNK) -> Iterator[tuple[int, FrameHeader, bytes | memoryview]]:
        """Yield ``(position, header, data)`` from ``position`` up to ``stop`` (default: size).

        Raises :class:`BadFrame` at the first frame that does not verify. With ``check_crc`` the data
        is a ``bytes`` copy; without it, a view valid only until the next iteration (header scans).
        A gap frame (``length == 0``, see :mod:`broker_core.storage.format`) is yielded like any other.
        """
        stop = self.size if stop is None else stop
        buf, buf_pos = b"", position
        while position < stop:
            rel = position - buf_pos
            if len(buf) - rel < HEADER_SIZE:
                buf, buf_pos, rel = self._pread(min(chunk, stop - position), position), position, 0
            view = memoryview(buf)
            try:
                header = decode_header(view[rel:rel + HEADER_SIZE], MAX_FRAME_DATA)
            except InvalidFrame as exc:
                raise BadFrame(position, exc.reason) from None
            if position + header.frame_size > stop:
                raise BadFrame(position, "truncated data")
            if rel + header.frame_size > len(buf):
                buf = self._pread(max(header.frame_size, min(chunk, stop - position)), position)
                buf_pos, rel, view = position, 0, memoryview(buf)
                if len(buf) < header.frame_size:
                    raise BadFrame(position, "truncated data")
            data: bytes | memoryview = view[rel + HEADER_SIZE:rel + header.frame_size]
            if check_crc:
                data = bytes(data)  # google_crc32c takes bytes only; readers keep this copy
                try:
                    verify(view[rel:rel + HEADER_SIZE], header, data)
                except InvalidFrame as exc:
                    raise BadFrame(position, exc.reason) from None
            yield position, header, data
            position += header.frame_size

    def time_search_start(self, publish_time_ms: int, position: int = 0, offset: int | None = None) -> tuple[int, int]:
        """``(byte, offset)`` of a frame at or after ``position`` (a frame holding ``offset``; the segment's
        start by default) from which to scan for the first frame published at or after ``publish_time_ms``:
        the last indexed frame published before it, found by bisecting the sparse index (one header read per
        step), so the scan reads about one index interval instead of the whole segment (each seek by time read
        50,000 frames of an active segment: 0.1 s per request). Publish times are taken as growing with
        offsets, as Pulsar's search by time does. An index entry whose frame does not match it, or inside a
        damaged range, ends the bisection where it is (the scan from there is exact)."""
        best = (position, self.base_offset if offset is None else offset)
        offsets, positions = self.index.offsets, self.index.positions
        lo = max(bisect.bisect_right(positions, position) - 1, 0)
        hi = len(positions)
        while hi - lo > 1:
            mid = (lo + hi) // 2  # above lo, so past ``position``
            if self.damage.at_position(positions[mid]) is not None:
                break
            raw = self._pread(HEADER_SIZE, positions[mid])
            try:
                header = decode_header(memoryview(raw), MAX_FRAME_DATA)
            except InvalidFrame:
                break
            if header.offset != offsets[mid]:
                break
            if header.publish_time < publish_time_ms:
                lo = mid
                best = (positions[mid], offsets[mid])
            else:
                hi = mid
        return best

    def walk(self, position: int, expected: int, stop: int | None = None, *, check_crc: bool = True,
             chunk: int = READ_CHUNK) -> Iterator[tuple[int, FrameHeader, bytes | memoryview] | DamagedRange]:
        """:meth:`frames` from ``position`` (a frame holding offset ``expected``) with damage in its place: each
        damaged range on the way is yielded (a known one, or one found now and recorded: see
        :func:`segment_repair.resolve`) and the walk goes on after it. Frames must continue each other's
        offsets. Raises :class:`BadFrame` only when the walk did not start at a frame holding ``expected``
        (a wrong index entry)."""
        stop = self.size if stop is None else stop
        while position < stop:
            known = self.damage.at_position(position)
            if known is not None:
                yield known
                position, expected = known.resume_position, known.end_offset
                continue
            ahead = self.damage.starting_after(position)
            piece = min(stop, ahead.position) if ahead is not None else stop
            try:
                for pos, header, data in self.frames(position, piece, check_crc=check_crc, chunk=chunk):
                    if header.offset != expected:
                        raise BadFrame(pos, f"offset {header.offset} where {expected} was expected", crc_valid=True)
                    yield pos, header, data
                    expected = header.end_offset
                position = piece
            except BadFrame as bad:
                found = self.damage.at_offset(expected)
                if found is None or found.position != bad.position:
                    found = self.find_damage(bad.position)
                if found is None:
                    raise
                yield found
                position, expected = found.resume_position, found.end_offset

    def find_damage(self, position: int) -> DamagedRange | None:
        """The damaged range holding byte ``position`` (see :func:`segment_repair.resolve`), recorded and
        reported once."""
        before = len(self.damage)
        found = segment_repair.resolve(self, position)
        if len(self.damage) != before:
            self.report_damage()
        return found

    def add_damage(self, ranges: list[DamagedRange]) -> None:
        """Record ranges found by a scan (recovery, a background check) and report the new ones."""
        for found in ranges:
            self.damage.add(found)
        self.report_damage()

    def report_damage(self) -> None:
        """One ERROR line per damaged range not reported yet: the offsets and messages it costs."""
        for found in self.damage:
            if found in self._reported:
                continue
            self._reported.add(found)
            log.error("event=log_range_damaged log=%s segment=%s first_offset=%d end_offset=%d lost_messages=%d"
                      " position=%d resume_position=%d reason=%r detail=%r", self.label, self.path,
                      found.start_offset, found.end_offset, found.messages, found.position, found.resume_position,
                      found.reason, "reads of these offsets fail (or skip them with autoSkipNonRecoverableData);"
                      " the rest of the log is read and written as before")

    def lost(self, found: DamagedRange) -> DataLost:
        """The error a read of ``found``'s offsets raises (the client sees the topic, the segment's file name
        and the byte, never a server path)."""
        return DataLost(topic=self.label, start_offset=found.start_offset, end_offset=found.end_offset,
                        path=self.path.name, position=found.position,
                        reason=f"stored segment {self.path.name} is damaged at byte {found.position} ({found.reason})")

    def _walk_start(self, offset: int) -> tuple[int, int]:
        """``(byte, offset)`` where a walk to ``offset`` starts: the index entry at or before it, or the end of
        a damaged range between that entry and it (an entry inside damage is never used)."""
        start = (0, self.base_offset)
        offsets, positions = self.index.offsets, self.index.positions
        i = bisect.bisect_right(offsets, offset) - 1
        while i >= 0 and self.damage.at_position(positions[i]) is not None:
            i -= 1
        if i >= 0:
            start = (positions[i], offsets[i])
        for found in self.damage:
            if found.end_offset <= offset and found.resume_position > start[0]:
                start = (found.resume_position, found.end_offset)
        return start

    def locate(self, offset: int) -> int:
        """Byte position of the frame containing ``offset`` (or of ``size`` if it is past the end); raises
        :class:`DataLost` when ``offset`` is in a damaged range."""
        return self.find(offset)[0]

    def find(self, offset: int) -> tuple[int, int]:
        """``(byte position, first offset)`` of the frame containing ``offset`` (``(size, end offset)`` past the
        end); raises :class:`DataLost` when ``offset`` is in a damaged range.

        The walk starts at the index entry at or before ``offset``, which must hold the entry's offset; a
        wrong entry makes the segment rebuild its index from the log, once.
        """
        for attempt in (1, 2):
            found = self.damage.at_offset(offset)
            if found is not None:
                raise self.lost(found)
            position, expected = self._walk_start(offset)
            if position == 0 and offset <= self.base_offset:
                return 0, self.base_offset
            try:
                for item in self.walk(position, expected, check_crc=False):
                    if isinstance(item, DamagedRange):
                        if item.covers(offset):
                            raise self.lost(item)
                        continue
                    pos, header, _ = item
                    if header.end_offset > offset:
                        return pos, header.offset
                return self.size, self.end_offset
            except BadFrame as bad:
                if attempt == 2:
                    raise self.lost(DamagedRange(expected, max(expected + 1, offset + 1), bad.position,
                                                 bad.position + 1, bad.reason)) from None
                log.error("event=segment_index_wrong segment=%s position=%d reason=%r action=rebuild_index",
                          self.path, bad.position, bad.reason)
                self.rebuild_index()
        return self.size, self.end_offset  # unreachable

    def entries(self, offset: int, chunk: int = READ_CHUNK) -> Iterator[StoredEntry]:
        """The entries from the one containing ``offset`` to the segment's end, CRC-checked; raises
        :class:`DataLost` on reaching a damaged range that lost messages (a range of stray bytes is stepped
        over)."""
        position, expected = self.find(offset)
        end = self.end_offset
        sealed = self.sealed
        for item in self.walk(position, expected, chunk=chunk):
            if isinstance(item, DamagedRange):
                if item.messages:
                    raise self.lost(item)
                continue
            _, header, data = item
            if sealed and header.offset >= end:
                return
            expected = header.end_offset
            if header.length:  # a gap frame holds no entry
                yield StoredEntry(header.offset, header.count, header.publish_time, self.base_offset,
                                  data)  # type: ignore[arg-type]  # bytes: CRC-checked
        missing = self.damage.at_offset(expected) if sealed and expected < end else None
        if missing is not None:  # the frames end before the segment does (truncated, files missing)
            raise self.lost(missing)

    def headers_from(self, position: int, expected: int) -> Iterator[FrameHeader]:
        """Frame headers from ``position`` (a frame holding ``expected``; the segment's start if it is not
        one), damaged ranges stepped over, no CRC checks."""
        try:
            for item in self.walk(position, expected, check_crc=False):
                if not isinstance(item, DamagedRange):
                    yield item[1]
        except BadFrame:  # the start was a wrong index entry: from the segment's start
            if position == 0:
                raise self.lost(DamagedRange(expected, expected + 1, 0, 1, "unreadable")) from None
            yield from (h for h in self.headers_from(0, self.base_offset) if h.offset >= expected)

    def rebuild_index(self) -> None:
        """Rebuild the sparse index from a verifying scan of the whole log file, mapping any damage on the
        way (the index holds valid frames only)."""
        self.index.close()
        self.index.clear()
        try:
            result = segment_repair.scan(self, 0, self.base_offset, build_index=True, persist_index=False,
                                         end_limit=self.end_offset if self.sealed else None)
            segment_repair.record_scan(self, result, self.end_offset)
        finally:
            self.index.rewrite()

    def count_entries(self) -> int:
        """Frames in the segment (damaged ranges not counted)."""
        if self.entry_count is None:
            self.entry_count = sum(1 for _ in self.headers_from(0, self.base_offset))
        return self.entry_count

    def publish_time_max(self) -> int:
        """Largest publish time in the segment (cached once sealed)."""
        if self.max_publish_time is not None and self.sealed:
            return self.max_publish_time
        best = max((h.publish_time for h in self.headers_from(0, self.base_offset)), default=-1)
        self.max_publish_time = best
        return best

    # -- opening and recovery (:mod:`broker_core.storage.segment_repair`) --------------------------
    def load_sealed(self, end_offset: int | None) -> None:
        """Recovery step 2: open a sealed segment through its index (see :func:`segment_repair.load_sealed`)."""
        segment_repair.load_sealed(self, end_offset)

    def verify(self) -> None:
        """Check every frame once before the first append (see :func:`segment_repair.verify_all`); damage
        found is recorded (the log then rolls to a new segment)."""
        self.verified = True
        segment_repair.record_scan(self, segment_repair.verify_all(self), self.end_offset)

    def recover_last(self) -> segment_repair.Scan:
        """Recovery steps 3-5 on the last segment (see :func:`segment_repair.recover_last`)."""
        return segment_repair.recover_last(self)[0]

    # -- teardown -------------------------------------------------------------------------------
    def close(self) -> None:
        for handle in (self._writer, self._reader):
            if handle is not None:
                handle.close()
        self._writer = self._reader = None
        self.index.close()

    def remove(self) -> None:
        self.close()
        self.path.unlink(missing_ok=True)
        self.index.remove()

