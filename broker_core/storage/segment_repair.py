"""Opening, scanning and repairing one segment at recovery: the per-segment half of steps 2-5 of the
procedure in :mod:`broker_core.storage.recovery` (which calls these through :meth:`Segment.load_sealed`,
:meth:`Segment.verify`, :meth:`Segment.recover_last` and :meth:`Segment.valid_frames_end`).

A scan verifies every frame (magic, length bound, CRC) and the offsets' continuity: each frame's offset is
the previous frame's offset + count, the first one's is the base offset. Where a scan stops, a torn tail
(nothing valid after it, the frame's CRC wrong) is cut; anything else is damage, which fences the segment
and never truncates it.
"""
from __future__ import annotations

import logging
import mmap
import os
from typing import TYPE_CHECKING

from broker_core.storage.bad_frame import BadFrame
from broker_core.storage.format import HEADER_SIZE, MAGIC_BYTES, InvalidFrame, decode_header, verify

if TYPE_CHECKING:
    from broker_core.storage.segment import Segment

log = logging.getLogger("broker_core.storage.segment")  # the segment's events keep their logger name


def scan(seg: Segment, position: int, expected_offset: int, *, build_index: bool,
         persist_index: bool = True) -> tuple[int, int, int]:
    """Verify frames from ``position`` to EOF; returns ``(end position, end offset, frames)``.

    Raises :class:`BadFrame` at the first invalid or discontinuous frame.
    """
    count = 0
    for pos, header, _ in seg.frames(position):
        if header.offset != expected_offset:
            raise BadFrame(pos, f"offset {header.offset} where {expected_offset} was expected",
                           crc_valid=True)
        if build_index and seg.index.should_index(pos):
            seg.index.add(header.offset, pos, persist=persist_index)
        expected_offset = header.end_offset
        position = pos + header.frame_size
        count += 1
    return position, expected_offset, count


def scan_counts(seg: Segment, stop: int) -> tuple[int, int, int]:
    """``(stop, end offset, frames)`` of the frames before byte ``stop`` (headers only, no CRC)."""
    end_offset, count = seg.base_offset, 0
    for _, header, _ in seg.frames(0, stop, check_crc=False):
        end_offset, count = header.end_offset, count + 1
    return stop, end_offset, count


def load_sealed(seg: Segment) -> None:
    """Recovery step 2: open a sealed segment through its index (rebuilt if unusable). A segment
    that does not verify is marked ``damaged`` (the log goes on without it: see step 2 in
    :mod:`broker_core.storage.recovery`)."""
    seg.size = os.path.getsize(seg.path)
    seg.entry_count = None
    try:
        if seg.index.load(seg.base_offset, seg.size):
            last_offset, last_position = seg.index.offsets[-1], seg.index.positions[-1]
            try:
                _, seg.end_offset, _ = scan(seg, last_position, last_offset, build_index=True)
                seg.index.close()
                return
            except BadFrame:
                log.warning("event=segment_index_rebuilt segment=%s reason=index_does_not_match_log", seg.path)
        seg.index.clear()
        seg.index.rewrite()
        _, seg.end_offset, seg.entry_count = scan(seg, 0, seg.base_offset, build_index=True)
    except BadFrame as bad:
        seg.damaged = seg.corrupt(bad)
    seg.index.close()


def verify_all(seg: Segment) -> None:
    """Check every frame (magic, CRC, offset continuity) of a last segment opened through the clean-close
    shortcut, once, before anything is appended to it: a damaged one is marked ``damaged`` (the caller
    fences it and appends to a new segment), so new entries never land in a segment nobody can read."""
    seg.verified = True
    try:
        scan(seg, 0, seg.base_offset, build_index=False)
    except BadFrame as bad:
        seg.damaged = seg.corrupt(bad)


def recover_last(seg: Segment) -> int:
    """Recovery steps 3-5 on the last segment; returns the number of torn-tail bytes removed."""
    seg.size = os.path.getsize(seg.path)
    listed = seg.index.stored_entries()  # what the index knew of before the crash (step 5b)
    seg.index.remove()
    seg.index.clear()
    try:
        valid_end, seg.end_offset, seg.entry_count = scan(seg, 0, seg.base_offset, build_index=True)
        torn = 0
    except BadFrame as bad:
        resync = bad.position if bad.crc_valid else find_valid_frame(seg, bad.position + 1)
        if resync is not None:  # corruption, not a torn write: step 4b
            seg.damaged = seg.corrupt(bad)
            seg.end_offset = valid_frames_end(seg, resync)
            seg.index.rewrite()
            seg.index.close()
            return 0
        valid_end = bad.position
        seg.index.truncate_after(valid_end)
        _, seg.end_offset, seg.entry_count = scan_counts(seg, valid_end)
        torn = seg.size - valid_end
        # Whether these bytes were acknowledged is unknown here (a torn write never was, a damaged
        # fsynced frame was): the topic compares its cursors and dedup state with the new end next.
        log.error("event=log_tail_truncated segment=%s position=%d bytes=%d first_lost_offset=%d"
                  " reason=%r detail=%r", seg.path, valid_end, torn, seg.end_offset, bad.reason,
                  "entries from this offset on were removed; they were acknowledged to producers only"
                  " if the disk lost fsynced data")
        with open(seg.path, "r+b") as f:
            f.truncate(valid_end)
            f.flush()
            os.fsync(f.fileno())
        seg.size = valid_end
    beyond = [offset for offset, position in listed if position >= seg.size and offset >= seg.end_offset]
    if beyond:
        log.error("event=log_tail_lost segment=%s log_end_offset=%d indexed_offset=%d lost_messages_at_least=%d"
                  " detail=%r", seg.path, seg.end_offset, max(beyond), max(beyond) - seg.end_offset + 1,
                  "the segment's index lists frames beyond the end of its log: the log file lost data")
    seg.index.rewrite()
    return torn


def valid_frames_end(seg: Segment, position: int = 0) -> int:
    """The highest end offset of the valid frames at or after ``position`` (resyncing past bad bytes on
    the magic; the base offset if none), so that a damaged last segment's offsets are never handed out
    again (recovery steps 4b and 4c)."""
    end = seg.base_offset
    while position is not None:
        try:
            for pos, header, _ in seg.frames(position):
                end = max(end, header.end_offset)
                position = pos + header.frame_size
            break
        except BadFrame as bad:
            position = find_valid_frame(seg, bad.position + 1)  # type: ignore[assignment]
    return end


def find_valid_frame(seg: Segment, start: int) -> int | None:
    """Position of the first fully valid frame (magic, bounds, CRC) at or after ``start``."""
    if seg.size <= start:
        return None
    with open(seg.path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
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
