"""The value type of a stored entry, as :class:`~broker_core.storage.log.ManagedLog` returns it."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class StoredEntry:
    """One stored entry (a producer batch or a single message)."""

    offset: int
    """offset of the first message (== the entry id on the wire)"""
    num_messages: int
    """messages in the entry"""
    publish_time: int
    """publish time in ms"""
    ledger_id: int
    """base offset of the segment holding it"""
    data: bytes
    """exactly the bytes passed to append()"""

    @property
    def end_offset(self) -> int:
        return self.offset + self.num_messages
