"""In-memory stand-ins for dispatch's storage protocols, for unit tests (no disk, no network)."""
from __future__ import annotations

import bisect

from broker_core.storage.log import StoredEntry
from dispatch.consumer import Consumer, Delivery


class MemoryEntrySource:
    """An :class:`~dispatch.source.EntrySource` over a list of entries; ``durable_end_offset`` only moves
    when the test says so (``append(..., durable=False)`` then ``make_durable()``)."""

    def __init__(self) -> None:
        self.entries: list[StoredEntry] = []
        self._starts: list[int] = []
        self.start_offset = 0
        self.end_offset = 0
        self.durable_end_offset = 0
        self.reads = 0

    def append(self, num_messages: int, data: bytes | None = None, *, durable: bool = True,
               publish_time: int = 0) -> StoredEntry:
        entry = StoredEntry(self.end_offset, num_messages, publish_time, 0,
                            data if data is not None else b"x" * 10)
        self.entries.append(entry)
        self._starts.append(entry.offset)
        self.end_offset = entry.end_offset
        if durable:
            self.durable_end_offset = self.end_offset
        return entry

    def append_many(self, count: int, num_messages: int = 1, **kwargs: object) -> list[StoredEntry]:
        return [self.append(num_messages, **kwargs) for _ in range(count)]  # type: ignore[arg-type]

    def make_durable(self) -> None:
        self.durable_end_offset = self.end_offset

    def read(self, start_offset: int, max_entries: int, max_bytes: int,
             end_offset: int | None = None) -> list[StoredEntry]:
        self.reads += 1
        limit = self.durable_end_offset if end_offset is None else min(end_offset, self.end_offset)
        i = max(bisect.bisect_right(self._starts, start_offset) - 1, 0)
        out: list[StoredEntry] = []
        size = 0
        while i < len(self.entries) and len(out) < max_entries:
            entry = self.entries[i]
            if entry.offset >= limit:
                break
            if entry.end_offset > start_offset:
                if out and size + len(entry.data) > max_bytes:
                    break
                out.append(entry)
                size += len(entry.data)
            i += 1
        return out


class RecordingConsumer(Consumer):
    """A consumer whose sink records each delivery group (``batches``) and active changes (``active``)."""

    __slots__ = ("batches", "active")

    def __init__(self, consumer_id: int, consumer_name: str = "", *, priority_level: int = 0) -> None:
        self.batches: list[list[Delivery]] = []
        self.active: list[bool] = []
        super().__init__(consumer_id, consumer_name or f"c{consumer_id}", self.batches.append,
                         priority_level=priority_level, on_active_change=self.active.append)

    def received(self) -> list[int]:
        """Offsets of the entries received, in order."""
        return [d.entry.offset for batch in self.batches for d in batch]

    def deliveries(self) -> list[Delivery]:
        return [d for batch in self.batches for d in batch]

    def take(self) -> list[int]:
        """Offsets received since the last take()."""
        got = self.received()
        self.batches.clear()
        return got


class StandInCursor:
    """A minimal cursor with ManagedCursor's API, used until ``broker_core.storage.cursor`` lands."""

    def __init__(self, mark_delete_offset: int = -1) -> None:
        self.mark_delete_offset = mark_delete_offset
        self.individually_acked: list[tuple[int, int]] = []  # disjoint, sorted, all above mark-delete
        self.dirty = False

    def _acked_count(self, start: int, end: int) -> int:
        n = max(0, min(end, self.mark_delete_offset + 1) - start)
        lo = max(start, self.mark_delete_offset + 1)
        for s, e in self.individually_acked:
            n += max(0, min(e, end) - max(s, lo))
        return n

    def ack(self, start: int, end: int) -> int:
        before = self._acked_count(start, end)
        lo, hi = max(start, self.mark_delete_offset + 1), end
        if lo < hi:
            merged = []
            for s, e in self.individually_acked:
                if e < lo or s > hi:
                    merged.append((s, e))
                else:
                    lo, hi = min(s, lo), max(e, hi)
            merged.append((lo, hi))
            merged.sort()
            self.individually_acked = merged
            self._advance()
        newly = self._acked_count(start, end) - before
        self.dirty = self.dirty or newly > 0
        return newly

    def _advance(self) -> None:
        while self.individually_acked and self.individually_acked[0][0] <= self.mark_delete_offset + 1:
            s, e = self.individually_acked.pop(0)
            self.mark_delete_offset = max(self.mark_delete_offset, e - 1)

    def ack_cumulative(self, offset: int) -> int:
        if offset <= self.mark_delete_offset:
            return 0
        newly = (offset - self.mark_delete_offset) - self._acked_count(self.mark_delete_offset + 1, offset + 1)
        self.mark_delete_offset = offset
        self.individually_acked = [(max(s, offset + 1), e) for s, e in self.individually_acked
                                   if e > offset + 1]
        self._advance()
        self.dirty = True
        return newly

    def is_acked(self, offset: int) -> bool:
        return offset <= self.mark_delete_offset or any(s <= offset < e for s, e in self.individually_acked)

    def acked_within(self, start: int, end: int) -> list[tuple[int, int]]:
        return [(max(s, start), min(e, end)) for s, e in self.individually_acked if s < end and e > start]

    def next_unacked(self, offset: int) -> int:
        offset = max(offset, self.mark_delete_offset + 1)
        for s, e in self.individually_acked:
            if s <= offset < e:
                offset = e
        return offset

    def backlog(self, end_offset: int) -> int:
        start = self.mark_delete_offset + 1
        return max(0, end_offset - start) - self._acked_count(start, end_offset) if end_offset > start else 0

    def reset(self, mark_delete_offset: int) -> None:
        self.mark_delete_offset = mark_delete_offset
        self.individually_acked = []
        self.dirty = True


def make_cursor() -> object:
    """The real ManagedCursor when storage provides it, else the stand-in."""
    try:
        from broker_core.storage.cursor import ManagedCursor
    except ImportError:
        return StandInCursor()
    return ManagedCursor()
