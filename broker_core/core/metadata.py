"""Broker metadata that must survive restarts: partitioned topics and their partition counts.

Stored as one JSON file written atomically (temp file in the same folder, fsync, rename, fsync folder).
"""
from __future__ import annotations

import json
from pathlib import Path

from broker_core.errors import CorruptLog
from broker_core.storage.atomic import atomic_write


class PartitionedTopicsStore:
    """``persistent://t/ns/topic -> partitions``, persisted on every change."""

    def __init__(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self._path = directory / "partitioned-topics.json"
        self._partitions: dict[str, int] = {}
        if self._path.exists():
            try:
                loaded = json.loads(self._path.read_bytes())
                self._partitions = {str(k): int(v) for k, v in loaded.items()}
            except (ValueError, AttributeError, TypeError) as exc:
                raise CorruptLog(f"cannot read {self._path}: {exc}", path=str(self._path), position=0) from None

    def get(self, topic: str) -> int:
        return self._partitions.get(topic, 0)

    def set(self, topic: str, partitions: int) -> None:
        self._partitions[topic] = partitions
        self._save()

    def remove(self, topic: str) -> None:
        if self._partitions.pop(topic, None) is not None:
            self._save()

    def topics(self) -> dict[str, int]:
        return dict(self._partitions)

    def _save(self) -> None:
        atomic_write(self._path, json.dumps(self._partitions, sort_keys=True, indent=1).encode())
