"""Which tombstones a compaction run keeps: those a compacted reader the broker knows may still have to read.

Pulsar's compactor removes a deleted key and its tombstone together. A compacted reader (or consumer, or
TableView) that read ``k1=v1`` and is still positioned before ``k1``'s tombstone when a run compacts past it
then reads the new compacted ledger, where ``k1`` is simply absent: it keeps ``k1=v1`` for good, while a
fresh reader lacks it. pulsarlike keeps such tombstones in the compacted ledger (an entry with the key and an
empty payload or ``null_value``, as produced), so every client -- the official ones too -- reads the deletion
as it would have read it raw; and removes them, as Pulsar does, once no compacted reader can be behind them.

**The floor** (:meth:`TombstoneKeeping.floor`): a run keeps every tombstone at or after the lowest of

1. the first unacknowledged message of each subscription reading the compacted view -- readers, and durable
   subscriptions whose consumers read compacted, connected or not -- and of each durable subscription no
   consumer has attached to since the topic loaded (its reading mode is unknown). A reader tells the broker
   how far it has read by acknowledging cumulatively, as pulsar-client's readers do;
2. where each compacted reader that left less than ``hold_ms`` ago was (:class:`GoneReaders`): a reader whose
   connection dropped comes back after the last message it returned, and a broker cannot tell it from one
   that closed for good;
3. for ``hold_ms`` after the topic loaded, the ``tombstones_from`` of the compacted ledger it loaded: the
   readers of before a restart or an unload are unknown until they come back.

None of these: nothing is kept (Pulsar's compacted view). ``hold_ms`` is ``compactionTombstoneRetentionSeconds``.

**Readers that come during a run** read the previous view until the new ledger is current, and the run did
not know of them. A reader needs only the tombstones of the keys whose values it read, and a value read from
the previous view has its tombstone at or after the previous horizon. So when the run removed a tombstone at
or after the floor now (:meth:`TombstoneKeeping.redo_floor`), its ledger is discarded and the run is made
again keeping every tombstone at or after ``min(floor now, previous horizon)``, which covers any reader that
comes meanwhile: one redo at most.

Worked example: raw ``0:k1=v1 1:k2=v2 2:k1=<tombstone> 3:k2=<tombstone>``; a TableView has read 0 and 1
(acknowledged up to 1, first unacknowledged 2). A run to horizon 4 keeps ``2:k1=<tombstone>
3:k2=<tombstone>``: the view reads both and removes k1 and k2. Once it has acknowledged 3 (or left more
than ``hold_ms`` ago), the next run removes both tombstones.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Iterable

from broker_core.clock import Clock

if TYPE_CHECKING:
    from broker_core.core.persistent.compaction import CompactedLedger, CompactionResult


class GoneReaders:
    """Where the compacted readers that left a topic were (their first unacknowledged message), for
    ``hold_ms`` after they left (0: forgotten at once). A reader subscribing again under its name is back."""

    def __init__(self, clock: Clock, hold_ms: int) -> None:
        self._clock = clock
        self.hold_ms = hold_ms
        self._gone: dict[str, tuple[int, int]] = {}  # reader name -> (position, when it left, ms)

    def left(self, name: str, position: int) -> None:
        if self.hold_ms > 0:
            self._gone.pop(name, None)  # insertion order is leaving order: the expired ones come first
            self._gone[name] = (position, self._clock.now_ms())
            self._forget_expired()

    def back(self, name: str) -> None:
        self._gone.pop(name, None)

    def positions(self) -> list[int]:
        """The positions of the readers gone less than ``hold_ms`` ago (the others are forgotten)."""
        self._forget_expired()
        return [position for position, _ in self._gone.values()]

    def _forget_expired(self) -> None:
        """Drop the readers gone ``hold_ms`` ago or more, oldest first (each is dropped once: amortized O(1))."""
        now = self._clock.now_ms()
        while self._gone:
            name, (_, left_ms) = next(iter(self._gone.items()))
            if now - left_ms < self.hold_ms:
                return
            del self._gone[name]

    def clear(self) -> None:
        self._gone.clear()

    def __len__(self) -> int:
        return len(self._gone)


class TombstoneKeeping:
    """The keep/drop decision of one topic partition's compaction runs (see the module's doc).
    ``positions()`` are items 1 and 2 of the floor (the topic's subscriptions and gone readers);
    ``loaded`` is the compacted ledger the topic loaded (None: none)."""

    def __init__(self, clock: Clock, hold_ms: int, positions: Callable[[], Iterable[int]],
                 loaded: "CompactedLedger | None") -> None:
        self._clock = clock
        self.hold_ms = hold_ms
        self._positions = positions
        self._loaded_ms = clock.now_ms()
        self._loaded_floor = loaded.tombstones_from if loaded is not None else None

    def floor(self) -> int | None:
        """Keep the tombstones at or after this offset (None: keep none)."""
        positions = list(self._positions())
        if self._loaded_floor is not None and self._clock.now_ms() - self._loaded_ms < self.hold_ms:
            positions.append(self._loaded_floor)
        return min(positions, default=None)

    def redo_floor(self, result: "CompactionResult", previous: "CompactedLedger | None") -> int | None:
        """None when ``result`` (a run just finished) removed no tombstone a reader the broker knows now may
        need; else the floor to make the run again with."""
        now = self.floor()
        if now is None or result.dropped_tombstone < now:
            return None
        return min(now, previous.horizon if previous is not None else 0)
