"""The tail cache: the most recently appended entries of a log, bounded in bytes.

It always holds a contiguous run of entries ending at the log's end, so a read that starts inside it
is served entirely from memory. Appends push at the tail; the oldest entries fall off the head.
"""
from __future__ import annotations

import bisect
from collections.abc import Iterator
from typing import Generic, Protocol, TypeVar


class _Entry(Protocol):
    offset: int
    data: bytes


E = TypeVar("E", bound=_Entry)


class TailCache(Generic[E]):
    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.bytes = 0
        self._offsets: list[int] = []
        self._entries: list[E] = []
        self._head = 0  # entries before it are evicted; compacted lazily to keep eviction O(1)

    def __len__(self) -> int:
        return len(self._entries) - self._head

    @property
    def first_offset(self) -> int | None:
        return self._offsets[self._head] if len(self) else None

    def push(self, entry: E) -> None:
        self._offsets.append(entry.offset)
        self._entries.append(entry)
        self.bytes += len(entry.data)
        while self.bytes > self.max_bytes and len(self):
            self._evict_one()

    def _evict_one(self) -> None:
        self.bytes -= len(self._entries[self._head].data)
        self._entries[self._head] = None  # type: ignore[call-overload]  # free the data now
        self._head += 1
        if self._head > 1024 and self._head * 2 > len(self._entries):
            del self._offsets[:self._head], self._entries[:self._head]
            self._head = 0

    def evict_below(self, offset: int) -> None:
        """Drop entries that start below ``offset`` (their segment was deleted)."""
        while len(self) and self._offsets[self._head] < offset:
            self._evict_one()

    def truncate_from(self, offset: int) -> None:
        """Drop entries at and after ``offset`` (the log was cut back there)."""
        keep = bisect.bisect_left(self._offsets, offset, lo=self._head)
        for entry in self._entries[keep:]:
            self.bytes -= len(entry.data)
        del self._offsets[keep:], self._entries[keep:]

    def clear(self) -> None:
        self._offsets, self._entries, self._head, self.bytes = [], [], 0, 0

    def index_of(self, offset: int) -> int | None:
        """Position of the cached entry containing ``offset`` (None when not cached)."""
        if not len(self) or offset < self._offsets[self._head]:
            return None
        return bisect.bisect_right(self._offsets, offset, lo=self._head) - 1

    def entries_from(self, i: int) -> Iterator[E]:
        """Cached entries from position ``i`` on (lazily: reads usually take a few)."""
        entries = self._entries
        for j in range(i, len(entries)):
            yield entries[j]

    def entry_at(self, i: int) -> E | None:
        return self._entries[i] if i < len(self._entries) else None
