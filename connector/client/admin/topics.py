"""Topic and subscription calls of :class:`~connector.client.admin.Admin` (``pulsar-admin topics ...``)."""
from __future__ import annotations

from typing import Any

from broker_core.errors import NotAllowedError, SubscriptionNotFound
from broker_core.protocol import broker_pb2
from broker_core.types import TopicName

from connector.client.admin.peek import PeekedMessage, messages_of
from connector.client.admin.wire import UnaryWire, fans_out, position, topic_name, whole
from connector.client.message_id import MessageId


def stats_options(get_precise_backlog: bool, subscription_backlog_size: bool,
                  get_earliest_time_in_backlog: bool) -> broker_pb2.StatsOptions:
    """Pulsar's ``GetStatsOptions`` as a stats request carries them."""
    return broker_pb2.StatsOptions(get_precise_backlog=bool(get_precise_backlog),
                                   subscription_backlog_size=bool(subscription_backlog_size),
                                   get_earliest_time_in_backlog=bool(get_earliest_time_in_backlog))


class TopicsAdmin:
    """Topics, their stats, and subscriptions handled without a consumer: a part of
    :class:`~connector.client.admin.Admin`, which serves its public methods."""

    def __init__(self, wire: UnaryWire) -> None:
        self._wire = wire

    # --- topics ----------------------------------------------------------------------------------------
    def create_partitioned_topic(self, topic: str, partitions: int) -> None:
        if not isinstance(partitions, int) or partitions < 1:
            raise ValueError(f"partitions={partitions!r} is not valid; use an int >= 1")
        self._wire.unary("CreatePartitionedTopic", broker_pb2.CreatePartitionedTopicRequest(
            topic=topic_name(topic), partitions=partitions))

    def update_partitioned_topic(self, topic: str, partitions: int) -> None:
        """Grow a partitioned topic to ``partitions`` partitions (``topics update-partitioned-topic``). As in
        Pulsar partitions are only added: a count not above the current one is refused with
        ``NotAllowedError``. The new partitions get every durable subscription of the topic, from their first
        message. Producers and consumers created before keep to the old partitions until created again."""
        whole("partitions", partitions, 1)
        self._wire.unary("UpdatePartitionedTopic", broker_pb2.CreatePartitionedTopicRequest(
            topic=topic_name(topic), partitions=partitions))

    def list_partitioned_topics(self, namespace: str = "public/default") -> list[str]:
        """The partitioned topics of ``tenant/namespace`` by their base names (``topics
        list-partitioned-topics``)."""
        return list(self._wire.unary("ListPartitionedTopics", broker_pb2.ListTopicsRequest(namespace=namespace)))

    def get_partitioned_topic_metadata(self, topic: str) -> dict[str, int]:
        return {"partitions": self._wire.unary("GetPartitionedTopicMetadata",
                                               broker_pb2.TopicRequest(topic=topic_name(topic)))}

    def create_topic(self, topic: str) -> None:
        self._wire.unary("CreateTopic", broker_pb2.TopicRequest(topic=topic_name(topic)))

    def list_topics(self, namespace: str = "public/default") -> list[str]:
        """Every partition and non-partitioned topic of ``tenant/namespace`` (``NamespaceNotFound`` when it
        does not exist)."""
        return list(self._wire.unary("ListTopics", broker_pb2.ListTopicsRequest(namespace=namespace)))

    def delete_topic(self, topic: str, force: bool = False) -> None:
        self._wire.unary("DeleteTopic", broker_pb2.DeleteTopicRequest(topic=topic_name(topic),
                                                                             force=force))

    # --- stats ---------------------------------------------------------------------------------------
    def topic_stats(self, topic: str, get_precise_backlog: bool = False, subscription_backlog_size: bool = True,
                    get_earliest_time_in_backlog: bool = False) -> dict[str, Any]:
        """Pulsar's topic stats; for a partitioned topic the sums, with each partition's under
        ``partitions``. As Pulsar's ``getStats``: ``subscription_backlog_size`` fills each subscription's
        ``backlogSize`` (bytes from its mark-delete position on; -1 without), ``get_earliest_time_in_backlog``
        its ``earliestMsgPublishTimeInBacklog`` (publish time of its first unacknowledged message, -1 when it
        has none; 0 without) and the topic's ``earliestMsgPublishTimeInBacklogs``; ``get_precise_backlog`` is
        accepted (the backlog counts are always exact)."""
        return self._json("TopicStats", broker_pb2.TopicRequest(topic=topic_name(topic), stats=stats_options(
            get_precise_backlog, subscription_backlog_size, get_earliest_time_in_backlog)))

    def partitioned_topic_stats(self, topic: str, per_partition: bool = False, get_precise_backlog: bool = False,
                                subscription_backlog_size: bool = True, get_earliest_time_in_backlog: bool = False,
                                ) -> dict[str, Any]:
        """``pulsar-admin topics partitioned-stats``: the partitions' figures summed (``metadata.partitions``);
        each partition's stats under ``partitions`` only with ``per_partition``; the other options as
        :meth:`topic_stats`'s. ``NotAllowedError`` for a topic that is not partitioned (over ``admin_url``:
        ``TopicNotFound``, Pulsar's 404)."""
        name = topic_name(topic)
        options = stats_options(get_precise_backlog, subscription_backlog_size, get_earliest_time_in_backlog)
        if fans_out(self._wire):  # one request, as Pulsar's admin: 404 for a topic that is not partitioned
            stats = self._wire.partitioned_stats(name, per_partition, options)  # type: ignore[attr-defined]
            stats.setdefault("partitions", {})
            return stats
        if not self.get_partitioned_topic_metadata(name)["partitions"]:
            raise NotAllowedError(f"{name} is not a partitioned topic: use topic_stats (`topics stats`)",
                                  topic=name)
        stats = self._json("TopicStats", broker_pb2.TopicRequest(topic=name, stats=options))
        if not per_partition:
            stats["partitions"] = {}
        return stats

    def topic_internal_stats(self, topic: str) -> dict[str, Any]:
        """``pulsar-admin topics stats-internal``: segments (``ledgers``) and cursors of a topic partition;
        of a partitioned topic, each partition's under ``partitions``."""
        return self._json("TopicInternalStats", broker_pb2.TopicRequest(topic=topic_name(topic)))

    def _json(self, method: str, request: Any) -> dict[str, Any]:
        found = self._wire.unary(method, request)
        return found if found is not None else {}

    # --- subscriptions -------------------------------------------------------------------------------
    def list_subscriptions(self, topic: str) -> list[str]:
        """Subscription names (of every partition of a partitioned topic), readers' included."""
        return list(self._wire.unary("ListSubscriptions", broker_pb2.TopicRequest(topic=topic_name(topic))))

    def delete_subscription(self, topic: str, subscription: str, force: bool = False) -> None:
        """Delete a subscription (on every partition of a partitioned topic that has it);
        ``SubscriptionNotFound`` when none has it, ``NotAllowedError`` while consumers are connected
        unless ``force``."""
        missing: list[SubscriptionNotFound] = []
        names = self._partitions_of(topic)
        for name in names:
            try:
                self._wire.unary("DeleteSubscription", broker_pb2.UnsubscribeRequest(
                    topic=name, subscription=subscription, force=force))
            except SubscriptionNotFound as exc:
                missing.append(exc)
        if len(missing) == len(names):
            raise missing[0]

    def create_subscription(self, topic: str, subscription: str,
                            message_id: MessageId = MessageId.latest) -> None:
        """Create a durable subscription starting at ``message_id`` (``MessageId.earliest``,
        ``MessageId.latest`` or a message's id); on every partition of a partitioned topic."""
        for name in self._partitions_of(topic):
            self._wire.unary("CreateSubscription", broker_pb2.SubscriptionRequest(
                topic=name, subscription=subscription, position=position(message_id)))

    def reset_cursor(self, topic: str, subscription: str, message_id: MessageId | None = None,
                     timestamp_ms: int | None = None) -> None:
        """Move a durable subscription so that ``message_id`` (or the first message published at or after
        ``timestamp_ms``) is delivered next; what follows counts as unacknowledged again."""
        if (message_id is None) == (timestamp_ms is None):
            raise ValueError("reset_cursor takes message_id or timestamp_ms")
        for name in self._partitions_of(topic):
            request = broker_pb2.SubscriptionRequest(topic=name, subscription=subscription)
            if timestamp_ms is not None:
                request.publish_time_ms = whole("timestamp_ms", timestamp_ms, 0)
            else:
                request.position.CopyFrom(position(message_id))  # type: ignore[arg-type]
            self._wire.unary("ResetCursor", request)

    def acknowledge_up_to(self, topic: str, subscription: str, end_offset: int) -> int:
        """Acknowledge every message of one topic partition below ``end_offset`` on a durable
        subscription (created there if missing), never moving it back; returns the offset of its first
        unacknowledged message. What the Spark source does on commit."""
        if not isinstance(end_offset, int) or end_offset < 0:
            raise ValueError(f"end_offset={end_offset!r} is not valid; use an int >= 0")
        return self._wire.unary("AcknowledgeUpTo", broker_pb2.SubscriptionRequest(
            topic=topic_name(topic), subscription=subscription, end_offset=end_offset))

    def skip_messages(self, topic: str, subscription: str, count: int) -> int:
        """Acknowledge the next ``count`` unacknowledged messages of a durable subscription (``topics skip
        -n``); returns how many were (fewer when the backlog is shorter). Messages, not entries: a batch of
        three counts three. Not on a partitioned topic, as in Pulsar: skip on each partition."""
        name = self._not_partitioned(topic, "skip")
        return self._wire.unary("SkipMessages", broker_pb2.SubscriptionRequest(
            topic=name, subscription=subscription, count=whole("count", count, 0)))

    def clear_backlog(self, topic: str, subscription: str) -> int:
        """Acknowledge everything stored on a durable subscription (``topics clear-backlog``; Pulsar's
        ``skipAllMessages``), on every partition of a partitioned topic; returns how many messages."""
        return sum(self._wire.unary("ClearBacklog", broker_pb2.SubscriptionRequest(
            topic=name, subscription=subscription)) for name in self._partitions_of(topic))

    def peek_messages(self, topic: str, subscription: str, count: int = 1) -> list[PeekedMessage]:
        """The next ``count`` unacknowledged messages of a subscription, from its first unacknowledged one,
        without receiving or acknowledging them (``topics peek-messages``). Not on a partitioned topic, as
        in Pulsar: peek a partition."""
        name = self._not_partitioned(topic, "peek-messages")
        whole("count", count, 1)
        stored = self._wire.unary("PeekMessages", broker_pb2.SubscriptionRequest(
            topic=name, subscription=subscription, count=count))
        return messages_of(stored, name, TopicName.parse(name).partition_index, count)

    def _partitions_of(self, topic: str) -> list[str]:
        """The topics to send a call to: each partition of a partitioned topic, unless the server fans out."""
        name = topic_name(topic)
        if fans_out(self._wire):
            return [name]
        n = self.get_partitioned_topic_metadata(name)["partitions"]
        return [str(TopicName.parse(name).partition(i)) for i in range(n)] if n else [name]

    def _not_partitioned(self, topic: str, verb: str) -> str:
        name = topic_name(topic)
        if fans_out(self._wire):
            return name  # the server refuses a partitioned topic itself (412 NotAllowedError), as Pulsar's does
        n = self.get_partitioned_topic_metadata(name)["partitions"]
        if n:
            raise NotAllowedError(f"{verb} on a partitioned topic is not allowed (as in Pulsar): use one of its"
                                  f" {n} partitions, e.g. {name}-partition-0", topic=name, partitions=n)
        return name
