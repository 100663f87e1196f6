"""A topic partition's last message id, found once for the three front ends that answer it: the REST
``lastMessageId`` and ``terminate`` (Pulsar's ``MessageIdImpl`` JSON, :meth:`LastMessage.as_json`), the gRPC
``GetLastMessageId`` and ``TerminateTopic``, and the binary protocol's ``GET_LAST_MESSAGE_ID`` (with the
subscription's mark-delete position, :func:`mark_delete_message`). A compacted reader asks the compacted view
(:class:`~broker_core.core.compacted_view.CompactedView`), whose last message may be older than the raw end.

Example: a partition whose last entry (offset 10, in the segment based at 0) is a batch of 3 has the last
message ``LastMessage(ledger_id=0, entry_id=10, partition=p, batch_index=2)``, at offset 12; one that holds no
message has ``ledger_id = entry_id = -1`` (offset -1), which REST writes ``{"ledgerId": -1, "entryId": -1}``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class LastMessage:
    """A message id ``(ledger_id, entry_id, partition, batch_index)`` (-1, -1 when there is no message) and the
    first offset still stored (``start_offset``)."""

    ledger_id: int
    entry_id: int
    partition: int
    batch_index: int = -1
    start_offset: int = 0

    @property
    def exists(self) -> bool:
        return self.entry_id >= 0

    @property
    def offset(self) -> int:
        """The message's offset (-1: there is none)."""
        return self.entry_id + max(self.batch_index, 0) if self.exists else -1

    def as_json(self) -> dict[str, Any]:
        """Pulsar's ``MessageIdImpl`` JSON (``batchIndex`` only for a message of a batch)."""
        found: dict[str, Any] = {"ledgerId": self.ledger_id, "entryId": self.entry_id,
                                 "partitionIndex": self.partition}
        if self.exists and self.batch_index >= 0:
            found["batchIndex"] = self.batch_index
        return found


def last_message(positions: Any, partition: int) -> LastMessage:
    """The last readable message of ``positions`` (a :class:`~broker_core.core.topic_protocol.Topic` or a
    ``CompactedView``) of partition ``partition`` (-1: not partitioned)."""
    last = positions.last_message_id()
    if last is None:
        return LastMessage(-1, -1, partition, -1, positions.start_offset)
    return LastMessage(last.ledger_id(), last.entry_id(), partition, last.batch_index(), positions.start_offset)


def mark_delete_message(positions: Any, mark_delete_offset: int, partition: int, *,
                        read_compacted: bool = False) -> LastMessage | None:
    """The id of the message at a subscription's mark-delete offset (None when nothing is acknowledged, or its
    entry is no longer stored), as ``GET_LAST_MESSAGE_ID`` answers ``consumer_mark_delete_position``. A compacted
    reader's is the view's (:meth:`~broker_core.core.compacted_view.CompactedView.acknowledged_offset`).

    A subscription whose mark-delete offset is not stored any more, before the first stored message (a reader
    started at the earliest after retention deleted messages), answers the position just before that message, as Pulsar's cursor does (its mark-delete position
    is never before the first ledger's): ``(ledger of the first stored entry, first stored offset - 1)``, so a
    client learns the first stored offset from it (the Spark source's range bounds over the binary protocol)."""
    first_stored = positions.start_offset
    if not read_compacted and 0 < first_stored and mark_delete_offset < first_stored:
        first = positions.entry_containing(first_stored)
        return LastMessage(first_stored if first is None else first.ledger_id, first_stored - 1, partition, -1,
                           first_stored)
    if mark_delete_offset < 0:
        return None
    if read_compacted:
        mark_delete_offset = positions.acknowledged_offset(mark_delete_offset)
    entry = positions.entry_containing(mark_delete_offset)
    if entry is None:
        return None
    index = mark_delete_offset - entry.offset if entry.num_messages > 1 else -1
    return LastMessage(entry.ledger_id, entry.offset, partition, index, positions.start_offset)
