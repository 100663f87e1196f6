"""Operator calls of ``pulsarlike admin topics|namespaces`` that work on the registry as a whole: growing a
partitioned topic, listing partitioned topics, terminating and unloading topics, examining a message,
expiring messages, and the namespace-wide ``clear-backlog`` and ``unsubscribe``.

Growing (``update-partitioned-topic``) follows Pulsar: a partitioned topic only ever gains partitions, a
count that is not above the current one is refused (``NotAllowedError``). The new partitions are made at
once, each with every durable subscription the topic's existing partitions have, starting at its first
message: a subscription misses nothing sent to a new partition before its consumers find it, whatever
their initial position.

Clients learn a topic's partition count when they are created (``GetPartitionedTopicMetadata``) and
look again every ``partitions_update_interval_seconds`` (60 s, as Pulsar's clients;
:mod:`connector.client.partition_updates`); the Spark source lists partitions on every trigger.

Unloading (``topics unload``) closes the topic at once, as Pulsar's unload does: every producer's and
consumer's session ends with ``ServiceNotReady`` (retriable: the clients reconnect, which loads the topic
again), then the topic's cursors are saved and its files closed.
"""
from __future__ import annotations

import asyncio
import logging
from typing import Callable

from broker_core.errors import (NotAllowedError, ServiceNotReady, SubscriptionNotFound, TopicAlreadyExists,
                                TopicNotFound)
from broker_core.core.persistent import cursor_admin
from broker_core.core.persistent.cursor_admin import Peeked
from broker_core.core.namespaces import check_namespace_name
from broker_core.core.retention_rules import expiry_offset
from broker_core.core.registry import MAX_PARTITIONS, TopicRegistry
from broker_core.core.topic_protocol import StoredTopic, stored
from broker_core.types import PERSISTENT, TopicName, check_partition_names
from broker_core.protocol.ack_set import to_words

SETTLE_S = 10.0
"""Longest an operator call waits for sessions to leave a topic, or for its pending writes to be synced."""

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


def persistent_topic(registry: TopicRegistry, name: TopicName, verb: str) -> StoredTopic:
    """Topic partition (or non-partitioned topic) ``name`` for an operation on stored data."""
    partitions = registry.partitions_of(name)
    if partitions:
        raise NotAllowedError(f"{verb} on a partitioned topic is not allowed (as in Pulsar): use one of its"
                              f" {partitions} partitions, e.g. {name.partition(0)}", topic=str(name),
                              partitions=partitions)
    return stored(registry.get(name, create=False), verb)


async def settled(condition: Callable[[], bool], what: str) -> None:
    """Wait (on the event loop, where sessions end and syncs complete) until ``condition()``;
    ``ServiceNotReady`` after :data:`SETTLE_S`."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + SETTLE_S
    while not condition():
        if loop.time() > deadline:
            raise ServiceNotReady(f"{what} did not happen within {SETTLE_S:g}s; try again")
        await asyncio.sleep(0.005)


# ---------------------------------------------------------------------------------- terminate and unload
async def terminate(registry: TopicRegistry, name: TopicName) -> StoredTopic:
    """Terminate ``name`` and wait until what it accepted is synced; returns the topic."""
    topic = persistent_topic(registry, name, "terminate")
    end = topic.terminate()
    await settled(lambda: topic.confirmed_end_offset >= end or topic.closed,
                  f"syncing the last messages of {name}")
    return topic


async def unload(registry: TopicRegistry, name: TopicName) -> int:
    """Unload ``name`` (every loaded partition of a partitioned topic), closing its clients' sessions;
    returns how many topic partitions were unloaded (0: none was loaded)."""
    partitions = registry.partitions_of(name)
    targets = [name.partition(i) for i in range(partitions)] if partitions else [name]
    if not partitions and not registry.exists(name):
        raise TopicNotFound(f"topic {name} does not exist", topic=str(name))
    unloaded = 0
    for target in targets:
        found = registry.loaded(target)
        if found is None:
            continue
        if not found.persistent:
            raise NotAllowedError(f"{target} is non-persistent: it lives in memory only and goes once idle;"
                                  " there is nothing to unload", topic=str(target))
        topic = stored(found, "unload")
        ended = topic.disconnect_clients(ServiceNotReady(
            f"topic {target} was unloaded by an operator; reconnect to load it again", topic=str(target)))
        await settled(lambda: topic.quiescent or topic.closed, f"closing the {ended} sessions of {target}")
        if registry.unload(str(target)):
            unloaded += 1
        log.info("event=topic_unloaded_by_admin topic=%s sessions_closed=%d", target, ended)
    return unloaded


# ---------------------------------------------------------------------------------- messages
def examine(registry: TopicRegistry, name: TopicName, latest: bool, position: int) -> Peeked:
    """The entry holding the ``position``-th (1-based) stored message counted from the oldest (or the
    newest), its ack set leaving only that message (``topics examine-message``)."""
    topic = persistent_topic(registry, name, "examine-message")
    start, end = topic.start_offset, topic.confirmed_end_offset
    if position < 1 or position > end - start:
        raise NotAllowedError(f"{name} holds {end - start} messages: there is no message at position {position}"
                              f" from the {'newest' if latest else 'oldest'} (positions start at 1)",
                              topic=str(name), position=position, messages=end - start)
    offset = end - position if latest else start + position - 1
    entry = topic.entry_containing(offset)
    if entry is None:  # retention removed it meanwhile
        raise NotAllowedError(f"{name}: the message at offset {offset} is no longer stored", topic=str(name))
    if entry.num_messages <= 1:
        return Peeked(entry, None, 1)
    return Peeked(entry, to_words(1 << (offset - entry.offset), entry.num_messages), 1)


def expire_messages(registry: TopicRegistry, name: TopicName, subscription: str, all_subscriptions: bool,
                    expire_time_s: int | None, through_offset: int | None) -> tuple[int, int]:
    """Acknowledge the messages published more than ``expire_time_s`` ago, or every message through
    ``through_offset``, on one durable subscription or all of them (``topics expire-messages``); returns
    (messages expired, first unacknowledged offset of the subscription, or -1 for all)."""
    topic = persistent_topic(registry, name, "expire-messages")
    if all_subscriptions == bool(subscription):
        raise NotAllowedError("expire-messages takes a subscription or all subscriptions, not both")
    if (expire_time_s is None) == (through_offset is None):
        raise NotAllowedError("expire-messages takes an expiry time or a message id, not both")
    subs = list(topic.subscriptions.values()) if all_subscriptions else [topic.durable_subscription(subscription)]
    confirmed = topic.confirmed_end_offset
    if through_offset is None:  # published more than the time ago: before the first one published since
        first_unexpired = topic.offset_for_timestamp(registry.clock.now_ms() - int(expire_time_s or 0) * 1000)
    else:
        first_unexpired = min(through_offset + 1, confirmed)
    total = 0
    for sub in subs:
        through = expiry_offset(first_unexpired, confirmed, sub.cursor.mark_delete_offset)
        if through is None:
            continue
        n = sub.expire_through(through)
        topic.msg_expired[sub.name] = topic.msg_expired.get(sub.name, 0) + n
        total += n
        log.info("event=messages_expired_by_admin topic=%s subscription=%s through=%d messages=%d", name,
                 sub.name, through, n)
    return total, (subs[0].first_unacked_offset() if not all_subscriptions else -1)


# ---------------------------------------------------------------------------------- namespaces
def _namespace_topics(registry: TopicRegistry, namespace: str) -> list[StoredTopic]:
    check_namespace_name(namespace)
    return [stored(t, "clear-backlog") for t in (registry.get(TopicName.parse(n), create=False)
                                                 for n in registry.list(namespace)
                                                 if TopicName.parse(n).domain == PERSISTENT) if t.persistent]


def clear_namespace_backlog(registry: TopicRegistry, namespace: str, subscription: str) -> int:
    """Acknowledge everything on every durable subscription (or the one named) of every persistent topic of
    the namespace (``namespaces clear-backlog``); returns how many messages."""
    total = 0
    for topic in _namespace_topics(registry, namespace):
        for name in ([subscription] if subscription else list(topic.subscriptions)):
            if name in topic.subscriptions:
                total += cursor_admin.clear_backlog(topic, name)[0]
    log.info("event=namespace_backlog_cleared namespace=%s subscription=%s messages=%d", namespace,
             subscription or "*", total)
    return total


def unsubscribe_namespace(registry: TopicRegistry, namespace: str, subscription: str) -> list[str]:
    """Delete durable subscription ``subscription`` from every topic of the namespace that has it
    (``namespaces unsubscribe``); refused, deleting nothing, while any has a connected consumer. Returns the
    topic partitions it was deleted from."""
    if not subscription:
        raise NotAllowedError("namespaces unsubscribe needs a subscription name (-s)")
    having = [t for t in _namespace_topics(registry, namespace) if subscription in t.subscriptions]
    busy = [t.topic for t in having if t.subscriptions[subscription].consumers]
    if busy:
        raise NotAllowedError(f"subscription {subscription!r} has connected consumers on {', '.join(busy[:5])}"
                              f"{', ...' if len(busy) > 5 else ''}: close them first", subscription=subscription)
    if not having:
        raise SubscriptionNotFound(f"no topic of {namespace} has subscription {subscription!r}",
                                   subscription=subscription)
    for topic in having:
        topic.unsubscribe(subscription)
    log.info("event=namespace_unsubscribed namespace=%s subscription=%s topics=%d", namespace, subscription,
             len(having))
    return [t.topic for t in having]
