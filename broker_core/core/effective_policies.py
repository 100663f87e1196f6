"""A topic's effective policies (topic, partitioned base, namespace, then the broker's defaults) and their
application to a loaded topic."""
from __future__ import annotations

from typing import Callable

from broker_core.config import BrokerConfig
from broker_core.core import policy_checks as checks
from broker_core.core.policies import PoliciesStore
from broker_core.core.retention_rules import RetentionPolicy
from broker_core.core.topic_policies import TopicPolicies
from broker_core.core.topic_protocol import StoredTopic, Topic, stored
from broker_core.types import TopicName
from dispatch.types import DelayedDelivery


class EffectivePolicies:
    """Reads ``policies`` with ``config``'s values as the defaults."""

    def __init__(self, policies: PoliciesStore, config: BrokerConfig,
                 has_schema: Callable[[TopicName], bool] = lambda name: False) -> None:
        """``has_schema(name)``: whether a topic has a schema now (``schemaValidationEnforced`` asks it)."""
        self._policies = policies
        self._config = config
        self._has_schema = has_schema

    def deduplication_enabled(self, name: TopicName) -> bool:
        return bool(self._policies.resolve(name, "deduplicationEnabled", self._config.brokerDeduplicationEnabled))

    def retention_policy(self, name: TopicName) -> RetentionPolicy:
        """The effective retention of ``name``: topic, partitioned base, namespace, broker defaults."""
        return RetentionPolicy.of(self._policies.resolve(name, "retention", None),
                                  self._config.defaultRetentionTimeInMinutes, self._config.defaultRetentionSizeInMB)

    def message_ttl_seconds(self, name: TopicName) -> int:
        return int(self._policies.resolve(name, "messageTTLInSeconds", self._config.ttlDurationDefaultInSeconds))

    def subscription_expiration_minutes(self, name: TopicName) -> int:
        return int(self._policies.resolve(name, "subscriptionExpirationTimeMinutes",
                                          self._config.subscriptionExpirationTimeMinutes))

    def apply_retention(self, topic: StoredTopic) -> None:
        topic.set_retention_policies(self.retention_policy(topic.name), self.message_ttl_seconds(topic.name))
        topic.subscription_expiration_minutes = self.subscription_expiration_minutes(topic.name)
        topic.compaction.threshold = int(self._policies.resolve(
            topic.name, "compactionThreshold", self._config.brokerServiceCompactionThresholdInBytes))
        topic.deduplication_snapshot_seconds = int(self._policies.resolve(
            topic.name, checks.DEDUP_SNAPSHOT_INTERVAL, self._config.brokerDeduplicationSnapshotIntervalSeconds))

    def apply_limits(self, topic: Topic) -> None:
        topic.max_producers = int(self._policies.resolve(topic.name, "maxProducersPerTopic",
                                                         self._config.maxProducersPerTopic))
        topic.max_consumers = int(self._policies.resolve(topic.name, "maxConsumersPerTopic",
                                                         self._config.maxConsumersPerTopic))
        topic.policies = self.topic_policies(topic.name)

    def topic_policies(self, name: TopicName) -> TopicPolicies:
        """What a loaded topic enforces itself (:mod:`broker_core.core.topic_policies`)."""
        config, resolve = self._config, self._policies.resolve
        types = resolve(name, checks.SUBSCRIPTION_TYPES_ENABLED, None) or [
            t.strip() for t in config.subscriptionTypesEnabled.split(",") if t.strip()]
        auto = resolve(name, checks.AUTO_SUBSCRIPTION_CREATION, None)
        delayed = resolve(name, checks.DELAYED_DELIVERY, None)
        return TopicPolicies(
            max_subscriptions=int(resolve(name, checks.MAX_SUBSCRIPTIONS_PER_TOPIC, config.maxSubscriptionsPerTopic)),
            max_consumers_per_subscription=int(resolve(name, checks.MAX_CONSUMERS_PER_SUBSCRIPTION,
                                                       config.maxConsumersPerSubscription)),
            subscription_types=frozenset(types),
            auto_subscription_creation=(auto["allowAutoSubscriptionCreation"] if auto is not None
                                        else config.allowAutoSubscriptionCreation),
            max_unacked_per_consumer=int(resolve(name, checks.MAX_UNACKED_PER_CONSUMER,
                                                 config.maxUnackedMessagesPerConsumer)),
            max_unacked_per_subscription=int(resolve(name, checks.MAX_UNACKED_PER_SUBSCRIPTION,
                                                     config.maxUnackedMessagesPerSubscription)),
            delayed_delivery=DelayedDelivery(
                delayed["active"] if delayed is not None else config.delayedDeliveryEnabled,
                delayed["tickTime"] if delayed is not None else config.delayedDeliveryTickTimeMillis,
                config.isDelayedDeliveryDeliverAtTimeStrict),
            max_delivery_delay_ms=(delayed.get("maxDeliveryDelayInMillis", 0) if delayed is not None
                                   else config.delayedDeliveryMaxDelayInMillis),
            encryption_required=bool(resolve(name, checks.ENCRYPTION_REQUIRED, False)),
            schema_validation_enforced=bool(resolve(name, checks.SCHEMA_VALIDATION_ENFORCED,
                                                    config.isSchemaValidationEnforced)),
            max_message_size=int(resolve(name, checks.MAX_MESSAGE_SIZE, 0)),
            has_schema=lambda: self._has_schema(name))

    def apply(self, topic: Topic) -> None:
        """Apply every policy to a loaded topic (after a policy changed)."""
        topic.set_deduplication(self.deduplication_enabled(topic.name))
        if topic.persistent:
            self.apply_retention(stored(topic, "retention"))
        self.apply_limits(topic)
