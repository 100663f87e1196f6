"""Schema versions on disk: one folder per topic, one file per version, each written once.

Layout (folders from :func:`broker_core.storage.paths.schema_dir`)::

    metadata/schemas/<domain>/<tenant>/<namespace>/<percent-encoded local name of the base topic>/
        <version, 20 digits>-<digest, 64 hex>.json

A partitioned topic's partitions share their base topic's folder. The file is a JSON object: ``version``,
``type`` (Pulsar's ``Schema.Type`` name), ``name``, ``properties``, ``data`` (base64) and ``timestamp``
(registration, ms). The digest is the SHA-256 of ``type``, a zero byte and ``data``
(:func:`digest_of`): it is in the name so that the registry finds an identical schema among every
version by listing the folder, reading only the latest file (as Pulsar compares schema hashes).

Registering a version writes one new file (:func:`broker_core.storage.atomic.atomic_write`: temp file,
fsync, ``os.replace``, fsync the folder; a new folder is fsynced into its parent); earlier versions are
never rewritten, so a registration costs the size of its own definition.

Recovery, at a topic's first use (:meth:`SchemaFiles.versions`, :meth:`SchemaFiles.read`):

1. Names starting with ``.`` are temp files a crash left mid-write: ignored.
2. Other names that are not ``<20 digits>-<64 hex>.json`` are skipped with a WARNING (nothing the broker
   wrote).
3. The versions are the numbers found, in order; only the latest file is read, when it is needed.
4. A file that does not parse, or whose content does not match the version and digest of its name, is
   ``CorruptLog`` for that topic's schema calls only (its details in the broker's log).

Migration from the single ``metadata/schemas.json`` of earlier versions (:func:`migrate_legacy`, at start):

1. The old file is parsed whole (a corrupt one is ``CorruptLog``, as before: the broker does not start).
2. Every version of every topic is written to its topic's folder; a file already there is kept.
3. The old file is renamed ``schemas.json.migrated`` (a backup, never read again).

A crash midway leaves ``schemas.json`` in place, so the next start migrates again and loses nothing.
"""
from __future__ import annotations

import base64
import hashlib
import json
import logging
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from broker_core.errors import CorruptLog, PersistenceError, PulsarLikeError
from broker_core.storage.atomic import atomic_write, fsync_directory
from broker_core.storage.paths import remove_tree, schema_dir
from broker_core.types import TopicName

log = logging.getLogger(__name__)

LEGACY_FILE = "schemas.json"
"""The one file of every topic's schemas before per-topic folders; migrated at start."""
MIGRATED_SUFFIX = ".migrated"
_FILE = re.compile(r"(?P<version>\d{20})-(?P<digest>[0-9a-f]{64})\.json")


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
        return self.version.to_bytes(8, "big", signed=True)


class StoredVersion(NamedTuple):
    """A version as its file name tells it."""

    version: int
    digest: str
    """SHA-256 of the type and data (:func:`digest_of`), hex."""


def digest_of(schema_type: str, data: bytes) -> str:
    return hashlib.sha256(schema_type.encode() + b"\0" + data).hexdigest()


def file_name(stored: StoredVersion) -> str:
    return f"{stored.version:020d}-{stored.digest}.json"


def _encode(info: SchemaInfo) -> bytes:
    return json.dumps({"version": info.version, "type": info.schema_type, "name": info.name,
                       "properties": info.properties, "data": base64.b64encode(info.data).decode(),
                       "timestamp": info.timestamp_ms}, sort_keys=True).encode()


def _decode(entry: dict) -> SchemaInfo:
    properties = {str(k): str(v) for k, v in dict(entry.get("properties", {})).items()}
    return SchemaInfo(int(entry["version"]), str(entry["type"]), base64.b64decode(entry["data"], validate=True),
                      str(entry.get("name", "")), properties, int(entry.get("timestamp", 0)))


class SchemaFiles:
    """The schema folders under ``root`` (``metadata/schemas``). Blocking file work: the registry runs
    :meth:`write` and :meth:`remove` on an executor."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)

    def folder(self, name: TopicName) -> Path:
        return schema_dir(self.root, name)

    def versions(self, name: TopicName) -> list[StoredVersion]:
        """The stored versions of ``name``'s schema, oldest first (recovery steps 1-3)."""
        folder = self.folder(name)
        try:
            names = os.listdir(folder)
        except FileNotFoundError:
            return []
        found = []
        for entry in names:
            if entry.startswith("."):
                continue
            m = _FILE.fullmatch(entry)
            if m is None:
                log.warning("event=schema_file_skipped topic=%s file=%s", name.partitioned_base, entry[:120])
                continue
            found.append(StoredVersion(int(m["version"]), m["digest"]))
        return sorted(found)

    def read(self, name: TopicName, stored: StoredVersion) -> SchemaInfo:
        """The version ``stored`` of ``name``'s schema (recovery step 4)."""
        path = self.folder(name) / file_name(stored)
        try:
            info = _decode(json.loads(path.read_bytes()))
            problem = None
            if info.version != stored.version:
                problem = f"holds version {info.version}"
            elif digest_of(info.schema_type, info.data) != stored.digest:
                problem = "does not match its digest"
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            problem = repr(exc)
        if problem is not None:
            log.error("event=schema_file_corrupt topic=%s path=%s problem=%s", name.partitioned_base, path,
                      problem)
            raise CorruptLog(f"version {stored.version} of the schema of {name.partitioned_base} is corrupt;"
                             " the broker's log has the details", path=file_name(stored), position=0)
        return info

    def write(self, name: TopicName, info: SchemaInfo, digest: str) -> None:
        """Store one new version (atomically, durably, its folder made durable too); ``PersistenceError``
        when the disk refuses (full, read-only): nothing is registered and the client may retry."""
        folder = self.folder(name)
        try:
            self._make_folder(folder)
            atomic_write(folder / file_name(StoredVersion(info.version, digest)), _encode(info))
        except OSError as exc:
            raise PersistenceError(f"cannot store the schema of {name}: {exc.strerror or type(exc).__name__}",
                                   topic=str(name)) from None

    def _make_folder(self, folder: Path) -> None:
        missing = []
        path = folder
        while not path.is_dir():
            missing.append(path)
            path = path.parent
        for path in reversed(missing):  # each new folder is made durable in its parent
            path.mkdir(exist_ok=True)
            fsync_directory(path.parent)

    def remove(self, name: TopicName) -> bool:
        """Remove every version of ``name``'s schema; False when it had none."""
        return remove_tree(self.root, self.folder(name))

    def remove_namespace(self, folder: Path) -> None:
        remove_tree(self.root, folder)


def migrate_legacy(metadata: Path, files: SchemaFiles) -> int:
    """Move the versions of ``metadata/schemas.json`` into per-topic folders (once); returns how many
    versions were written. See the module docstring for the steps."""
    legacy = metadata / LEGACY_FILE
    if not legacy.exists():
        return 0
    try:
        stored = json.loads(legacy.read_bytes())
        topics = {str(topic): [_decode(v) for v in versions] for topic, versions in stored.items()}
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        log.error("event=schemas_corrupt path=%s error=%r", legacy, exc)
        raise CorruptLog(f"the schema registry ({LEGACY_FILE}) is corrupt; the broker's log has the details",
                         path=LEGACY_FILE, position=0) from None
    written = 0
    for key, versions in topics.items():
        try:
            name = TopicName.parse(key)
            present = set(files.versions(name))
        except PulsarLikeError as exc:  # an invalid name: kept in the backup; never reachable by a client
            log.error("event=schema_migration_skipped topic=%r error=%r", key[:200], exc)
            continue
        for info in versions:
            digest = digest_of(info.schema_type, info.data)
            if StoredVersion(info.version, digest) not in present:
                files.write(name, info, digest)
                written += 1
    os.replace(legacy, legacy.with_name(LEGACY_FILE + MIGRATED_SUFFIX))
    fsync_directory(metadata)
    log.info("event=schemas_migrated topics=%d versions_written=%d backup=%s", len(topics), written,
             LEGACY_FILE + MIGRATED_SUFFIX)
    return written
