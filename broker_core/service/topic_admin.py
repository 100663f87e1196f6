"""Topic-level operator calls of ``pulsarlike admin topics`` that work on the registry as a whole:
growing a partitioned topic and listing partitioned topics.

Growing (``update-partitioned-topic``) follows Pulsar: a partitioned topic only ever gains partitions, a
count that is not above the current one is refused (``NotAllowedError``). The new partitions are made at
once, each with every durable subscription the topic's existing partitions have, starting at its first
message: a subscription misses nothing sent to a new partition before its consumers find it, whatever
their initial position.

Clients learn a topic's partition count when they are created (``GetPartitionedTopicMetadata``): a
producer or consumer made before the update keeps to the old partitions until it is created again (the
client does not re-check partition counts yet; see docs/admin.md). The Spark source lists partitions on
every trigger.
"""
from __future__ import annotations

import logging

from broker_core.errors import NotAllowedError, TopicAlreadyExists, TopicNotFound
from broker_core.service.namespaces import check_namespace_name
from broker_core.service.topics import MAX_PARTITIONS, TopicRegistry
from broker_core.types import PERSISTENT, TopicName, check_partition_names

log = logging.getLogger(__name__)


def update_partitioned(registry: TopicRegistry, name: TopicName, partitions: int) -> None:
    """Grow partitioned topic ``name`` to ``partitions`` partitions."""
    current = registry.partitions_of(name)
    if not current:
        if registry.exists(name):
            raise NotAllowedError(f"{name} is not a partitioned topic, so it has no partitions to add",
                                  topic=str(name))
        raise TopicNotFound(f"partitioned topic {name} does not exist", topic=str(name))
    if partitions <= current:
        raise NotAllowedError(
            f"{name} has {current} partitions; partitions can only be added (as in Pulsar, a partition is never"
            f" removed): give a count above {current}", topic=str(name), partitions=partitions, current=current)
    if partitions > MAX_PARTITIONS:
        raise NotAllowedError(f"partitions must be between 1 and {MAX_PARTITIONS}, got {partitions}",
                              topic=str(name), partitions=partitions)
    check_partition_names(name, partitions)
    added = [name.partition(i) for i in range(current, partitions)]
    for partition in added:  # a topic made under that name before: its data must not become a partition's
        if registry.exists(partition):
            raise TopicAlreadyExists(f"topic {partition} already exists (it was made before {name} had that"
                                     " many partitions): delete it first", topic=str(partition))
    persistent = name.domain == PERSISTENT
    subscriptions: set[str] = set()
    if persistent:
        for partition in map(name.partition, range(current)):
            if registry.exists(partition):
                subscriptions.update(registry.get(partition, create=False).subscriptions)
    registry.partitioned.set(str(name), partitions)
    if persistent:  # non-persistent partitions hold nothing until used: they are made on first use
        for partition in added:
            topic = registry.get(partition, create=True)
            for subscription in sorted(subscriptions):
                topic.create_subscription(subscription, 0)
    log.info("event=partitioned_topic_updated topic=%s partitions=%d previous=%d subscriptions=%d", name,
             partitions, current, len(subscriptions))


def list_partitioned(registry: TopicRegistry, namespace: str) -> list[str]:
    """The partitioned topics of ``tenant/namespace`` by their base names (``topics
    list-partitioned-topics``)."""
    check_namespace_name(namespace)
    registry.namespaces.check_exists(namespace)
    return sorted(t for t in registry.partitioned.topics() if TopicName.parse(t).namespace_name == namespace)
