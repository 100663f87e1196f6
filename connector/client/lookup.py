"""The unary calls the client makes for its producers and consumers: partitions of a topic, topics of a
namespace, a partition's last message, and the topics and subscriptions dead letters need. Each one is
idempotent, so each is retried while the broker is unreachable or restarting, within
``operation_timeout_seconds`` (the :class:`~connector.client.transport.Transport`'s calls with ``retry``) -- or
within what is left of a call's :class:`~connector.client.opening.Deadline` when one is given.

A partition count is checked before anything is made per partition: a broker answering more than
``max_partitions`` (:data:`DEFAULT_MAX_PARTITIONS`, the client's ``max_partitions_per_topic``) is refused with
``NotSupported`` naming the topic, the count and the limit -- the client-side counterpart of Pulsar's
``maxNumPartitionsPerPartitionedTopic``. Without it, a count of 2**31 - 1 had the client build that many
partition names (and producers or consumers) before anything failed.
"""
from __future__ import annotations

from broker_core import errors
from broker_core.types import TopicName

from connector.client.transport.events import LastMessage, TopicSchema
from connector.client.opening import Deadline
from connector.client.transport import Transport

DEFAULT_MAX_PARTITIONS = 10_000
"""The most partitions the client opens for one topic. Pulsar clusters rarely give a topic more than a few
thousand (each partition is a topic of its own on the brokers, with its ledgers and cursors); a producer or
consumer holds one stream, one receive queue or batch container per partition. Raise it with
``Client(max_partitions_per_topic=...)`` for a topic that has more."""


def check_partition_count(topic: str, count: int, limit: int) -> int:
    """``count`` when the client opens that many partitions of ``topic``, else ``NotSupported`` naming them."""
    if count > limit:
        raise errors.NotSupported(
            f"{topic} has {count} partitions by the broker's answer, above the {limit} this client opens for one "
            "topic: pass Client(max_partitions_per_topic=...) if the topic really has that many",
            topic=topic, partitions=count, limit=limit)
    return count


class Lookup:
    def __init__(self, connection: Transport, max_partitions: int = DEFAULT_MAX_PARTITIONS) -> None:
        self._connection = connection
        self.max_partitions = max_partitions

    def partitions(self, topic: str, deadline: Deadline | None = None) -> int:
        """The partition count of ``topic`` (0: not partitioned); ``NotSupported`` above ``max_partitions``."""
        timeout_s = deadline.remaining(f"the partition count of {topic}") if deadline is not None else None
        count = self._connection.partitions(topic, timeout_s=timeout_s, retry=True)
        return check_partition_count(topic, count, self.max_partitions)

    def expand(self, topics: list[str], deadline: Deadline | None = None) -> list[tuple[str, int]]:
        """``(partition topic, partition index)`` of each topic (itself and -1 when not partitioned)."""
        out: list[tuple[str, int]] = []
        for name in topics:
            num = self.partitions(name, deadline)
            parsed = TopicName.parse(name)
            if num > 0:
                out.extend((str(parsed.partition(i)), i) for i in range(num))
            else:
                out.append((name, parsed.partition_index))
        return out

    def list_topics(self, namespace: str, deadline: Deadline | None = None) -> list[str]:
        timeout_s = deadline.remaining(f"the topics of {namespace}") if deadline is not None else None
        return self._connection.list_topics(namespace, timeout_s=timeout_s, retry=True)

    def last_message(self, topic: str, *, read_compacted: bool = False,
                     deadline: Deadline | None = None) -> LastMessage:
        """The last stored message and the first stored offset of a topic partition (``read_compacted``: of
        its compacted view, as a compacted reader receives them)."""
        timeout_s = deadline.remaining(f"the last message of {topic}") if deadline is not None else None
        return self._connection.last_message(topic, read_compacted, timeout_s=timeout_s, retry=True)

    def schema(self, topic: str, version: int = -1, retry: bool = True) -> TopicSchema | None:
        """The topic's schema in the broker's registry (the latest, or ``version``): ``type`` (Pulsar's
        ``Schema.Type`` name), ``data`` (the definition), ``version``, ``name``; None when it has none."""
        try:
            return self._connection.schema(topic, version, retry=retry)
        except errors.TopicNotFound:
            return None

    def ensure_subscription(self, topic: str, subscription: str) -> None:
        """Create the durable subscription ``subscription`` at the end of ``topic`` (and the topic) unless it
        exists: with the admin calls, not a consumer that would attach and take permits."""
        if not self.partitions(topic):
            try:
                self._connection.create_topic(topic, retry=True)
            except errors.TopicAlreadyExists:
                pass
        for partition_topic, _ in self.expand([topic]):
            try:
                self._connection.create_subscription(partition_topic, subscription, retry=True)
            except errors.NotAllowedError:  # it exists
                pass

    @property
    def operation_timeout_s(self) -> float:
        return self._connection.operation_timeout_s
