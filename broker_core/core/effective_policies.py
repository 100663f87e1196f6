"""A topic's effective policies (topic, partitioned base, namespace, then the broker's defaults) and their
application to a loaded topic."""
from __future__ import annotations

from broker_core.config import BrokerConfig
from broker_core.core.policies import PoliciesStore
from broker_core.core.retention_rules import RetentionPolicy
from broker_core.core.topic_protocol import StoredTopic, Topic, stored
from broker_core.types import TopicName


class EffectivePolicies:
    """Reads ``policies`` with ``config``'s values as the defaults."""

    def __init__(self, policies: PoliciesStore, config: BrokerConfig) -> None:
        self._policies = policies
        self._config = config

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

    def apply_limits(self, topic: Topic) -> None:
        topic.max_producers = int(self._policies.resolve(topic.name, "maxProducersPerTopic",
                                                         self._config.maxProducersPerTopic))
        topic.max_consumers = int(self._policies.resolve(topic.name, "maxConsumersPerTopic",
                                                         self._config.maxConsumersPerTopic))

    def apply(self, topic: Topic) -> None:
        """Apply every policy to a loaded topic (after a policy changed)."""
        topic.set_deduplication(self.deduplication_enabled(topic.name))
        if topic.persistent:
            self.apply_retention(stored(topic, "retention"))
        self.apply_limits(topic)
