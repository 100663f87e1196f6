"""Positions in a persistent topic partition as a compacted reader sees them (Pulsar's ``readCompacted``).

A consumer session reading compacted asks this view, not the topic, where earliest, latest, the last
message and a publish time are: below the compaction horizon only the kept messages exist (see
:mod:`dispatch.compacted`). E.g. raw ``0:k1=a 1:k1=b 2:k2=<tombstone>`` compacted at horizon 3 keeps only
offset 1: the view's last message is 1 (the topic's is 2, which a compacted reader never receives, so a
client comparing with 2 would wait forever in ``has_message_available``), its earliest is 1. Had a compacted
reader been before 2 when the run compacted it, the run would have kept the tombstone for that reader
(:mod:`broker_core.core.persistent.compacted_readers`), and 2 would be the view's last message.

The topic's ``compacted`` ledger is read on every call: a compaction may swap it at any time.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from broker_core.types import MessageId

if TYPE_CHECKING:
    from broker_core.storage.stored_entry import StoredEntry
    from dispatch.compacted import CompactedLedger

TIME_SCAN_CHUNK = 1000
"""Kept entries read per step when a publish time falls before the raw log's start (retention trimmed it)."""


class CompactedView:
    """``topic``'s positions for a compacted reader; what it does not answer, the topic does."""

    def __init__(self, topic) -> None:
        self.topic = topic

    @property
    def ledger(self) -> "Optional[CompactedLedger]":
        return self.topic.compacted

    @property
    def start_offset(self) -> int:
        """The first message of the view: the first kept one, else the horizon or the raw log's start."""
        topic, ledger = self.topic, self.topic.compacted
        if ledger is None:
            return topic.start_offset
        first = ledger.entry_at_or_after(0)
        if first is not None and first.offset < ledger.horizon:
            return first.offset
        return max(topic.start_offset, ledger.horizon)

    @property
    def confirmed_end_offset(self) -> int:
        return self.topic.confirmed_end_offset

    def _has_raw_tail(self, ledger: "CompactedLedger") -> bool:
        """Whether raw messages at or past the horizon are readable."""
        topic = self.topic
        return topic.confirmed_end_offset > max(ledger.horizon, topic.start_offset)

    def last_offset(self) -> int:
        """The offset of the view's last message (the end offset when the view is empty): a reader at
        latest with ``start_message_id_inclusive`` gets it first."""
        topic, ledger = self.topic, self.topic.compacted
        if ledger is None or self._has_raw_tail(ledger):
            return max(topic.start_offset, topic.confirmed_end_offset - 1)
        return ledger.last_offset if ledger.last_offset >= 0 else topic.confirmed_end_offset

    def acknowledged_offset(self, mark_delete_offset: int) -> int:
        """The message a client compares with the last message id for a mark-delete offset: past the view's
        last message, that message (what lies between was compacted away). A reader started at latest has
        the raw end's last offset as its mark-delete point; pulsar-client's ``has_message_available`` with
        ``start_message_id_inclusive`` needs it not to be past the view's last message."""
        ledger = self.topic.compacted
        if ledger is None or self._has_raw_tail(ledger) or ledger.last_offset < 0:
            return mark_delete_offset
        return min(mark_delete_offset, ledger.last_offset)

    def last_message_id(self) -> Optional[MessageId]:
        """The id of the view's last message, None when it has none (every key deleted, no raw tail)."""
        topic, ledger = self.topic, self.topic.compacted
        if ledger is None or self._has_raw_tail(ledger):
            return topic.last_message_id()
        if ledger.last_offset < 0:
            return None
        entry = ledger.entry_at_or_after(ledger.last_offset)
        if entry is None:
            return None
        return MessageId.of(entry.ledger_id, entry.offset, topic.partition_index,
                            -1 if entry.num_messages <= 1 else entry.num_messages - 1)

    def entry_containing(self, offset: int) -> "Optional[StoredEntry]":
        """The kept entry holding ``offset`` below the horizon, else the raw entry."""
        ledger = self.topic.compacted
        if ledger is not None and offset < ledger.horizon:
            entry = ledger.entry_at_or_after(offset)
            if entry is not None and entry.offset <= offset < entry.end_offset:
                return entry
        return self.topic.entry_containing(offset)

    def offset_for_timestamp(self, publish_time_ms: int) -> int:
        """The first offset of the view published at or after ``publish_time_ms`` (the end when none is).
        The raw log answers, unless the time is before its start and kept messages older than that start
        remain (retention trimmed the raw log): those are searched."""
        topic, ledger = self.topic, self.topic.compacted
        offset = topic.offset_for_timestamp(publish_time_ms)
        raw_start = topic.start_offset
        if ledger is None or offset > raw_start:
            return offset
        at = 0
        while at < min(raw_start, ledger.horizon):
            entries = ledger.read(at, TIME_SCAN_CHUNK, 1 << 20)
            if not entries:
                break
            for entry in entries:
                if entry.offset >= raw_start:
                    return offset
                if entry.publish_time >= publish_time_ms:
                    return entry.offset
            at = entries[-1].end_offset
        return offset
