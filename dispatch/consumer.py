"""One connected consumer as its subscription sees it, and what it has been sent but not acknowledged."""
from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from broker_core.storage.log import StoredEntry


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
    per message. Records are kept sorted by the entry's first offset so range and cumulative acks find the
    entries they touch by bisection.
    """

    __slots__ = ("_starts", "_records", "unacked_messages")

    def __init__(self) -> None:
        self._starts: list[int] = []
        self._records: dict[int, list[int]] = {}  # entry offset -> [end offset, unacked messages]
        self.unacked_messages = 0

    def __len__(self) -> int:
        return len(self._starts)

    def __contains__(self, entry_offset: object) -> bool:
        return entry_offset in self._records

    def entries(self) -> list[tuple[int, int, int]]:
        """``(start, end, unacked)`` of every pending entry, in offset order."""
        return [(s, self._records[s][0], self._records[s][1]) for s in self._starts]

    def add(self, start: int, end: int, unacked: int) -> None:
        record = self._records.get(start)
        if record is not None:  # handed out again to the same consumer
            self.unacked_messages += unacked - record[1]
            record[:] = [end, unacked]
            return
        self._records[start] = [end, unacked]
        self.unacked_messages += unacked
        if not self._starts or start > self._starts[-1]:
            self._starts.append(start)
        else:
            bisect.insort(self._starts, start)

    def overlapping(self, start: int, end: int) -> list[tuple[int, int]]:
        """``(entry start, entry end)`` of the pending entries that overlap ``[start, end)``."""
        starts = self._starts
        i = max(bisect.bisect_right(starts, start) - 1, 0)
        found = []
        while i < len(starts) and starts[i] < end:
            s = starts[i]
            e = self._records[s][0]
            if e > start:
                found.append((s, e))
            i += 1
        return found

    def acked(self, entry_offset: int, count: int, fully: bool = False) -> bool:
        """``count`` more messages of the entry are acknowledged (all of them when ``fully``); returns
        True when the entry left the pending list."""
        record = self._records.get(entry_offset)
        if record is None:
            return False
        if fully or record[1] <= count:
            self._remove(entry_offset)
            return True
        record[1] -= count
        self.unacked_messages -= count
        return False

    def remove_through(self, offset: int) -> list[int]:
        """Drop the entries whose every message is <= ``offset``; returns their first offsets."""
        starts = self._starts
        k = 0
        while k < len(starts) and self._records[starts[k]][0] <= offset + 1:
            k += 1
        removed = starts[:k]
        for s in removed:
            self.unacked_messages -= self._records.pop(s)[1]
        del starts[:k]
        return removed

    def clear(self) -> list[int]:
        """Drop everything; returns the first offsets of the dropped entries."""
        removed = self._starts
        self._starts = []
        self._records.clear()
        self.unacked_messages = 0
        return removed

    def _remove(self, entry_offset: int) -> None:
        self.unacked_messages -= self._records.pop(entry_offset)[1]
        i = bisect.bisect_left(self._starts, entry_offset)
        del self._starts[i]


class Consumer:
    """A connected consumer: its permits (receiver-queue room), counters and pending acks.

    ``sink`` is called synchronously with each group of deliveries (the service turns it into one gRPC
    message); ``on_active_change`` tells a Failover consumer whether it became the active one.
    ``permits`` may go negative, as in Pulsar, when an entry holds more messages than there were permits.
    """

    __slots__ = ("consumer_id", "consumer_name", "priority_level", "sink", "on_active_change", "permits",
                 "msg_out_counter", "bytes_out_counter", "pending", "highest_delivered_end")

    def __init__(self, consumer_id: int, consumer_name: str,
                 sink: Callable[[list[Delivery]], None], *, priority_level: int = 0,
                 on_active_change: Callable[[bool], None] | None = None) -> None:
        self.consumer_id = consumer_id
        self.consumer_name = consumer_name
        self.priority_level = priority_level
        self.sink = sink
        self.on_active_change = on_active_change
        self.permits = 0
        self.msg_out_counter = 0
        self.bytes_out_counter = 0
        self.pending = PendingAcks()
        self.highest_delivered_end = 0
        """One past the highest offset ever sent to this consumer; acks must stay below it."""

    @property
    def unacked_messages(self) -> int:
        return self.pending.unacked_messages

    def notify_active(self, is_active: bool) -> None:
        if self.on_active_change is not None:
            self.on_active_change(is_active)

    def stats(self) -> dict[str, object]:
        return {
            "consumerName": self.consumer_name,
            "availablePermits": self.permits,
            "unackedMessages": self.unacked_messages,
            "msgOutCounter": self.msg_out_counter,
            "bytesOutCounter": self.bytes_out_counter,
            "priorityLevel": self.priority_level,
        }

    def __repr__(self) -> str:
        return f"Consumer({self.consumer_id}, {self.consumer_name!r}, priority={self.priority_level})"
