"""What an admin call acts on: a topic partition (or non-partitioned topic), or each partition of a
partitioned topic, as Pulsar's admin resources fan out. Every call of :mod:`broker_core.core.admin` finds its
topics here, so the REST routes and the gRPC calls refuse the same names the same way:

- :func:`partitions`: ``t`` itself, or ``t-partition-0 .. t-partition-(n-1)`` for a partitioned ``t``;
- :func:`one_partition`: a call that names one message or counts messages (skip, peek, reset to a message id,
  examine, terminate) refuses a partitioned topic (``NotAllowedError``: use a partition), as Pulsar;
- :func:`stored_topics` / :func:`stored_topic`: those topics, loaded, as
  :class:`~broker_core.core.topic_protocol.StoredTopic` (a non-persistent one refused: it stores nothing).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from broker_core.core.topic_protocol import StoredTopic, Topic, stored
from broker_core.errors import NotAllowedError, TopicNotFound
from broker_core.types import TopicName

if TYPE_CHECKING:
    from broker_core.core.registry import TopicRegistry


def partitions(registry: "TopicRegistry", name: TopicName) -> list[TopicName]:
    """``name``'s partitions, or ``name`` itself when it is not partitioned."""
    n = registry.partitions_of(name)
    return [name.partition(i) for i in range(n)] if n else [name]


def topics(registry: "TopicRegistry", name: TopicName) -> list[Topic]:
    """The loaded topic (or each partition of a partitioned one); ``TopicNotFound`` when it does not exist."""
    return [registry.get(target, create=False) for target in partitions(registry, name)]


def stored_topics(registry: "TopicRegistry", name: TopicName, verb: str) -> list[StoredTopic]:
    """:func:`topics` of a persistent topic (``NotAllowedError`` naming ``verb`` for a non-persistent one)."""
    return [stored(topic, verb) for topic in topics(registry, name)]


def one_partition(registry: "TopicRegistry", name: TopicName, verb: str) -> None:
    """Refuse a partitioned ``name`` for ``verb``, a call on one partition's messages (as Pulsar)."""
    n = registry.partitions_of(name)
    if n:
        raise NotAllowedError(f"{verb} on a partitioned topic is not allowed (as in Pulsar): use one of its"
                              f" {n} partitions, e.g. {name.partition(0)}", topic=str(name), partitions=n)


def stored_topic(registry: "TopicRegistry", name: TopicName, verb: str) -> StoredTopic:
    """Topic partition (or non-partitioned topic) ``name`` for ``verb``, an operation on stored data."""
    one_partition(registry, name, verb)
    return stored(registry.get(name, create=False), verb)


def partitioned(registry: "TopicRegistry", name: TopicName) -> int:
    """The partition count of partitioned topic ``name``; ``TopicNotFound`` when it is not one (its namespace
    checked first: ``NamespaceNotFound``)."""
    registry.namespaces.check_exists(name.namespace_name)
    n = registry.partitions_of(name)
    if not n:
        raise TopicNotFound(f"partitioned topic {name} does not exist", topic=str(name))
    return n
