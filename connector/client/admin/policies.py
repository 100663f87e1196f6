"""Namespace and topic policies of :class:`~connector.client.admin.Admin`: deduplication, retention,
message TTL, max producers / consumers per topic, compaction threshold (``pulsar-admin namespaces|topics set-...``). Each
``get_*`` returns what is set at that level only (None when nothing is); the broker validates values and
refuses bad ones with ``InvalidConfiguration`` naming the field."""
from __future__ import annotations

import json
from typing import Any

from broker_core.protocol import broker_pb2

from connector.client.admin.wire import UnaryWire, topic_name, whole

DEDUPLICATION, RETENTION, TTL = "deduplicationEnabled", "retention", "messageTTLInSeconds"
MAX_PRODUCERS, MAX_CONSUMERS = "maxProducersPerTopic", "maxConsumersPerTopic"
SUBSCRIPTION_EXPIRATION = "subscriptionExpirationTimeMinutes"
COMPACTION_THRESHOLD = "compactionThreshold"


def _ns(namespace: str) -> broker_pb2.PolicyScope:
    return broker_pb2.PolicyScope(namespace=namespace)


def _topic(topic: str) -> broker_pb2.PolicyScope:
    return broker_pb2.PolicyScope(topic=topic_name(topic))


class PoliciesAdmin:
    """Namespace and topic policies: a part of :class:`~connector.client.admin.Admin`, which serves its public
    methods."""

    def __init__(self, wire: UnaryWire) -> None:
        self._wire = wire

    # --- deduplication -------------------------------------------------------------------------------
    def set_namespace_deduplication(self, namespace: str, enabled: bool | None) -> None:
        """Turn deduplication on/off for every topic of ``tenant/namespace`` (None: back to the broker's
        ``brokerDeduplicationEnabled``). Topic-level settings still win."""
        self._put(_ns(namespace), DEDUPLICATION, _flag(enabled))

    def get_namespace_deduplication(self, namespace: str) -> bool | None:
        return self._get(_ns(namespace), DEDUPLICATION)

    def set_topic_deduplication(self, topic: str, enabled: bool | None) -> None:
        """Turn deduplication on/off for one topic (all partitions of a partitioned topic); None removes
        the topic-level setting, so the namespace's or the broker's applies."""
        self._put(_topic(topic), DEDUPLICATION, _flag(enabled))

    def get_topic_deduplication(self, topic: str) -> bool | None:
        return self._get(_topic(topic), DEDUPLICATION)

    def remove_topic_deduplication(self, topic: str) -> None:
        self.set_topic_deduplication(topic, None)

    # --- retention (-1: no limit of that kind; both 0: keep nothing acknowledged) ---------------------
    def set_namespace_retention(self, namespace: str, retention_time_minutes: int,
                                retention_size_mb: int) -> None:
        """Keep acknowledged data of every topic of ``tenant/namespace`` up to this age and while the topic
        holds at most this size (-1: no limit of that kind; both 0: keep nothing acknowledged; a single 0
        next to a non-zero limit is refused, as Pulsar refuses it). Topic-level retention still wins."""
        self._put(_ns(namespace), RETENTION, _retention(retention_time_minutes, retention_size_mb))

    def get_namespace_retention(self, namespace: str) -> dict[str, int] | None:
        """``{"retentionTimeInMinutes": .., "retentionSizeInMB": ..}``; None when the namespace has none."""
        return self._get(_ns(namespace), RETENTION)

    def remove_namespace_retention(self, namespace: str) -> None:
        self._put(_ns(namespace), RETENTION, None)

    def set_topic_retention(self, topic: str, retention_time_minutes: int, retention_size_mb: int) -> None:
        """Retention of one topic (all partitions of a partitioned topic); replaces the namespace's."""
        self._put(_topic(topic), RETENTION, _retention(retention_time_minutes, retention_size_mb))

    def get_topic_retention(self, topic: str) -> dict[str, int] | None:
        return self._get(_topic(topic), RETENTION)

    def remove_topic_retention(self, topic: str) -> None:
        self._put(_topic(topic), RETENTION, None)

    # --- message TTL (0: none) -----------------------------------------------------------------------
    def set_namespace_message_ttl(self, namespace: str, seconds: int) -> None:
        """Messages older than ``seconds`` (by publish time) and not acknowledged are acknowledged on every
        durable subscription of the namespace's topics (0: no TTL). Topic-level TTL still wins."""
        self._put(_ns(namespace), TTL, whole("seconds", seconds))

    def get_namespace_message_ttl(self, namespace: str) -> int | None:
        return self._get(_ns(namespace), TTL)

    def remove_namespace_message_ttl(self, namespace: str) -> None:
        self._put(_ns(namespace), TTL, None)

    def set_topic_message_ttl(self, topic: str, seconds: int) -> None:
        self._put(_topic(topic), TTL, whole("seconds", seconds))

    def get_topic_message_ttl(self, topic: str) -> int | None:
        return self._get(_topic(topic), TTL)

    def remove_topic_message_ttl(self, topic: str) -> None:
        self._put(_topic(topic), TTL, None)

    # --- subscription expiration (0: never) -----------------------------------------------------------
    def set_namespace_subscription_expiration_time(self, namespace: str, minutes: int) -> None:
        """Delete durable subscriptions of the namespace's topics that have no consumer and no activity
        (subscribing, a consumer leaving, ``acknowledge_up_to``, ``create_subscription``, ``reset_cursor``)
        for ``minutes`` (0: never; Pulsar's ``subscriptionExpirationTimeMinutes``). Wins over the broker's
        setting."""
        self._put(_ns(namespace), SUBSCRIPTION_EXPIRATION, whole("minutes", minutes, 0))

    def get_namespace_subscription_expiration_time(self, namespace: str) -> int | None:
        """The namespace's setting in minutes; None when it has none (the broker's applies)."""
        return self._get(_ns(namespace), SUBSCRIPTION_EXPIRATION)

    def remove_namespace_subscription_expiration_time(self, namespace: str) -> None:
        self._put(_ns(namespace), SUBSCRIPTION_EXPIRATION, None)

    # --- max producers / consumers per topic partition (0: no limit) ---------------------------------
    def set_namespace_max_producers_per_topic(self, namespace: str, max_producers: int) -> None:
        """At most this many producers on each topic partition of the namespace; one more is refused with
        ``ProducerBusy`` ("Topic reached max producers limit"). Topic-level settings still win."""
        self._put(_ns(namespace), MAX_PRODUCERS, whole("max_producers", max_producers))

    def get_namespace_max_producers_per_topic(self, namespace: str) -> int | None:
        return self._get(_ns(namespace), MAX_PRODUCERS)

    def remove_namespace_max_producers_per_topic(self, namespace: str) -> None:
        self._put(_ns(namespace), MAX_PRODUCERS, None)

    def set_namespace_max_consumers_per_topic(self, namespace: str, max_consumers: int) -> None:
        """At most this many consumers (all subscriptions, readers included) on each topic partition of the
        namespace; one more is refused with ``ConsumerBusy`` ("Topic reached max consumers limit")."""
        self._put(_ns(namespace), MAX_CONSUMERS, whole("max_consumers", max_consumers))

    def get_namespace_max_consumers_per_topic(self, namespace: str) -> int | None:
        return self._get(_ns(namespace), MAX_CONSUMERS)

    def remove_namespace_max_consumers_per_topic(self, namespace: str) -> None:
        self._put(_ns(namespace), MAX_CONSUMERS, None)

    def set_topic_max_producers(self, topic: str, max_producers: int) -> None:
        """The topic's own limit (each partition of a partitioned topic); replaces the namespace's."""
        self._put(_topic(topic), MAX_PRODUCERS, whole("max_producers", max_producers))

    def get_topic_max_producers(self, topic: str) -> int | None:
        return self._get(_topic(topic), MAX_PRODUCERS)

    def remove_topic_max_producers(self, topic: str) -> None:
        self._put(_topic(topic), MAX_PRODUCERS, None)

    def set_topic_max_consumers(self, topic: str, max_consumers: int) -> None:
        self._put(_topic(topic), MAX_CONSUMERS, whole("max_consumers", max_consumers))

    def get_topic_max_consumers(self, topic: str) -> int | None:
        return self._get(_topic(topic), MAX_CONSUMERS)

    def remove_topic_max_consumers(self, topic: str) -> None:
        self._put(_topic(topic), MAX_CONSUMERS, None)

    def set_namespace_compaction_threshold(self, namespace: str, threshold_bytes: int) -> None:
        """Compact each topic of the namespace once its backlog not yet compacted exceeds this many bytes
        (checked every ``brokerServiceCompactionMonitorIntervalInSeconds``; 0: never)."""
        self._put(_ns(namespace), COMPACTION_THRESHOLD, whole("threshold_bytes", threshold_bytes))

    def get_namespace_compaction_threshold(self, namespace: str) -> int | None:
        return self._get(_ns(namespace), COMPACTION_THRESHOLD)

    def remove_namespace_compaction_threshold(self, namespace: str) -> None:
        self._put(_ns(namespace), COMPACTION_THRESHOLD, None)

    def set_topic_compaction_threshold(self, topic: str, threshold_bytes: int) -> None:
        """The topic's own threshold (each partition of a partitioned topic); replaces the namespace's."""
        self._put(_topic(topic), COMPACTION_THRESHOLD, whole("threshold_bytes", threshold_bytes))

    def get_topic_compaction_threshold(self, topic: str) -> int | None:
        return self._get(_topic(topic), COMPACTION_THRESHOLD)

    def remove_topic_compaction_threshold(self, topic: str) -> None:
        self._put(_topic(topic), COMPACTION_THRESHOLD, None)

    # --- all of them ---------------------------------------------------------------------------------
    def namespace_policies(self, namespace: str) -> dict[str, Any]:
        """The policies set on ``tenant/namespace`` (only those set; ``NamespaceNotFound`` when missing)."""
        return self._policies(_ns(namespace))

    def topic_policies(self, topic: str) -> dict[str, Any]:
        """The policies set on the topic itself (only those set)."""
        return self._policies(_topic(topic))

    def _put(self, scope: broker_pb2.PolicyScope, key: str, value: Any) -> None:
        """Set (None: remove) one policy."""
        self._wire.unary("SetPolicy", broker_pb2.PolicyRequest(
            scope=scope, key=key, value_json="" if value is None else json.dumps(value)))

    def _get(self, scope: broker_pb2.PolicyScope, key: str) -> Any:
        """One policy as set on ``scope`` (None: unset): its own route over REST, as pulsar-admin's get-* reads."""
        return self._wire.unary("GetPolicy", broker_pb2.PolicyRequest(scope=scope, key=key))

    def _policies(self, scope: broker_pb2.PolicyScope) -> dict[str, Any]:
        found = self._wire.unary("GetPolicies", scope)
        return found if found is not None else {}


def _flag(value: Any) -> bool | None:
    if value is not None and not isinstance(value, bool):
        raise ValueError(f"{DEDUPLICATION}={value!r} is not valid; use True, False or None")
    return value


def _retention(time_minutes: Any, size_mb: Any) -> dict[str, int]:
    return {"retentionTimeInMinutes": whole("retention_time_minutes", time_minutes),
            "retentionSizeInMB": whole("retention_size_mb", size_mb)}
