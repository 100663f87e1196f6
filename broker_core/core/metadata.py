"""Broker metadata that must survive restarts: partitioned topics, their partition counts and their properties
(Pulsar's ``PartitionedTopicMetadata``).

Stored as a snapshot (``partitioned-topics.json``, ``{"persistent://t/ns/topic": partitions}``, as before; a
topic with properties as ``{"partitions": N, "properties": {"k": "v"}}``)
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


PARTITIONS, PROPERTIES = "partitions", "properties"


def _partitions(value: Any) -> int:
    if isinstance(value, dict):
        if set(value) - {PARTITIONS, PROPERTIES}:
            raise ValueError(f"unknown fields {sorted(map(str, set(value) - {PARTITIONS, PROPERTIES}))[:5]}")
        properties = value.get(PROPERTIES, {})
        if not isinstance(properties, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                                       for k, v in properties.items()):
            raise ValueError("properties must map strings to strings")
        value = value.get(PARTITIONS)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"partitions must be an integer >= 1, not {value!r}"[:200])
    return value


class PartitionsCodec:
    """A snapshot is ``{topic: partitions}``; a topic is a canonical name, its partitions an integer >= 1 (or
    ``{"partitions": N, "properties": {...}}`` for a topic with properties)."""

    def entries(self, document: Any) -> Iterable[tuple[str, Any]]:
        if not isinstance(document, dict):
            raise ValueError(f"a JSON object of topics expected, not {type(document).__name__}")
        return document.items()

    def check(self, key: str, value: Any) -> Any:
        if str(TopicName.parse(key)) != key:
            raise ValueError(f"{key!r} is not a full topic name")
        if value is not None:
            _partitions(value)
        return value


class PartitionedTopicsStore:
    """``persistent://t/ns/topic -> partitions`` (and properties), each change durable before it returns."""

    def __init__(self, directory: Path, executor: Executor | None = None) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self._log = MapLog(directory, NAME, executor, what="the partitioned topics' metadata")
        loaded = self._log.load(PartitionsCodec())
        self._partitions: dict[str, int] = {topic: _partitions(value) for topic, value in loaded.items()}
        self._properties: dict[str, dict[str, str]] = {
            topic: dict(value[PROPERTIES]) for topic, value in loaded.items()
            if isinstance(value, dict) and value.get(PROPERTIES)}

    def get(self, topic: str) -> int:
        return self._partitions.get(topic, 0)

    def _value(self, topic: str) -> Any:
        properties = self._properties.get(topic)
        partitions = self._partitions[topic]
        return {PARTITIONS: partitions, PROPERTIES: properties} if properties else partitions

    def _put(self, topic: str) -> None:
        self._log.put(topic, self._value(topic) if topic in self._partitions else None, len(self._partitions),
                      self._document)

    def set(self, topic: str, partitions: int) -> None:
        """Create the topic, or change its count (its properties kept)."""
        self._partitions[topic] = partitions
        self._put(topic)

    def properties(self, topic: str) -> dict[str, str]:
        """The partitioned topic's properties (``{}``: none)."""
        return dict(self._properties.get(topic, {}))

    def set_properties(self, topic: str, properties: dict[str, str]) -> None:
        """Replace the properties of partitioned topic ``topic`` (which must exist)."""
        if topic not in self._partitions:
            raise KeyError(topic)
        if properties:
            self._properties[topic] = dict(properties)
        else:
            self._properties.pop(topic, None)
        self._put(topic)

    def remove(self, topic: str) -> None:
        self._properties.pop(topic, None)
        if self._partitions.pop(topic, None) is not None:
            self._put(topic)

    def topics(self) -> dict[str, int]:
        return dict(self._partitions)

    def _document(self) -> dict[str, Any]:
        return {topic: self._value(topic) for topic in self._partitions}

    def close(self) -> None:
        self._log.close()
