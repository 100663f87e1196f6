"""Pulsar's ``PersistentTopicInternalStats`` (``topics stats-internal``) over this broker's storage, with
Pulsar's field names: a ledger (``LedgerInfo``) is a segment of the log, its ``ledgerId`` the segment's base
offset; a cursor (``CursorStats``) is a durable subscription; a position is written as Pulsar writes one,
``ledger:entry``, with the entry being the message offset (so ``3:7`` is offset 7, in the segment based at 3).

Worked example (one segment based at 0 holding offsets 0..11; a subscription with mark-delete offset 4 and
offsets 6 and 7 acknowledged out of order, read up to 10)::

    "markDeletePosition": "0:4", "readPosition": "0:10",
    "individuallyDeletedMessages": "[(0:5..0:7]]"      # Pulsar's open-closed range: 6 and 7 acknowledged
    "messagesConsumedCounter": 7                      # 12 added - 5 in the backlog (5, 8, 9, 10, 11)
    "numberOfEntriesSinceFirstNotAckedMessage": 6     # (0:4..0:10]

Counters count messages where Pulsar's count entries (the same on topics written without batching):
``entriesAddedCounter`` is the topic's end offset (every message it ever took), a cursor's
``messagesConsumedCounter`` that minus its backlog. pulsarlike's extensions (docs/admin.md): the topic's
``firstOffset``/``lastConfirmedOffset``, a ledger's ``firstOffset``/``lastOffset`` (and ``damaged`` ranges),
the compacted ledger's ``horizon``.

After a compaction the compaction's own cursor is listed as ``__compaction``, as Pulsar lists its compaction
subscription: its mark-delete position is the last message the compacted ledger covers.
"""
from __future__ import annotations

import bisect
from typing import TYPE_CHECKING, Any

from broker_core.errors import CorruptLog

if TYPE_CHECKING:
    from broker_core.core.topic_protocol import StoredTopic

COMPACTION_CURSOR = "__compaction"
"""The name Pulsar gives its compaction subscription (``Compactor.COMPACTION_SUBSCRIPTION``)."""
COMPACTED_LEDGER_PROPERTY = "CompactedTopicLedger"
"""The compaction cursor's property naming the compacted ledger, as Pulsar's."""


class Positions:
    """``ledger:entry`` of message offsets over a topic's segments (their base offsets ``bases``, sorted)."""

    def __init__(self, bases: list[int]) -> None:
        self._bases = bases

    def ledger_of(self, offset: int) -> int:
        """The segment holding ``offset`` (the first one below the log's start, the last one past its end);
        -1 when the log has no segment."""
        if not self._bases:
            return -1
        return self._bases[max(bisect.bisect_right(self._bases, offset) - 1, 0)]

    def __call__(self, offset: int) -> str:
        return f"{self.ledger_of(offset)}:{offset}"


def internal_stats(topic: "StoredTopic") -> dict[str, Any]:
    """``topic``'s ``PersistentTopicInternalStats``."""
    segments = topic.segments()
    end = topic.confirmed_end_offset
    positions = Positions([s["ledgerId"] for s in segments])
    current = segments[-1] if segments else {"entries": 0, "size": 0}
    cursors = {name: cursor_stats(sub, end, positions) for name, sub in sorted(topic.subscriptions.items())}
    compaction = compaction_cursor(topic, positions)
    if compaction is not None:
        cursors[COMPACTION_CURSOR] = compaction
    return {
        "entriesAddedCounter": end,
        "numberOfEntries": sum(max(s["entries"], 0) for s in segments),
        "totalSize": topic.size_bytes,
        "currentLedgerEntries": current["entries"],
        "currentLedgerSize": current["size"],
        "lastLedgerCreatedTimestamp": None,  # not recorded: a segment is named by its offset, not its time
        "lastLedgerCreationFailureTimestamp": None,
        "waitingCursorsCount": sum(1 for sub in topic.subscriptions.values()
                                   if sub.consumers and read_offset(sub) >= end),
        "pendingAddEntriesCount": max(topic.end_offset - end, 0),
        "lastConfirmedEntry": _last_confirmed(topic, segments, end),
        "state": "Closed" if topic.closed else "Terminated" if topic.termination.terminated else "LedgerOpened",
        "ledgers": [ledger_info(s) for s in segments],
        "cursors": cursors,
        "schemaLedgers": [],
        "compactedLedger": _compacted_ledger(topic),
        "firstOffset": topic.start_offset,
        "lastConfirmedOffset": end - 1,
    }


def ledger_info(segment: dict[str, Any]) -> dict[str, Any]:
    """Pulsar's ``LedgerInfo`` of one segment (with its offsets, and its damaged ranges when it has some)."""
    return {"ledgerId": segment["ledgerId"], "entries": segment["entries"], "size": segment["size"],
            "offloaded": False, "metadata": None, "underReplicated": False,
            "firstOffset": segment["firstOffset"], "lastOffset": segment["lastOffset"],
            **({"damaged": segment["damaged"]} if "damaged" in segment else {})}


def _last_confirmed(topic: "StoredTopic", segments: list[dict[str, Any]], end: int) -> str:
    """``ledger:entry`` of the last readable entry (``-1:-1`` when the topic holds none)."""
    try:
        last = topic.entry_containing(end - 1) if end > topic.start_offset else None
        return f"{last.ledger_id}:{last.offset}" if last is not None else "-1:-1"
    except CorruptLog:  # the newest entries are in a fenced (damaged) segment: the stats must still answer
        holder = next(s for s in segments if s["firstOffset"] <= end - 1 <= s["lastOffset"])
        return f"{holder['ledgerId']}:{end - 1}"


def read_offset(sub: Any) -> int:
    """Pulsar's cursor read position as an offset: past what was delivered to the connected consumers, never
    before the first unacknowledged message (where a subscription without consumers reads next)."""
    return max([sub.first_unacked_offset(), *(c.highest_delivered_end for c in sub.consumers)])


def cursor_stats(sub: Any, end: int, positions: Positions) -> dict[str, Any]:
    """Pulsar's ``CursorStats`` of a durable subscription (a dispatch ``Subscription``); ``end`` is the topic's
    confirmed end offset."""
    cursor = sub.cursor
    ranges = cursor.individually_acked
    mark_delete, read = cursor.mark_delete_offset, read_offset(sub)
    return {
        "markDeletePosition": positions(mark_delete),
        "readPosition": positions(read),
        "waitingReadOp": bool(sub.consumers) and read >= end,
        "pendingReadOps": 0,
        "messagesConsumedCounter": end - cursor.backlog(end),
        "cursorLedger": -1,  # a cursor is a file of its own (cursors/), not a ledger
        "cursorLedgerLastEntry": -1,
        "individuallyDeletedMessages": "[" + ", ".join(
            f"({positions(start - 1)}..{positions(stop - 1)}]" for start, stop in ranges) + "]",
        "lastLedgerSwitchTimestamp": None,
        "state": "Closed" if sub.closed else "Open",
        "numberOfEntriesSinceFirstNotAckedMessage": max(read - mark_delete, 0),
        "totalNonContiguousDeletedMessagesRange": len(ranges),
        "subscriptionHavePendingRead": False,
        "subscriptionHavePendingReplayRead": False,
        "properties": dict(getattr(cursor, "properties", {}) or {}),
    }


def compaction_cursor(topic: "StoredTopic", positions: Positions) -> dict[str, Any] | None:
    """The ``CursorStats`` of the compaction's cursor once the topic was compacted (None before): its mark-delete
    position is the last message the compacted ledger covers (the horizon - 1), its read position the
    horizon."""
    ledger = topic.compacted
    if ledger is None:
        return None
    end, horizon = topic.confirmed_end_offset, ledger.horizon
    return {
        "markDeletePosition": positions(horizon - 1), "readPosition": positions(horizon), "waitingReadOp": False,
        "pendingReadOps": 0, "messagesConsumedCounter": min(horizon, end), "cursorLedger": -1,
        "cursorLedgerLastEntry": -1, "individuallyDeletedMessages": "[]", "lastLedgerSwitchTimestamp": None,
        "state": "Open", "numberOfEntriesSinceFirstNotAckedMessage": 1, "totalNonContiguousDeletedMessagesRange": 0,
        "subscriptionHavePendingRead": False, "subscriptionHavePendingReplayRead": False,
        "properties": {COMPACTED_LEDGER_PROPERTY: horizon},
    }


def _compacted_ledger(topic: "StoredTopic") -> dict[str, Any]:
    """Pulsar's ``compactedLedger`` (all -1 when never compacted); ``ledgerId`` is the compaction horizon (raw
    offsets below it are read compacted), also given as ``horizon``."""
    ledger = topic.compacted
    if ledger is None:
        return {"ledgerId": -1, "entries": -1, "size": -1, "offloaded": False, "metadata": None,
                "underReplicated": False}
    return {"ledgerId": ledger.horizon, "entries": len(ledger), "size": ledger.size_bytes, "offloaded": False,
            "metadata": None, "underReplicated": False, "horizon": ledger.horizon}
