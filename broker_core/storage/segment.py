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

from broker_core.errors import CorruptLog
from broker_core.storage import segment_repair
from broker_core.storage.atomic import fsync_directory
from broker_core.storage.bad_frame import BadFrame
from broker_core.storage.files import UNLIMITED, FileBudget, FileHandle
from broker_core.storage.format import HEADER_SIZE, MAX_FRAME_DATA, FrameHeader, InvalidFrame, decode_header, verify
from broker_core.storage.index import SparseIndex

log = logging.getLogger(__name__)

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
READ_CHUNK = 256 << 10


def segment_name(base_offset: int) -> str:
    return f"{base_offset:020d}"


class Segment:
    """A segment file; ``end_offset`` is the offset after its last frame, ``size`` its byte length.

    ``label`` names the segment in errors sent to clients (the topic, never a server path); ``damaged``
    is set when recovery found the segment unreadable: every read of it then raises that error, while
    the rest of the log stays readable and writable.
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
        self.damaged: CorruptLog | None = None
        self.verified = True
        """False for a last segment opened through the clean-close shortcut: :meth:`verify` runs before the
        first append lands in it (when small enough: see ``VERIFY_BEFORE_APPEND_MAX_BYTES``)."""
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

    def time_search_start(self, publish_time_ms: int, position: int = 0) -> int:
        """A frame position at or after ``position`` from which to scan for the first frame published at or
        after ``publish_time_ms``: the last indexed frame published before it, found by bisecting the sparse
        index (one header read per step), so the scan reads about one index interval instead of the whole
        segment (each seek by time read 50,000 frames of an active segment: 0.1 s per request). Publish times
        are taken as growing with offsets, as Pulsar's search by time does. An index entry whose frame does
        not match it ends the bisection where it is (the scan from there is exact)."""
        offsets, positions = self.index.offsets, self.index.positions
        lo = max(bisect.bisect_right(positions, position) - 1, 0)
        hi = len(positions)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            raw = self._pread(HEADER_SIZE, positions[mid])
            try:
                header = decode_header(memoryview(raw), MAX_FRAME_DATA)
            except InvalidFrame:
                break
            if header.offset != offsets[mid]:
                break
            if header.publish_time < publish_time_ms:
                lo = mid
            else:
                hi = mid
        return max(positions[lo], position) if positions else position

    def locate(self, offset: int) -> int:
        """Byte position of the frame containing ``offset`` (or of ``size`` if it is past the end).

        The index entry used is checked against the frame it points at (a frame header there, with the
        entry's offset); a wrong entry makes the segment rebuild its index from the log, once.
        """
        if self.damaged is not None:
            raise self.damaged
        for attempt in (1, 2):
            indexed_offset, position = self.index.floor(offset)
            first = True
            try:
                for pos, header, _ in self.frames(position, check_crc=False):
                    if first and self.index.offsets and header.offset != indexed_offset:
                        raise BadFrame(pos, f"index entry says offset {indexed_offset}, the frame holds "
                                            f"{header.offset}")
                    first = False
                    if header.end_offset > offset:
                        return pos
                return self.size
            except BadFrame as bad:
                if attempt == 2:
                    self.damaged = self.corrupt(bad)  # its index cannot be rebuilt: fenced like any damage
                    raise self.damaged from None
                log.error("event=segment_index_wrong segment=%s position=%d reason=%r action=rebuild_index",
                          self.path, bad.position, bad.reason)
                self.rebuild_index()
        return self.size  # unreachable

    def rebuild_index(self) -> None:
        """Rebuild the sparse index from a scan of the whole log file (raises CorruptLog if the log is
        damaged)."""
        self.index.close()
        self.index.clear()
        try:
            segment_repair.scan(self, 0, self.base_offset, build_index=True, persist_index=False)
        except BadFrame as bad:
            self.damaged = self.corrupt(bad)  # later reads fail at once; an active segment is rolled
            raise self.damaged from None
        finally:
            self.index.rewrite()

    def corrupt(self, bad: BadFrame) -> CorruptLog:
        """The error reads of this segment raise (logged with the full path; the client sees the topic,
        the segment's file name and the byte position only)."""
        log.error("event=segment_corrupt segment=%s position=%d reason=%r", self.path, bad.position, bad.reason)
        return CorruptLog(
            f"{self.label}: stored segment {self.path.name} is corrupt at byte {bad.position} ({bad.reason});"
            " reads of this range fail until it is repaired: restore the topic from a backup, or move the"
            " subscription past it (`pulsarlike admin topics reset-cursor` / `skip`)",
            path=self.path.name, position=bad.position)

    def count_entries(self) -> int:
        if self.entry_count is None:
            try:
                self.entry_count = sum(1 for _ in self.frames(check_crc=False))
            except BadFrame as bad:
                raise self.corrupt(bad) from None
        return self.entry_count

    def publish_time_max(self) -> int:
        """Largest publish time in the segment (cached once sealed)."""
        if self.max_publish_time is not None and self.sealed:
            return self.max_publish_time
        try:
            best = max((h.publish_time for _, h, _ in self.frames(check_crc=False)), default=-1)
        except BadFrame as bad:
            raise self.corrupt(bad) from None
        self.max_publish_time = best
        return best

    # -- opening and recovery (:mod:`broker_core.storage.segment_repair`) --------------------------
    def load_sealed(self) -> None:
        """Recovery step 2: open a sealed segment through its index (see :func:`segment_repair.load_sealed`)."""
        segment_repair.load_sealed(self)

    def verify(self) -> None:
        """Check every frame once before the first append (see :func:`segment_repair.verify_all`)."""
        segment_repair.verify_all(self)

    def recover_last(self) -> int:
        """Recovery steps 3-5 on the last segment; returns the number of torn-tail bytes removed."""
        return segment_repair.recover_last(self)

    def valid_frames_end(self, position: int = 0) -> int:
        """The highest end offset of the valid frames at or after ``position`` (recovery steps 4b, 4c)."""
        return segment_repair.valid_frames_end(self, position)

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

