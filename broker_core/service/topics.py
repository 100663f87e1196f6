"""The broker's topics: lookup, auto-creation, partitioned metadata, listing, deletion and stats.

Disk layout under ``data_dir``::

    metadata/partitioned-topics.json          partitioned topics and their partition counts
    topics/<domain>/<tenant>/<namespace>/<topic>/   one folder per topic partition: segments + cursors/

Topic folder names are the local name percent-encoded, so any valid name maps to one folder.
"""
from __future__ import annotations

import logging
from concurrent.futures import Executor
from pathlib import Path
from urllib.parse import quote, unquote

from broker_core.clock import Clock
from broker_core.config import BrokerConfig
from broker_core.errors import (InvalidTopicName, NotAllowedError, PulsarLikeError, TopicAlreadyExists,
                                TopicNotFound)
from broker_core.service.metadata import PartitionedTopicsStore
from broker_core.service.non_persistent import NonPersistentTopic, check_enabled
from broker_core.service.policies import TOPIC, PoliciesStore
from broker_core.service.retention import RetentionPolicy
from broker_core.service.topic import PersistentTopic
from broker_core.types import NON_PERSISTENT, PERSISTENT, TopicName

log = logging.getLogger(__name__)

MAX_PARTITIONS = 4096


class TopicRegistry:
    def __init__(self, data_dir: Path, config: BrokerConfig, executor: Executor, clock: Clock) -> None:
        self._root = data_dir / "topics"
        self._root.mkdir(parents=True, exist_ok=True)
        self._config = config
        self.config = config
        self._executor = executor
        self._clock = clock
        self.partitioned = PartitionedTopicsStore(data_dir / "metadata")
        self.policies = PoliciesStore(data_dir / "metadata")
        self._topics: dict[str, PersistentTopic | NonPersistentTopic] = {}

    # ------------------------------------------------------------------ lookup
    def _dir(self, name: TopicName) -> Path:
        return self._root / name.domain / name.tenant / name.namespace / quote(name.local_name, safe="")

    def _exists_on_disk(self, name: TopicName) -> bool:
        return self._dir(name).is_dir()

    def partitions_of(self, name: TopicName) -> int:
        return self.partitioned.get(str(name))

    def lookup_partitions(self, name: TopicName) -> int:
        """Partition count for clients (0: not partitioned). With ``allowAutoTopicCreationType=partitioned``
        an unknown topic is created here with ``defaultNumPartitions`` partitions, as Pulsar's lookup does."""
        check_enabled(self._config, name)
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
            return topic
        check_enabled(self._config, name)
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
                                    deduplication=self.deduplication_enabled(name))
            self._apply_retention(topic)
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

    def _apply_retention(self, topic: PersistentTopic) -> None:
        topic.set_retention_policies(self.retention_policy(topic.name), self.message_ttl_seconds(topic.name))

    def set_policy(self, scope: str, name: str, key: str, value: object) -> None:
        """Set (``value=None``: remove) a namespace or topic policy and apply it to loaded topics."""
        if scope == TOPIC:
            topic = TopicName.parse(name)
            if not (self.partitions_of(topic) or str(topic) in self._topics or self._exists_on_disk(topic)):
                raise TopicNotFound(f"topic {topic} does not exist")
        self.policies.set(scope, name, key, value)
        for topic in self._topics.values():
            topic.set_deduplication(self.deduplication_enabled(topic.name))
            if isinstance(topic, PersistentTopic):
                self._apply_retention(topic)

    def get_policies(self, scope: str, name: str) -> dict:
        return self.policies.get(scope, name)

    # ------------------------------------------------------------------ admin
    def create_partitioned(self, name: TopicName, partitions: int) -> None:
        if name.partition_index >= 0:
            raise InvalidTopicName(f"{name}: a partitioned topic name cannot contain '-partition-'",
                                   topic=str(name), reason="contains -partition-")
        if not 0 < partitions <= MAX_PARTITIONS:
            raise NotAllowedError(f"partitions must be between 1 and {MAX_PARTITIONS}, got {partitions}")
        check_enabled(self._config, name)
        if self.partitions_of(name) or str(name) in self._topics or self._exists_on_disk(name):
            raise TopicAlreadyExists(f"topic {name} already exists")
        self.partitioned.set(str(name), partitions)

    def create(self, name: TopicName) -> None:
        if self.partitions_of(name) or str(name) in self._topics or self._exists_on_disk(name):
            raise TopicAlreadyExists(f"topic {name} already exists")
        self.get(name, create=True)

    def list(self, namespace: str) -> list[str]:
        """Every topic partition and non-partitioned topic of ``tenant/namespace`` (as Pulsar lists them)."""
        tenant, sep, ns = namespace.partition("/")
        if not sep or not tenant or not ns or "/" in ns:
            raise NotAllowedError(f"namespace must be 'tenant/namespace', got {namespace!r}")
        names: set[str] = set()
        for domain in (PERSISTENT, NON_PERSISTENT):
            folder = self._root / domain / tenant / ns
            if folder.is_dir():
                names.update(f"{domain}://{tenant}/{ns}/{unquote(p.name)}" for p in folder.iterdir() if p.is_dir())
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
        topics = [self.get(t, create=True) if self._exists_on_disk(t) or str(t) in self._topics else None
                  for t in targets]
        if not force:
            for t in topics:
                if t is not None and t.has_clients:
                    raise NotAllowedError(f"topic {t.topic} has connected producers or consumers;"
                                          " close them or delete with force")
        for t in topics:
            if t is not None:
                self._topics.pop(t.topic, None)
                await t.delete()
        if partitions:
            self.partitioned.remove(str(name))
        self.policies.forget_topic(str(name))

    def stats(self, name: TopicName) -> dict:
        partitions = self.partitions_of(name)
        if not partitions:
            return self.get(name, create=False).stats()
        per = {str(name.partition(i)): self.get(name.partition(i), create=True).stats() for i in range(partitions)}
        total: dict = {"metadata": {"partitions": partitions}, "partitions": per, "publishers": [],
                       "subscriptions": {}}
        for key in ("msgInCounter", "bytesInCounter", "msgOutCounter", "bytesOutCounter", "storageSize",
                    "backlogSize"):
            total[key] = sum(p.get(key) or 0 for p in per.values())
        for p in per.values():
            total["publishers"].extend(p["publishers"])
            for sub_name, sub in p["subscriptions"].items():
                agg = total["subscriptions"].setdefault(sub_name, {"msgBacklog": 0, "unackedMessages": 0,
                                                                   "msgOutCounter": 0, "type": sub.get("type"),
                                                                   "consumers": [], "totalMsgExpired": 0})
                agg["msgBacklog"] += sub.get("msgBacklog", 0)
                agg["totalMsgExpired"] += sub.get("totalMsgExpired", 0)
                agg["unackedMessages"] += sub.get("unackedMessages", 0)
                agg["msgOutCounter"] += sub.get("msgOutCounter", 0)
                agg["consumers"].extend(sub.get("consumers", []))
                if name.domain == NON_PERSISTENT:
                    agg["msgDropCount"] = agg.get("msgDropCount", 0) + sub.get("msgDropCount", 0)
        if name.domain == NON_PERSISTENT:
            total["msgDropCount"] = sum(p.get("msgDropCount", 0) for p in per.values())
        return total

    async def close(self) -> None:
        for topic in list(self._topics.values()):
            try:
                await topic.close()
            except (OSError, PulsarLikeError) as exc:
                log.error("event=topic_close_failed topic=%s error=%r", topic.topic, exc)
        self._topics.clear()
