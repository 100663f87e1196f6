"""The namespace policies and operations of :class:`~connector.client.admin.Admin` that Pulsar's
``Policies`` added after the first ones (:mod:`.policies`): subscription and unacked limits, delayed delivery,
inactive topics, auto subscription creation, schema and encryption rules, subscription types and auth mode,
the deduplication snapshot interval; and namespace unload, bundles, properties and subscription permissions
(``pulsar-admin namespaces ...``).

Each ``get_*`` answers what the namespace's REST route answers (``GET /admin/v2/namespaces/{t}/{ns}/...``):
the namespace's own value, None while unset -- or, for the policies Pulsar answers a value for while unset,
that value (``False`` for ``encryption_required``, ``"None"`` for the subscription auth mode, the broker's
default for ``is_allow_auto_update_schema`` ...), over gRPC (``GetPolicy``) and REST alike. The broker checks
values (``InvalidConfiguration`` naming the field). What each enforces: ``docs/admin.md``.
"""
from __future__ import annotations

import json
from typing import Any, Iterable

from broker_core.config import INACTIVE_TOPIC_MODES, SUBSCRIPTION_TYPES
from broker_core.protocol import broker_pb2

from connector.client.admin.wire import UnaryWire, whole

AUTO_SUBSCRIPTION_CREATION = "autoSubscriptionCreation"
DELAYED_DELIVERY = "delayedDelivery"
INACTIVE_TOPIC_POLICIES = "inactiveTopicPolicies"
MAX_CONSUMERS_PER_SUBSCRIPTION = "maxConsumersPerSubscription"
MAX_UNACKED_PER_CONSUMER = "maxUnackedMessagesPerConsumer"
MAX_UNACKED_PER_SUBSCRIPTION = "maxUnackedMessagesPerSubscription"
MAX_SUBSCRIPTIONS_PER_TOPIC = "maxSubscriptionsPerTopic"
MAX_TOPICS_PER_NAMESPACE = "maxTopicsPerNamespace"
MAX_MESSAGE_SIZE = "maxMessageSize"
DEDUP_SNAPSHOT_INTERVAL = "deduplicationSnapshotIntervalSeconds"
SUBSCRIPTION_AUTH_MODE = "subscriptionAuthMode"
ENCRYPTION_REQUIRED = "encryptionRequired"
AUTO_UPDATE_SCHEMA = "isAllowAutoUpdateSchema"
SCHEMA_VALIDATION_ENFORCED = "schemaValidationEnforced"
AUTO_UPDATE_STRATEGY = "schemaAutoUpdateCompatibilityStrategy"
SUBSCRIPTION_TYPES_ENABLED = "subscriptionTypesEnabled"

DELETE_MODES = INACTIVE_TOPIC_MODES  # the broker's own lists: one place says what it accepts
AUTH_MODES = ("None", "Prefix")
AUTO_UPDATE_STRATEGIES = ("AutoUpdateDisabled", "Backward", "Forward", "Full", "AlwaysCompatible",
                          "BackwardTransitive", "ForwardTransitive", "FullTransitive")
LIMITS = {"max_consumers_per_subscription": MAX_CONSUMERS_PER_SUBSCRIPTION,
          "max_unacked_messages_per_consumer": MAX_UNACKED_PER_CONSUMER,
          "max_unacked_messages_per_subscription": MAX_UNACKED_PER_SUBSCRIPTION,
          "max_subscriptions_per_topic": MAX_SUBSCRIPTIONS_PER_TOPIC,
          "max_topics_per_namespace": MAX_TOPICS_PER_NAMESPACE}
"""The integer limits (0: no limit): the ``Admin`` method's name part -> the policy."""


def _flag(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"{name}={value!r} is not valid; use True or False")
    return value


def _choice(name: str, value: Any, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise ValueError(f"{name}={value!r} is not valid; use one of {', '.join(choices)}")
    return value


def _text(name: str, value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(f"{name}={value!r} is not valid; use a non-empty str")
    return value


def _delayed(enabled: bool, tick_time_ms: int, max_delivery_delay_ms: int) -> dict[str, Any]:
    """Pulsar's ``DelayedDeliveryPolicies``."""
    return {"tickTime": whole("tick_time_ms", tick_time_ms, 0), "active": _flag("enabled", enabled),
            "maxDeliveryDelayInMillis": whole("max_delivery_delay_ms", max_delivery_delay_ms, 0)}


class NamespacePoliciesAdmin:
    """A part of :class:`~connector.client.admin.Admin`, which serves its public methods."""

    def __init__(self, wire: UnaryWire) -> None:
        self._wire = wire

    # --- one policy ----------------------------------------------------------------------------------
    def _set(self, namespace: str, key: str, value: Any) -> None:
        """Set (None: remove) policy ``key`` of ``namespace``."""
        self._wire.unary("SetPolicy", broker_pb2.PolicyRequest(
            scope=broker_pb2.PolicyScope(namespace=namespace), key=key,
            value_json="" if value is None else json.dumps(value)))

    def _get(self, namespace: str, key: str) -> Any:
        return self._wire.unary("GetPolicy", broker_pb2.PolicyRequest(
            scope=broker_pb2.PolicyScope(namespace=namespace), key=key))

    # --- limits (0: no limit) -----------------------------------------------------------------------
    def _limit(self, namespace: str, limit: str, value: int) -> None:
        """Set one of the integer limits by name (see :data:`LIMITS`)."""
        self._set(namespace, LIMITS[limit], whole(limit, value, 0))

    def set_namespace_max_consumers_per_subscription(self, namespace: str, max_consumers: int) -> None:
        """At most this many consumers on each subscription of the namespace's topics (each partition); one
        more is refused with ``ConsumerBusy``."""
        self._limit(namespace, "max_consumers_per_subscription", max_consumers)

    def get_namespace_max_consumers_per_subscription(self, namespace: str) -> int | None:
        return self._get(namespace, MAX_CONSUMERS_PER_SUBSCRIPTION)

    def remove_namespace_max_consumers_per_subscription(self, namespace: str) -> None:
        self._set(namespace, MAX_CONSUMERS_PER_SUBSCRIPTION, None)

    def set_namespace_max_unacked_messages_per_consumer(self, namespace: str, max_unacked: int) -> None:
        """Shared and Key_Shared: a consumer holding this many unacknowledged messages is sent no more until
        it acknowledges some."""
        self._limit(namespace, "max_unacked_messages_per_consumer", max_unacked)

    def get_namespace_max_unacked_messages_per_consumer(self, namespace: str) -> int | None:
        return self._get(namespace, MAX_UNACKED_PER_CONSUMER)

    def remove_namespace_max_unacked_messages_per_consumer(self, namespace: str) -> None:
        self._set(namespace, MAX_UNACKED_PER_CONSUMER, None)

    def set_namespace_max_unacked_messages_per_subscription(self, namespace: str, max_unacked: int) -> None:
        """Shared and Key_Shared: a subscription whose consumers hold this many unacknowledged messages is
        sent nothing more until they hold half as many."""
        self._limit(namespace, "max_unacked_messages_per_subscription", max_unacked)

    def get_namespace_max_unacked_messages_per_subscription(self, namespace: str) -> int | None:
        return self._get(namespace, MAX_UNACKED_PER_SUBSCRIPTION)

    def remove_namespace_max_unacked_messages_per_subscription(self, namespace: str) -> None:
        self._set(namespace, MAX_UNACKED_PER_SUBSCRIPTION, None)

    def set_namespace_max_subscriptions_per_topic(self, namespace: str, max_subscriptions: int) -> None:
        """At most this many subscriptions on each topic partition; a new one beyond is refused
        (``NotAllowedError``)."""
        self._limit(namespace, "max_subscriptions_per_topic", max_subscriptions)

    def get_namespace_max_subscriptions_per_topic(self, namespace: str) -> int | None:
        return self._get(namespace, MAX_SUBSCRIPTIONS_PER_TOPIC)

    def remove_namespace_max_subscriptions_per_topic(self, namespace: str) -> None:
        self._set(namespace, MAX_SUBSCRIPTIONS_PER_TOPIC, None)

    def set_namespace_max_topics_per_namespace(self, namespace: str, max_topics: int) -> None:
        """At most this many topics in the namespace, each partition counting as one; creating one more (the
        admin API or a client) is refused (``NotAllowedError``)."""
        self._limit(namespace, "max_topics_per_namespace", max_topics)

    def get_namespace_max_topics_per_namespace(self, namespace: str) -> int | None:
        """The namespace's limit; unset, the broker's ``maxTopicsPerNamespace`` (0: none), as Pulsar answers."""
        return self._get(namespace, MAX_TOPICS_PER_NAMESPACE)

    def remove_namespace_max_topics_per_namespace(self, namespace: str) -> None:
        self._set(namespace, MAX_TOPICS_PER_NAMESPACE, None)

    # --- a topic's own limits (they win over its namespace's; pulsar-admin topics set-max-...) --------
    def _set_topic(self, topic: str, key: str, value: Any) -> None:
        self._wire.unary("SetPolicy", broker_pb2.PolicyRequest(
            scope=broker_pb2.PolicyScope(topic=topic), key=key,
            value_json="" if value is None else json.dumps(value)))

    def _get_topic(self, topic: str, key: str) -> Any:
        return self._wire.unary("GetPolicy", broker_pb2.PolicyRequest(
            scope=broker_pb2.PolicyScope(topic=topic), key=key))

    def set_topic_max_consumers_per_subscription(self, topic: str, max_consumers: int) -> None:
        self._set_topic(topic, MAX_CONSUMERS_PER_SUBSCRIPTION, whole("max_consumers", max_consumers, 0))

    def get_topic_max_consumers_per_subscription(self, topic: str) -> int | None:
        """The topic's own value (None: it has none; its namespace's or the broker's applies)."""
        return self._get_topic(topic, MAX_CONSUMERS_PER_SUBSCRIPTION)

    def remove_topic_max_consumers_per_subscription(self, topic: str) -> None:
        self._set_topic(topic, MAX_CONSUMERS_PER_SUBSCRIPTION, None)

    def set_topic_max_unacked_messages_per_consumer(self, topic: str, max_unacked: int) -> None:
        """REST: ``.../{topic}/maxUnackedMessagesOnConsumer``."""
        self._set_topic(topic, MAX_UNACKED_PER_CONSUMER, whole("max_unacked", max_unacked, 0))

    def get_topic_max_unacked_messages_per_consumer(self, topic: str) -> int | None:
        return self._get_topic(topic, MAX_UNACKED_PER_CONSUMER)

    def remove_topic_max_unacked_messages_per_consumer(self, topic: str) -> None:
        self._set_topic(topic, MAX_UNACKED_PER_CONSUMER, None)

    def set_topic_max_unacked_messages_per_subscription(self, topic: str, max_unacked: int) -> None:
        """REST: ``.../{topic}/maxUnackedMessagesOnSubscription``."""
        self._set_topic(topic, MAX_UNACKED_PER_SUBSCRIPTION, whole("max_unacked", max_unacked, 0))

    def get_topic_max_unacked_messages_per_subscription(self, topic: str) -> int | None:
        return self._get_topic(topic, MAX_UNACKED_PER_SUBSCRIPTION)

    def remove_topic_max_unacked_messages_per_subscription(self, topic: str) -> None:
        self._set_topic(topic, MAX_UNACKED_PER_SUBSCRIPTION, None)

    def set_topic_max_subscriptions_per_topic(self, topic: str, max_subscriptions: int) -> None:
        self._set_topic(topic, MAX_SUBSCRIPTIONS_PER_TOPIC, whole("max_subscriptions", max_subscriptions, 0))

    def get_topic_max_subscriptions_per_topic(self, topic: str) -> int | None:
        return self._get_topic(topic, MAX_SUBSCRIPTIONS_PER_TOPIC)

    def remove_topic_max_subscriptions_per_topic(self, topic: str) -> None:
        self._set_topic(topic, MAX_SUBSCRIPTIONS_PER_TOPIC, None)

    def set_topic_max_message_size(self, topic: str, max_message_size: int) -> None:
        """Entries larger than this (in bytes, at most the broker's ``maxMessageSize``; 0: the broker's) are
        refused: ``MessageTooBig`` ("Exceed maximum message size")."""
        self._set_topic(topic, MAX_MESSAGE_SIZE, whole("max_message_size", max_message_size, 0))

    def get_topic_max_message_size(self, topic: str) -> int | None:
        return self._get_topic(topic, MAX_MESSAGE_SIZE)

    def remove_topic_max_message_size(self, topic: str) -> None:
        self._set_topic(topic, MAX_MESSAGE_SIZE, None)

    # --- subscriptions ------------------------------------------------------------------------------
    def set_namespace_auto_subscription_creation(self, namespace: str, allow: bool) -> None:
        """Whether consumers may create durable subscriptions by subscribing (overrides the broker's
        ``allowAutoSubscriptionCreation``); not allowed, a consumer of one that does not exist is refused with
        ``SubscriptionNotFound``."""
        self._set(namespace, AUTO_SUBSCRIPTION_CREATION, {"allowAutoSubscriptionCreation": _flag("allow", allow)})

    def get_namespace_auto_subscription_creation(self, namespace: str) -> dict[str, bool] | None:
        """``{"allowAutoSubscriptionCreation": bool}`` (None: the broker's setting applies)."""
        return self._get(namespace, AUTO_SUBSCRIPTION_CREATION)

    def remove_namespace_auto_subscription_creation(self, namespace: str) -> None:
        self._set(namespace, AUTO_SUBSCRIPTION_CREATION, None)

    def set_namespace_subscription_types_enabled(self, namespace: str, types: Iterable[str]) -> None:
        """The subscription types consumers may use (``Exclusive``, ``Shared``, ``Failover``, ``Key_Shared``);
        another is refused with ``NotAllowedError``."""
        items = [types] if isinstance(types, str) else list(types)
        self._set(namespace, SUBSCRIPTION_TYPES_ENABLED,
                  sorted({_choice("types", t, SUBSCRIPTION_TYPES) for t in items}))

    def get_namespace_subscription_types_enabled(self, namespace: str) -> list[str]:
        """The namespace's types ([]: unset, the broker's ``subscriptionTypesEnabled`` apply)."""
        return self._get(namespace, SUBSCRIPTION_TYPES_ENABLED) or []

    def remove_namespace_subscription_types_enabled(self, namespace: str) -> None:
        self._set(namespace, SUBSCRIPTION_TYPES_ENABLED, None)

    def set_namespace_subscription_auth_mode(self, namespace: str, mode: str) -> None:
        """``Prefix``: with authorization on, a role may consume only from subscriptions whose names start
        with the role; ``None``: any name."""
        self._set(namespace, SUBSCRIPTION_AUTH_MODE, _choice("mode", mode, AUTH_MODES))

    def get_namespace_subscription_auth_mode(self, namespace: str) -> str:
        return self._get(namespace, SUBSCRIPTION_AUTH_MODE)

    def grant_subscription_permission(self, namespace: str, subscription: str, roles: Iterable[str]) -> None:
        """Reserve ``subscription`` (on every topic of the namespace) for ``roles``: with authorization on,
        other roles may not consume from it."""
        items = [roles] if isinstance(roles, str) else list(roles)
        self._wire.unary("GrantSubscriptionPermission", broker_pb2.SubscriptionPermissionRequest(
            namespace=namespace, subscription=_text("subscription", subscription),
            roles=[_text("roles", r) for r in items]))

    def revoke_subscription_permission(self, namespace: str, subscription: str, role: str) -> None:
        self._wire.unary("RevokeSubscriptionPermission", broker_pb2.SubscriptionPermissionRequest(
            namespace=namespace, subscription=_text("subscription", subscription), roles=[_text("role", role)]))

    def get_subscription_permissions(self, namespace: str) -> dict[str, list[str]]:
        """``subscription -> roles`` it is reserved for."""
        found = self._wire.unary("GetSubscriptionPermissions", broker_pb2.NamespaceRequest(namespace=namespace))
        return found if found is not None else {}

    # --- delivery and topics ------------------------------------------------------------------------
    def set_namespace_delayed_delivery(self, namespace: str, enabled: bool, tick_time_ms: int = 1000,
                                       max_delivery_delay_ms: int = 0) -> None:
        """Honour messages' delivery times on Shared and Key_Shared subscriptions (off: delivered at once,
        those held too), with this tick (a message may go up to a tick early); a message delayed more than
        ``max_delivery_delay_ms`` is refused (0: any delay)."""
        self._set(namespace, DELAYED_DELIVERY, _delayed(enabled, tick_time_ms, max_delivery_delay_ms))

    def get_namespace_delayed_delivery(self, namespace: str) -> dict[str, Any] | None:
        """``{"tickTime": ms, "active": bool}`` (None: the broker's settings apply)."""
        return self._get(namespace, DELAYED_DELIVERY)

    def remove_namespace_delayed_delivery(self, namespace: str) -> None:
        self._set(namespace, DELAYED_DELIVERY, None)

    def set_namespace_inactive_topic_policies(self, namespace: str, delete_mode: str,
                                              max_inactive_duration_seconds: int, delete_while_inactive: bool) -> None:
        """Delete the namespace's topics inactive this long (no producers, no consumers, and per
        ``delete_mode`` no subscriptions or every subscription caught up), when ``delete_while_inactive``."""
        self._set(namespace, INACTIVE_TOPIC_POLICIES, {
            "inactiveTopicDeleteMode": _choice("delete_mode", delete_mode, DELETE_MODES),
            "maxInactiveDurationSeconds": whole("max_inactive_duration_seconds", max_inactive_duration_seconds, 0),
            "deleteWhileInactive": _flag("delete_while_inactive", delete_while_inactive)})

    def get_namespace_inactive_topic_policies(self, namespace: str) -> dict[str, Any] | None:
        return self._get(namespace, INACTIVE_TOPIC_POLICIES)

    def remove_namespace_inactive_topic_policies(self, namespace: str) -> None:
        self._set(namespace, INACTIVE_TOPIC_POLICIES, None)

    def set_namespace_deduplication_snapshot_interval(self, namespace: str, seconds: int) -> None:
        """Deduplication state is snapshotted when entries are stored this long after the last snapshot (0:
        by the broker's entry count only)."""
        self._set(namespace, DEDUP_SNAPSHOT_INTERVAL, whole("seconds", seconds, 0))

    def get_namespace_deduplication_snapshot_interval(self, namespace: str) -> int | None:
        return self._get(namespace, DEDUP_SNAPSHOT_INTERVAL)

    def remove_namespace_deduplication_snapshot_interval(self, namespace: str) -> None:
        self._set(namespace, DEDUP_SNAPSHOT_INTERVAL, None)

    # --- schemas and encryption ---------------------------------------------------------------------
    def set_namespace_encryption_required(self, namespace: str, required: bool) -> None:
        """Refuse producers and messages that are not encrypted (``EncryptionRequired``)."""
        self._set(namespace, ENCRYPTION_REQUIRED, _flag("required", required))

    def get_namespace_encryption_required(self, namespace: str) -> bool:
        return bool(self._get(namespace, ENCRYPTION_REQUIRED))

    def set_namespace_schema_validation_enforced(self, namespace: str, enforced: bool) -> None:
        """On a topic with a schema, refuse messages sent without one (``IncompatibleSchema``)."""
        self._set(namespace, SCHEMA_VALIDATION_ENFORCED, _flag("enforced", enforced))

    def get_namespace_schema_validation_enforced(self, namespace: str) -> bool:
        return bool(self._get(namespace, SCHEMA_VALIDATION_ENFORCED))

    def set_namespace_is_allow_auto_update_schema(self, namespace: str, allowed: bool) -> None:
        """Whether producers and consumers may register new schema versions (not allowed: only the admin API
        uploads them, and a client bringing a new one is refused with ``IncompatibleSchema``)."""
        self._set(namespace, AUTO_UPDATE_SCHEMA, _flag("allowed", allowed))

    def get_namespace_is_allow_auto_update_schema(self, namespace: str) -> bool:
        return bool(self._get(namespace, AUTO_UPDATE_SCHEMA))

    def set_namespace_schema_auto_update_strategy(self, namespace: str, strategy: str) -> None:
        """Pulsar's deprecated ``SchemaAutoUpdateCompatibilityStrategy`` (``Full``, ``Backward``, ...,
        ``AutoUpdateDisabled``): the compatibility strategy while ``schemaCompatibilityStrategy`` is
        ``UNDEFINED``."""
        self._set(namespace, AUTO_UPDATE_STRATEGY, _choice("strategy", strategy, AUTO_UPDATE_STRATEGIES))

    def get_namespace_schema_auto_update_strategy(self, namespace: str) -> str:
        return self._get(namespace, AUTO_UPDATE_STRATEGY)

    # --- a topic's own delivery, subscription and schema policies (over its namespace's) ------------
    def set_topic_delayed_delivery(self, topic: str, enabled: bool, tick_time_ms: int = 1000,
                                   max_delivery_delay_ms: int = 0) -> None:
        """:meth:`set_namespace_delayed_delivery` for one topic (REST ``.../{topic}/delayedDelivery``)."""
        self._set_topic(topic, DELAYED_DELIVERY, _delayed(enabled, tick_time_ms, max_delivery_delay_ms))

    def get_topic_delayed_delivery(self, topic: str) -> dict[str, Any] | None:
        """The topic's own (None: its namespace's or the broker's applies)."""
        return self._get_topic(topic, DELAYED_DELIVERY)

    def remove_topic_delayed_delivery(self, topic: str) -> None:
        self._set_topic(topic, DELAYED_DELIVERY, None)

    def set_topic_inactive_topic_policies(self, topic: str, delete_mode: str, max_inactive_duration_seconds: int,
                                          delete_while_inactive: bool) -> None:
        self._set_topic(topic, INACTIVE_TOPIC_POLICIES, {
            "inactiveTopicDeleteMode": _choice("delete_mode", delete_mode, DELETE_MODES),
            "maxInactiveDurationSeconds": whole("max_inactive_duration_seconds", max_inactive_duration_seconds, 0),
            "deleteWhileInactive": _flag("delete_while_inactive", delete_while_inactive)})

    def get_topic_inactive_topic_policies(self, topic: str) -> dict[str, Any] | None:
        return self._get_topic(topic, INACTIVE_TOPIC_POLICIES)

    def remove_topic_inactive_topic_policies(self, topic: str) -> None:
        self._set_topic(topic, INACTIVE_TOPIC_POLICIES, None)

    def set_topic_subscription_types_enabled(self, topic: str, types: Iterable[str]) -> None:
        items = [types] if isinstance(types, str) else list(types)
        self._set_topic(topic, SUBSCRIPTION_TYPES_ENABLED,
                        sorted({_choice("types", t, SUBSCRIPTION_TYPES) for t in items}))

    def get_topic_subscription_types_enabled(self, topic: str) -> list[str] | None:
        return self._get_topic(topic, SUBSCRIPTION_TYPES_ENABLED)

    def remove_topic_subscription_types_enabled(self, topic: str) -> None:
        self._set_topic(topic, SUBSCRIPTION_TYPES_ENABLED, None)

    def set_topic_auto_subscription_creation(self, topic: str, allow: bool) -> None:
        self._set_topic(topic, AUTO_SUBSCRIPTION_CREATION, {"allowAutoSubscriptionCreation": _flag("allow", allow)})

    def get_topic_auto_subscription_creation(self, topic: str) -> dict[str, bool] | None:
        return self._get_topic(topic, AUTO_SUBSCRIPTION_CREATION)

    def remove_topic_auto_subscription_creation(self, topic: str) -> None:
        self._set_topic(topic, AUTO_SUBSCRIPTION_CREATION, None)

    def set_topic_deduplication_snapshot_interval(self, topic: str, seconds: int) -> None:
        self._set_topic(topic, DEDUP_SNAPSHOT_INTERVAL, whole("seconds", seconds, 0))

    def get_topic_deduplication_snapshot_interval(self, topic: str) -> int | None:
        return self._get_topic(topic, DEDUP_SNAPSHOT_INTERVAL)

    def remove_topic_deduplication_snapshot_interval(self, topic: str) -> None:
        self._set_topic(topic, DEDUP_SNAPSHOT_INTERVAL, None)

    def set_topic_schema_compatibility_strategy(self, topic: str, strategy: str) -> None:
        """The topic's own ``schemaCompatibilityStrategy`` (``UNDEFINED`` removes it, as Pulsar's)."""
        strategy = _text("strategy", strategy).upper()
        self._set_topic(topic, "schemaCompatibilityStrategy", None if strategy == "UNDEFINED" else strategy)

    def get_topic_schema_compatibility_strategy(self, topic: str) -> str:
        """The topic's own (``UNDEFINED``: none, its namespace's applies)."""
        return self._get_topic(topic, "schemaCompatibilityStrategy") or "UNDEFINED"

    def remove_topic_schema_compatibility_strategy(self, topic: str) -> None:
        self._set_topic(topic, "schemaCompatibilityStrategy", None)

    def set_topic_schema_validation_enforced(self, topic: str, enforced: bool) -> None:
        self._set_topic(topic, SCHEMA_VALIDATION_ENFORCED, _flag("enforced", enforced))

    def get_topic_schema_validation_enforced(self, topic: str) -> bool:
        return bool(self._get_topic(topic, SCHEMA_VALIDATION_ENFORCED))

    # --- operations and properties ------------------------------------------------------------------
    def _namespace(self, method: str, namespace: str) -> Any:
        return self._wire.unary(method, broker_pb2.NamespaceRequest(namespace=namespace))

    def unload_namespace(self, namespace: str) -> None:
        """Unload every loaded topic of the namespace: its producers and consumers are disconnected and
        reconnect (the topics load again)."""
        self._namespace("UnloadNamespace", namespace)

    def get_namespace_bundles(self, namespace: str) -> dict[str, Any]:
        """Pulsar's ``BundlesData``: ``{"boundaries": [...], "numBundles": n}``."""
        return self._namespace("GetNamespaceBundles", namespace)

    def get_namespace_properties(self, namespace: str) -> dict[str, str]:
        return self._namespace("GetNamespaceProperties", namespace) or {}

    def set_namespace_properties(self, namespace: str, properties: dict[str, str]) -> None:
        """Add (or replace) these properties; the others stay."""
        if not isinstance(properties, dict) or not all(isinstance(k, str) and k and isinstance(v, str)
                                                       for k, v in properties.items()):
            raise ValueError(f"properties={properties!r} is not valid; use a dict of str to str"[:300])
        self._wire.unary("SetNamespaceProperties", broker_pb2.NamespacePropertiesRequest(
            namespace=namespace, properties=properties))

    def clear_namespace_properties(self, namespace: str) -> None:
        self._namespace("ClearNamespaceProperties", namespace)

    def set_namespace_property(self, namespace: str, key: str, value: str) -> None:
        self._wire.unary("SetNamespaceProperty", broker_pb2.NamespacePropertyRequest(
            namespace=namespace, key=_text("key", key), value=_text("value", value)))

    def get_namespace_property(self, namespace: str, key: str) -> str | None:
        return self._wire.unary("GetNamespaceProperty", broker_pb2.NamespacePropertyRequest(
            namespace=namespace, key=_text("key", key)))

    def remove_namespace_property(self, namespace: str, key: str) -> None:
        self._wire.unary("RemoveNamespaceProperty", broker_pb2.NamespacePropertyRequest(
            namespace=namespace, key=_text("key", key)))
