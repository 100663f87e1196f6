"""Verifying one segment and mapping its damage: the per-segment half of steps 2-5 of the procedure in
:mod:`broker_core.storage.recovery`, and what a read does when it meets a frame that does not verify.

A scan verifies every frame (magic, length bound, CRC) and the offsets' continuity: each frame's offset is
the previous frame's offset + count, the first one's is the base offset. Where a frame fails, the scan
*resyncs*: it looks for the next frame that verifies and continues the offsets (a valid frame whose offset is
behind, a frame written twice, is stepped over), and the bytes and offsets between become one
:class:`~broker_core.storage.damage.DamagedRange`. A scan never stops at damage and never invents an entry.
What a range at the very end of the last segment is (a torn write to cut, or damage to keep) is the
recovery's decision, from the facts the scan reports.
"""
from __future__ import annotations

import bisect
import logging
import mmap
import os
from collections.abc import Iterator
from typing import TYPE_CHECKING, NamedTuple

from broker_core.storage.bad_frame import BadFrame
from broker_core.storage.damage import DamagedRange
from broker_core.storage.format import HEADER_SIZE, MAGIC_BYTES, FrameHeader, InvalidFrame, decode_header, verify

if TYPE_CHECKING:
    from broker_core.storage.segment import Segment

log = logging.getLogger("broker_core.storage.segment")  # the segment's events keep their logger name


class Scan(NamedTuple):
    """What :func:`scan` found between two bytes of a segment."""

    end_position: int
    """byte after the last frame that verified (where a torn tail would be cut)"""
    end_offset: int
    """offset after the last frame that verified (the offset expected at the start if none did)"""
    frames: int
    """frames that verified"""
    damage: list[DamagedRange]
    """damaged ranges, in order; a last one that no valid frame follows ends at the scan's stop, with
    ``end_offset == start_offset`` (how many messages it lost is the caller's to say)"""
    tail: BadFrame | None
    """the failed frame that starts that last range, when no valid frame follows it"""


def verified(seg: Segment, position: int, expected: int, stop: int, *,
             end_limit: int | None = None) -> Iterator[tuple[int, FrameHeader] | DamagedRange]:
    """Frames from byte ``position`` (expected to hold offset ``expected``) to ``stop``, each fully verified,
    with a :class:`DamagedRange` in place of what does not verify (module doc). ``end_limit``: offsets at or
    beyond it belong to the next segment (a frame claiming one is not this segment's)."""
    while position < stop:
        try:
            for pos, header, _ in seg.frames(position, stop):
                if header.offset != expected or (end_limit is not None and header.end_offset > end_limit):
                    raise BadFrame(pos, f"offset {header.offset} where {expected} was expected", crc_valid=True,
                                   header=header)
                yield pos, header
                expected = header.end_offset
                position = pos + header.frame_size
            return
        except BadFrame as bad:
            header = bad.header
            if header is not None and header.offset > expected and (end_limit is None or header.end_offset <= end_limit):
                # a whole frame after offsets no frame holds: those offsets are lost, not the frame
                yield DamagedRange(expected, header.offset, bad.position, bad.position,
                                   f"offsets {expected}..{header.offset - 1} are in no frame")
                position, expected = bad.position, header.offset
                continue
            found = resync(seg, bad.position + 1, expected, stop, end_limit)
            if found is None:
                yield DamagedRange(expected, expected, bad.position, stop, bad.reason)
                return
            resume, header = found
            yield DamagedRange(expected, header.offset, bad.position, resume, bad.reason)
            position, expected = resume, header.offset


def scan(seg: Segment, position: int, expected: int, stop: int | None = None, *, build_index: bool = False,
         persist_index: bool = True, end_limit: int | None = None) -> Scan:
    """Verify every frame from ``position`` to ``stop`` (default: the file's size), mapping damage; with
    ``build_index`` the valid frames are indexed as they pass."""
    stop = seg.size if stop is None else stop
    end_position, end_offset, frames = position, expected, 0
    damage: list[DamagedRange] = []
    tail: BadFrame | None = None
    for item in verified(seg, position, expected, stop, end_limit=end_limit):
        if isinstance(item, DamagedRange):
            damage.append(item)
            if item.resume_position >= stop:
                tail = BadFrame(item.position, item.reason)
            continue
        pos, header = item
        if build_index and seg.index.should_index(pos):
            seg.index.add(header.offset, pos, persist=persist_index)
        end_position, end_offset, frames = pos + header.frame_size, header.end_offset, frames + 1
    return Scan(end_position, end_offset, frames, damage, tail)


def resync(seg: Segment, start: int, expected: int, stop: int,
           end_limit: int | None = None) -> tuple[int, FrameHeader] | None:
    """The first frame at or after byte ``start`` (before ``stop``) that verifies and goes on from offset
    ``expected`` (a frame whose offset is behind it is an old copy: stepped over)."""
    if stop <= start:
        return None
    with open(seg.path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size <= start:
            return None
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            limit = min(stop, len(mm))
            position = mm.find(MAGIC_BYTES, start, limit)
            while position != -1:
                header = _valid_frame_at(mm, position, limit)
                if header is not None:
                    if header.offset >= expected and (end_limit is None or header.end_offset <= end_limit):
                        return position, header
                    position = mm.find(MAGIC_BYTES, position + header.frame_size, limit)
                else:
                    position = mm.find(MAGIC_BYTES, position + 1, limit)
    return None


def _valid_frame_at(mm: mmap.mmap, position: int, limit: int) -> FrameHeader | None:
    try:
        header = decode_header(mm[position:position + HEADER_SIZE])
        if position + header.frame_size > limit:
            return None
        verify(mm[position:position + HEADER_SIZE], header, mm[position + HEADER_SIZE:position + header.frame_size])
        return header
    except InvalidFrame:
        return None


def frame_verifies(seg: Segment, position: int, offset: int) -> bool:
    """Whether a whole, valid frame holding ``offset`` first starts at ``position``."""
    try:
        for _, header, _ in seg.frames(position, seg.size):
            return header.offset == offset
    except BadFrame:
        return False
    return False


def resolve(seg: Segment, position: int) -> DamagedRange | None:
    """The damaged range holding byte ``position``, where a read or a header scan found a frame that does
    not verify; recorded in ``seg.damage``. A header scan does not check CRCs and may see the damage a frame
    late, and the frame expected there may be a wrong guess (an index entry that does not match the log):
    so the range is found by a verifying scan from the last trusted frame before ``position`` -- an index
    entry whose frame verifies, the end of a known range, or the segment's start. None when ``position`` is
    not damaged after all (a scan started mid-frame: the caller's index was wrong)."""
    start, expected = _trusted_start(seg, position)
    for item in verified(seg, start, expected, seg.size, end_limit=seg.end_offset if seg.sealed else None):
        if isinstance(item, DamagedRange):
            if item.resume_position >= seg.size:  # nothing valid after it: it lost up to the segment's end
                item = item.ending_at(seg.end_offset)
            recorded = seg.damage.add(item)
            if recorded.position <= position < recorded.resume_position or recorded.position == position:
                return recorded
            if recorded.position > position:
                return None
            continue
        pos, header = item
        if pos + header.frame_size > position:  # a valid frame holds or passes the byte: no damage there
            return None
    return None


def _trusted_start(seg: Segment, position: int) -> tuple[int, int]:
    """``(byte, offset)`` of the last frame before ``position`` a verifying scan may start from (see
    :func:`resolve`): an index entry whose frame verifies, else the end of the last known range before it,
    else the segment's start."""
    known = seg.damage.before(position)
    floor = (known.resume_position, known.end_offset) if known is not None else (0, seg.base_offset)
    offsets, positions = seg.index.offsets, seg.index.positions
    i = bisect.bisect_left(positions, position) - 1
    tries = 0
    while i >= 0 and positions[i] > floor[0] and tries < MAX_INDEX_TRIES:
        if seg.damage.at_position(positions[i]) is None and frame_verifies(seg, positions[i], offsets[i]):
            return positions[i], offsets[i]
        i, tries = i - 1, tries + 1
    return floor


MAX_INDEX_TRIES = 8
"""Index entries tried back from a damaged byte before a scan starts from the last known good point."""


def load_sealed(seg: Segment, end_offset: int | None) -> None:
    """Recovery step 2: open a sealed segment through its index (rebuilt if unusable), verifying the frames
    after its last entry. ``end_offset``: where the segment must end when that is known (the next segment's
    base; the clean-close record's end for a last segment); the offsets between its last valid frame and
    there are a damaged range (a truncated segment, or segment files missing after it)."""
    seg.size = os.path.getsize(seg.path)
    seg.entry_count = None
    start: tuple[int, int] | None = None
    if seg.index.load(seg.base_offset, seg.size):
        start = seg.index.positions[-1], seg.index.offsets[-1]
        if not frame_verifies(seg, *start):
            log.warning("event=segment_index_rebuilt segment=%s reason=index_does_not_match_log", seg.path)
            start = None
    if start is None:
        seg.index.clear()
        seg.index.rewrite()
        result = scan(seg, 0, seg.base_offset, build_index=True, end_limit=end_offset)
        seg.entry_count = result.frames
    else:
        result = scan(seg, *start, build_index=True, end_limit=end_offset)
    seg.index.close()
    end = result.end_offset if end_offset is None else end_offset
    record_scan(seg, result, end)
    if result.end_offset < end and result.tail is None:
        seg.add_damage([DamagedRange(
            result.end_offset, end, seg.size, seg.size,
            f"frames up to offset {end} are missing: the segment file ends at offset {result.end_offset}"
            " (truncated, or segment files after it are missing)")])
    seg.end_offset = end


def record_scan(seg: Segment, result: Scan, end_offset: int) -> None:
    """Add a scan's ranges to ``seg.damage``; a last range that no valid frame follows lost the offsets up to
    ``end_offset``."""
    seg.add_damage([found.ending_at(end_offset) if result.tail is not None and found is result.damage[-1] else found
                    for found in result.damage])


def verify_all(seg: Segment, stop: int | None = None) -> Scan:
    """Check every frame (magic, CRC, offset continuity) of the segment up to byte ``stop``, changing
    nothing: what the check before the first append, the background check and ``verify`` run."""
    return scan(seg, 0, seg.base_offset, stop)


def recover_last(seg: Segment) -> tuple[Scan, int]:
    """Recovery steps 3-5 on the last segment: scan it whole, rebuild its index, and cut a torn tail (a
    last frame whose CRC fails with no valid frame after it: a write the crash interrupted). Returns the scan
    and the number of bytes cut; any other damage is left in the scan for the recovery to keep."""
    seg.size = os.path.getsize(seg.path)
    seg.index.remove()
    seg.index.clear()
    result = scan(seg, 0, seg.base_offset, build_index=True)
    torn = 0
    tail = result.tail
    if tail is not None and not tail.crc_valid:
        valid_end = result.damage[-1].position
        torn = seg.size - valid_end
        # Whether these bytes were acknowledged is unknown here (a torn write never was, a damaged
        # fsynced frame was): the topic compares its cursors and dedup state with the new end next.
        log.error("event=log_tail_truncated segment=%s position=%d bytes=%d first_lost_offset=%d"
                  " reason=%r detail=%r", seg.path, valid_end, torn, result.end_offset, tail.reason,
                  "entries from this offset on were removed; they were acknowledged to producers only"
                  " if the disk lost fsynced data")
        with open(seg.path, "r+b") as f:
            f.truncate(valid_end)
            f.flush()
            os.fsync(f.fileno())
        seg.size = valid_end
        seg.index.truncate_after(valid_end)
        result = result._replace(damage=result.damage[:-1], tail=None)
    seg.end_offset, seg.entry_count = result.end_offset, result.frames
    seg.index.rewrite()
    return result, torn


def scan_counts(seg: Segment, stop: int) -> tuple[int, int, int]:
    """``(stop, end offset, frames)`` of the frames before byte ``stop`` (headers only, no CRC)."""
    end_offset, count = seg.base_offset, 0
    for _, header, _ in seg.frames(0, stop, check_crc=False):
        end_offset, count = header.end_offset, count + 1
    return stop, end_offset, count
