"""Reading a log's entries from its segment files: by offset (:func:`disk_entries`) and by publish time
(:func:`offset_for_timestamp`). :class:`~broker_core.storage.log.ManagedLog` serves recent entries from
its tail cache and the rest through these.

Garbage never yields an entry: every frame returned passed magic, bound, count and CRC checks. A frame
found invalid fences its segment (``damaged``): later reads of it fail at once, the rest of the log stays
readable.
"""
from __future__ import annotations

import bisect
from collections.abc import Iterator, Sequence
from pathlib import Path

from broker_core.storage.bad_frame import BadFrame
from broker_core.storage.recovery import report_fenced
from broker_core.storage.segment import Segment
from broker_core.storage.stored_entry import StoredEntry


def disk_entries(directory: Path, segments: Sequence[Segment], bases: Sequence[int], start_offset: int,
                 chunk: int) -> Iterator[StoredEntry]:
    """The entries from the one containing ``start_offset`` on, CRC-checked, reading ``chunk`` bytes at a
    time; raises :class:`~broker_core.errors.CorruptLog` on reaching a damaged segment (``bases``: the
    segments' base offsets; ``directory``: the log's, where a fenced segment is reported)."""
    k = max(0, bisect.bisect_right(bases, start_offset) - 1)
    for n, seg in enumerate(segments[k:]):
        if seg.damaged is not None:
            raise seg.damaged
        position = seg.locate(start_offset) if n == 0 else 0
        try:
            for _, header, data in seg.frames(position, chunk=chunk):
                if header.length:  # a gap frame holds no entry
                    yield StoredEntry(header.offset, header.count, header.publish_time,
                                      seg.base_offset, data)  # type: ignore[arg-type]  # bytes: CRC-checked
        except BadFrame as bad:
            seg.damaged = seg.corrupt(bad)  # later reads fail at once, without reading or logging again
            report_fenced(directory, seg)
            raise seg.damaged from None


def offset_for_timestamp(segments: Sequence[Segment], bases: Sequence[int], publish_time_ms: int,
                         from_offset: int, end_offset: int) -> int:
    """Offset of the first entry with ``publish_time >= publish_time_ms`` (``end_offset`` if none),
    looking only at the entries from the one containing ``from_offset`` on. Sealed segments whose newest
    message is older are skipped unread; within a segment the search starts where its index bisects to
    (:meth:`Segment.time_search_start`). The last segment of ``segments`` is the active one."""
    active = segments[-1]
    k = max(0, bisect.bisect_right(bases, from_offset) - 1)
    for n, seg in enumerate(segments[k:]):
        if seg is not active and seg.publish_time_max() < publish_time_ms:
            continue
        try:
            position = seg.locate(from_offset) if n == 0 and from_offset > seg.base_offset else 0
            position = seg.time_search_start(publish_time_ms, position)
            for _, header, _ in seg.frames(position, check_crc=False):
                if header.length and header.publish_time >= publish_time_ms:
                    return header.offset
        except BadFrame as bad:
            raise seg.corrupt(bad) from None
    return end_offset
