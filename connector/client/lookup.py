"""The unary calls the client makes for its producers and consumers: partitions of a topic, topics of a
namespace, a partition's last message, and the topics and subscriptions dead letters need. Each one is
idempotent, so each is retried while the broker is unreachable or restarting, within
``operation_timeout_seconds`` (:meth:`~connector.client.connection.Connection.unary` with ``retry``)."""
from __future__ import annotations

from broker_core import errors
from broker_core.protocol import broker_pb2
from broker_core.types import TopicName

from connector.client.connection import Connection


class Lookup:
    def __init__(self, connection: Connection) -> None:
        self._connection = connection

    def partitions(self, topic: str) -> int:
        """The partition count of ``topic`` (0: not partitioned)."""
        return self._connection.unary("GetPartitionedTopicMetadata", broker_pb2.TopicRequest(topic=topic),
                                      retry=True).partitions

    def expand(self, topics: list[str]) -> list[tuple[str, int]]:
        """``(partition topic, partition index)`` of each topic (itself and -1 when not partitioned)."""
        out: list[tuple[str, int]] = []
        for name in topics:
            num = self.partitions(name)
            parsed = TopicName.parse(name)
            if num > 0:
                out.extend((str(parsed.partition(i)), i) for i in range(num))
            else:
                out.append((name, parsed.partition_index))
        return out

    def list_topics(self, namespace: str) -> list[str]:
        return list(self._connection.unary("ListTopics", broker_pb2.ListTopicsRequest(namespace=namespace),
                                           retry=True).topics)

    def last_message(self, topic: str, *, read_compacted: bool = False) -> broker_pb2.LastMessageId:
        """The last stored message and the first stored offset of a topic partition (``read_compacted``: of
        its compacted view, as a compacted reader receives them)."""
        request = broker_pb2.TopicRequest(topic=topic, read_compacted=read_compacted)
        return self._connection.unary("GetLastMessageId", request, retry=True)

    def schema(self, topic: str, version: int = -1, retry: bool = True) -> broker_pb2.SchemaReply | None:
        """The topic's schema in the broker's registry (the latest, or ``version``): ``type`` (Pulsar's
        ``Schema.Type`` name), ``data`` (the definition), ``version``, ``name``; None when it has none."""
        try:
            return self._connection.unary("GetSchema", broker_pb2.SchemaRequest(topic=topic, version=version),
                                          retry=retry)
        except errors.TopicNotFound:
            return None

    def ensure_subscription(self, topic: str, subscription: str) -> None:
        """Create the durable subscription ``subscription`` at the end of ``topic`` (and the topic) unless it
        exists: with the admin calls, not a consumer that would attach and take permits."""
        if not self.partitions(topic):
            try:
                self._connection.unary("CreateTopic", broker_pb2.TopicRequest(topic=topic), retry=True)
            except errors.TopicAlreadyExists:
                pass
        for partition_topic, _ in self.expand([topic]):
            try:
                self._connection.unary("CreateSubscription", broker_pb2.SubscriptionRequest(
                    topic=partition_topic, subscription=subscription, position=broker_pb2.Position(latest=True)),
                    retry=True)
            except errors.NotAllowedError:  # it exists
                pass

    @property
    def operation_timeout_s(self) -> float:
        return self._connection.operation_timeout_s
