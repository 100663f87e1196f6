"""A topic policy in force, as Pulsar answers ``GET .../{topic}/{policy}?applied=true``: the topic's own value
(or its partitioned topic's), else its namespace's, else the broker's configuration.

:data:`BROKER_DEFAULTS` gives, for each policy key of the store, the broker's value in Pulsar's body shape (the
same configuration keys :class:`~broker_core.core.effective_policies.EffectivePolicies` enforces with). A key
without a row has no broker value worth answering (``encryptionRequired``: never by default) or is not listed yet:
:func:`applied` answers None for it, which the routes refuse (501) rather than answer an inherited guess.

Example: a namespace with ``messageTTL`` 120 and a topic with none: ``applied(..., "messageTTLInSeconds")`` is
120; without the namespace's it is the broker's ``ttlDurationDefaultInSeconds`` (0).
"""
from __future__ import annotations

from typing import Any, Callable

from broker_core.config import BrokerConfig
from broker_core.core import policy_checks as checks
from broker_core.core.policies import PoliciesStore
from broker_core.types import TopicName


def _types(config: BrokerConfig) -> list[str]:
    return [t.strip() for t in config.subscriptionTypesEnabled.split(",") if t.strip()]


BROKER_DEFAULTS: dict[str, Callable[[BrokerConfig], Any]] = {
    "retention": lambda c: {"retentionTimeInMinutes": c.defaultRetentionTimeInMinutes,
                            "retentionSizeInMB": c.defaultRetentionSizeInMB},
    "messageTTLInSeconds": lambda c: c.ttlDurationDefaultInSeconds,
    "deduplicationEnabled": lambda c: c.brokerDeduplicationEnabled,
    "maxProducersPerTopic": lambda c: c.maxProducersPerTopic,
    "maxConsumersPerTopic": lambda c: c.maxConsumersPerTopic,
    "compactionThreshold": lambda c: c.brokerServiceCompactionThresholdInBytes,
    checks.DEDUP_SNAPSHOT_INTERVAL: lambda c: c.brokerDeduplicationSnapshotIntervalSeconds,
    checks.MAX_SUBSCRIPTIONS_PER_TOPIC: lambda c: c.maxSubscriptionsPerTopic,
    checks.MAX_CONSUMERS_PER_SUBSCRIPTION: lambda c: c.maxConsumersPerSubscription,
    checks.MAX_UNACKED_PER_CONSUMER: lambda c: c.maxUnackedMessagesPerConsumer,
    checks.MAX_UNACKED_PER_SUBSCRIPTION: lambda c: c.maxUnackedMessagesPerSubscription,
    checks.MAX_MESSAGE_SIZE: lambda c: c.maxMessageSize,
    checks.SUBSCRIPTION_TYPES_ENABLED: _types,
    checks.AUTO_SUBSCRIPTION_CREATION: lambda c: {"allowAutoSubscriptionCreation": c.allowAutoSubscriptionCreation},
    checks.DELAYED_DELIVERY: lambda c: {"tickTime": c.delayedDeliveryTickTimeMillis,
                                        "active": c.delayedDeliveryEnabled,
                                        "maxDeliveryDelayInMillis": c.delayedDeliveryMaxDelayInMillis},
    checks.SCHEMA_VALIDATION_ENFORCED: lambda c: c.isSchemaValidationEnforced,
}
"""Policy key -> the broker's value, from its configuration, in the body Pulsar answers."""


def applied(policies: PoliciesStore, config: BrokerConfig, topic: TopicName, key: str) -> Any:
    """The value of ``key`` in force on ``topic``; None when the key has no row in :data:`BROKER_DEFAULTS`."""
    default = BROKER_DEFAULTS.get(key)
    if default is None:
        return None
    value = policies.resolve(topic, key, None)
    return default(config) if value is None else value
