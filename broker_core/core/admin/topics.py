"""A broker's topics as the admin API serves them, once for REST (``/admin/v2/{domain}/...``) and gRPC
(``CreateTopic``, ``TopicStats``, ``TerminateTopic``, ...): listing, creating, growing, deleting,
terminating, unloading, truncating, compacting, their stats and their last message.

Growing (``update-partitioned-topic``) follows Pulsar: a partitioned topic only ever gains partitions, a count
that is not above the current one is refused (``NotAllowedError``). The new partitions are made at once, each
with every durable subscription the topic's existing partitions have, starting at its first message: a
subscription misses nothing sent to a new partition before its consumers find it, whatever their initial
position. Clients learn a topic's partition count when they are created (``GetPartitionedTopicMetadata``) and
look again every ``partitions_update_interval_seconds`` (60 s, as Pulsar's clients).

Creating a partitioned topic with 0 partitions (or more than :data:`~broker_core.core.registry.MAX_PARTITIONS`)
is ``InvalidPartitionCount``: 406, as Pulsar answers.

Unloading (``topics unload``) closes the topic at once, as Pulsar's unload does: every producer's and
consumer's session ends with ``ServiceNotReady`` (retriable: the clients reconnect, which loads the topic
again), then the topic's cursors are saved and its files closed.

Compaction of a topic, or of each partition of a partitioned one, as Pulsar's admin does; its status is
Pulsar's ``LongRunningProcessStatus`` (:func:`long_running_status`). The runs themselves:
:mod:`broker_core.core.persistent.compaction_runs`.
"""
from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any, Callable

from broker_core.core import topic_verify
from broker_core.core.admin import targets, topic_stats
from broker_core.core.admin.last_message import LastMessage, last_message
from broker_core.core.compacted_view import CompactedView
from broker_core.core.namespaces import check_namespace_name
from broker_core.core.persistent.compaction_runs import ERROR, NOT_RUN, RUNNING, SUCCESS
from broker_core.core.persistent.cursor_admin import Peeked
from broker_core.core.registry import MAX_PARTITIONS
from broker_core.core.topic_protocol import StoredTopic, stored
from broker_core.errors import (CompactionAlreadyRunning, NotAllowedError, ServiceNotReady, TopicAlreadyExists,
                                TopicNotFound)
from broker_core.protocol.ack_set import to_words
from broker_core.types import PERSISTENT, TopicName, check_partition_names

if TYPE_CHECKING:
    from broker_core.core.registry import TopicRegistry

SETTLE_S = 10.0
"""Longest an operator call waits for sessions to leave a topic, or for its pending writes to be synced."""

log = logging.getLogger(__name__)


def long_running_status(state: str, error: str) -> dict[str, str]:
    """Pulsar's ``LongRunningProcessStatus``: ``{"status": NOT_RUN|RUNNING|SUCCESS|ERROR, "lastError": ...}``."""
    return {"status": state, "lastError": error}


async def settled(condition: Callable[[], bool], what: str) -> None:
    """Wait (on the event loop, where sessions end and syncs complete) until ``condition()``;
    ``ServiceNotReady`` after :data:`SETTLE_S`."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + SETTLE_S
    while not condition():
        if loop.time() > deadline:
            raise ServiceNotReady(f"{what} did not happen within {SETTLE_S:g}s; try again")
        await asyncio.sleep(0.005)


class TopicAdmin:
    """The topics of ``registry``."""

    def __init__(self, registry: "TopicRegistry") -> None:
        self._registry = registry

    # ------------------------------------------------------------------ names
    def list(self, namespace: str, domain: str | None = None) -> list[str]:
        """Every topic partition and non-partitioned topic of ``tenant/namespace`` (of ``domain`` only when
        given), as Pulsar lists them."""
        found = self._registry.list(namespace)
        return found if domain is None else [n for n in found if n.startswith(domain + "://")]

    def list_partitioned(self, namespace: str, domain: str | None = None) -> list[str]:
        """The partitioned topics of ``tenant/namespace`` by their base names (``list-partitioned-topics``)."""
        check_namespace_name(namespace)
        self._registry.namespaces.check_exists(namespace)
        found = sorted(t for t in self._registry.partitioned.topics() if TopicName.parse(t).namespace_name == namespace)
        return found if domain is None else [n for n in found if n.startswith(domain + "://")]

    def partitions(self, name: TopicName) -> int:
        """The partition count clients look up (0: not partitioned; may auto-create a partitioned topic)."""
        return self._registry.lookup_partitions(name)

    # ------------------------------------------------------------------ life
    def create(self, name: TopicName) -> None:
        self._registry.create(name)

    def create_partitioned(self, name: TopicName, partitions: int) -> None:
        self._registry.create_partitioned(name, partitions)

    def update_partitioned(self, name: TopicName, partitions: int) -> None:
        """Grow partitioned topic ``name`` to ``partitions`` partitions (see the module's docstring)."""
        registry = self._registry
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

    def create_missed_partitions(self, name: TopicName) -> int:
        """Make the partitions of partitioned topic ``name`` that are not stored yet (``topics
        create-missed-partitions``: what clients would make at first use, when auto-creation is off); how many
        were made. Non-persistent partitions hold nothing until used: none is made. A topic that is not
        partitioned has none to make (as Pulsar answers, nothing is done)."""
        registry = self._registry
        registry.namespaces.check_exists(name.namespace_name)
        made = 0
        if name.domain == PERSISTENT and registry.partitions_of(name):
            for partition in targets.partitions(registry, name):
                if not registry.exists(partition):
                    registry.get(partition, create=True)
                    made += 1
        log.info("event=missed_partitions_created topic=%s partitions=%d", name, made)
        return made

    async def delete(self, name: TopicName, *, force: bool = False) -> None:
        """Delete a topic (every partition of a partitioned one); ``NotAllowedError`` while clients are
        connected, unless ``force``."""
        await self._registry.delete(name, force=force)

    async def delete_partitioned(self, name: TopicName, *, force: bool = False) -> None:
        """:meth:`delete` of a partitioned topic (``TopicNotFound`` for a topic that is not one)."""
        targets.partitioned(self._registry, name)
        await self._registry.delete(name, force=force)

    async def terminate(self, name: TopicName) -> LastMessage:
        """Terminate ``name`` (one partition) and wait until what it accepted is synced; its last message."""
        topic = targets.stored_topic(self._registry, name, "terminate")
        end = topic.terminate()
        await settled(lambda: topic.confirmed_end_offset >= end or topic.closed,
                      f"syncing the last messages of {name}")
        return last_message(topic, topic.partition_index)

    async def terminate_partitions(self, name: TopicName) -> dict[int, LastMessage]:
        """Every partition of partitioned topic ``name`` terminated: each one's last message by index."""
        n = targets.partitioned(self._registry, name)
        return {i: await self.terminate(name.partition(i)) for i in range(n)}

    async def unload(self, name: TopicName) -> int:
        """Unload ``name`` (every loaded partition of a partitioned topic), closing its clients' sessions;
        how many topic partitions were unloaded (0: none was loaded)."""
        registry = self._registry
        partitioned = registry.partitions_of(name)
        if not partitioned and not registry.exists(name):
            raise TopicNotFound(f"topic {name} does not exist", topic=str(name))
        unloaded = 0
        for target in targets.partitions(registry, name):
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

    async def truncate(self, name: TopicName) -> int:
        """Every subscription acknowledges everything, every segment but the active one goes (each
        partition); how many segments did."""
        return await self._registry.truncate(name)

    # ------------------------------------------------------------------ compaction
    def _compacted(self, name: TopicName) -> list[StoredTopic]:
        topics = targets.topics(self._registry, name)
        for topic in topics:
            if not topic.persistent:
                raise NotAllowedError(f"{topic.topic} is non-persistent: only persistent topics are compacted (as"
                                      " in Pulsar)", topic=topic.topic)
        return [stored(topic, "compact") for topic in topics]

    def compact(self, name: TopicName) -> int:
        """Start a compaction of ``name`` (each partition not compacting already); how many started.
        ``CompactionAlreadyRunning`` (409) when every one of them was compacting already."""
        started = 0
        running: CompactionAlreadyRunning | None = None
        for topic in self._compacted(name):
            try:
                topic.compaction.trigger()
                started += 1
            except CompactionAlreadyRunning as exc:
                running = exc
        if not started and running is not None:
            raise running
        return started

    def compaction_status(self, name: TopicName) -> tuple[str, str]:
        """(status, lastError) of the last compaction. Of a partitioned topic: ERROR when a partition's
        failed, else RUNNING while one runs, else SUCCESS when every one did."""
        states = [(t.compaction.status, t.compaction.last_error) for t in self._compacted(name)]
        for wanted in (ERROR, RUNNING):
            for state, error in states:
                if state == wanted:
                    return state, error
        if states and all(state == SUCCESS for state, _ in states):
            return SUCCESS, ""
        return NOT_RUN, ""

    # ------------------------------------------------------------------ what it holds
    def stats(self, name: TopicName,
              options: topic_stats.StatsOptions = topic_stats.StatsOptions()) -> dict[str, Any]:
        return topic_stats.stats(self._registry, name, options)

    def partitioned_stats(self, name: TopicName, per_partition: bool = True,
                          options: topic_stats.StatsOptions = topic_stats.StatsOptions()) -> dict[str, Any]:
        return topic_stats.partitioned_stats(self._registry, name, per_partition, options)

    def internal_stats(self, name: TopicName) -> dict[str, Any]:
        return topic_stats.topic_internal_stats(self._registry, name)

    def partitioned_internal_stats(self, name: TopicName) -> dict[str, Any]:
        return topic_stats.partitioned_internal_stats(self._registry, name)

    def last_message(self, name: TopicName, *, read_compacted: bool = False) -> LastMessage:
        """The last message of a topic partition (of its compacted view with ``read_compacted``: a compacted
        reader's, as Pulsar answers a consumer reading compacted)."""
        topic = self._registry.get(name, create=False)
        view = CompactedView(topic) if read_compacted and topic.persistent else topic
        return last_message(view, topic.partition_index)

    def offset_for_timestamp(self, name: TopicName, publish_time_ms: int) -> int:
        return self._registry.get(name, create=False).offset_for_timestamp(publish_time_ms)

    def examine(self, name: TopicName, latest: bool, position: int) -> Peeked:
        """The entry holding the ``position``-th (1-based) stored message counted from the oldest (or the
        newest), its ack set leaving only that message (``topics examine-message``)."""
        topic = targets.stored_topic(self._registry, name, "examine-message")
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

    async def verify(self, name: TopicName) -> dict[str, Any]:
        """``topics verify`` (a pulsarlike extension): :mod:`broker_core.core.topic_verify`."""
        return await topic_verify.verify_topic(self._registry, name)

    async def verify_all(self) -> dict[str, Any]:
        return await topic_verify.verify_all(self._registry)
