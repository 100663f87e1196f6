"""What the broker answered for one write task's messages: stored, dropped as duplicates, or failed.

Two kinds of ``send_async`` callback, never mixed on one producer:

- ``per_message``: on every message (rows with keys, properties or event times, and routed rows); counts
  each message stored or dropped.
- ``per_entry``: on *some* messages of a payload-only run (:meth:`sparse_marks` says which). Every message
  of a stored entry gets the same ``(ledger_id, entry_id)`` and the entry's ``batch_size``, so one callback
  per entry is enough to count the whole entry; messages sent this way and in no stored entry were dropped
  by the broker. Skipping most callbacks saves the client a ``MessageId`` and a call per message (about a
  quarter of the sink's cost per row).

Why every entry of a payload-only run still carries a callback: the producer (batching on, publish delay
longer than the task) closes an entry when it holds ``batchingMaxMessages`` messages, when the next message
would push it over ``batchingMaxBytes``, or on the task's final flush. Marks fall on every ``stride``-th
message (``stride <= batchingMaxMessages``), on the last message of each record batch, and on every message
of a record batch holding a "big" payload (``>= batchingMaxBytes / (2 * stride)``). An entry closed by count
has ``stride`` consecutive messages, so a mark; an entry closed by the final flush ends with a mark; an entry
closed by size with fewer than ``stride`` small messages holds less than half of ``batchingMaxBytes`` (for
``batchingMaxBytes >= 4096``), so the message that did not fit was big -- and then every message of its
record batch is marked. The task also checks, after the flush, that each producer's highest acknowledged
sequence id reached the last one it sent.
"""
from __future__ import annotations

from typing import Any, Callable

MAX_STRIDE = 64
FAILURES_KEPT = 10


class Receipts:
    def __init__(self) -> None:
        from connector import Result

        self.stored = 0
        """Messages stored, counted by ``per_message``."""
        self.dropped = 0
        """Messages dropped as duplicates, counted by ``per_message``."""
        self.entries: dict[tuple[int, int, int], int] = {}
        """(partition, ledger_id, entry_id) -> messages in the entry, from ``per_entry``."""
        self.failures: list[Any] = []
        self.failed = 0
        ok = Result.Ok

        def per_message(result: Any, message_id: Any) -> None:
            if result is ok:
                if message_id.ledger_id() >= 0:
                    self.stored += 1
                else:
                    self.dropped += 1  # the broker had it already (or stored it just before a reconnection)
            else:
                self._fail(result)

        def per_entry(result: Any, message_id: Any) -> None:
            if result is ok:
                if message_id.ledger_id() >= 0:
                    self.entries[(message_id.partition(), message_id.ledger_id(), message_id.entry_id())] = \
                        message_id.batch_size() or 1
            else:
                self._fail(result)

        self.per_message: Callable[[Any, Any], None] = per_message
        self.per_entry: Callable[[Any, Any], None] = per_entry

    def _fail(self, result: Any) -> None:
        self.failed += 1
        if len(self.failures) < FAILURES_KEPT:
            self.failures.append(result)

    def totals(self, sent_per_message: int, sent_per_entry: int) -> tuple[int, int]:
        """(messages stored, messages dropped as duplicates) once every receipt is in and none failed."""
        in_entries = sum(self.entries.values())
        return self.stored + in_entries, self.dropped + max(sent_per_entry - in_entries, 0)


def sparse_stride(batching_max_messages: int) -> int:
    return max(1, min(MAX_STRIDE, batching_max_messages))


def big_payload(batching_max_bytes: int, stride: int) -> int:
    """Payloads of at least this many bytes mark every message of their record batch."""
    return max(1, batching_max_bytes // (2 * stride))
