"""Test helpers: an in-memory EntrySource, a recording consumer and a fresh cursor (no disk, no network)."""
from __future__ import annotations

import bisect

from broker_core.storage.cursor import ManagedCursor
from broker_core.storage.stored_entry import StoredEntry
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

    def __init__(self, consumer_id: int, consumer_name: str = "", *, priority_level: int = 0,
                 key_shared: object = None, permits: int = 0) -> None:
        self.batches: list[list[Delivery]] = []
        self.active: list[bool] = []
        super().__init__(consumer_id, consumer_name or f"c{consumer_id}", self.batches.append,
                         priority_level=priority_level, on_active_change=self.active.append,
                         key_shared=key_shared)
        self.permits = permits

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


def entry_bytes(key: str | None = None, *, num_messages: int = 1, deliver_at: int | None = None,
                ordering_key: bytes | None = None) -> bytes:
    """Stored bytes of an entry (broker prefix + Pulsar entry) with the given key / delivery time."""
    from broker_core.protocol import codec, pulsar_api_pb2

    meta = pulsar_api_pb2.MessageMetadata(producer_name="p", sequence_id=0, publish_time=1)
    if key is not None:
        meta.partition_key = key
    if ordering_key is not None:
        meta.ordering_key = ordering_key
    if deliver_at is not None:
        meta.deliver_at_time = deliver_at
    if num_messages > 1:
        meta.num_messages_in_batch = num_messages
    return codec.broker_entry_prefix(1, 0) + codec.encode_entry(meta, b"payload")


def make_cursor(name: str = "sub") -> ManagedCursor:
    return ManagedCursor(name)
