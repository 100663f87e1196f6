"""Compaction as the admin asks for it (``PUT|GET .../compaction`` over REST, the ``Compact`` and
``CompactionStatus`` RPCs, ``pulsarlike admin topics compact|compaction-status``): of a topic, or of each
partition of a partitioned one, as Pulsar's admin does. The runs themselves:
:mod:`broker_core.core.persistent.compaction_runs`."""
from __future__ import annotations

from broker_core.core.persistent.compaction_runs import ERROR, NOT_RUN, RUNNING, SUCCESS
from broker_core.core.registry import TopicRegistry
from broker_core.core.topic_protocol import StoredTopic, stored
from broker_core.errors import CompactionAlreadyRunning, NotAllowedError
from broker_core.types import TopicName


def _partitions(registry: TopicRegistry, name: TopicName) -> list[StoredTopic]:
    partitions = registry.partitions_of(name)
    targets = [name.partition(i) for i in range(partitions)] if partitions else [name]
    topics = [registry.get(target, create=False) for target in targets]
    for topic in topics:
        if not topic.persistent:
            raise NotAllowedError(f"{topic.topic} is non-persistent: only persistent topics are compacted (as in"
                                  " Pulsar)", topic=topic.topic)
    return [stored(topic, "compact") for topic in topics]


def trigger(registry: TopicRegistry, name: TopicName) -> int:
    """Start a compaction of ``name`` (each partition not compacting already); returns how many started.
    Raises :class:`CompactionAlreadyRunning` when every one of them was compacting already."""
    started = 0
    running: CompactionAlreadyRunning | None = None
    for topic in _partitions(registry, name):
        try:
            topic.compaction.trigger()
            started += 1
        except CompactionAlreadyRunning as exc:
            running = exc
    if not started and running is not None:
        raise running
    return started


def status(registry: TopicRegistry, name: TopicName) -> tuple[str, str]:
    """Pulsar's ``LongRunningProcessStatus`` of the last compaction: (status, lastError). Of a partitioned
    topic: ERROR when a partition's failed, else RUNNING while one runs, else SUCCESS when every one did."""
    states = [(t.compaction.status, t.compaction.last_error) for t in _partitions(registry, name)]
    for wanted in (ERROR, RUNNING):
        for state, error in states:
            if state == wanted:
                return state, error
    if states and all(state == SUCCESS for state, _ in states):
        return SUCCESS, ""
    return NOT_RUN, ""
