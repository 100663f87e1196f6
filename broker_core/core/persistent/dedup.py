"""Message deduplication (Pulsar's PIP-6) for one topic partition.

The broker remembers, per producer name, the highest sequence id it has stored. An entry whose sequence
id is not above that is a duplicate: it is not stored, and its send still succeeds (the receipt says
``duplicate``, the message id is ``-1:-1``), as Pulsar does. A producer that reconnects with the same name
learns the last stored sequence id and carries on after it.

Two maps, as in Pulsar:

- ``pushed``: highest sequence id handed to the log, stored or in flight; new entries are checked
  against it, so a retry that races its own first attempt is caught too;
- ``persisted``: highest sequence id the journal confirmed; this is what a reconnecting producer is told,
  what snapshots hold, and what ``pushed`` falls back to when an append fails.

A batch entry counts by its ``highest_sequence_id`` (its messages carry consecutive ids), and is a
duplicate when its first id is not above ``pushed``. Chunks of a chunked message share one sequence id:
only the last chunk is checked and recorded, so a message's earlier chunks are never mistaken for a
duplicate of themselves. A resent chunked message whose last chunk had been stored leaves its earlier
chunks as orphans, which consumers expire.

Durability: ``persisted`` is snapshotted (atomically) to ``dedup-snapshot.json`` in the topic folder every
``snapshot_interval`` confirmed entries, when entries are confirmed ``snapshot_seconds`` or more after the
last snapshot (Pulsar's ``brokerDeduplicationSnapshotIntervalSeconds``, the namespace's
``deduplicationSnapshotInterval``; 0: by entries only) and on close, with the log offset it covers. Recovery loads the
snapshot and replays the metadata of every entry from that offset to the end of the log, so the state
after a crash is exactly what the log holds, and the replay is at most ``snapshot_interval`` entries long
after a clean run (the whole log when the snapshot is missing or unreadable: it is derived data). A
segment fenced as damaged (recovery steps 2 and 4c in :mod:`broker_core.storage.recovery`) is passed
over with an ERROR line: the topic loads, and only the sequence ids stored there are unknown.
"""
from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import NamedTuple

from broker_core.clock import SYSTEM_CLOCK, Clock
from broker_core.errors import DataLost
from broker_core.protocol import pulsar_api_pb2
from broker_core.protocol.entry import read_metadata
from broker_core.storage.atomic import atomic_write
from broker_core.storage.log import ManagedLog

log = logging.getLogger(__name__)

SNAPSHOT_FILE = "dedup-snapshot.json"


class SequenceKey(NamedTuple):
    """What deduplication reads from one entry's ``MessageMetadata``."""

    producer_name: str
    sequence_id: int
    """the entry's first sequence id"""
    highest_sequence_id: int
    """the entry's last sequence id (== sequence_id for one message)"""
    checked: bool
    """False for a chunk other than the last: passed through, not recorded"""

    @classmethod
    def of(cls, metadata: pulsar_api_pb2.MessageMetadata) -> "SequenceKey":
        seq = metadata.sequence_id
        highest = max(seq, metadata.highest_sequence_id)
        checked = not (metadata.HasField("num_chunks_from_msg") and metadata.num_chunks_from_msg > 1
                       and metadata.chunk_id < metadata.num_chunks_from_msg - 1)
        return cls(metadata.producer_name, seq, highest, checked)


def stored_snapshot_offset(directory: Path) -> int | None:
    """The log offset the topic's snapshot covers, or None when there is no readable snapshot."""
    try:
        return int(json.loads((directory / SNAPSHOT_FILE).read_bytes())["offset"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def discard_snapshot(directory: Path) -> None:
    """Drop the snapshot (it is derived data): the next recovery replays the whole log."""
    (directory / SNAPSHOT_FILE).unlink(missing_ok=True)


class Deduplication:
    def __init__(self, directory: Path, snapshot_interval: int = 1000, snapshot_seconds: int = 0,
                 clock: Clock = SYSTEM_CLOCK) -> None:
        self._path = directory / SNAPSHOT_FILE
        self._interval = max(1, snapshot_interval)
        self.snapshot_seconds = snapshot_seconds
        """A snapshot is due when entries are confirmed this long after the last one (0: by entries only)."""
        self._clock = clock
        self._snapshot_ms = clock.now_ms()
        self.pushed: dict[str, int] = {}
        self.persisted: dict[str, int] = {}
        self._since_snapshot = 0
        self.snapshot_offset = 0
        """every entry below this log offset is reflected in ``persisted``"""

    # ------------------------------------------------------------------ recovery
    def recover(self, managed_log: ManagedLog) -> int:
        """Load the snapshot and replay the log after it; returns the number of entries replayed."""
        start = 0
        if self._path.exists():
            try:
                snap = json.loads(self._path.read_bytes())
                start = int(snap["offset"])
                self.persisted = {str(k): int(v) for k, v in snap["producers"].items()}
            except (ValueError, KeyError, TypeError, AttributeError) as exc:
                # The snapshot is derived data: the log itself rebuilds it.
                log.warning("event=dedup_snapshot_unreadable path=%s error=%r action=replay_whole_log",
                            self._path, exc)
                start, self.persisted = 0, {}
        offset = max(start, managed_log.start_offset)
        end = managed_log.end_offset
        replayed = 0
        while offset < end:
            try:
                entries = managed_log.read(offset, max_entries=1000, end_offset=end)
            except DataLost as lost:  # the topic must load all the same: only those entries' ids are unknown
                log.error("event=dedup_replay_skipped_damage path=%s from_offset=%d to_offset=%d detail=%r",
                          self._path.parent, lost.start_offset, lost.end_offset - 1, "sequence ids stored in a"
                          " damaged range are unknown: a producer resending one of those messages is not"
                          " recognised as a duplicate")
                offset = max(offset + 1, lost.end_offset)
                continue
            if not entries:
                break
            for entry in entries:
                self._record(SequenceKey.of(read_metadata(entry.data)), self.persisted)
                offset = entry.end_offset
                replayed += 1
        self.pushed = dict(self.persisted)
        self.snapshot_offset = end
        if replayed:
            log.info("event=dedup_recovered path=%s replayed_entries=%d producers=%d",
                     self._path.parent, replayed, len(self.persisted))
        return replayed

    # ------------------------------------------------------------------ publishing
    def is_duplicate(self, key: SequenceKey) -> bool:
        """Check one entry about to be appended (and count it as pushed when it is not a duplicate)."""
        if not key.checked:
            return False
        if key.sequence_id <= self.pushed.get(key.producer_name, -1):
            return True
        self.pushed[key.producer_name] = key.highest_sequence_id
        return False

    def confirmed(self, keys: list[SequenceKey], end_offset: int) -> bool:
        """Entries up to ``end_offset`` are durable; True when a snapshot is due."""
        persisted = self.persisted
        for key in keys:
            self._record(key, persisted)
        self._since_snapshot += len(keys)
        seconds = self.snapshot_seconds
        return self._since_snapshot >= self._interval or bool(
            seconds and self._since_snapshot and self._clock.now_ms() - self._snapshot_ms >= seconds * 1000)

    def failed(self, keys: list[SequenceKey]) -> None:
        """The append of these entries failed: their producers fall back to what is stored."""
        for key in keys:
            last = self.persisted.get(key.producer_name)
            if last is None:
                self.pushed.pop(key.producer_name, None)
            else:
                self.pushed[key.producer_name] = last

    def last_sequence_id(self, producer_name: str) -> int:
        """What a (re)connecting producer is told: the highest stored sequence id, -1 if none."""
        return self.persisted.get(producer_name, -1)

    def snapshot(self, end_offset: int) -> None:
        """Persist ``persisted`` as covering every entry below ``end_offset``."""
        body = {"offset": end_offset, "producers": self.persisted}
        atomic_write(self._path, json.dumps(body, sort_keys=True).encode())
        self.snapshot_offset = end_offset
        self._since_snapshot = 0
        self._snapshot_ms = self._clock.now_ms()

    @staticmethod
    def _record(key: SequenceKey, into: dict[str, int]) -> None:
        if key.checked and key.highest_sequence_id > into.get(key.producer_name, -1):
            into[key.producer_name] = key.highest_sequence_id


class DeduplicationSwitch:
    """Whether one topic deduplicates (the registry turns it on and off by policy), and its state when it
    does: ``current`` is None while off."""

    def __init__(self, directory: Path, snapshot_interval: int, managed_log: ManagedLog, *,
                 snapshot_seconds: int = 0, clock: Clock = SYSTEM_CLOCK) -> None:
        self._directory = directory
        self._interval = snapshot_interval
        self._seconds = snapshot_seconds
        self._clock = clock
        self._log = managed_log
        self.current: Deduplication | None = None

    @property
    def snapshot_seconds(self) -> int:
        """Snapshot by time too (see :class:`Deduplication`); a policy sets it."""
        return self._seconds

    @snapshot_seconds.setter
    def snapshot_seconds(self, seconds: int) -> None:
        self._seconds = seconds
        if self.current is not None:
            self.current.snapshot_seconds = seconds

    def set_enabled(self, enabled: bool) -> None:
        """Turn deduplication on (recovering its state from the snapshot and the log) or off."""
        if enabled and self.current is None:
            dedup = Deduplication(self._directory, self._interval, self._seconds, self._clock)
            dedup.recover(self._log)
            self.current = dedup
        elif not enabled and self.current is not None:
            self.current = None

    def last_sequence_id(self, producer_name: str) -> int:
        """The highest sequence id stored for ``producer_name`` (-1: unknown or deduplication off)."""
        return self.current.last_sequence_id(producer_name) if self.current is not None else -1
