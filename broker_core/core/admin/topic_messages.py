"""A topic's stored messages found by what names them, and its backlog measured, once for REST and gRPC:

=====================================  =================================================================================
:meth:`TopicMessages.by_id`            the entry a message id names (``topics get-message-by-id -l L -e E``); a message
                                       id is ``(ledgerId, entryId)``, this broker's ledger the segment's base offset and
                                       its entry the offset of the entry's first message
:meth:`TopicMessages.id_at_time`       the id of the first entry published at or after a time (``topics
                                       get-message-id -d``; Pulsar's ``messageid/{timestamp}``)
:meth:`TopicMessages.id_at_index`      the id of the entry holding a message index (PIP-415's ``getMessageIdByIndex``:
                                       the index is ``BrokerEntryMetadata.index``, this broker's message offset)
:meth:`TopicMessages.backlog_size`     the bytes stored from a message on (``topics get-backlog-size``)
:meth:`TopicMessages.offline_backlog`  Pulsar's ``PersistentOfflineTopicStats`` (``GET .../backlog``)
:meth:`TopicMessages.analyze_backlog`  the entries and messages a subscription has not acknowledged
                                       (``topics analyze-backlog``), scanned up to the broker's
                                       ``subscriptionBacklogScanMaxEntries`` entries
:meth:`TopicMessages.trim`             retention applied now (``topics trim-topic``)
:meth:`TopicMessages.internal_info`    Pulsar's ``ManagedLedgerInfo`` (``topics info-internal``)
=====================================  =================================================================================

As in Pulsar, each names one topic partition (a partitioned topic is refused: ``NotAllowedError``, use a
partition), except ``trim`` and ``internal_info`` which take each partition of a partitioned topic; a
non-persistent topic stores nothing to find (``NotAllowedError``). A message that is not stored (any more) is
``MessageNotFound`` (404), as Pulsar answers "Message not found" / "Message ID not found".

Example (a partition whose segment based at 0 holds a batch of 3 at offset 0 and a single message at 3)::

    messages.by_id(name, 0, 3)          # the entry at offset 3
    messages.id_at_index(name, 1)       # LastMessage(0, 0, -1): the batch holding message 1
    messages.backlog_size(name, Position.at(3))   # the bytes of the entry at 3 (segments pro rata)
"""
from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from broker_core.core.admin import targets
from broker_core.core.admin.internal_stats import Positions
from broker_core.core.admin.last_message import LastMessage
from broker_core.core.admin.positions import Position
from broker_core.core.persistent.stats import bytes_from
from broker_core.core.topic_protocol import StoredTopic
from broker_core.errors import MessageNotFound
from broker_core.types import TopicName

if TYPE_CHECKING:
    from broker_core.core.registry import TopicRegistry
    from broker_core.storage.log import StoredEntry

log = logging.getLogger(__name__)

SCAN_CHUNK = 500
"""Entries read per turn of the event loop while a backlog is analysed."""


def _not_found(name: TopicName, what: str) -> MessageNotFound:
    return MessageNotFound(f"Message not found: {what} of {name}", topic=str(name))


class TopicMessages:
    """The stored messages of the topics of ``registry``."""

    def __init__(self, registry: "TopicRegistry") -> None:
        self._registry = registry

    def _topic(self, name: TopicName, verb: str) -> StoredTopic:
        return targets.stored_topic(self._registry, name, verb)

    # ------------------------------------------------------------------ finding one
    def by_id(self, name: TopicName, ledger_id: int, entry_id: int) -> "StoredEntry":
        """The stored entry ``ledger_id:entry_id`` names; ``MessageNotFound`` when no stored entry starts there."""
        topic = self._topic(name, "get-message-by-id")
        if not topic.start_offset <= entry_id < topic.confirmed_end_offset:
            raise _not_found(name, f"no stored entry {ledger_id}:{entry_id} (it stores offsets {topic.start_offset}"
                                   f" to {topic.confirmed_end_offset - 1})")
        entry = topic.entry_containing(entry_id)
        if entry is None or entry.offset != entry_id or entry.ledger_id != ledger_id:
            held = "" if entry is None else f"; offset {entry_id} is in entry {entry.ledger_id}:{entry.offset}"
            raise _not_found(name, f"no entry {ledger_id}:{entry_id}{held}")
        return entry

    def _id_of(self, topic: StoredTopic, offset: int) -> LastMessage:
        entry = topic.entry_containing(offset)
        if entry is None:  # retention removed it meanwhile
            return LastMessage(-1, -1, topic.partition_index, -1, topic.start_offset)
        return LastMessage(entry.ledger_id, entry.offset, topic.partition_index, -1, topic.start_offset)

    def id_at_time(self, name: TopicName, publish_time_ms: int) -> LastMessage:
        """The id of the first stored entry published at or after ``publish_time_ms``; ``MessageNotFound`` when
        every stored message is older."""
        topic = self._topic(name, "get-message-id")
        offset = topic.offset_for_timestamp(publish_time_ms)
        if offset >= topic.confirmed_end_offset:
            raise MessageNotFound(f"Message ID not found: no message of {name} was published at or after"
                                  f" {publish_time_ms}", topic=str(name), timestamp=publish_time_ms)
        return self._id_of(topic, offset)

    def id_at_index(self, name: TopicName, index: int) -> LastMessage:
        """The id of the entry holding message ``index`` (``-1:-1``, earliest, when retention removed it, as
        PIP-415 answers); ``MessageNotFound`` for an index never written."""
        topic = self._topic(name, "get-message-id-by-index")
        if not 0 <= index < topic.confirmed_end_offset:
            raise _not_found(name, f"index {index} is not one of a message (indexes 0 to"
                                   f" {topic.confirmed_end_offset - 1})")
        if index < topic.start_offset:
            return LastMessage(-1, -1, topic.partition_index, -1, topic.start_offset)
        return self._id_of(topic, index)

    # ------------------------------------------------------------------ the backlog
    def backlog_size(self, name: TopicName, start: Position) -> int:
        """Bytes stored from the message ``start`` names on (whole segments, the first pro rata); ``earliest``:
        every byte stored, as Pulsar answers ``-1:-1``."""
        topic = self._topic(name, "get-backlog-size")
        if start.kind == "earliest":
            return topic.size_bytes
        return bytes_from(topic.log, start.next_offset(topic))

    def offline_backlog(self, name: TopicName, broker: str) -> dict[str, Any]:
        """Pulsar's ``PersistentOfflineTopicStats``: the stored bytes and messages, the slowest subscription's
        backlog, each segment and each durable subscription's backlog (``broker``: this broker's address)."""
        topic = self._topic(name, "backlog")
        end = topic.confirmed_end_offset
        cursors = {sub_name: {"cursorBacklog": sub.cursor.backlog(end), "cursorLedgerId": -1}
                   for sub_name, sub in sorted(topic.subscriptions.items())}
        return {
            "storageSize": topic.size_bytes,
            "totalMessages": end - topic.start_offset,
            "messageBacklog": max((c["cursorBacklog"] for c in cursors.values()), default=0),
            "brokerName": broker,
            "topicName": str(name),
            "dataLedgerDetails": [{"ledgerId": s["ledgerId"], "entries": s["entries"], "size": s["size"],
                                   "timestamp": 0} for s in topic.segments()],
            "cursorDetails": cursors,
            "statGeneratedAt": self._registry.clock.now_ms(),
        }

    async def analyze_backlog(self, name: TopicName, sub: str, start: Position | None = None) -> dict[str, Any]:
        """Pulsar's ``AnalyzeSubscriptionBacklogResult`` of durable subscription ``sub``: the entries holding
        messages it has not acknowledged from its first unacknowledged one (or from ``start``) to the end, and
        those messages, read :data:`SCAN_CHUNK` entries a turn; ``aborted`` past the broker's
        ``subscriptionBacklogScanMaxEntries`` entries read. ``start`` names an entry, as Pulsar's scan position:
        one inside a batch entry (the entry id after the last one scanned, as pulsar-admin's ``-b`` asks the
        next round from) starts at the next entry. No entry filter runs here, so every ``filter*`` count and
        ``markerMessages`` are 0 (as Pulsar's without filters)."""
        topic = self._topic(name, "analyze-backlog")
        scan_max = self._registry.config.subscriptionBacklogScanMaxEntries
        cursor = topic.durable_subscription(sub).cursor
        offset = max(cursor.mark_delete_offset + 1, topic.start_offset)
        end = topic.confirmed_end_offset
        if start is not None:
            first = start.next_offset(topic)
            entry = topic.entry_containing(first) if first < end else None
            if entry is not None and entry.offset < first:
                first = entry.end_offset
            offset = max(offset, first)
        entries = messages = scanned = 0
        first = last = None
        while offset < end and scanned < scan_max:
            batch = topic.read(offset, min(SCAN_CHUNK, scan_max - scanned), end)
            if not batch:
                break
            for entry in batch:
                scanned += 1
                unacked = cursor.backlog(entry.end_offset) - cursor.backlog(max(entry.offset, offset))
                if unacked > 0:
                    entries += 1
                    messages += unacked
                    first = first or entry
                    last = entry
            offset = batch[-1].end_offset
            await asyncio.sleep(0)
        filters = {f"filter{kind}{unit}": 0 for kind in ("Accepted", "Rejected", "Rescheduled")
                   for unit in ("Entries", "Messages")}
        return {"entries": entries, "messages": messages, "markerMessages": 0, **filters, "aborted": offset < end,
                "firstMessageId": None if first is None else f"{first.ledger_id}:{first.offset}",
                "lastMessageId": None if last is None else f"{last.ledger_id}:{last.offset}"}

    # ------------------------------------------------------------------ the topic
    def trim(self, name: TopicName) -> int:
        """Detach now what retention no longer keeps (each partition of a partitioned topic); how many segments
        were."""
        removed = sum(topic.trim() for topic in targets.stored_topics(self._registry, name, "trim-topic"))
        log.info("event=topic_trimmed_by_admin topic=%s segments=%d", name, removed)
        return removed

    def internal_info(self, name: TopicName) -> dict[str, Any]:
        """Pulsar's ``ManagedLedgerInfo`` of a topic partition; of a partitioned topic each partition's under
        ``partitions`` (Pulsar's ``PartitionedManagedLedgerInfo``)."""
        if self._registry.partitions_of(name):
            return {"partitions": {str(p): self.internal_info(p) for p in targets.partitions(self._registry, name)
                                   if self._registry.exists(p)}}
        topic = self._topic(name, "info-internal")
        positions = Positions([s["ledgerId"] for s in topic.segments()])

        def position(offset: int) -> dict[str, int]:
            return {"ledgerId": positions.ledger_of(offset), "entryId": offset}

        found: dict[str, Any] = {
            "version": 0, "creationDate": None, "modificationDate": None,
            "ledgers": [{"ledgerId": s["ledgerId"], "entries": s["entries"], "size": s["size"], "timestamp": None,
                         "isOffloaded": False} for s in topic.segments()],
            "cursors": {sub_name: {
                "version": 0, "creationDate": None, "modificationDate": None, "cursorsLedgerId": -1,
                "markDelete": position(sub.cursor.mark_delete_offset),
                "individualDeletedMessages": [{"from": position(s - 1), "to": position(e - 1)}
                                              for s, e in sub.cursor.individually_acked],
                "properties": {}} for sub_name, sub in sorted(topic.subscriptions.items())},
            "properties": {},
        }
        end = topic.termination.end_offset
        if end is not None:
            found["terminatedPosition"] = position(end - 1)
        return found
