"""The validators of the namespace policies Pulsar's ``Policies`` holds beside the first ones of
:mod:`broker_core.core.policies` (which registers these in its ``POLICIES``): each takes the policy's key and
its value as JSON decodes it, and returns the value stored or raises ``InvalidConfiguration`` naming the key
(REST 412). Pulsar's names and shapes:

======================================  ==============================================================
``autoSubscriptionCreation``            ``{"allowAutoSubscriptionCreation": bool}``
``delayedDelivery``                     ``{"tickTime": ms >= 0, "active": bool,
                                        "maxDeliveryDelayInMillis": ms >= 0}`` (0: no limit)
``inactiveTopicPolicies``               ``{"inactiveTopicDeleteMode": mode, "maxInactiveDurationSeconds":
                                        s >= 0, "deleteWhileInactive": bool}``
``maxConsumersPerSubscription``,        integers >= 0 (0: no limit; ``maxMessageSize``, a topic's only, 0:
``maxUnackedMessagesPerConsumer``,      the broker's, and at most the broker's ``maxMessageSize``, which
``maxUnackedMessagesPerSubscription``,  the admin core checks: it knows the broker's configuration)
``maxSubscriptionsPerTopic``,
``maxTopicsPerNamespace``,
``deduplicationSnapshotIntervalSeconds``,
``maxMessageSize``
``subscriptionAuthMode``                ``None`` or ``Prefix``
``encryptionRequired``,                 booleans
``isAllowAutoUpdateSchema``,
``schemaValidationEnforced``
``schemaAutoUpdateCompatibilityStrategy``  one of :data:`AUTO_UPDATE_STRATEGIES`
``subscriptionTypesEnabled``            a list of ``Exclusive``, ``Shared``, ``Failover``, ``Key_Shared``
                                        (stored sorted, once each; empty: the broker's)
``properties``                          ``{key: value}``, strings
``subscriptionAuthRoles``               ``{subscription: [role, ...]}`` (``grant-subscription-permission``)
======================================  ==============================================================
"""
from __future__ import annotations

from typing import Any, Callable

from broker_core.config import INACTIVE_TOPIC_MODES, SUBSCRIPTION_TYPES
from broker_core.errors import InvalidConfiguration

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
PROPERTIES = "properties"
SUBSCRIPTION_AUTH_ROLES = "subscriptionAuthRoles"

AUTH_MODES = ("None", "Prefix")
"""Pulsar's ``SubscriptionAuthMode``: ``Prefix`` makes a role's subscriptions start with its name."""
AUTO_UPDATE_STRATEGIES = {"AutoUpdateDisabled": "ALWAYS_INCOMPATIBLE", "Backward": "BACKWARD",
                          "Forward": "FORWARD", "Full": "FULL", "AlwaysCompatible": "ALWAYS_COMPATIBLE",
                          "BackwardTransitive": "BACKWARD_TRANSITIVE", "ForwardTransitive": "FORWARD_TRANSITIVE",
                          "FullTransitive": "FULL_TRANSITIVE"}
"""Pulsar's deprecated ``SchemaAutoUpdateCompatibilityStrategy`` -> the compatibility strategy it stands for
while ``schemaCompatibilityStrategy`` is ``UNDEFINED`` (``SchemaCompatibilityStrategy.fromAutoUpdatePolicy``)."""
MAX_PROPERTIES = 1000
"""The most properties a namespace holds (each key and value at most :data:`MAX_PROPERTY_CHARS`)."""
MAX_PROPERTY_CHARS = 4096


def _refused(key: str, expected: str, value: Any) -> InvalidConfiguration:
    return InvalidConfiguration(f"policy {key} takes {expected}, not {value!r}"[:400], key=key)


def flag(key: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise _refused(key, "true or false", value)
    return value


def count(key: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise _refused(key, "an integer >= 0", value)
    return value


def _one_of(choices: Any) -> Callable[[str, Any], str]:
    def check(key: str, value: Any) -> str:
        if not isinstance(value, str) or value not in choices:
            raise _refused(key, f"one of {', '.join(choices)}", value)
        return value
    return check


def _fields(key: str, value: Any, fields: dict[str, Callable[[str, Any], Any]]) -> dict[str, Any]:
    """``value`` as an object with exactly ``fields``, each checked."""
    if not isinstance(value, dict) or set(value) != set(fields):
        raise _refused(key, "{" + ", ".join(f"{name!r}: ..." for name in fields) + "}", value)
    return {name: check(f"{key}.{name}", value[name]) for name, check in fields.items()}


def auto_subscription_creation(key: str, value: Any) -> dict[str, bool]:
    """Pulsar's ``AutoSubscriptionCreationOverride``."""
    return _fields(key, value, {"allowAutoSubscriptionCreation": flag})


def delayed_delivery(key: str, value: Any) -> dict[str, Any]:
    """Pulsar's ``DelayedDeliveryPolicies``: the tracker's tick in ms, whether delays are honoured and the
    longest delay a message may ask (``maxDeliveryDelayInMillis``, 0: any; 0 when not sent, as Pulsar's)."""
    if isinstance(value, dict) and "maxDeliveryDelayInMillis" not in value:
        value = {**value, "maxDeliveryDelayInMillis": 0}
    return _fields(key, value, {"tickTime": count, "active": flag, "maxDeliveryDelayInMillis": count})


def inactive_topic_policies(key: str, value: Any) -> dict[str, Any]:
    """Pulsar's ``InactiveTopicPolicies``."""
    return _fields(key, value, {"inactiveTopicDeleteMode": _one_of(INACTIVE_TOPIC_MODES),
                                "maxInactiveDurationSeconds": count, "deleteWhileInactive": flag})


def subscription_types(key: str, value: Any) -> list[str]:
    if not isinstance(value, list) or len(value) > len(SUBSCRIPTION_TYPES) * 4:
        raise _refused(key, f"a list of {', '.join(SUBSCRIPTION_TYPES)}", value)
    check = _one_of(SUBSCRIPTION_TYPES)
    return sorted({check(key, item) for item in value})


def properties(key: str, value: Any) -> dict[str, str]:
    if not isinstance(value, dict) or len(value) > MAX_PROPERTIES:
        raise _refused(key, f"an object of at most {MAX_PROPERTIES} string properties", value)
    for name, setting in value.items():
        if not name or not isinstance(setting, str) or len(name) > MAX_PROPERTY_CHARS \
                or len(setting) > MAX_PROPERTY_CHARS:
            raise _refused(key, f"non-empty string keys and string values of at most {MAX_PROPERTY_CHARS}"
                                " characters", {name: setting})
    return dict(value)


def subscription_auth_roles(key: str, value: Any) -> dict[str, list[str]]:
    if not isinstance(value, dict):
        raise _refused(key, "{subscription: [role, ...]}", value)
    found = {}
    for subscription, roles in value.items():
        if not subscription or not isinstance(roles, list) or not roles or not all(
                isinstance(role, str) and role.strip() for role in roles):
            raise _refused(key, "{subscription: [role, ...]} with non-empty roles", {subscription: roles})
        found[subscription] = sorted(set(roles))
    return found


CHECKS: dict[str, Callable[[str, Any], Any]] = {
    AUTO_SUBSCRIPTION_CREATION: auto_subscription_creation,
    DELAYED_DELIVERY: delayed_delivery,
    INACTIVE_TOPIC_POLICIES: inactive_topic_policies,
    MAX_CONSUMERS_PER_SUBSCRIPTION: count,
    MAX_UNACKED_PER_CONSUMER: count,
    MAX_UNACKED_PER_SUBSCRIPTION: count,
    MAX_SUBSCRIPTIONS_PER_TOPIC: count,
    MAX_TOPICS_PER_NAMESPACE: count,
    MAX_MESSAGE_SIZE: count,
    DEDUP_SNAPSHOT_INTERVAL: count,
    SUBSCRIPTION_AUTH_MODE: _one_of(AUTH_MODES),
    ENCRYPTION_REQUIRED: flag,
    AUTO_UPDATE_SCHEMA: flag,
    SCHEMA_VALIDATION_ENFORCED: flag,
    AUTO_UPDATE_STRATEGY: _one_of(tuple(AUTO_UPDATE_STRATEGIES)),
    SUBSCRIPTION_TYPES_ENABLED: subscription_types,
    PROPERTIES: properties,
    SUBSCRIPTION_AUTH_ROLES: subscription_auth_roles,
}
"""Each key's validator, ``(key, value) -> value stored``."""
