"""Reading a log's entries from its segment files: by offset (:func:`disk_entries`) and by publish time
(:func:`offset_for_timestamp`). :class:`~broker_core.storage.log.ManagedLog` serves recent entries from
its tail cache and the rest through these.

Garbage never yields an entry: every frame returned passed magic, bound, count, continuity and CRC checks.
A frame found invalid becomes a damaged range of its segment (:mod:`broker_core.storage.damage`): a read
reaching it raises :class:`~broker_core.errors.DataLost` for its offsets, reads around it go on.
"""
from __future__ import annotations

import bisect
from collections.abc import Iterator, Sequence

from broker_core.errors import DataLost
from broker_core.storage.segment import Segment
from broker_core.storage.stored_entry import StoredEntry


def disk_entries(segments: Sequence[Segment], bases: Sequence[int], start_offset: int,
                 chunk: int) -> Iterator[StoredEntry]:
    """The entries from the one containing ``start_offset`` on, CRC-checked, reading ``chunk`` bytes at a
    time; raises :class:`~broker_core.errors.DataLost` on reaching a damaged range (``bases``: the segments'
    base offsets)."""
    k = max(0, bisect.bisect_right(bases, start_offset) - 1)
    for n, seg in enumerate(segments[k:]):
        yield from seg.entries(start_offset if n == 0 else seg.base_offset, chunk)


def offset_for_timestamp(segments: Sequence[Segment], bases: Sequence[int], publish_time_ms: int,
                         from_offset: int, end_offset: int) -> int:
    """Offset of the first entry with ``publish_time >= publish_time_ms`` (``end_offset`` if none),
    looking only at the entries from the one containing ``from_offset`` on. Sealed segments whose newest
    message is older are skipped unread; within a segment the search starts where its index bisects to
    (:meth:`Segment.time_search_start`); damaged ranges are stepped over. The last segment of ``segments`` is
    the active one."""
    active = segments[-1]
    k = max(0, bisect.bisect_right(bases, from_offset) - 1)
    for n, seg in enumerate(segments[k:]):
        if seg is not active and seg.publish_time_max() < publish_time_ms:
            continue
        position, offset = 0, seg.base_offset
        if n == 0 and from_offset > seg.base_offset:
            try:
                position, offset = seg.find(from_offset)
            except DataLost as lost:
                found = seg.damage.at_offset(from_offset)
                if found is None:
                    raise
                position, offset = found.resume_position, lost.end_offset
        position, offset = seg.time_search_start(publish_time_ms, position, offset)
        for header in seg.headers_from(position, offset):
            if header.length and header.publish_time >= publish_time_ms:
                return header.offset
    return end_offset
