"""A partition's compacted view as dispatch reads it (Pulsar's ``readCompacted``).

Below the compaction horizon a compacted reader sees the compacted ledger -- the latest message of each
key, each carrying its original offset, so offsets have gaps -- and from the horizon on the raw log::

    raw log:        0:k1=a  1:k2=b  2:k1=c  3:k2=<tombstone>  4:k3=d | 5:k1=e  6:k2=f   (horizon 5)
    compacted view:                 2:k1=c                    4:k3=d | 5:k1=e  6:k2=f

Offsets are the same in both views, so a cursor, an acknowledgment or a seek means the same message in
either. The offsets a read passes over below the horizon (compacted away: 0, 1 and 3 above) are reported to
``on_skipped(start, end)``, and the subscription acknowledges them: a compacted reader never receives them,
so they count in no backlog and do not hold its mark-delete point back (a consumer acknowledging each
message it gets leaves nothing behind; a terminated topic's end is reached).

A later compaction may swap the ledger while a reader is mid-way: the reader's next read starts at its
next offset in whatever ledger is current then. Every message it has not read yet of a key
still alive is there (the newer ledger keeps, for each key, the latest message below a horizon at least as
high, and that message is at or after the reader's position unless the reader already had it) and nothing
comes twice (offsets only grow).

Deletions are there too: a run keeps a key's tombstone (the key with an empty payload or ``null_value``, as
produced) while a compacted reader the broker knows may be before it -- one that may hold the key's older
value (see :mod:`broker_core.core.persistent.compacted_readers`). In the example above, a reader that had
read 0 and 1 (it holds ``k2=b``) when the run compacted to 5 makes it keep ``3:k2=<tombstone>``; the reader
then reads ``2:k1=c 3:k2=<tombstone> 4:k3=d`` and removes ``k2``, as it would have read raw. A kept tombstone
is a kept entry like the others here.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Optional, Protocol

if TYPE_CHECKING:
    from broker_core.storage.stored_entry import StoredEntry
    from dispatch.source import EntrySource


class CompactedLedger(Protocol):
    """What a compaction run leaves (``broker_core.core.persistent.compaction.CompactedLedger``)."""

    horizon: int
    """Raw offsets below it are compacted; from it on they are read raw."""

    def read(self, start_offset: int, max_entries: int, max_bytes: int) -> "list[StoredEntry]":
        """Kept entries whose offset is >= ``start_offset``, in offset order."""

    def entry_at_or_after(self, offset: int) -> "Optional[StoredEntry]": ...

    @property
    def last_offset(self) -> int:
        """Offset of the last kept message, -1 when none is."""


class CompactedSource:
    """An :class:`~dispatch.source.EntrySource` over ``ledger()`` (the partition's current compacted ledger,
    None before its first compaction) and ``raw``, the partition's log (see the module's doc)."""

    def __init__(self, raw: "EntrySource", ledger: Callable[[], Optional[CompactedLedger]],
                 on_skipped: Optional[Callable[[int, int], None]] = None) -> None:
        self.raw = raw
        self._ledger = ledger
        self.on_skipped = on_skipped
        """Called with each ``[start, end)`` range of compacted-away offsets a read passed over."""
        self._first: tuple[object, int | None] = (None, None)
        """(ledger, offset of its first kept message): dispatch asks ``start_offset`` every round, and a
        kept message is a file read."""

    @property
    def ledger(self) -> Optional[CompactedLedger]:
        return self._ledger()

    @property
    def start_offset(self) -> int:
        """Where reading starts: the raw log's start, or the first kept message when retention trimmed the
        raw log past it (kept messages stay readable). Not the view's first message (that is
        :class:`~broker_core.core.compacted_view.CompactedView`'s): a read from the raw start passes over
        what was compacted away before the first kept message, and reports it."""
        raw_start = self.raw.start_offset
        ledger = self._ledger()
        if ledger is None:
            return raw_start
        cached, first = self._first
        if cached is not ledger:
            entry = ledger.entry_at_or_after(0)
            first = entry.offset if entry is not None and entry.offset < ledger.horizon else None
            self._first = (ledger, first)
        return min(raw_start, first if first is not None else ledger.horizon)

    @property
    def end_offset(self) -> int:
        return self.raw.end_offset

    @property
    def durable_end_offset(self) -> int:
        return self.raw.durable_end_offset

    def read(self, start_offset: int, max_entries: int, max_bytes: int,
             end_offset: int | None = None) -> "list[StoredEntry]":
        """Kept entries from ``start_offset`` while below the horizon, else raw entries from
        ``max(start_offset, horizon)``; never past ``end_offset`` (default: the durable end). One read
        never mixes the two: the next read goes on where this one stopped."""
        end = self.raw.durable_end_offset if end_offset is None else end_offset
        ledger = self._ledger()  # once per read: a swap between two reads is seen whole
        if ledger is not None and start_offset < ledger.horizon:
            found = ledger.read(start_offset, max_entries, max_bytes)
            if self.on_skipped is not None:
                self._skipped(start_offset, found, ledger.horizon)
            kept = [e for e in found if e.offset < end]
            if kept:
                return kept
            start_offset = ledger.horizon  # nothing kept from here up to the horizon
        return self.raw.read(start_offset, max_entries, max_bytes, end)

    def _skipped(self, start_offset: int, found: "list[StoredEntry]", horizon: int) -> None:
        """Report the gaps before and between ``found`` (the one after the last is the next read's)."""
        at = start_offset
        for entry in found:
            if entry.offset > at:
                self.on_skipped(at, min(entry.offset, horizon))
            at = max(at, entry.end_offset)
        if not found and at < horizon:
            self.on_skipped(at, horizon)

    def __repr__(self) -> str:
        ledger = self._ledger()
        return f"CompactedSource(horizon={ledger.horizon if ledger is not None else None})"
