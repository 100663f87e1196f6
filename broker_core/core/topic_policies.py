"""The namespace and topic policies a loaded topic enforces itself, resolved by the registry
(:class:`~broker_core.core.effective_policies.EffectivePolicies`) into one frozen :class:`TopicPolicies` and
set on the topic when it loads and whenever a policy changes (``topic.policies = ...``). Both kinds of topic
check subscribes with :meth:`TopicPolicies.check_subscribe` and each sent entry with
:meth:`TopicPolicies.check_entry`, so the binary and gRPC front ends refuse alike, with Pulsar's errors:

==================================  ==========================================================================
``subscriptionTypesEnabled``        another type: ``NotAllowedError`` ("Topic[t] doesn't support Shared sub
                                    type!")
``autoSubscriptionCreation``        a consumer of a durable subscription that does not exist (persistent
                                    topics): ``SubscriptionNotFound`` ("Subscription does not exist")
``maxSubscriptionsPerTopic``        a new subscription beyond it: ``NotAllowedError`` ("Exceed the maximum
                                    number of subscriptions of the topic")
``maxConsumersPerSubscription``     one more consumer: ``ConsumerBusy`` ("Subscription reached max consumers
                                    limit")
``encryptionRequired``              an entry without encryption keys: ``EncryptionRequired`` ("Messages must
                                    be encrypted"; a ``NotAllowedError`` on the binary protocol, where Pulsar
                                    answers ``MetadataError``)
``schemaValidationEnforced``        on a topic with a schema, an entry without a schema version:
                                    ``IncompatibleSchema``
``delayedDelivery``                 while active, a message delayed more than ``maxDeliveryDelayInMillis``
                                    after its publish time: ``NotAllowedError`` ("Exceeds max allowed
                                    delivery delay of N milliseconds")
``maxMessageSize`` (a topic's)      an entry (not a chunk) larger: ``MessageTooBig`` ("Exceed maximum message
                                    size", a ``NotAllowedError`` on the binary protocol as Pulsar's
                                    ``NotAllowedException``; the broker's ``maxMessageSize`` is checked before)
==================================  ==========================================================================

The unacked limits and delayed delivery are the subscriptions' (dispatch): a persistent topic hands them on.

Example: ``TopicPolicies(max_subscriptions=1).check_subscribe("t", "s2", SubType.SHARED, exists=False,
durable=True, persistent=True, subscriptions=1, consumers=0)`` raises ``NotAllowedError``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from broker_core.config import SUBSCRIPTION_TYPES, BrokerConfig
from broker_core.errors import (ConsumerBusy, EncryptionRequired, IncompatibleSchema, MessageTooBig,
                                NotAllowedError, SubscriptionNotFound)
from dispatch.types import DelayedDelivery, SubType

SCHEMA_REQUIRED = ("Producers cannot connect or send message without a schema to topics with a schema if"
                   " SchemaValidationEnforced is enabled")
"""Pulsar's reason, word for word."""


@dataclass(frozen=True)
class TopicPolicies:
    """What one topic partition enforces (each field names its policy; 0: no limit)."""

    max_subscriptions: int = 0
    """``maxSubscriptionsPerTopic``."""
    max_consumers_per_subscription: int = 0
    """``maxConsumersPerSubscription``."""
    subscription_types: frozenset[str] = frozenset(SUBSCRIPTION_TYPES)
    """``subscriptionTypesEnabled``."""
    auto_subscription_creation: bool = True
    """``autoSubscriptionCreation`` (``allowAutoSubscriptionCreation``)."""
    max_unacked_per_consumer: int = 50000
    """``maxUnackedMessagesPerConsumer`` (Shared and Key_Shared)."""
    max_unacked_per_subscription: int = 200000
    """``maxUnackedMessagesPerSubscription`` (Shared and Key_Shared)."""
    delayed_delivery: DelayedDelivery = field(default_factory=DelayedDelivery)
    """``delayedDelivery``: active, and the tracker's tick."""
    max_delivery_delay_ms: int = 0
    """``delayedDelivery``'s ``maxDeliveryDelayInMillis`` (0: no limit; only while delayed delivery is on)."""
    encryption_required: bool = False
    """``encryptionRequired``."""
    schema_validation_enforced: bool = False
    """``schemaValidationEnforced``."""
    max_message_size: int = 0
    """The topic's ``maxMessageSize`` (0: only the broker's applies)."""
    has_schema: Callable[[], bool] = lambda: False
    """Whether the topic has a schema now (asked only for an entry without a schema version, when enforced)."""

    def check_subscribe(self, topic: str, subscription: str, sub_type: SubType, *, exists: bool, durable: bool,
                        persistent: bool, subscriptions: int, consumers: int) -> None:
        """Refuse a consumer joining ``subscription`` (``exists``: it does; ``subscriptions``: the topic's
        count; ``consumers``: the subscription's)."""
        if str(sub_type) not in self.subscription_types:
            raise NotAllowedError(f"Topic[{topic}] doesn't support {sub_type} sub type! Its namespace enables"
                                  f" {', '.join(sorted(self.subscription_types))} (subscriptionTypesEnabled)",
                                  topic=topic, sub_type=str(sub_type))
        if not exists:
            if durable and persistent and not self.auto_subscription_creation:
                raise SubscriptionNotFound(f"Subscription does not exist: {subscription[:200]!r} on {topic}, and"
                                           " auto subscription creation is disabled; create it with the admin"
                                           " API", topic=topic, subscription=subscription[:200])
            if self.max_subscriptions and subscriptions >= self.max_subscriptions:
                raise NotAllowedError(f"Exceed the maximum number of subscriptions of the topic: {topic}"
                                      f" ({self.max_subscriptions}, maxSubscriptionsPerTopic)", topic=topic,
                                      limit=self.max_subscriptions)
        elif self.max_consumers_per_subscription and consumers >= self.max_consumers_per_subscription:
            raise ConsumerBusy(f"Subscription reached max consumers limit: {subscription[:200]!r} on {topic} has"
                               f" {consumers} ({self.max_consumers_per_subscription},"
                               " maxConsumersPerSubscription)", topic=topic,
                               limit=self.max_consumers_per_subscription)

    @property
    def checks_entries(self) -> bool:
        """Whether :meth:`check_entry` can refuse anything (publishing skips it otherwise)."""
        return self.encryption_required or self.schema_validation_enforced or bool(self.max_message_size) \
            or bool(self.max_delivery_delay_ms and self.delayed_delivery.enabled)

    def check_entry(self, topic: str, metadata: Any, size: int = 0) -> None:
        """Refuse one sent entry by its ``MessageMetadata`` and its ``size`` in bytes."""
        if self.max_message_size and size > self.max_message_size and metadata.num_chunks_from_msg <= 1:
            raise MessageTooBig(f"Exceed maximum message size: {size} bytes on {topic}, whose maxMessageSize is"
                                f" {self.max_message_size}; send smaller messages or enable chunking",
                                size=size, limit=self.max_message_size, topic=topic)
        if self.encryption_required and not metadata.encryption_keys:
            raise EncryptionRequired(f"Messages must be encrypted: {topic} requires encryption"
                                     " (encryptionRequired)", topic=topic)
        if self.schema_validation_enforced and not metadata.schema_version and self.has_schema():
            raise IncompatibleSchema(f"{SCHEMA_REQUIRED}: {topic}", topic=topic)
        limit = self.max_delivery_delay_ms
        if limit and self.delayed_delivery.enabled and metadata.HasField("deliver_at_time") \
                and metadata.deliver_at_time - metadata.publish_time > limit:
            raise NotAllowedError(f"Exceeds max allowed delivery delay of {limit} milliseconds: {topic}"
                                  " (maxDeliveryDelayInMillis)", topic=topic, limit=limit)


def of_config(config: BrokerConfig) -> TopicPolicies:
    """The broker's defaults, before any policy (a topic built outside the registry keeps them)."""
    return TopicPolicies(
        max_subscriptions=config.maxSubscriptionsPerTopic,
        max_consumers_per_subscription=config.maxConsumersPerSubscription,
        subscription_types=frozenset(t.strip() for t in config.subscriptionTypesEnabled.split(",") if t.strip()),
        auto_subscription_creation=config.allowAutoSubscriptionCreation,
        max_unacked_per_consumer=config.maxUnackedMessagesPerConsumer,
        max_unacked_per_subscription=config.maxUnackedMessagesPerSubscription,
        delayed_delivery=DelayedDelivery(config.delayedDeliveryEnabled, config.delayedDeliveryTickTimeMillis,
                                         config.isDelayedDeliveryDeliverAtTimeStrict),
        max_delivery_delay_ms=config.delayedDeliveryMaxDelayInMillis,
        schema_validation_enforced=config.isSchemaValidationEnforced)
