"""``Admin``: topic management and namespace/topic policies (deduplication, retention, message TTL) over the
broker's unary admin calls."""
from __future__ import annotations

import json
from typing import Any

from broker_core.protocol import broker_pb2
from broker_core.types import MessageId, TopicName

from connector.client.connection import Connection


class Admin:
    """Create, list, inspect and delete topics and subscriptions. Errors are the typed exceptions of
    :mod:`broker_core.errors` (``TopicNotFound``, ``TopicAlreadyExists``, ...)."""

    def __init__(self, service_url: str, operation_timeout_seconds: float = 30,
                 connection_timeout_ms: int = 10000) -> None:
        self._connection = Connection(service_url, operation_timeout_seconds,
                                      connection_timeout_ms / 1000.0)

    def create_partitioned_topic(self, topic: str, partitions: int) -> None:
        if not isinstance(partitions, int) or partitions < 1:
            raise ValueError(f"partitions={partitions!r} is not valid; use an int >= 1")
        self._connection.unary("CreatePartitionedTopic", broker_pb2.CreatePartitionedTopicRequest(
            topic=_name(topic), partitions=partitions))

    def get_partitioned_topic_metadata(self, topic: str) -> dict[str, int]:
        meta = self._connection.unary("GetPartitionedTopicMetadata",
                                      broker_pb2.TopicRequest(topic=_name(topic)))
        return {"partitions": meta.partitions}

    def create_topic(self, topic: str) -> None:
        self._connection.unary("CreateTopic", broker_pb2.TopicRequest(topic=_name(topic)))

    def list_topics(self, namespace: str = "public/default") -> list[str]:
        return list(self._connection.unary("ListTopics", broker_pb2.ListTopicsRequest(
            namespace=namespace)).topics)

    def delete_topic(self, topic: str, force: bool = False) -> None:
        self._connection.unary("DeleteTopic", broker_pb2.DeleteTopicRequest(topic=_name(topic),
                                                                             force=force))

    def topic_stats(self, topic: str) -> dict[str, Any]:
        reply = self._connection.unary("TopicStats", broker_pb2.TopicRequest(topic=_name(topic)))
        return json.loads(reply.json) if reply.json else {}

    def delete_subscription(self, topic: str, subscription: str, force: bool = False) -> None:
        self._connection.unary("DeleteSubscription", broker_pb2.UnsubscribeRequest(
            topic=_name(topic), subscription=subscription, force=force))

    # --- subscriptions without consumers (pulsar-admin topics create-subscription / reset-cursor) -----
    def create_subscription(self, topic: str, subscription: str,
                            message_id: MessageId = MessageId.latest) -> None:
        """Create a durable subscription starting at ``message_id`` (``MessageId.earliest``,
        ``MessageId.latest`` or a message's id); on every partition of a partitioned topic."""
        for name in self._partitions_of(topic):
            self._connection.unary("CreateSubscription", broker_pb2.SubscriptionRequest(
                topic=name, subscription=subscription, position=_position(message_id)))

    def reset_cursor(self, topic: str, subscription: str, message_id: MessageId | None = None,
                     timestamp_ms: int | None = None) -> None:
        """Move a durable subscription so that ``message_id`` (or the first message published at or after
        ``timestamp_ms``) is delivered next; what follows counts as unacknowledged again."""
        if (message_id is None) == (timestamp_ms is None):
            raise ValueError("reset_cursor takes message_id or timestamp_ms")
        for name in self._partitions_of(topic):
            request = broker_pb2.SubscriptionRequest(topic=name, subscription=subscription)
            if timestamp_ms is not None:
                request.publish_time_ms = int(timestamp_ms)
            else:
                request.position.CopyFrom(_position(message_id))  # type: ignore[arg-type]
            self._connection.unary("ResetCursor", request)

    def acknowledge_up_to(self, topic: str, subscription: str, end_offset: int) -> int:
        """Acknowledge every message of one topic partition below ``end_offset`` on a durable
        subscription (created there if missing), never moving it back; returns the offset of its first
        unacknowledged message. What the Spark source does on commit."""
        if not isinstance(end_offset, int) or end_offset < 0:
            raise ValueError(f"end_offset={end_offset!r} is not valid; use an int >= 0")
        reply = self._connection.unary("AcknowledgeUpTo", broker_pb2.SubscriptionRequest(
            topic=_name(topic), subscription=subscription, end_offset=end_offset))
        return reply.next_offset

    def _partitions_of(self, topic: str) -> list[str]:
        name = _name(topic)
        n = self.get_partitioned_topic_metadata(name)["partitions"]
        return [str(TopicName.parse(name).partition(i)) for i in range(n)] if n else [name]

    # --- policies (pulsar-admin's namespaces/topics set-deduplication ...) ----------------------------
    def set_namespace_deduplication(self, namespace: str, enabled: bool | None) -> None:
        """Turn deduplication on/off for every topic of ``tenant/namespace`` (None: back to the broker's
        ``brokerDeduplicationEnabled``). Topic-level settings still win."""
        self._set_policy(broker_pb2.PolicyScope(namespace=namespace), "deduplicationEnabled", enabled)

    def get_namespace_deduplication(self, namespace: str) -> bool | None:
        """The namespace's setting; None when it has none (the broker default applies)."""
        return self.namespace_policies(namespace).get("deduplicationEnabled")

    def set_topic_deduplication(self, topic: str, enabled: bool | None) -> None:
        """Turn deduplication on/off for one topic (all partitions of a partitioned topic); None removes
        the topic-level setting, so the namespace's or the broker's applies."""
        self._set_policy(broker_pb2.PolicyScope(topic=_name(topic)), "deduplicationEnabled", enabled)

    def get_topic_deduplication(self, topic: str) -> bool | None:
        return self.topic_policies(topic).get("deduplicationEnabled")

    def remove_topic_deduplication(self, topic: str) -> None:
        self.set_topic_deduplication(topic, None)

    # --- retention and message TTL (pulsar-admin's namespaces/topics set-retention, set-message-ttl) -----
    def set_namespace_retention(self, namespace: str, retention_time_minutes: int,
                                retention_size_mb: int) -> None:
        """Keep acknowledged data of every topic of ``tenant/namespace`` up to this age and while the topic
        holds at most this size (-1: no limit of that kind; both 0: keep nothing acknowledged; a single 0
        next to a non-zero limit is refused, as Pulsar refuses it). Topic-level retention still wins."""
        self._put_policy(broker_pb2.PolicyScope(namespace=namespace), "retention",
                         _retention(retention_time_minutes, retention_size_mb))

    def get_namespace_retention(self, namespace: str) -> dict[str, int] | None:
        """``{"retentionTimeInMinutes": .., "retentionSizeInMB": ..}``; None when the namespace has none
        (the broker's ``defaultRetention*`` apply)."""
        return self.namespace_policies(namespace).get("retention")

    def remove_namespace_retention(self, namespace: str) -> None:
        self._put_policy(broker_pb2.PolicyScope(namespace=namespace), "retention", None)

    def set_topic_retention(self, topic: str, retention_time_minutes: int, retention_size_mb: int) -> None:
        """Retention of one topic (all partitions of a partitioned topic); replaces the namespace's."""
        self._put_policy(broker_pb2.PolicyScope(topic=_name(topic)), "retention",
                         _retention(retention_time_minutes, retention_size_mb))

    def get_topic_retention(self, topic: str) -> dict[str, int] | None:
        """The topic's own retention; None when it has none (the namespace's or the broker's apply)."""
        return self.topic_policies(topic).get("retention")

    def remove_topic_retention(self, topic: str) -> None:
        self._put_policy(broker_pb2.PolicyScope(topic=_name(topic)), "retention", None)

    def set_namespace_message_ttl(self, namespace: str, seconds: int) -> None:
        """Messages older than ``seconds`` (by publish time) and not acknowledged are acknowledged on every
        durable subscription of the namespace's topics (0: no TTL). Topic-level TTL still wins."""
        self._put_policy(broker_pb2.PolicyScope(namespace=namespace), "messageTTLInSeconds",
                         _whole("seconds", seconds))

    def get_namespace_message_ttl(self, namespace: str) -> int | None:
        """The namespace's TTL in seconds; None when it has none (``ttlDurationDefaultInSeconds`` applies)."""
        return self.namespace_policies(namespace).get("messageTTLInSeconds")

    def remove_namespace_message_ttl(self, namespace: str) -> None:
        self._put_policy(broker_pb2.PolicyScope(namespace=namespace), "messageTTLInSeconds", None)

    def set_topic_message_ttl(self, topic: str, seconds: int) -> None:
        """TTL of one topic (all partitions of a partitioned topic); replaces the namespace's."""
        self._put_policy(broker_pb2.PolicyScope(topic=_name(topic)), "messageTTLInSeconds",
                         _whole("seconds", seconds))

    def get_topic_message_ttl(self, topic: str) -> int | None:
        return self.topic_policies(topic).get("messageTTLInSeconds")

    def remove_topic_message_ttl(self, topic: str) -> None:
        self._put_policy(broker_pb2.PolicyScope(topic=_name(topic)), "messageTTLInSeconds", None)

    def namespace_policies(self, namespace: str) -> dict[str, Any]:
        """The policies set on ``tenant/namespace`` (only those set)."""
        return self._policies(broker_pb2.PolicyScope(namespace=namespace))

    def topic_policies(self, topic: str) -> dict[str, Any]:
        """The policies set on the topic itself (only those set)."""
        return self._policies(broker_pb2.PolicyScope(topic=_name(topic)))

    def _set_policy(self, scope: broker_pb2.PolicyScope, key: str, value: Any) -> None:
        if value is not None and not isinstance(value, bool):
            raise ValueError(f"{key}={value!r} is not valid; use True, False or None")
        self._put_policy(scope, key, value)

    def _put_policy(self, scope: broker_pb2.PolicyScope, key: str, value: Any) -> None:
        """Set (None: remove) one policy; the broker validates the value (``InvalidConfiguration``)."""
        self._connection.unary("SetPolicy", broker_pb2.PolicyRequest(
            scope=scope, key=key, value_json="" if value is None else json.dumps(value)))

    def _policies(self, scope: broker_pb2.PolicyScope) -> dict[str, Any]:
        reply = self._connection.unary("GetPolicies", scope)
        return json.loads(reply.json) if reply.json else {}

    def close(self) -> None:
        self._connection.close()

    def __enter__(self) -> "Admin":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _whole(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name}={value!r} is not valid; use an int")
    return value


def _retention(time_minutes: Any, size_mb: Any) -> dict[str, int]:
    return {"retentionTimeInMinutes": _whole("retention_time_minutes", time_minutes),
            "retentionSizeInMB": _whole("retention_size_mb", size_mb)}


def _position(message_id: MessageId) -> broker_pb2.Position:
    if not isinstance(message_id, MessageId):
        raise TypeError("message_id must be a MessageId (MessageId.earliest, MessageId.latest or an id)")
    if message_id.is_earliest():
        return broker_pb2.Position(earliest=True)
    if message_id.is_latest():
        return broker_pb2.Position(latest=True)
    return broker_pb2.Position(offset=message_id.offset)


def _name(topic: str) -> str:
    """Fully qualified (raises InvalidTopicName client-side)."""
    return str(TopicName.parse(topic))
