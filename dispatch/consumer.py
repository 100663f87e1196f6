"""One connected consumer as its subscription sees it, and what it has been sent but not acknowledged."""
from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from broker_core.storage.stored_entry import StoredEntry


@dataclass(slots=True)
class Delivery:
    """One entry on its way to a consumer."""

    entry: "StoredEntry"
    redelivery_count: int = 0
    """How many times this entry was handed out before and came back unacknowledged."""
    ack_set: list[int] | None = None
    """Pulsar's batch-index ack set (bit i set = message i still unacked); None when nothing is acked."""
    messages: int = 0
    """Messages of the entry actually delivered (the set bits of ``ack_set``, else all of them)."""


class PendingAcks:
    """Entries delivered to one consumer and not yet fully acknowledged: one record per entry, never one
    per message. First offsets are kept sorted so range and cumulative acks find the entries they touch
    by bisection; a removed entry leaves a tombstone in that list (compacted when they pile up) so
    out-of-order acks never shift a long list.
    """

    __slots__ = ("_starts", "_records", "_dead", "unacked_messages")

    def __init__(self) -> None:
        self._starts: list[int] = []  # sorted; may hold tombstones (starts without a record)
        self._records: dict[int, list[int]] = {}  # entry offset -> [end offset, unacked messages]
        self._dead = 0
        self.unacked_messages = 0

    def __len__(self) -> int:
        return len(self._records)

    def __contains__(self, entry_offset: object) -> bool:
        return entry_offset in self._records

    def entries(self) -> list[tuple[int, int, int]]:
        """``(start, end, unacked)`` of every pending entry, in offset order."""
        records = self._records
        return [(s, records[s][0], records[s][1]) for s in self._starts if s in records]

    def add(self, start: int, end: int, unacked: int) -> None:
        record = self._records.get(start)
        if record is not None:  # handed out again to the same consumer
            self.unacked_messages += unacked - record[1]
            record[:] = [end, unacked]
            return
        self._records[start] = [end, unacked]
        self.unacked_messages += unacked
        starts = self._starts
        if not starts or start > starts[-1]:
            starts.append(start)
            return
        i = bisect.bisect_left(starts, start)
        if i < len(starts) and starts[i] == start:  # revives its tombstone
            self._dead -= 1
        else:
            starts.insert(i, start)

    def overlapping(self, start: int, end: int) -> list[tuple[int, int]]:
        """``(entry start, entry end)`` of the pending entries that overlap ``[start, end)``."""
        starts = self._starts
        records = self._records
        i = max(bisect.bisect_right(starts, start) - 1, 0)
        found = []
        while i < len(starts) and starts[i] < end:
            s = starts[i]
            record = records.get(s)
            if record is not None and record[0] > start:
                found.append((s, record[0]))
            i += 1
        return found

    def acked(self, entry_offset: int, count: int, fully: bool = False) -> bool:
        """``count`` more messages of the entry are acknowledged (all of them when ``fully``); returns
        True when the entry left the pending list."""
        record = self._records.get(entry_offset)
        if record is None:
            return False
        if fully or record[1] <= count:
            self.unacked_messages -= self._records.pop(entry_offset)[1]
            self._dead += 1
            if self._dead > 64 and self._dead * 2 > len(self._starts):
                self._starts = [s for s in self._starts if s in self._records]
                self._dead = 0
            return True
        record[1] -= count
        self.unacked_messages -= count
        return False

    def remove_through(self, offset: int) -> list[int]:
        """Drop the entries whose every message is <= ``offset``; returns their first offsets."""
        starts = self._starts
        records = self._records
        removed = []
        k = 0
        while k < len(starts):
            record = records.get(starts[k])
            if record is None:
                self._dead -= 1
            elif record[0] <= offset + 1:
                removed.append(starts[k])
                self.unacked_messages -= record[1]
                del records[starts[k]]
            else:
                break
            k += 1
        del starts[:k]
        return removed

    def forget_oldest(self, count: int) -> None:
        """Stop tracking the ``count`` lowest entries (they stay unacknowledged on the cursor): bounds what
        a consumer that never acknowledges costs where nothing needs the list to redeliver."""
        starts = self._starts
        records = self._records
        k = 0
        while count > 0 and k < len(starts):
            record = records.pop(starts[k], None)
            if record is None:
                self._dead -= 1
            else:
                self.unacked_messages -= record[1]
                count -= 1
            k += 1
        del starts[:k]

    def clear(self) -> list[int]:
        """Drop everything; returns the first offsets of the dropped entries."""
        removed = [s for s in self._starts if s in self._records]
        self._starts = []
        self._records.clear()
        self._dead = 0
        self.unacked_messages = 0
        return removed


class Consumer:
    """A connected consumer: its permits (receiver-queue room), counters and pending acks.

    ``sink`` is called synchronously with each group of deliveries (the service turns it into one gRPC
    message); ``on_active_change`` tells a Failover consumer whether it became the active one;
    ``on_error`` ends the consumer's session with an error dispatch cannot get past (a damaged stored
    segment), at most once.
    ``permits`` may go negative, as in Pulsar, when an entry holds more messages than there were permits.
    """

    __slots__ = ("consumer_id", "consumer_name", "priority_level", "sink", "on_active_change", "permits",
                 "msg_out_counter", "bytes_out_counter", "pending", "highest_delivered_end", "multi_topic", "key_shared",
                 "on_error", "failed", "msg_redeliver_counter", "last_consumed_ms", "last_acked_ms")

    def __init__(self, consumer_id: int, consumer_name: str,
                 sink: Callable[[list[Delivery]], None], *, priority_level: int = 0,
                 on_active_change: Callable[[bool], None] | None = None, multi_topic: bool = False,
                 key_shared: Any = None, on_error: Callable[[Exception], None] | None = None) -> None:
        self.consumer_id = consumer_id
        self.key_shared = key_shared
        """Key_Shared consumers: their :class:`~dispatch.key_shared.KeySharedPolicy` (None: the default)."""
        self.multi_topic = multi_topic
        """Subscribed as part of a multi-topic subscription (Failover on non-partitioned topics then
        spreads topics over consumers by hash)."""
        self.consumer_name = consumer_name
        self.priority_level = priority_level
        self.sink = sink
        self.on_active_change = on_active_change
        self.permits = 0
        self.msg_out_counter = 0
        self.bytes_out_counter = 0
        self.msg_redeliver_counter = 0
        """Messages sent again (their entry came back unacknowledged before)."""
        self.last_consumed_ms = 0
        """When messages were last sent to it (0: never), and when it last acknowledged some."""
        self.last_acked_ms = 0
        self.pending = PendingAcks()
        self.highest_delivered_end = 0
        """One past the highest offset ever sent to this consumer (acks are not bounded by it: they may name
        any message below the topic's durable end, as Pulsar's)."""
        self.on_error = on_error
        self.failed: Exception | None = None

    @property
    def unacked_messages(self) -> int:
        return self.pending.unacked_messages

    def fail(self, error: Exception) -> None:
        """End this consumer's session with ``error`` (once); the service then removes it."""
        if self.failed is None:
            self.failed = error
            if self.on_error is not None:
                self.on_error(error)

    def notify_active(self, is_active: bool) -> None:
        if self.on_active_change is not None:
            self.on_active_change(is_active)

    def stats(self) -> dict[str, object]:
        return {
            "consumerName": self.consumer_name,
            "consumerId": self.consumer_id,
            "availablePermits": self.permits,
            "unackedMessages": self.unacked_messages,
            "msgOutCounter": self.msg_out_counter,
            "bytesOutCounter": self.bytes_out_counter,
            "msgRedeliverCounter": self.msg_redeliver_counter,
            "lastConsumedTimestamp": self.last_consumed_ms,
            "lastAckedTimestamp": self.last_acked_ms,
            "priorityLevel": self.priority_level,
        }

    def __repr__(self) -> str:
        return f"Consumer({self.consumer_id}, {self.consumer_name!r}, priority={self.priority_level})"
