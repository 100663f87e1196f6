"""Broker metadata that must survive restarts: partitioned topics and their partition counts.

Stored as a snapshot (``partitioned-topics.json``, ``{"persistent://t/ns/topic": partitions}``, as before)
plus an append-only change log (:mod:`broker_core.core.metadata_log`): creating or deleting a partitioned
topic appends one line and syncs it, whatever the number of topics; the snapshot is rewritten off the event
loop once the log has grown as long as the map.
"""
from __future__ import annotations

from concurrent.futures import Executor
from pathlib import Path

from broker_core.core.metadata_log import MapLog
from broker_core.errors import CorruptLog


class PartitionedTopicsStore:
    """``persistent://t/ns/topic -> partitions``, each change durable before it returns."""

    def __init__(self, directory: Path, executor: Executor | None = None) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self._log = MapLog(directory, "partitioned-topics", executor)
        self._path = self._log.snapshot_path
        snapshot, changes = self._log.load()
        try:
            self._partitions: dict[str, int] = {str(k): int(v) for k, v in (snapshot or {}).items()}
            for topic, partitions in changes:
                if partitions is None:
                    self._partitions.pop(topic, None)
                else:
                    self._partitions[topic] = int(partitions)
        except (ValueError, AttributeError, TypeError) as exc:
            raise CorruptLog(f"cannot read {self._path}: {exc}", path=str(self._path), position=0) from None

    def get(self, topic: str) -> int:
        return self._partitions.get(topic, 0)

    def set(self, topic: str, partitions: int) -> None:
        self._partitions[topic] = partitions
        self._log.put(topic, partitions, len(self._partitions), self.topics)

    def remove(self, topic: str) -> None:
        if self._partitions.pop(topic, None) is not None:
            self._log.put(topic, None, len(self._partitions), self.topics)

    def topics(self) -> dict[str, int]:
        return dict(self._partitions)

    def close(self) -> None:
        self._log.close()
