"""The schema registry: per topic, the versions of its schema (Pulsar's schema registry and its
schema evolution), stored and surviving restarts.

A topic's schema is registered by the first producer or consumer that brings one (``PRODUCER``/``SUBSCRIBE``
with a schema, ``GET_OR_CREATE_SCHEMA``); a later one gets the version of an identical schema already
registered, a new version when it is compatible with the latest one (:mod:`.schema_compat`, Pulsar's
default ``BACKWARD``), or :class:`~broker_core.errors.IncompatibleSchema`. The partitions of a partitioned
topic share their base topic's schema. A version is Pulsar's 8-byte big-endian number, starting at 0;
clients put it in the ``schema_version`` of the messages they produce (the broker stores it as it comes).

Disk: ``metadata/schemas.json``, ``{topic: [version, ...]}`` with each version's type, name, properties,
data (base64) and registration time, written atomically on every change (registrations are rare).
"""
from __future__ import annotations

import base64
import json
import logging
import struct
from dataclasses import dataclass, field
from pathlib import Path

from broker_core.clock import Clock
from broker_core.errors import CorruptLog, IncompatibleSchema, InvalidMessage
from broker_core.service.schema_compat import incompatibility
from broker_core.storage.atomic import atomic_write
from broker_core.types import TopicName

log = logging.getLogger(__name__)

FILE_NAME = "schemas.json"
MAX_SCHEMA_BYTES = 1 << 20
"""The largest schema definition registered (Pulsar's schemas are Avro/JSON definitions of a few KiB)."""
VERSION = struct.Struct(">q")
"""A schema version on the wire: a signed 64-bit big-endian number, as Pulsar's ``LongSchemaVersion``."""


@dataclass(frozen=True)
class SchemaInfo:
    """One registered version of a topic's schema."""

    version: int
    schema_type: str
    """Pulsar's ``Schema.Type`` name: ``String``, ``Json``, ``Avro``, ``Protobuf``, ``KeyValue`` ..."""
    data: bytes
    name: str = ""
    properties: dict[str, str] = field(default_factory=dict)
    timestamp_ms: int = 0

    @property
    def version_bytes(self) -> bytes:
        return VERSION.pack(self.version)


def version_number(version: bytes) -> int:
    """The number of a wire schema version; ``InvalidMessage`` when it is not 8 bytes."""
    if len(version) != VERSION.size:
        raise InvalidMessage(f"a schema version is {VERSION.size} bytes, not {len(version)}")
    return VERSION.unpack(version)[0]


class SchemaRegistry:
    def __init__(self, directory: Path, clock: Clock) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self._path = directory / FILE_NAME
        self._clock = clock
        self._schemas: dict[str, list[SchemaInfo]] = {}
        if self._path.exists():
            self._load()

    def _load(self) -> None:
        try:
            stored = json.loads(self._path.read_bytes())
            self._schemas = {str(topic): [SchemaInfo(int(v["version"]), str(v["type"]), base64.b64decode(v["data"]),
                                                     str(v.get("name", "")), dict(v.get("properties", {})),
                                                     int(v.get("timestamp", 0))) for v in versions]
                             for topic, versions in stored.items()}
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            log.error("event=schemas_corrupt path=%s error=%r", self._path, exc)
            raise CorruptLog(f"the schema registry ({FILE_NAME}) is corrupt; the broker's log has the details",
                             path=FILE_NAME, position=0) from None

    def _save(self) -> None:
        atomic_write(self._path, json.dumps({
            topic: [{"version": v.version, "type": v.schema_type, "name": v.name, "properties": v.properties,
                     "data": base64.b64encode(v.data).decode(), "timestamp": v.timestamp_ms} for v in versions]
            for topic, versions in self._schemas.items()}, sort_keys=True).encode())

    @staticmethod
    def _key(topic: TopicName) -> str:
        return str(topic.partitioned_base)

    def latest(self, topic: TopicName) -> SchemaInfo | None:
        versions = self._schemas.get(self._key(topic))
        return versions[-1] if versions else None

    def get(self, topic: TopicName, version: int) -> SchemaInfo | None:
        for info in self._schemas.get(self._key(topic), ()):
            if info.version == version:
                return info
        return None

    def get_or_create(self, topic: TopicName, schema_type: str, data: bytes, *, name: str = "",
                      properties: dict[str, str] | None = None) -> SchemaInfo:
        """The version of this schema on ``topic``: an identical registered one, else a new version when it
        is compatible with the latest (``IncompatibleSchema`` otherwise)."""
        if len(data) > MAX_SCHEMA_BYTES:
            raise InvalidMessage(f"a schema definition of {len(data)} bytes exceeds the {MAX_SCHEMA_BYTES} bytes"
                                 " the broker registers")
        key = self._key(topic)
        versions = self._schemas.get(key, [])
        for info in versions:
            if info.schema_type == schema_type and info.data == data:
                return info
        if versions:
            latest = versions[-1]
            if latest.schema_type != schema_type:
                problem: str | None = f"the topic's schema is {latest.schema_type}, not {schema_type}"
            else:
                problem = incompatibility(schema_type, latest.data, data)
            if problem:
                raise IncompatibleSchema(f"schema of {key} is incompatible with its version {latest.version}"
                                         f" (BACKWARD): {problem}", topic=key, version=latest.version)
        info = SchemaInfo(versions[-1].version + 1 if versions else 0, schema_type, bytes(data), name,
                          dict(properties or {}), self._clock.now_ms())
        self._schemas[key] = [*versions, info]
        self._save()
        log.info("event=schema_registered topic=%s version=%d type=%s", key, info.version, schema_type)
        return info

    def delete(self, topic: TopicName) -> None:
        """Forget every version of ``topic``'s schema (the topic was deleted)."""
        if self._schemas.pop(self._key(topic), None) is not None:
            self._save()
            log.info("event=schema_deleted topic=%s", self._key(topic))
