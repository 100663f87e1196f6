"""The broker's topics: lookup, auto-creation, partitioned metadata, listing, deletion and stats; the
tenants and namespaces they live in (a topic of a namespace that does not exist is refused with
``NamespaceNotFound``, as Pulsar refuses its lookup).

Disk layout under ``data_dir``::

    metadata/partitioned-topics.json          partitioned topics and their partition counts (a snapshot
    metadata/partitioned-topics.*.changes     and the changes since: broker_core.core.metadata_log)
    metadata/namespaces.json                  tenants (with their info) and namespaces
    metadata/policies.json                    namespace and topic policies (a snapshot and
    metadata/policies.*.changes               the changes since, as partitioned topics')
    metadata/schemas/<domain>/<tenant>/<namespace>/<topic>/   schema versions (broker_core.storage.schema_files)
    topics/<domain>/<tenant>/<namespace>/<topic>/   one folder per topic partition: segments + cursors/

Topic folder names are the local name percent-encoded, so any valid name maps to one folder
(:mod:`broker_core.core.topic_folders`). Paths come only from :mod:`broker_core.storage.paths` (which checks
they stay under ``topics/``), and folders are removed only through its ``remove_tree``.

The registry looks topics up, loads and creates them, lists and deletes them; its other jobs are owned
helpers: :mod:`~broker_core.core.effective_policies`, :mod:`~broker_core.core.idle_unloading`,
:mod:`~broker_core.core.namespace_deletion`. What the admin API asks of the topics (stats, subscriptions,
termination, compaction ...) is the admin core's (:mod:`broker_core.core.admin`).
"""
from __future__ import annotations

import logging
from concurrent.futures import Executor
from typing import TYPE_CHECKING, Iterator
from pathlib import Path

from broker_core.clock import Clock
from broker_core.config import BrokerConfig
from broker_core.errors import (InvalidPartitionCount, InvalidTopicName, NotAllowedError, PulsarLikeError,
                                TopicAlreadyExists, TopicNotFound)
from broker_core.core import namespace_deletion
from broker_core.core.dynamic_config import DynamicConfig
from broker_core.core.effective_policies import EffectivePolicies
from broker_core.core.idle_unloading import IdleUnloader
from broker_core.core.inactive_topics import InactiveTopics
from broker_core.core.metadata import PartitionedTopicsStore
from broker_core.core.namespaces import NamespacesStore, check_namespace_name
from broker_core.core.backlog_quota import QuotaChecks, quotas_in_force
from broker_core.core.policies import (AUTO_TOPIC_CREATION, BACKLOG_QUOTA, NAMESPACE, SCHEMA_STRATEGY, TOPIC,
                                       PoliciesStore)
from broker_core.core.policy_checks import (AUTO_UPDATE_SCHEMA, AUTO_UPDATE_STRATEGIES, AUTO_UPDATE_STRATEGY,
                                            INACTIVE_TOPIC_POLICIES, MAX_TOPICS_PER_NAMESPACE)
from broker_core.core.rate_settings import BrokerThrottling
from broker_core.core.resource_groups import ResourceGroups
from broker_core.core.schemas import SchemaRegistry
from broker_core.core.throttling import call_later
from broker_core.core.retention_rules import RetentionPolicy
from broker_core.core.topic_folders import namespace_folders, stored_topics, topic_folders
from broker_core.storage.files import FileBudget
from broker_core.storage.paths import namespace_dir, remove_tree, topic_dir
from broker_core.types import NON_PERSISTENT, PERSISTENT, TopicName, check_partition_names

from broker_core.core.topic_protocol import Topic

if TYPE_CHECKING:
    from broker_core.storage.cursor_store import CursorStore

log = logging.getLogger(__name__)


def check_enabled(config: BrokerConfig, name: TopicName) -> None:
    # (better: check_enabled moves to a module without the topic class, e.g. core/topic_rules.py)
    from broker_core.core.nonpersistent.topic import check_enabled as check

    check(config, name)

MAX_PARTITIONS = 4096


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
        self.partitioned = PartitionedTopicsStore(data_dir / "metadata", executor)
        self.policies = PoliciesStore(data_dir / "metadata", executor)
        self.dynamic = DynamicConfig(data_dir / "metadata", config, executor)
        """The dynamic configuration (``brokers/configuration``): its changes apply to the loaded topics."""
        self.resource_groups = ResourceGroups(data_dir / "metadata", clock, call_later, executor)
        self.throttling = BrokerThrottling(self.policies, self.resource_groups, lambda: self.dynamic.current,
                                           clock, call_later)
        """Resolves and applies each topic's rate limits (:mod:`broker_core.core.rate_settings`)."""
        self.dynamic.on_change(lambda config: self.rates_changed(config_changed=True))
        self._effective = EffectivePolicies(self.policies, config,
                                            has_schema=lambda name: self.schemas.latest(name) is not None)
        self.namespaces = NamespacesStore(data_dir / "metadata", config.clusterName, adopt=self._found_namespaces())
        # schema checks and writes run on the executor; a schema is refused where a topic would be
        self.schemas = SchemaRegistry(data_dir / "metadata", clock, executor,
                                      check_namespace=lambda name: self.namespaces.check_exists(name.namespace_name),
                                      strategy_of=self._schema_strategy,
                                      auto_update_of=lambda name: bool(self.policies.resolve(
                                          name, AUTO_UPDATE_SCHEMA, config.isAllowAutoUpdateSchemaEnabled)))
        self._topics: dict[str, Topic] = {}
        self._unloader = IdleUnloader(self._topics, config, clock)
        self._inactive = InactiveTopics(self._topics, self._inactive_policy, self._has_stored_subscriptions,
                                        lambda name: self.delete(name, force=False), config, clock)
        self.quotas = QuotaChecks(self._topics, lambda name: quotas_in_force(self.policies, name),
                                  config, clock)

    @property
    def topics_root(self) -> Path:
        """The data dir's ``topics/`` folder."""
        return self._root

    def _found_namespaces(self) -> set[str]:
        """Namespaces a data folder from before ``namespaces.json`` already uses (adopted at first start)."""
        found = namespace_folders(self._root)
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

    def _schema_strategy(self, name: TopicName) -> str:
        """The namespace's ``schemaCompatibilityStrategy``; while ``UNDEFINED``, the one its (deprecated)
        ``schemaAutoUpdateCompatibilityStrategy`` stands for, as Pulsar resolves them."""
        strategy = self.policies.resolve(name, SCHEMA_STRATEGY, "UNDEFINED")
        if strategy == "UNDEFINED":
            auto = self.policies.resolve(name, AUTO_UPDATE_STRATEGY, None)
            if auto is not None:
                return AUTO_UPDATE_STRATEGIES[auto]
        return strategy

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
        allowed, topic_type, partitions = self.auto_topic_creation(name)
        if (allowed and topic_type == "partitioned" and str(name) not in self._topics
                and not self._exists_on_disk(name)):
            self.create_partitioned(name, partitions)
            return partitions
        return 0

    def auto_topic_creation(self, name: TopicName) -> tuple[bool, str, int]:
        """Whether an unknown topic ``name`` is created at first use, as which type and with how many
        partitions: its namespace's ``autoTopicCreation`` policy, else the broker's
        ``allowAutoTopicCreation``, ``allowAutoTopicCreationType`` and ``defaultNumPartitions``."""
        override = self.policies.resolve(name, AUTO_TOPIC_CREATION, None)
        config = self._config
        if override is None:
            return config.allowAutoTopicCreation, config.allowAutoTopicCreationType, config.defaultNumPartitions
        return (override["allowAutoTopicCreation"], override["topicType"],
                override.get("defaultNumPartitions", config.defaultNumPartitions))

    def get(self, name: TopicName, *, create: bool) -> Topic:
        """The topic partition ``name``, loading it from disk or auto-creating it when allowed: a
        :class:`~broker_core.core.topic_protocol.Topic` (persistent or not: ask it, or narrow it with
        :func:`~broker_core.core.topic_protocol.stored`). The topic classes (dispatch, storage) are imported
        here, by the first topic loaded, not at start; the registry is the only module that builds them."""
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
        auto = bool(n) or not create or self.auto_topic_creation(name)[0]
        may_create = bool(n) or (create and auto)
        on_disk = self._exists_on_disk(name)
        if not may_create and not on_disk:
            raise TopicNotFound(f"topic {name} does not exist" + ("" if auto else " (allowAutoTopicCreation=false)"))
        if not n and not on_disk:
            self._check_topic_room(name, 1)
        from broker_core.core.nonpersistent.topic import NonPersistentTopic
        from broker_core.core.persistent.topic import PersistentTopic

        topic: Topic
        if name.domain == NON_PERSISTENT:  # in memory only; dropped from here once idle
            topic = NonPersistentTopic(name, self._config, self._clock, on_idle=self._forget)
        else:
            kept = PersistentTopic(name, self._dir(name), self._config, self._executor, self._clock,
                                   deduplication=self.deduplication_enabled(name), sync_pool=self._sync_pool,
                                   files=self.files)
            self._effective.apply_retention(kept)
            kept.expire_subscriptions()  # it may have been unloaded, or the broker stopped, for long
            self.quotas.attach(kept)
            topic = kept
        self._effective.apply_limits(topic)
        self.throttling.apply(topic)
        self._topics[key] = topic
        self._inactive.used(key)
        log.info("event=topic_loaded topic=%s", key)
        return topic

    def loaded(self, name: TopicName) -> Topic | None:
        return self._topics.get(str(name))

    def _forget(self, topic: Topic) -> None:
        if self._topics.get(topic.topic) is topic:
            del self._topics[topic.topic]

    # ------------------------------------------------------------------ policies
    def deduplication_enabled(self, name: TopicName) -> bool:
        return self._effective.deduplication_enabled(name)

    def retention_policy(self, name: TopicName) -> RetentionPolicy:
        """The effective retention of ``name``: topic, partitioned base, namespace, broker defaults."""
        return self._effective.retention_policy(name)

    def message_ttl_seconds(self, name: TopicName) -> int:
        return self._effective.message_ttl_seconds(name)

    def subscription_expiration_minutes(self, name: TopicName) -> int:
        return self._effective.subscription_expiration_minutes(name)

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
            self._effective.apply(topic)
            self.throttling.apply(topic)
        if key == BACKLOG_QUOTA and value is not None:
            self.quotas.check(name if scope == NAMESPACE else None)

    def rates_changed(self, *, config_changed: bool = False) -> None:
        """A resource group or the dynamic configuration changed: every loaded topic enforces the rates now in
        force (see :mod:`broker_core.core.rate_settings`)."""
        if config_changed:
            self.throttling.config_changed()
        for topic in self._topics.values():
            self.throttling.apply(topic)

    def get_policies(self, scope: str, name: str) -> dict:
        if scope == NAMESPACE:
            self.namespaces.check_exists(self.policies.scope_key(scope, name))
        return self.policies.get(scope, name)

    # ------------------------------------------------------------------ admin
    def create_partitioned(self, name: TopicName, partitions: int) -> None:
        if name.partition_index >= 0:
            raise InvalidTopicName(f"{name}: a partitioned topic name cannot contain '-partition-'",
                                   topic=str(name), reason="contains -partition-")
        if not 0 < partitions <= MAX_PARTITIONS:  # Pulsar: 406 "Number of partitions should be more than 0"
            raise InvalidPartitionCount(f"Number of partitions should be between 1 and {MAX_PARTITIONS}, got"
                                        f" {partitions}", partitions=partitions, limit=MAX_PARTITIONS)
        check_partition_names(name, partitions)
        check_enabled(self._config, name)
        self.namespaces.check_exists(name.namespace_name)
        if self.partitions_of(name) or str(name) in self._topics or self._exists_on_disk(name):
            raise TopicAlreadyExists(f"topic {name} already exists")
        self._check_topic_room(name, partitions)
        self.partitioned.set(str(name), partitions)

    def create(self, name: TopicName) -> None:
        self.namespaces.check_exists(name.namespace_name)
        if self.partitions_of(name) or str(name) in self._topics or self._exists_on_disk(name):
            raise TopicAlreadyExists(f"topic {name} already exists")
        self.get(name, create=True)

    def _check_topic_room(self, name: TopicName, adding: int) -> None:
        """``NotAllowedError`` when ``adding`` topics (partitions) would take ``name``'s namespace past its
        ``maxTopicsPerNamespace`` (Pulsar: 412 over REST, NotAllowed to a client). Counting lists the
        namespace, so it is done only where a limit is set."""
        limit = int(self.policies.resolve(name, MAX_TOPICS_PER_NAMESPACE, self._config.maxTopicsPerNamespace))
        if limit and len(self.list(name.namespace_name)) + adding > limit:
            raise NotAllowedError(f"Exceed maximum number of topics in namespace {name.namespace_name}: it may"
                                  f" hold {limit} (maxTopicsPerNamespace), each partition counting as one",
                                  namespace=name.namespace_name, limit=limit)

    def list(self, namespace: str) -> list[str]:
        """Every topic partition and non-partitioned topic of ``tenant/namespace`` (as Pulsar lists them)."""
        tenant, ns = check_namespace_name(namespace)
        self.namespaces.check_exists(namespace)
        names: set[str] = set()
        for domain in (PERSISTENT, NON_PERSISTENT):
            folder = namespace_dir(self._root, domain, tenant, ns)
            if folder.is_dir():
                names.update(f"{domain}://{tenant}/{ns}/{local}" for local in topic_folders(folder))
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

    async def truncate(self, name: TopicName) -> int:
        """Pulsar's truncate of a persistent topic (each partition of a partitioned one): every subscription
        acknowledges everything and every segment but the active one is removed, whatever the retention;
        returns the segments removed."""
        if name.domain != PERSISTENT:
            raise NotAllowedError(f"{name}: only persistent topics are truncated")
        partitions = self.partitions_of(name)
        targets = [name.partition(i) for i in range(partitions)] if partitions else [name]
        removed = 0
        for target in targets:
            if not partitions and str(target) not in self._topics and not self._exists_on_disk(target):
                raise TopicNotFound(f"topic {name} does not exist")
            removed += await self.get(target, create=False).truncate()
        log.info("event=topic_truncate topic=%s segments_removed=%d", name, removed)
        return removed

    # ------------------------------------------------------------------ tenants and namespaces
    def create_namespace(self, namespace: str) -> None:
        self.namespaces.create_namespace(namespace)
        log.info("event=namespace_created namespace=%s", namespace)

    def namespace_topics(self, namespace: str) -> list[str]:
        """The namespace's topics as deletion sees them (partitioned topics by their base name)."""
        return namespace_deletion.namespace_topics(self, namespace)

    async def delete_namespace(self, namespace: str, *, force: bool) -> None:
        """Delete an empty namespace, or (``force``) every topic in it first, connected clients or not."""
        await namespace_deletion.delete_namespace(self, namespace, force=force)

    async def delete_tenant(self, tenant: str, *, force: bool) -> None:
        """Delete a tenant without namespaces, or (``force``) its namespaces and their topics first."""
        await namespace_deletion.delete_tenant(self, tenant, force=force)

    # ------------------------------------------------------------------ idle and inactive topics
    def start_unloading(self) -> None:
        """Unload idle topics every so often (``brokerTopicIdleUnloadSeconds``), check backlog quotas
        (``backlogQuotaCheckIntervalInSeconds``) and delete inactive topics
        (``brokerDeleteInactiveTopicsFrequencySeconds``, :mod:`.inactive_topics`); runs on the event loop."""
        self._unloader.start()
        self.quotas.start()
        self._inactive.start()

    def _inactive_policy(self, name: TopicName) -> dict:
        """The effective ``InactiveTopicPolicies`` of ``name``: its own, its namespace's, or the broker's."""
        found = self.policies.resolve(name, INACTIVE_TOPIC_POLICIES, None)
        if found is not None:
            return found
        config = self._config
        return {"inactiveTopicDeleteMode": config.brokerDeleteInactiveTopicsMode,
                "maxInactiveDurationSeconds": config.brokerDeleteInactiveTopicsMaxInactiveDurationSeconds,
                "deleteWhileInactive": config.brokerDeleteInactiveTopicsEnabled}

    def _has_stored_subscriptions(self, name: TopicName) -> bool:
        store = self.cursor_store(name)
        return store is not None and bool(store.load())

    async def delete_inactive(self) -> list[str]:
        """One round of inactive topic deletion now (the timer runs them anyway); the topics deleted."""
        return await self._inactive.sweep()

    def unload_idle(self, max_topics: int = 1000) -> int:
        """Unload persistent topics quiescent for ``brokerTopicIdleUnloadSeconds``; returns how many."""
        return self._unloader.unload_idle(max_topics)

    def unload(self, key: str) -> bool:
        """Unload the loaded topic ``key`` if it is quiescent; the next use loads it from disk again."""
        return self._unloader.unload(key)

    def stored_topics(self, domain: str) -> Iterator[TopicName]:
        """The topic partitions of ``domain`` stored in the data dir, namespace by namespace (lazily)."""
        yield from stored_topics(self._root, self.namespaces.all_namespaces(), domain)

    def cursor_store(self, name: TopicName) -> CursorStore | None:
        """The cursor files of stored topic ``name`` (None when it has none), for work on a topic that is
        not loaded."""
        folder = self._dir(name) / "cursors"
        from broker_core.storage.cursor_store import CursorStore

        return CursorStore(folder) if folder.is_dir() else None

    def loaded_topics(self) -> dict[str, Topic]:
        """The topics in memory now, by name (a copy)."""
        return dict(self._topics)

    async def close(self) -> None:
        self._unloader.stop()
        self._inactive.stop()
        self.quotas.stop()
        self.partitioned.close()
        self.policies.close()
        self.dynamic.close()
        self.resource_groups.close()
        for topic in list(self._topics.values()):
            try:
                await topic.close()
            except (OSError, PulsarLikeError) as exc:
                log.error("event=topic_close_failed topic=%s error=%r", topic.topic, exc)
        self._topics.clear()
