"""Broker metadata that must survive restarts: partitioned topics and their partition counts.

Stored as a snapshot (``partitioned-topics.json``, ``{"persistent://t/ns/topic": partitions}``, as before)
plus an append-only change log (:mod:`broker_core.core.metadata_log`): creating or deleting a partitioned
topic appends one line and syncs it, whatever the number of topics; the snapshot is rewritten off the event
loop once the log has grown as long as the map. Loading checks every entry (:class:`PartitionsCodec`): a
damaged file is refused at start, or recovered exactly from the snapshot before it
(:mod:`broker_core.core.metadata_files`).
"""
from __future__ import annotations

from concurrent.futures import Executor
from pathlib import Path
from typing import Any, Iterable

from broker_core.core.metadata_log import MapLog
from broker_core.types import TopicName

NAME = "partitioned-topics"


class PartitionsCodec:
    """A snapshot is ``{topic: partitions}``; a topic is a canonical name, its partitions an integer >= 1."""

    def entries(self, document: Any) -> Iterable[tuple[str, Any]]:
        if not isinstance(document, dict):
            raise ValueError(f"a JSON object of topics expected, not {type(document).__name__}")
        return document.items()

    def check(self, key: str, value: Any) -> Any:
        if str(TopicName.parse(key)) != key:
            raise ValueError(f"{key!r} is not a full topic name")
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise ValueError(f"partitions must be an integer >= 1, not {value!r}"[:200])
        return value


class PartitionedTopicsStore:
    """``persistent://t/ns/topic -> partitions``, each change durable before it returns."""

    def __init__(self, directory: Path, executor: Executor | None = None) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self._log = MapLog(directory, NAME, executor, what="the partitioned topics' metadata")
        self._partitions: dict[str, int] = self._log.load(PartitionsCodec())

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
