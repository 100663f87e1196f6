"""One segment of a managed log: ``<base offset, 20 digits>.log`` plus its sparse ``.index``.

A segment is a sequence of frames (:mod:`broker_core.storage.format`) whose offsets are contiguous:
each frame's offset is the previous frame's offset + count, the first one's is the base offset.
This module reads, appends, scans and repairs one segment; :mod:`broker_core.storage.log` owns the
list of segments and the recovery procedure that calls :meth:`Segment.load_sealed` and
:meth:`Segment.recover_last`.
"""
from __future__ import annotations

import logging
import mmap
import os
from collections.abc import Iterator, Sequence
from pathlib import Path

from broker_core.errors import CorruptLog
from broker_core.storage.atomic import fsync_directory
from broker_core.storage.format import (
    HEADER_SIZE, MAGIC_BYTES, MAX_FRAME_DATA, FrameHeader, InvalidFrame, decode_header, verify)
from broker_core.storage.index import SparseIndex

log = logging.getLogger(__name__)

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
READ_CHUNK = 256 << 10
_IOV_MAX = 1024


def segment_name(base_offset: int) -> str:
    return f"{base_offset:020d}"


class BadFrame(Exception):
    """An invalid frame at ``position`` of a segment (internal: becomes CorruptLog or a torn tail)."""

    def __init__(self, position: int, reason: str, *, crc_valid: bool = False) -> None:
        super().__init__(f"{reason} at byte {position}")
        self.position = position
        self.reason = reason
        self.crc_valid = crc_valid


class Segment:
    """A segment file; ``end_offset`` is the offset after its last frame, ``size`` its byte length."""

    def __init__(self, directory: Path, base_offset: int, created_ms: int) -> None:
        self.base_offset = base_offset
        self.path = directory / (segment_name(base_offset) + LOG_SUFFIX)
        self.index = SparseIndex(directory / (segment_name(base_offset) + INDEX_SUFFIX))
        self.size = 0
        self.end_offset = base_offset
        self.entry_count: int | None = 0  # None: not known yet (sealed, opened through its index)
        self.max_publish_time: int | None = None  # cached for sealed segments, for seek by time
        self.created_ms = created_ms
        self._wfd: int | None = None
        self._rfd: int | None = None

    # -- creation and appends -------------------------------------------------------------------
    @classmethod
    def create(cls, directory: Path, base_offset: int, created_ms: int) -> Segment:
        seg = cls(directory, base_offset, created_ms)
        seg._wfd = os.open(seg.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o644)
        seg.index.rewrite()  # an empty index, replacing any stale one
        fsync_directory(directory)
        return seg

    def open_for_append(self) -> None:
        if self._wfd is None:
            self._wfd = os.open(self.path, os.O_WRONLY | os.O_APPEND)

    @property
    def write_fd(self) -> int:
        assert self._wfd is not None, "segment is sealed"
        return self._wfd

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
        if self._wfd is not None:
            os.fsync(self._wfd)

    def seal(self) -> None:
        """fsync and close the write handle: the segment becomes immutable."""
        if self._wfd is not None:
            os.fsync(self._wfd)
            os.close(self._wfd)
            self._wfd = None
        self.index.close()

    # -- reading --------------------------------------------------------------------------------
    def _reader(self) -> int:
        if self._rfd is None:
            self._rfd = os.open(self.path, os.O_RDONLY)
        return self._rfd

    def frames(self, position: int = 0, stop: int | None = None, *, check_crc: bool = True,
               chunk: int = READ_CHUNK) -> Iterator[tuple[int, FrameHeader, bytes | memoryview]]:
        """Yield ``(position, header, data)`` from ``position`` up to ``stop`` (default: size).

        Raises :class:`BadFrame` at the first frame that does not verify. With ``check_crc`` the data
        is a ``bytes`` copy; without it, a view valid only until the next iteration (header scans).
        """
        stop = self.size if stop is None else stop
        fd = self._reader()
        buf, buf_pos = b"", position
        while position < stop:
            rel = position - buf_pos
            if len(buf) - rel < HEADER_SIZE:
                buf, buf_pos, rel = os.pread(fd, min(chunk, stop - position), position), position, 0
            view = memoryview(buf)
            try:
                header = decode_header(view[rel:rel + HEADER_SIZE], MAX_FRAME_DATA)
            except InvalidFrame as exc:
                raise BadFrame(position, exc.reason) from None
            if position + header.frame_size > stop:
                raise BadFrame(position, "truncated data")
            if rel + header.frame_size > len(buf):
                buf = os.pread(fd, max(header.frame_size, min(chunk, stop - position)), position)
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

    def locate(self, offset: int) -> int:
        """Byte position of the frame containing ``offset`` (or of ``size`` if it is past the end)."""
        _, position = self.index.floor(offset)
        for pos, header, _ in self.frames(position, check_crc=False):
            if header.end_offset > offset:
                return pos
        return self.size

    def corrupt(self, bad: BadFrame) -> CorruptLog:
        return CorruptLog(
            f"segment {self.path} is corrupt at byte {bad.position} ({bad.reason}); restore the topic "
            "from a replica or remove the segment files from this position on",
            path=str(self.path), position=bad.position)

    def count_entries(self) -> int:
        if self.entry_count is None:
            try:
                self.entry_count = sum(1 for _ in self.frames(check_crc=False))
            except BadFrame as bad:
                raise self.corrupt(bad) from None
        return self.entry_count

    def publish_time_max(self) -> int:
        """Largest publish time in the segment (cached once sealed)."""
        if self.max_publish_time is not None and self._wfd is None:
            return self.max_publish_time
        try:
            best = max((h.publish_time for _, h, _ in self.frames(check_crc=False)), default=-1)
        except BadFrame as bad:
            raise self.corrupt(bad) from None
        self.max_publish_time = best
        return best

    # -- opening and recovery ---------------------------------------------------------------------
    def _scan(self, position: int, expected_offset: int, *, build_index: bool) -> tuple[int, int, int]:
        """Verify frames from ``position`` to EOF; returns ``(end position, end offset, frames)``.

        Raises :class:`BadFrame` at the first invalid or discontinuous frame.
        """
        count = 0
        for pos, header, _ in self.frames(position):
            if header.offset != expected_offset:
                raise BadFrame(pos, f"offset {header.offset} where {expected_offset} was expected",
                               crc_valid=True)
            if build_index:
                self.index.observe(header.offset, pos)
            expected_offset = header.end_offset
            position = pos + header.frame_size
            count += 1
        return position, expected_offset, count

    def load_sealed(self) -> None:
        """Recovery step 2: open a sealed segment through its index (rebuilt if unusable)."""
        self.size = os.path.getsize(self.path)
        self.entry_count = None
        try:
            if self.index.load(self.base_offset, self.size):
                last_offset, last_position = self.index.offsets[-1], self.index.positions[-1]
                try:
                    _, self.end_offset, _ = self._scan(last_position, last_offset, build_index=True)
                    self.index.close()
                    return
                except BadFrame:
                    log.warning("event=segment_index_rebuilt segment=%s reason=index_does_not_match_log", self.path)
            self.index.clear()
            self.index.rewrite()
            _, self.end_offset, self.entry_count = self._scan(0, self.base_offset, build_index=True)
        except BadFrame as bad:
            raise self.corrupt(bad) from None
        self.index.close()

    def recover_last(self) -> int:
        """Recovery steps 3-5 on the last segment; returns the number of torn-tail bytes removed."""
        self.size = os.path.getsize(self.path)
        self.index.remove()
        self.index.clear()
        try:
            valid_end, self.end_offset, self.entry_count = self._scan(
                0, self.base_offset, build_index=True)
            torn = 0
        except BadFrame as bad:
            resync = bad.position if bad.crc_valid else self.find_valid_frame(bad.position + 1)
            if resync is not None:
                raise CorruptLog(
                    f"segment {self.path} is corrupt at byte {bad.position} ({bad.reason}) but holds "
                    f"a valid frame at byte {resync}: this is not a torn write; restore the topic "
                    "from a replica or cut the segment by hand",
                    path=str(self.path), position=bad.position) from None
            valid_end = bad.position
            self.index.truncate_after(valid_end)
            _, self.end_offset, self.entry_count = self._scan_counts(valid_end)
            torn = self.size - valid_end
            log.warning("event=torn_tail_truncated segment=%s bytes=%d position=%d reason=%r",
                        self.path, torn, valid_end, bad.reason)
            with open(self.path, "r+b") as f:
                f.truncate(valid_end)
                f.flush()
                os.fsync(f.fileno())
            self.size = valid_end
        self.index.rewrite()
        return torn

    def _scan_counts(self, stop: int) -> tuple[int, int, int]:
        end_offset, count = self.base_offset, 0
        for _, header, _ in self.frames(0, stop, check_crc=False):
            end_offset, count = header.end_offset, count + 1
        return stop, end_offset, count

    def find_valid_frame(self, start: int) -> int | None:
        """Position of the first fully valid frame (magic, bounds, CRC) at or after ``start``."""
        if self.size <= start:
            return None
        with open(self.path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            position = mm.find(MAGIC_BYTES, start)
            while position != -1:
                try:
                    header = decode_header(mm[position:position + HEADER_SIZE])
                    if position + header.frame_size <= len(mm):
                        verify(mm[position:position + HEADER_SIZE], header,
                               mm[position + HEADER_SIZE:position + header.frame_size])
                        return position
                except InvalidFrame:
                    pass
                position = mm.find(MAGIC_BYTES, position + 1)
        return None

    # -- teardown -------------------------------------------------------------------------------
    def close(self) -> None:
        for name in ("_wfd", "_rfd"):
            fd = getattr(self, name)
            if fd is not None:
                os.close(fd)
                setattr(self, name, None)
        self.index.close()

    def remove(self) -> None:
        self.close()
        self.path.unlink(missing_ok=True)
        self.index.remove()


def write_all(fd: int, buffers: Sequence[bytes]) -> None:
    """``os.writev`` the buffers, resuming after short writes and splitting at IOV_MAX."""
    pending = list(buffers)
    while pending:
        batch = pending[:_IOV_MAX]
        written = os.writev(fd, batch)
        consumed = 0
        while consumed < len(batch) and written >= len(batch[consumed]):
            written -= len(batch[consumed])
            consumed += 1
        pending = pending[consumed:]
        if written:
            pending[0] = memoryview(pending[0])[written:]
