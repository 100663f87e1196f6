"""The registry's stats views of a topic: ``stats``, ``stats-internal`` and its subscriptions, for a topic
partition or a whole partitioned topic (each partition's, merged as Pulsar's partitioned-stats are)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from broker_core.core.persistent import cursor_admin
from broker_core.core.persistent.stats import partitioned_stats
from broker_core.errors import NotAllowedError
from broker_core.types import NON_PERSISTENT, TopicName

if TYPE_CHECKING:
    from broker_core.core.registry import TopicRegistry


def stats(registry: TopicRegistry, name: TopicName) -> dict:
    partitions = registry.partitions_of(name)
    if not partitions:
        return registry.get(name, create=False).stats()
    per = {str(name.partition(i)): registry.get(name.partition(i), create=True).stats() for i in range(partitions)}
    return partitioned_stats(per, name.domain == NON_PERSISTENT)


def internal_stats(registry: TopicRegistry, name: TopicName) -> dict:
    """``stats-internal``: the managed-ledger view (segments, cursors) of a topic partition; of a
    partitioned topic, each partition's under ``partitions`` (Pulsar's partitioned-stats-internal)."""
    partitions = registry.partitions_of(name)
    if partitions:
        return {"metadata": {"partitions": partitions},
                "partitions": {str(p): internal_stats(registry, p) for p in map(name.partition, range(partitions))
                               if registry.exists(p)}}
    topic = registry.get(name, create=False)
    if not topic.persistent:
        raise NotAllowedError(f"{name}: a non-persistent topic stores nothing, so it has no internal"
                              " stats; use `topics stats`")
    return cursor_admin.internal_stats(topic)


def subscriptions(registry: TopicRegistry, name: TopicName) -> list[str]:
    """Subscription names of a topic (of every partition of a partitioned topic), as pulsar-admin
    ``topics subscriptions`` lists them: durable ones and readers' alike."""
    partitions = registry.partitions_of(name)
    targets = [name.partition(i) for i in range(partitions)] if partitions else [name]
    names: set[str] = set()
    for target in targets:
        if not partitions or registry.exists(target):
            topic = registry.get(target, create=False)
            names.update(topic.subscriptions)
            names.update(topic.readers)
    return sorted(names)
