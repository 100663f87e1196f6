"""Where a persistent topic partition's messages are, as both front ends ask (a helper the
:class:`~broker_core.core.persistent.topic.PersistentTopic` owns and delegates to): its first and end
offsets, the offset for a publish time, the entry holding an offset and its last message id. The front ends
call these, never the topic's ``log`` or ``journal``;
:class:`~broker_core.core.nonpersistent.topic.NonPersistentTopic` answers the same calls for a topic that
stores nothing. :class:`ConfirmedSource` is the log as the topic's subscriptions read it."""
from __future__ import annotations

from broker_core.errors import DataLost
from broker_core.storage.journal import Journal
from broker_core.storage.log import ManagedLog, StoredEntry
from broker_core.types import MessageId


class ConfirmedSource:
    """The log as dispatch sees it: only entries the journal has confirmed are readable."""

    def __init__(self, managed_log: ManagedLog, journal: Journal) -> None:
        self._log = managed_log
        self._journal = journal

    def read(self, start_offset: int, max_entries: int, max_bytes: int,
             end_offset: int | None = None) -> list:
        """:meth:`ManagedLog.read` up to ``end_offset``, by default what the journal confirmed (not the log's
        own synced end, which ``journalSyncMode=never`` leaves behind: a replayed entry read by offset alone
        would be taken for one retention removed)."""
        return self._log.read(start_offset, max_entries, max_bytes,
                              self._journal.confirmed_end_offset if end_offset is None else end_offset)

    @property
    def durable_end_offset(self) -> int:
        return self._journal.confirmed_end_offset

    @property
    def start_offset(self) -> int:
        return self._log.start_offset

    @property
    def end_offset(self) -> int:
        return self._journal.confirmed_end_offset


class TopicPositions:
    """Positions in one partition's ``log``, readable up to what ``journal`` confirmed."""

    def __init__(self, managed_log: ManagedLog, journal: Journal, partition_index: int) -> None:
        self._log = managed_log
        self._journal = journal
        self._partition_index = partition_index

    @property
    def start_offset(self) -> int:
        """The first offset still stored (earlier ones were removed by retention)."""
        return self._log.start_offset

    @property
    def end_offset(self) -> int:
        """One past the last message appended, whether its fsync is done or not."""
        return self._log.end_offset

    @property
    def confirmed_end_offset(self) -> int:
        """One past the last message as durable as ``journalSyncMode`` promises: what consumers may read."""
        return self._journal.confirmed_end_offset

    def offset_for_timestamp(self, publish_time_ms: int) -> int:
        """The first offset published at or after ``publish_time_ms`` (the end offset when none is)."""
        return self._log.offset_for_timestamp(publish_time_ms)

    def entry_containing(self, offset: int) -> StoredEntry | None:
        """The stored entry holding message ``offset``, or None."""
        return self._log.entry_containing(offset)

    def read(self, start_offset: int, max_entries: int, end_offset: int) -> list[StoredEntry]:
        """Stored entries from the one holding ``start_offset``, before ``end_offset``, at most
        ``max_entries`` (at least one when there is one)."""
        return self._log.read(start_offset, max_entries=max_entries, end_offset=end_offset)

    def segments(self) -> list[dict]:
        """The storage's segments (``ledgerId``, ``entries``, ``size``, ``firstOffset``, ``lastOffset``):
        what ``stats-internal`` shows as ledgers."""
        return self._log.segments()

    @property
    def size_bytes(self) -> int:
        """Bytes stored."""
        return self._log.size_bytes

    def last_message_id(self) -> MessageId | None:
        """The id of the last confirmed message (its batch index when its entry is a batch), or None when
        the topic holds none. When that message is in a damaged range, its entry cannot be read: the id is
        the message's offset in its segment, as of an unbatched message."""
        end = self._journal.confirmed_end_offset
        if end <= self._log.start_offset:
            return None
        try:
            entry = self._log.entry_containing(end - 1)
        except DataLost:
            return MessageId.of(self._log.segment_base(end - 1), end - 1, self._partition_index, -1)
        if entry is None:
            return None
        index = end - 1 - entry.offset if entry.num_messages > 1 else -1
        return MessageId.of(entry.ledger_id, entry.offset, self._partition_index, index)

    def unreadable_at(self, offset: int, entries: int = 1) -> DataLost | None:
        """The ``DataLost`` a read of the ``entries`` entries from the one holding ``offset`` meets (None: they
        are readable, or beyond what is confirmed)."""
        end = self._journal.confirmed_end_offset
        for _ in range(entries):
            if not self._log.start_offset <= offset < end:
                return None
            try:
                found = self._log.read(offset, 1, end_offset=end)
            except DataLost as lost:
                return lost
            if not found:
                return None
            offset = found[0].end_offset
        return None
