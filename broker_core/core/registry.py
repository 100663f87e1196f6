"""The broker's topics: lookup, auto-creation, partitioned metadata, listing, deletion and stats; the
tenants and namespaces they live in (a topic of a namespace that does not exist is refused with
``NamespaceNotFound``, as Pulsar refuses its lookup).

Disk layout under ``data_dir``::

    metadata/partitioned-topics.json          partitioned topics and their partition counts
    metadata/namespaces.json                  tenants (with their info) and namespaces
    metadata/policies.json                    namespace and topic policies
    metadata/schemas/<domain>/<tenant>/<namespace>/<topic>/   schema versions (broker_core.storage.schema_files)
    topics/<domain>/<tenant>/<namespace>/<topic>/   one folder per topic partition: segments + cursors/

Topic folder names are the local name percent-encoded, so any valid name maps to one folder. Paths come
only from :mod:`broker_core.storage.paths` (which checks they stay under ``topics/``), and folders are
removed only through its ``remove_tree``.
"""
from __future__ import annotations

import asyncio
import logging
from concurrent.futures import Executor
from typing import Iterable, Iterator
from pathlib import Path
from urllib.parse import unquote

from broker_core.clock import Clock
from broker_core.config import BrokerConfig
from broker_core.errors import (InvalidTopicName, NamespaceNotEmpty, NotAllowedError, PulsarLikeError,
                                TenantNotEmpty, TopicAlreadyExists, TopicNotFound)
from broker_core.core.persistent import cursor_admin
from broker_core.core.metadata import PartitionedTopicsStore
from broker_core.core.namespaces import NamespacesStore, check_namespace_name
from broker_core.core.nonpersistent.topic import NonPersistentTopic, check_enabled
from broker_core.core.policies import NAMESPACE, TOPIC, PoliciesStore
from broker_core.core.schemas import SchemaRegistry
from broker_core.core.persistent.stats import partitioned_stats
from broker_core.core.retention_rules import RetentionPolicy
from broker_core.core.persistent.topic import PersistentTopic
from broker_core.storage.cursor_store import CursorStore
from broker_core.storage.files import FileBudget
from broker_core.storage.paths import namespace_dir, remove_tree, tenant_dir, topic_dir
from broker_core.types import (NON_PERSISTENT, PERSISTENT, TopicName, check_partition_names, entity_name_problem,
                               folder_name, local_name_problem)

log = logging.getLogger(__name__)

MAX_PARTITIONS = 4096


def _topic_folders(folder: Path) -> list[str]:
    """The local names of the topic folders in a namespace folder; a folder no valid name maps to (made by
    hand, or by a version with laxer rules) is no topic: it is skipped, so it is never opened or deleted."""
    locals_ = []
    for path in folder.iterdir():
        local = unquote(path.name)
        if path.is_dir() and folder_name(local) == path.name and not local_name_problem(local):
            locals_.append(local)
        elif path.is_dir():
            log.warning("event=topic_folder_skipped namespace_folder=%s folder=%s", folder.name, path.name)
    return locals_


class TopicRegistry:
    def __init__(self, data_dir: Path, config: BrokerConfig, executor: Executor, clock: Clock, *,
                 sync_pool: Executor | None = None, files: FileBudget | None = None) -> None:
        """``executor`` runs slow file work, ``sync_pool`` the journals' fsyncs (``executor`` when not
        given); ``files`` is the broker's open-file budget (``managedLedgerMaxOpenFiles`` when not given)."""
        self._root = data_dir / "topics"
        self._root.mkdir(parents=True, exist_ok=True)
        self._config = config
        self.config = config
        self._executor = executor
        self._sync_pool = sync_pool or executor
        self.files = files or FileBudget(config.managedLedgerMaxOpenFiles)
        self._clock = clock
        self.clock = clock
        self._unload_handle: asyncio.TimerHandle | None = None
        self.partitioned = PartitionedTopicsStore(data_dir / "metadata")
        self.policies = PoliciesStore(data_dir / "metadata")
        self.namespaces = NamespacesStore(data_dir / "metadata", config.clusterName, adopt=self._found_namespaces())
        # schema checks and writes run on the executor; a schema is refused where a topic would be
        self.schemas = SchemaRegistry(data_dir / "metadata", clock, executor,
                                      check_namespace=lambda name: self.namespaces.check_exists(name.namespace_name))
        self._topics: dict[str, PersistentTopic | NonPersistentTopic] = {}

    def _found_namespaces(self) -> set[str]:
        """Namespaces a data folder from before ``namespaces.json`` already uses (adopted at first start)."""
        found = {f"{t.name}/{ns.name}" for domain in (PERSISTENT, NON_PERSISTENT) if (self._root / domain).is_dir()
                 for t in (self._root / domain).iterdir() if t.is_dir() for ns in t.iterdir() if ns.is_dir()
                 if not (entity_name_problem("tenant", t.name) or entity_name_problem("namespace", ns.name))}
        found.update(self.policies.namespaces())
        found.update(TopicName.parse(t).namespace_name for t in self.partitioned.topics())
        return found

    # ------------------------------------------------------------------ lookup
    def _dir(self, name: TopicName) -> Path:
        return topic_dir(self._root, name)

    def _exists_on_disk(self, name: TopicName) -> bool:
        return self._dir(name).is_dir()

    def exists(self, name: TopicName) -> bool:
        """Whether topic partition (or non-partitioned topic) ``name`` is loaded or stored."""
        return str(name) in self._topics or self._exists_on_disk(name)

    def check_schema_topic(self, name: TopicName) -> None:
        """``GET_OR_CREATE_SCHEMA`` registers a schema for an existing topic only, as Pulsar's (which answers
        ``TopicNotFound``): ``NamespaceNotFound`` or ``TopicNotFound`` otherwise, as a producer is refused."""
        check_enabled(self._config, name)
        self.namespaces.check_exists(name.namespace_name)
        if not (self.partitions_of(name.partitioned_base) or self.exists(name)):
            raise TopicNotFound(f"topic {name} does not exist: create it (or a producer) before its schema",
                                topic=str(name))

    def partitions_of(self, name: TopicName) -> int:
        return self.partitioned.get(str(name))

    def lookup_partitions(self, name: TopicName) -> int:
        """Partition count for clients (0: not partitioned). With ``allowAutoTopicCreationType=partitioned``
        an unknown topic is created here with ``defaultNumPartitions`` partitions, as Pulsar's lookup does."""
        check_enabled(self._config, name)
        self.namespaces.check_exists(name.namespace_name)
        n = self.partitions_of(name)
        if n or name.partition_index >= 0:
            return n
        if (self._config.allowAutoTopicCreation and self._config.allowAutoTopicCreationType == "partitioned"
                and str(name) not in self._topics and not self._exists_on_disk(name)):
            self.create_partitioned(name, self._config.defaultNumPartitions)
            return self._config.defaultNumPartitions
        return 0

    def get(self, name: TopicName, *, create: bool) -> PersistentTopic:
        """The topic partition ``name``, loading it from disk or auto-creating it when allowed."""
        key = str(name)
        topic = self._topics.get(key)
        if topic is not None:
            topic.last_used_ms = self._clock.now_ms()
            return topic
        check_enabled(self._config, name)
        self.namespaces.check_exists(name.namespace_name)
        partitions = self.partitions_of(name)
        if partitions:
            raise NotAllowedError(f"{name} is a partitioned topic with {partitions} partitions: produce to and"
                                  " consume from its partitions (<topic>-partition-<i>); the client does this")
        base = name.partitioned_base
        n = self.partitions_of(base) if base != name else 0
        if n and name.partition_index >= n:
            raise TopicNotFound(f"{name}: partitioned topic {base} has only {n} partitions")
        # a partition of an existing partitioned topic always exists
        may_create = bool(n) or (create and self._config.allowAutoTopicCreation)
        if not may_create and not self._exists_on_disk(name):
            raise TopicNotFound(f"topic {name} does not exist"
                                + ("" if self._config.allowAutoTopicCreation else " (allowAutoTopicCreation=false)"))
        if name.domain == NON_PERSISTENT:  # in memory only; dropped from here once idle
            topic = NonPersistentTopic(name, self._config, self._clock, on_idle=self._forget)
        else:
            topic = PersistentTopic(name, self._dir(name), self._config, self._executor, self._clock,
                                    deduplication=self.deduplication_enabled(name), sync_pool=self._sync_pool,
                                    files=self.files)
            self._apply_retention(topic)
            topic.expire_subscriptions()  # it may have been unloaded, or the broker stopped, for long
        self._apply_limits(topic)
        self._topics[key] = topic
        log.info("event=topic_loaded topic=%s", key)
        return topic

    def loaded(self, name: TopicName) -> PersistentTopic | NonPersistentTopic | None:
        return self._topics.get(str(name))

    def _forget(self, topic: NonPersistentTopic) -> None:
        if self._topics.get(topic.topic) is topic:
            del self._topics[topic.topic]

    # ------------------------------------------------------------------ policies
    def deduplication_enabled(self, name: TopicName) -> bool:
        return bool(self.policies.resolve(name, "deduplicationEnabled", self._config.brokerDeduplicationEnabled))

    def retention_policy(self, name: TopicName) -> RetentionPolicy:
        """The effective retention of ``name``: topic, partitioned base, namespace, broker defaults."""
        return RetentionPolicy.of(self.policies.resolve(name, "retention", None),
                                  self._config.defaultRetentionTimeInMinutes, self._config.defaultRetentionSizeInMB)

    def message_ttl_seconds(self, name: TopicName) -> int:
        return int(self.policies.resolve(name, "messageTTLInSeconds", self._config.ttlDurationDefaultInSeconds))

    def subscription_expiration_minutes(self, name: TopicName) -> int:
        return int(self.policies.resolve(name, "subscriptionExpirationTimeMinutes",
                                         self._config.subscriptionExpirationTimeMinutes))

    def _apply_retention(self, topic: PersistentTopic) -> None:
        topic.set_retention_policies(self.retention_policy(topic.name), self.message_ttl_seconds(topic.name))
        topic.subscription_expiration_minutes = self.subscription_expiration_minutes(topic.name)

    def _apply_limits(self, topic: PersistentTopic | NonPersistentTopic) -> None:
        topic.max_producers = int(self.policies.resolve(topic.name, "maxProducersPerTopic",
                                                        self._config.maxProducersPerTopic))
        topic.max_consumers = int(self.policies.resolve(topic.name, "maxConsumersPerTopic",
                                                        self._config.maxConsumersPerTopic))

    def set_policy(self, scope: str, name: str, key: str, value: object) -> None:
        """Set (``value=None``: remove) a namespace or topic policy and apply it to loaded topics."""
        if scope == TOPIC:
            topic = TopicName.parse(name)
            if not (self.partitions_of(topic) or str(topic) in self._topics or self._exists_on_disk(topic)):
                raise TopicNotFound(f"topic {topic} does not exist")
        elif scope == NAMESPACE:
            self.namespaces.check_exists(self.policies.scope_key(scope, name))
        self.policies.set(scope, name, key, value)
        for topic in self._topics.values():
            topic.set_deduplication(self.deduplication_enabled(topic.name))
            if topic.persistent:
                self._apply_retention(topic)
            self._apply_limits(topic)

    def get_policies(self, scope: str, name: str) -> dict:
        if scope == NAMESPACE:
            self.namespaces.check_exists(self.policies.scope_key(scope, name))
        return self.policies.get(scope, name)

    # ------------------------------------------------------------------ admin
    def create_partitioned(self, name: TopicName, partitions: int) -> None:
        if name.partition_index >= 0:
            raise InvalidTopicName(f"{name}: a partitioned topic name cannot contain '-partition-'",
                                   topic=str(name), reason="contains -partition-")
        if not 0 < partitions <= MAX_PARTITIONS:
            raise NotAllowedError(f"partitions must be between 1 and {MAX_PARTITIONS}, got {partitions}")
        check_partition_names(name, partitions)
        check_enabled(self._config, name)
        self.namespaces.check_exists(name.namespace_name)
        if self.partitions_of(name) or str(name) in self._topics or self._exists_on_disk(name):
            raise TopicAlreadyExists(f"topic {name} already exists")
        self.partitioned.set(str(name), partitions)

    def create(self, name: TopicName) -> None:
        self.namespaces.check_exists(name.namespace_name)
        if self.partitions_of(name) or str(name) in self._topics or self._exists_on_disk(name):
            raise TopicAlreadyExists(f"topic {name} already exists")
        self.get(name, create=True)

    def list(self, namespace: str) -> list[str]:
        """Every topic partition and non-partitioned topic of ``tenant/namespace`` (as Pulsar lists them)."""
        tenant, ns = check_namespace_name(namespace)
        self.namespaces.check_exists(namespace)
        names: set[str] = set()
        for domain in (PERSISTENT, NON_PERSISTENT):
            folder = namespace_dir(self._root, domain, tenant, ns)
            if folder.is_dir():
                names.update(f"{domain}://{tenant}/{ns}/{local}" for local in _topic_folders(folder))
        names.update(k for k in self._topics if TopicName.parse(k).namespace_name == namespace)
        for base, n in self.partitioned.topics().items():
            parsed = TopicName.parse(base)
            if parsed.namespace_name == namespace:
                names.update(str(parsed.partition(i)) for i in range(n))
        return sorted(names)

    async def delete(self, name: TopicName, *, force: bool) -> None:
        partitions = self.partitions_of(name)
        targets = [name.partition(i) for i in range(partitions)] if partitions else [name]
        if not partitions and str(name) not in self._topics and not self._exists_on_disk(name):
            raise TopicNotFound(f"topic {name} does not exist")
        loaded = [self._topics.get(str(t)) for t in targets]  # one only on disk has no clients: not loaded
        if not force:
            for t in loaded:
                if t is not None and t.has_clients:
                    raise NotAllowedError(f"topic {t.topic} has connected producers or consumers;"
                                          " close them or delete with force")
        for target, topic in zip(targets, loaded):
            if topic is not None:
                self._topics.pop(topic.topic, None)
                await topic.delete()
            else:
                remove_tree(self._root, self._dir(target))
        if partitions:
            self.partitioned.remove(str(name))
        if partitions or name.partition_index < 0:  # a partition shares its partitioned topic's schema
            await self.schemas.delete(name)  # as Pulsar (its --deleteSchema is ignored: always deleted)
        self.policies.forget_topic(str(name))

    def internal_stats(self, name: TopicName) -> dict:
        """``stats-internal``: the managed-ledger view (segments, cursors) of a topic partition; of a
        partitioned topic, each partition's under ``partitions`` (Pulsar's partitioned-stats-internal)."""
        partitions = self.partitions_of(name)
        if partitions:
            return {"metadata": {"partitions": partitions},
                    "partitions": {str(p): self.internal_stats(p) for p in map(name.partition, range(partitions))
                                   if self._exists_on_disk(p) or str(p) in self._topics}}
        topic = self.get(name, create=False)
        if not topic.persistent:
            raise NotAllowedError(f"{name}: a non-persistent topic stores nothing, so it has no internal"
                                  " stats; use `topics stats`")
        return cursor_admin.internal_stats(topic)

    def subscriptions(self, name: TopicName) -> list[str]:
        """Subscription names of a topic (of every partition of a partitioned topic), as pulsar-admin
        ``topics subscriptions`` lists them: durable ones and readers' alike."""
        partitions = self.partitions_of(name)
        targets = [name.partition(i) for i in range(partitions)] if partitions else [name]
        names: set[str] = set()
        for target in targets:
            if not partitions or self._exists_on_disk(target) or str(target) in self._topics:
                topic = self.get(target, create=False)
                names.update(topic.subscriptions)
                names.update(topic.readers)
        return sorted(names)

    # ------------------------------------------------------------------ tenants and namespaces
    def create_namespace(self, namespace: str) -> None:
        self.namespaces.create_namespace(namespace)
        log.info("event=namespace_created namespace=%s", namespace)

    def namespace_topics(self, namespace: str) -> list[str]:
        """The namespace's topics as deletion sees them: partitioned topics by their base name, then every
        other topic (non-partitioned, or a partition whose partitioned topic is gone)."""
        bases = sorted(b for b in self.partitioned.topics() if TopicName.parse(b).namespace_name == namespace)
        partitions = {str(TopicName.parse(b).partition(i)) for b in bases for i in range(self.partitions_of(
            TopicName.parse(b)))}
        return bases + [t for t in self.list(namespace) if t not in partitions]

    async def delete_namespace(self, namespace: str, *, force: bool) -> None:
        """Delete an empty namespace, or (``force``) every topic in it first, connected clients or not."""
        tenant, ns = check_namespace_name(namespace)
        self.namespaces.check_exists(namespace)
        topics = self.namespace_topics(namespace)
        if topics and not force:
            shown = ", ".join(topics[:5]) + (", ..." if len(topics) > 5 else "")
            raise NamespaceNotEmpty(
                f"namespace {namespace} still has {len(topics)} topic(s) ({shown}): delete them first, or delete"
                f" the namespace with force (`pulsarlike admin namespaces delete --force {namespace}`) to delete"
                " them too",
                namespace=namespace, topics=len(topics))
        self.namespaces.deleting.add(namespace)  # no topic is created there while its topics go
        try:
            await self._delete_topics(topics)
            self.policies.forget_namespace(namespace)
            self.namespaces.deleting.discard(namespace)
            self.namespaces.delete_namespace(namespace)
        finally:
            self.namespaces.deleting.discard(namespace)
        for domain in (PERSISTENT, NON_PERSISTENT):
            remove_tree(self._root, namespace_dir(self._root, domain, tenant, ns))
            self.schemas.delete_namespace(domain, tenant, ns)
        log.info("event=namespace_deleted namespace=%s force=%s topics_deleted=%d", namespace, force, len(topics))

    async def _delete_topics(self, topics: Iterable[str]) -> None:
        for topic in topics:
            try:
                await self.delete(TopicName.parse(topic), force=True)
            except TopicNotFound:  # a non-persistent topic that went idle meanwhile
                pass

    async def delete_tenant(self, tenant: str, *, force: bool) -> None:
        """Delete a tenant without namespaces, or (``force``) its namespaces and their topics first."""
        namespaces = self.namespaces.namespaces(tenant)
        if namespaces and not force:
            raise TenantNotEmpty(
                f"tenant {tenant} still has namespaces ({', '.join(namespaces)}): delete them first, or delete"
                f" the tenant with force (`pulsarlike admin tenants delete --force {tenant}`) to delete them and"
                " their topics too", tenant=tenant, namespaces=namespaces)
        for namespace in namespaces:
            await self.delete_namespace(namespace, force=True)
        self.namespaces.delete_tenant(tenant)
        for domain in (PERSISTENT, NON_PERSISTENT):
            remove_tree(self._root, tenant_dir(self._root, domain, tenant))
        log.info("event=tenant_deleted tenant=%s force=%s", tenant, force)

    def stats(self, name: TopicName) -> dict:
        partitions = self.partitions_of(name)
        if not partitions:
            return self.get(name, create=False).stats()
        per = {str(name.partition(i)): self.get(name.partition(i), create=True).stats() for i in range(partitions)}
        return partitioned_stats(per, name.domain == NON_PERSISTENT)

    # ------------------------------------------------------------------ idle topics
    def start_unloading(self) -> None:
        """Unload idle topics every so often (``brokerTopicIdleUnloadSeconds``; runs on the event loop)."""
        idle_s = self._config.brokerTopicIdleUnloadSeconds
        if idle_s:
            self._unload_handle = asyncio.get_running_loop().call_later(
                min(idle_s / 2, 30), self._unload_round)

    def _unload_round(self) -> None:
        try:
            self.unload_idle()
        except Exception:  # a failed round must not stop the next ones
            log.exception("event=topic_unload_round_failed")
        self.start_unloading()

    def unload_idle(self, max_topics: int = 1000) -> int:
        """Unload persistent topics quiescent for ``brokerTopicIdleUnloadSeconds`` (at most ``max_topics``
        this round, so a round never holds the event loop long); returns how many were unloaded."""
        now = self._clock.now_ms()
        cutoff = now - self._config.brokerTopicIdleUnloadSeconds * 1000
        unloaded = 0
        for key, topic in list(self._topics.items()):
            if not topic.persistent:
                continue  # non-persistent topics leave on their own once idle
            if not topic.quiescent:
                topic.last_used_ms = now
            elif topic.last_used_ms <= cutoff and self.unload(key):
                unloaded += 1
                if unloaded >= max_topics:
                    break
        return unloaded

    def unload(self, key: str) -> bool:
        """Unload the loaded topic ``key`` if it is quiescent; the next use loads it from disk again."""
        topic = self._topics.get(key)
        if topic is None or not topic.persistent:
            return False
        try:
            done = topic.unload()
        except (OSError, PulsarLikeError) as exc:
            log.error("event=topic_unload_failed topic=%s error=%r", key, exc)
            done = topic.closed
        if done:
            del self._topics[key]
            log.info("event=topic_unloaded topic=%s", key)
        return done

    def stored_topics(self, domain: str) -> Iterator[TopicName]:
        """The topic partitions of ``domain`` stored in the data dir, namespace by namespace (lazily)."""
        for namespace in self.namespaces.all_namespaces():
            tenant, ns = namespace.split("/", 1)
            folder = namespace_dir(self._root, domain, tenant, ns)
            try:  # the namespace may go between two turns of a caller
                locals_ = sorted(_topic_folders(folder)) if folder.is_dir() else []
            except OSError:
                continue
            for local in locals_:
                yield TopicName(domain, tenant, ns, local)

    def cursor_store(self, name: TopicName) -> CursorStore | None:
        """The cursor files of stored topic ``name`` (None when it has none), for work on a topic that is
        not loaded."""
        folder = self._dir(name) / "cursors"
        return CursorStore(folder) if folder.is_dir() else None

    def loaded_topics(self) -> dict[str, PersistentTopic | NonPersistentTopic]:
        """The topics in memory now, by name (a copy)."""
        return dict(self._topics)

    async def close(self) -> None:
        if self._unload_handle is not None:
            self._unload_handle.cancel()
        for topic in list(self._topics.values()):
            try:
                await topic.close()
            except (OSError, PulsarLikeError) as exc:
                log.error("event=topic_close_failed topic=%s error=%r", topic.topic, exc)
        self._topics.clear()
