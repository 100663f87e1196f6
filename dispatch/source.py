"""What dispatch needs from storage, as two small protocols.

Dispatch never imports a concrete log: the service hands a :class:`Subscription` an :class:`EntrySource`
(one topic partition's log, seen read-only) and a :class:`Cursor` (``broker_core.storage.cursor.ManagedCursor``
satisfies it). Offsets are message offsets; ranges are half-open ``[start, end)``.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, Sequence

if TYPE_CHECKING:
    from broker_core.storage.stored_entry import StoredEntry


class EntrySource(Protocol):
    """One partition's log as dispatch reads it."""

    @property
    def start_offset(self) -> int:
        """First offset still stored (earlier ones were trimmed by retention)."""

    @property
    def end_offset(self) -> int:
        """One past the last appended message (durable or not)."""

    @property
    def durable_end_offset(self) -> int:
        """One past the last message whose send receipt may be released; dispatch never reads beyond."""

    def read(self, start_offset: int, max_entries: int, max_bytes: int,
             end_offset: int | None = None) -> "list[StoredEntry]":
        """Entries from the one containing ``start_offset``, in order, up to ``end_offset`` (default: the
        durable end), at most ``max_entries`` and about ``max_bytes`` (always at least one entry)."""


class Cursor(Protocol):
    """A durable subscription's acknowledgment state (Pulsar's ManagedCursor)."""

    @property
    def mark_delete_offset(self) -> int:
        """Every offset <= this is acknowledged; -1 when none is."""

    subscription_properties: dict[str, str]
    """The subscription's properties (Pulsar's ``subscriptionProperties``), kept with the cursor."""

    def ack(self, start: int, end: int) -> int:
        """Acknowledge ``[start, end)``; returns how many offsets were newly acknowledged."""

    def ack_cumulative(self, offset: int) -> int:
        """Acknowledge every offset <= ``offset``; returns how many were newly acknowledged."""

    def is_acked(self, offset: int) -> bool: ...

    def acked_within(self, start: int, end: int) -> Sequence[tuple[int, int]]:
        """The acknowledged ranges inside ``[start, end)`` (those above the mark-delete offset at least)."""

    def next_unacked(self, offset: int) -> int:
        """The first offset >= ``offset`` not acknowledged."""

    def backlog(self, end_offset: int) -> int:
        """Unacknowledged offsets below ``end_offset``."""

    def reset(self, mark_delete_offset: int) -> None:
        """Forget every acknowledgment and set the mark-delete offset (a seek)."""
