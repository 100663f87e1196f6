"""The schema registry: per topic, the versions of its schema (Pulsar's schema registry and its
schema evolution), stored and surviving restarts.

A topic's schema is registered by the first producer or consumer that brings one (``PRODUCER``/``SUBSCRIBE``
with a schema, ``GET_OR_CREATE_SCHEMA``); a later one gets the version of an identical schema already
registered, a new version when it is compatible under the topic's ``schemaCompatibilityStrategy`` (Avro's
rules with Pulsar's strategies, :mod:`.schema_compat`; ``UNDEFINED`` is Pulsar's broker default, ``FULL``),
or :class:`~broker_core.errors.IncompatibleSchema` naming the strategy applied and why. The partitions of a
partitioned topic share their base topic's schema. A version is Pulsar's 8-byte big-endian number, starting at 0;
clients put it in the ``schema_version`` of the messages they produce (the broker stores it as it comes).
A schema for a topic of a namespace that does not exist is refused (``NamespaceNotFound``).

Bounds (:class:`~broker_core.errors.InvalidSchema` names the one hit):

- a definition is at most :data:`MAX_SCHEMA_BYTES` (1 MiB). Pulsar stores a schema as one BookKeeper entry,
  bounded by the frame size (``maxMessageSize``, 5 MB); this broker keeps each topic's latest definition in
  memory and parses two of them for every new version, so it takes less: real Avro, JSON and Protobuf
  definitions are a few KiB, the largest generated ones tens of KiB;
- ProtobufNative data is Pulsar's ``ProtobufNativeSchemaData`` naming a message its descriptors declare
  (:mod:`.schema_protobuf_native`);
- a topic has at most :data:`MAX_SCHEMA_VERSIONS` versions (1,000), which bounds its folder (1,000 files,
  at most 1.4 GB with base64) and its digests in memory; a schema evolving every day for years fits.

Storage and threads: one file per version in the topic's own folder (:mod:`broker_core.storage.
schema_files`, which also migrates the single ``schemas.json`` of earlier versions at start). Finding an
identical schema is a digest lookup on the event loop; a new version's compatibility check and its durable
write run on the executor, one registration at a time per topic, so the event loop never waits on a
schema's parsing or fsync. Memory per topic: its latest version and every version's digest; an older
version is read from its file when asked for.
"""
from __future__ import annotations

import asyncio
import logging
import struct
from concurrent.futures import Executor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from broker_core.clock import Clock
from broker_core.errors import IncompatibleSchema, InvalidMessage, InvalidSchema
from broker_core.core import schema_protobuf_native as protobuf_native
from broker_core.core.schema_compat import (KEY_VALUE, applied_strategy, consumer_strategy, is_transitive,
                                           split_key_value, strategy_problem)
from broker_core.storage.paths import namespace_dir
from broker_core.storage.schema_files import SchemaFiles, SchemaInfo, StoredVersion, digest_of, migrate_legacy
from broker_core.types import TopicName

__all__ = ["MAX_SCHEMA_BYTES", "MAX_SCHEMA_VERSIONS", "SchemaInfo", "SchemaRegistry", "version_number"]

log = logging.getLogger(__name__)

FOLDER = "schemas"
MAX_SCHEMA_BYTES = 1 << 20
"""The largest schema definition registered (see the module docstring for why)."""
MAX_SCHEMA_VERSIONS = 1000
"""The most versions one topic's schema has (see the module docstring for why)."""
VERSION = struct.Struct(">q")
"""A schema version on the wire: a signed 64-bit big-endian number, as Pulsar's ``LongSchemaVersion``."""


def version_number(version: bytes) -> int:
    """The number of a wire schema version; ``InvalidMessage`` when it is not 8 bytes."""
    if len(version) != VERSION.size:
        raise InvalidMessage(f"a schema version is {VERSION.size} bytes, not {len(version)}")
    return VERSION.unpack(version)[0]


@dataclass
class _TopicSchema:
    """What the registry holds of one topic's schema."""

    stored: list[StoredVersion]
    latest: SchemaInfo | None
    writers: int = 0
    """Registrations and deletions under way or waiting for ``lock``."""
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


class SchemaRegistry:
    def __init__(self, metadata: Path, clock: Clock, executor: Executor | None = None,
                 check_namespace: Callable[[TopicName], None] | None = None,
                 strategy_of: Callable[[TopicName], str] | None = None,
                 auto_update_of: Callable[[TopicName], bool] | None = None) -> None:
        """``metadata``: the data dir's ``metadata`` folder; ``executor`` runs checks and writes (the
        loop's default one when None); ``check_namespace`` raises ``NamespaceNotFound`` for a topic whose
        namespace does not exist; ``strategy_of`` is a topic's compatibility strategy (its namespace's
        ``schemaCompatibilityStrategy``; ``UNDEFINED``, the broker's default, when None); ``auto_update_of``
        whether producers and consumers may register a new version (the namespace's
        ``isAllowAutoUpdateSchema``; always, when None)."""
        self._strategy_of = strategy_of or (lambda name: "UNDEFINED")
        self._auto_update_of = auto_update_of or (lambda name: True)
        metadata.mkdir(parents=True, exist_ok=True)
        self._files = SchemaFiles(metadata / FOLDER)
        migrate_legacy(metadata, self._files)
        self._clock = clock
        self._executor = executor
        self._check_namespace = check_namespace or (lambda name: None)
        self._topics: dict[str, _TopicSchema] = {}

    @staticmethod
    def _key(topic: TopicName) -> str:
        return str(topic.partitioned_base)

    def _topic(self, topic: TopicName, *, keep: bool = False) -> _TopicSchema:
        """The topic's state, loaded at its first use; one without versions is kept only for a writer
        (``keep``), so asking about any number of names that have no schema costs no memory."""
        key = self._key(topic)
        state = self._topics.get(key)
        if state is None:
            stored = self._files.versions(topic)
            latest = self._files.read(topic, stored[-1]) if stored else None
            state = _TopicSchema(stored, latest)
            if stored or keep:
                self._topics[key] = state
        return state

    def latest(self, topic: TopicName) -> SchemaInfo | None:
        return self._topic(topic).latest

    def get(self, topic: TopicName, version: int) -> SchemaInfo | None:
        state = self._topic(topic)
        if state.latest is not None and state.latest.version == version:
            return state.latest
        for stored in state.stored:
            if stored.version == version:
                return self._files.read(topic, stored)
        return None

    def find(self, topic: TopicName, schema_type: str, data: bytes) -> SchemaInfo | None:
        """The registered version identical to this schema, or None: no file written, nothing waited for.
        ``InvalidSchema`` for a schema never registered (too large, malformed KeyValue data)."""
        _check_definition(schema_type, data)
        return self._identical(topic, self._topic(topic), digest_of(schema_type, data))

    def _identical(self, topic: TopicName, state: _TopicSchema, digest: str) -> SchemaInfo | None:
        for stored in reversed(state.stored):  # clients mostly bring the latest
            if stored.digest == digest:
                return self.get(topic, stored.version)
        return None

    async def get_or_create(self, topic: TopicName, schema_type: str, data: bytes, *, name: str = "",
                            properties: dict[str, str] | None = None, by_admin: bool = False) -> SchemaInfo:
        """The version of this schema on ``topic``: an identical registered one, else a new version when it
        is compatible with the latest (``IncompatibleSchema`` otherwise), stored durably before it is
        returned. A client's (not ``by_admin``) new version is refused while the topic's namespace does not
        allow auto updates (``isAllowAutoUpdateSchema`` false, as Pulsar: "Schema not found and schema auto
        updating is disabled."); the admin API uploads it."""
        self._check_namespace(topic)
        found = self.find(topic, schema_type, data)
        if found is not None:
            return found
        if not by_admin and not self._auto_update_of(topic):
            raise IncompatibleSchema(f"Schema not found and schema auto updating is disabled. ({self._key(topic)}"
                                     " allows no new schema version from its clients, isAllowAutoUpdateSchema:"
                                     " upload it with the admin API)", topic=self._key(topic))
        data, properties = bytes(data), dict(properties or {})
        digest = digest_of(schema_type, data)
        async with self._writing(topic) as state:
            found = self._identical(topic, state, digest)  # registered while this one waited
            if found is not None:
                return found
            if len(state.stored) >= MAX_SCHEMA_VERSIONS:
                raise InvalidSchema(f"the schema of {self._key(topic)} already has {MAX_SCHEMA_VERSIONS} versions,"
                                    " the most the broker keeps per topic; delete the topic to start its schema"
                                    " anew", limit=MAX_SCHEMA_VERSIONS)
            version = state.stored[-1].version + 1 if state.stored else 0
            info = SchemaInfo(version, schema_type, data, name, properties, self._clock.now_ms())
            strategy = self._strategy_of(topic)
            await asyncio.get_running_loop().run_in_executor(
                self._executor, self._check_and_write, topic, state, info, digest, strategy)
            state.stored.append(StoredVersion(version, digest))
            state.latest = info
        log.info("event=schema_registered topic=%s version=%d type=%s bytes=%d", self._key(topic), version,
                 schema_type, len(data))
        return info

    def _check_and_write(self, topic: TopicName, state: _TopicSchema, info: SchemaInfo, digest: str,
                         strategy: str) -> None:
        """On the executor: the compatibility check under ``strategy`` (parsing the definitions: the latest
        version's, or every version's for a transitive strategy, read from their files) and the durable
        write."""
        found = self._problem(topic, state, info, strategy)
        if found:
            key = self._key(topic)
            version, problem = found
            raise IncompatibleSchema(f"schema of {key} is incompatible with its version {version}"
                                     f" ({applied_strategy(strategy)}): {problem}", topic=key, version=version)
        self._files.write(topic, info, digest)

    def _problem(self, topic: TopicName, state: _TopicSchema, info: SchemaInfo,
                 strategy: str) -> tuple[int, str] | None:
        """(the version refusing it, why) when ``info`` cannot be the topic's next version, else None."""
        latest = state.latest
        if latest is None:
            return None
        older = ([self._files.read(topic, stored) for stored in state.stored[:-1]]
                 if is_transitive(strategy) else [])
        for old in [latest, *reversed([o for o in older if o is not None])]:
            problem = strategy_problem(strategy, info.schema_type, old.schema_type, old.data, info.data,
                                       old.properties, info.properties)
            if problem:
                return old.version, problem
        return None

    def strategy(self, topic: TopicName) -> str:
        """The compatibility strategy a new version of ``topic``'s schema is checked under (``UNDEFINED``
        resolved to the broker's default, as Pulsar names the strategy it applied)."""
        return applied_strategy(self._strategy_of(topic))

    async def compatibility(self, topic: TopicName, schema_type: str, data: bytes,
                            properties: dict[str, str] | None = None) -> str | None:
        """Why this schema could not be registered on ``topic`` now (None: it could), checked as
        :meth:`get_or_create` checks it (on the executor), nothing written (REST's ``compatibility``)."""
        return await self._compatibility(topic, schema_type, data, properties, self._strategy_of(topic))

    async def consumer_compatibility(self, topic: TopicName, schema_type: str, data: bytes,
                                     properties: dict[str, str] | None = None) -> str | None:
        """Why a consumer bringing this schema could not read ``topic`` (None: it could), as Pulsar's
        ``checkConsumerCompatibility``: under :func:`~.schema_compat.consumer_strategy`, nothing written."""
        return await self._compatibility(topic, schema_type, data, properties,
                                         consumer_strategy(self._strategy_of(topic)))

    async def _compatibility(self, topic: TopicName, schema_type: str, data: bytes,
                             properties: dict[str, str] | None, strategy: str) -> str | None:
        self._check_namespace(topic)
        _check_definition(schema_type, data)
        state = self._topic(topic)
        if self._identical(topic, state, digest_of(schema_type, data)) is not None:
            return None
        info = SchemaInfo(-1, schema_type, bytes(data), "", dict(properties or {}))
        found = await asyncio.get_running_loop().run_in_executor(
            self._executor, self._problem, topic, state, info, strategy)
        return None if found is None else f"incompatible with version {found[0]}: {found[1]}"

    def _writing(self, topic: TopicName) -> "_Writing":
        return _Writing(self, self._key(topic), self._topic(topic, keep=True))

    async def delete(self, topic: TopicName) -> None:
        """Forget every version of ``topic``'s schema (the topic was deleted), after any registration under
        way."""
        async with self._writing(topic) as state:
            removed = await asyncio.get_running_loop().run_in_executor(self._executor, self._files.remove, topic)
            # a registration waiting for the lock starts the schema anew, at version 0
            state.stored, state.latest = [], None
            self._topics.pop(self._key(topic), None)
        if removed:
            log.info("event=schema_deleted topic=%s", self._key(topic))

    def delete_namespace(self, domain: str, tenant: str, namespace: str) -> None:
        """Remove what is left of a deleted namespace's schema folders (its topics' were removed with them)."""
        self._files.remove_namespace(namespace_dir(self._files.root, domain, tenant, namespace))
        prefix = f"{domain}://{tenant}/{namespace}/"
        for key in [k for k, state in self._topics.items() if k.startswith(prefix) and not state.writers]:
            del self._topics[key]


class _Writing:
    """``async with``: one registration or deletion of a topic's schema at a time (``writers`` counts them,
    so a namespace's deletion leaves the state of one under way alone)."""

    def __init__(self, registry: SchemaRegistry, key: str, state: _TopicSchema) -> None:
        self._registry, self._key, self._state = registry, key, state

    async def __aenter__(self) -> _TopicSchema:
        self._state.writers += 1
        try:
            await self._state.lock.acquire()
        except BaseException:
            self._state.writers -= 1
            raise
        return self._state

    async def __aexit__(self, *exc) -> None:
        self._state.lock.release()
        self._state.writers -= 1


def _check_definition(schema_type: str, data: bytes) -> None:
    if len(data) > MAX_SCHEMA_BYTES:
        raise InvalidSchema(f"a schema definition of {len(data)} bytes exceeds the {MAX_SCHEMA_BYTES} bytes the"
                            " broker registers", size=len(data), limit=MAX_SCHEMA_BYTES)
    if schema_type == protobuf_native.TYPE:
        protobuf_native.root_message(data)
    if schema_type == KEY_VALUE and split_key_value(data) is None:
        raise InvalidSchema("the KeyValue schema data is not a key and a value schema, each after its length"
                            " (Pulsar's KeyValue layout)")
