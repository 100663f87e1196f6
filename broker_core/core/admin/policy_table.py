"""The namespace and topic policies the admin API serves, as one table: each policy's key in the broker's
:class:`~broker_core.core.policies.PoliciesStore`, the JSON type its body takes, its REST path segments under a
namespace and under a topic, its field in Pulsar's ``Policies`` and how Pulsar sets it. The REST routes are
registered from it (:mod:`broker_core.frontends.http.admin.policy_routes`), ``GET namespaces/{t}/{ns}`` is
rendered from it, and the gRPC ``SetPolicy`` checks a value's type by it, so the two answer alike.

A value's type is checked here (``InvalidMessage``: 400 naming the field); its range by the store's validator
(``InvalidConfiguration``: 412).

To add a policy (say Pulsar's ``maxUnackedMessagesPerConsumer``):

1. give the store a validator for its key (:data:`broker_core.core.policies.POLICIES`) and make something read
   it (:mod:`broker_core.core.effective_policies` applies a policy to loaded topics);
2. add a row here: ``Policy("maxUnackedMessagesPerConsumer", integer, namespace="maxUnackedMessagesPerConsumer",
   topic="maxUnackedMessagesOnConsumer", pulsar_field="max_unacked_messages_per_consumer")``;
3. nothing else: the REST routes (GET, POST -- and PUT where Pulsar sets it with PUT -- and DELETE under each
   segment), the namespace's ``Policies`` view and gRPC's ``SetPolicy``/``GetPolicies`` follow; the route table
   test (``tests/integration/test_admin_route_table.py``) then counts the new routes as served, and
   ``python scripts/gen_admin_docs.py`` updates the docs' coverage.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from broker_core.core.admin import rate_bodies
from broker_core.core.admin.values import boolean, integer, obj, strings, text
from broker_core.core import policy_checks as checks
from broker_core.core.policies import (AUTO_TOPIC_CREATION, RETENTION_SIZE, RETENTION_TIME, SCHEMA_STRATEGY)
from broker_core.core.rate_policies import (DISPATCH_RATE, PUBLISH_RATE, SUBSCRIBE_RATE,
                                            SUBSCRIPTION_DISPATCH_RATE)


def retention(value: Any, field: str) -> dict:
    """Pulsar's ``RetentionPolicies``; the ranges are the store's to check."""
    value = obj(value, field)
    return {RETENTION_TIME: integer(value.get(RETENTION_TIME), f"{field}.{RETENTION_TIME}"),
            RETENTION_SIZE: integer(value.get(RETENTION_SIZE), f"{field}.{RETENTION_SIZE}")}


@dataclass(frozen=True)
class Policy:
    """One policy of the table."""

    key: str
    """Its key in the :class:`~broker_core.core.policies.PoliciesStore`."""
    body: Callable[[Any, str], Any]
    """The type check of a value (JSON as decoded), ``(value, field) -> value``."""
    namespace: str | None = None
    """Its REST segment under ``/admin/v2/namespaces/{tenant}/{ns}/`` (None: not a namespace route)."""
    topic: str | None = None
    """Its REST segment under ``/admin/v2/{domain}/{tenant}/{ns}/{topic}/`` (None: not a topic route)."""
    pulsar_field: str | None = None
    """Its field in Pulsar's ``Policies`` (``GET /admin/v2/namespaces/{tenant}/{ns}``)."""
    set_with_put: bool = False
    """Pulsar sets the namespace's with PUT (POST is served too, for clients written before)."""
    query: str | None = None
    """A query parameter a topic's value may come in instead of the body (as pulsar-admin sends it)."""
    unset: Any = None
    """What a read answers while it is not set (None: 204 No Content)."""
    per_cluster: bool = False
    """Pulsar's ``Policies`` holds it by cluster (``{"standalone": value}``, the rates'); the REST routes
    answer this broker's cluster's."""
    namespace_methods: tuple[str, ...] = ("GET", "POST", "DELETE")
    """The methods Pulsar serves under the namespace's segment (``set_with_put`` adds PUT)."""
    topic_methods: tuple[str, ...] = ("GET", "POST", "DELETE")
    """The methods Pulsar serves under the topic's segment (PUT and POST both set it)."""
    topic_unset: Any = None
    """What a topic's read answers while the topic has none of its own (None: 204 No Content)."""
    unset_config: str | None = None
    """A broker config key whose value a namespace's read answers while unset (instead of ``unset``)."""
    empty_post_removes: bool = False
    """A namespace's POST without a body removes it (Pulsar's way where it has no DELETE for it)."""
    null_in_policies: bool = False
    """Pulsar's ``Policies`` holds null while it is unset, though its route answers ``unset``."""


POLICIES: tuple[Policy, ...] = (
    Policy("retention", retention, namespace="retention", topic="retention", pulsar_field="retention_policies"),
    Policy("messageTTLInSeconds", integer, namespace="messageTTL", topic="messageTTL",
           pulsar_field="message_ttl_in_seconds", query="messageTTL"),
    Policy("deduplicationEnabled", boolean, namespace="deduplication", topic="deduplicationEnabled",
           pulsar_field="deduplicationEnabled"),
    Policy("subscriptionExpirationTimeMinutes", integer, namespace="subscriptionExpirationTime",
           pulsar_field="subscription_expiration_time_minutes"),
    Policy("maxProducersPerTopic", integer, namespace="maxProducersPerTopic", topic="maxProducers",
           pulsar_field="max_producers_per_topic"),
    Policy("maxConsumersPerTopic", integer, namespace="maxConsumersPerTopic", topic="maxConsumers",
           pulsar_field="max_consumers_per_topic"),
    Policy("compactionThreshold", integer, namespace="compactionThreshold", topic="compactionThreshold",
           pulsar_field="compaction_threshold", set_with_put=True),
    Policy(AUTO_TOPIC_CREATION, lambda value, field: obj(value, "AutoTopicCreationOverride"),
           namespace="autoTopicCreation", pulsar_field="autoTopicCreationOverride"),
    Policy(SCHEMA_STRATEGY, lambda value, field: text(value, "SchemaCompatibilityStrategy"),
           namespace="schemaCompatibilityStrategy", pulsar_field="schema_compatibility_strategy",
           set_with_put=True, unset="UNDEFINED", topic="schemaCompatibilityStrategy",
           topic_methods=("GET", "PUT", "DELETE"), topic_unset="UNDEFINED"),  # PUT UNDEFINED removes it
    Policy(DISPATCH_RATE, rate_bodies.dispatch_rate, namespace="dispatchRate", topic="dispatchRate",
           pulsar_field="topicDispatchRate", per_cluster=True),
    Policy(SUBSCRIPTION_DISPATCH_RATE, rate_bodies.dispatch_rate, namespace="subscriptionDispatchRate",
           topic="subscriptionDispatchRate", pulsar_field="subscriptionDispatchRate", per_cluster=True),
    Policy(PUBLISH_RATE, rate_bodies.publish_rate, namespace="publishRate", topic="publishRate",
           pulsar_field="publishMaxMessageRate", per_cluster=True),
    Policy(SUBSCRIBE_RATE, rate_bodies.subscribe_rate, namespace="subscribeRate", topic="subscribeRate",
           pulsar_field="clusterSubscribeRate", per_cluster=True),
    # the limits (policy_checks' validators; a loaded topic enforces them by topic_policies.TopicPolicies)
    Policy(checks.MAX_CONSUMERS_PER_SUBSCRIPTION, integer, namespace="maxConsumersPerSubscription",
           topic="maxConsumersPerSubscription", pulsar_field="max_consumers_per_subscription"),
    Policy(checks.MAX_UNACKED_PER_CONSUMER, integer, namespace="maxUnackedMessagesPerConsumer",
           topic="maxUnackedMessagesOnConsumer", pulsar_field="max_unacked_messages_per_consumer"),
    Policy(checks.MAX_UNACKED_PER_SUBSCRIPTION, integer, namespace="maxUnackedMessagesPerSubscription",
           topic="maxUnackedMessagesOnSubscription", pulsar_field="max_unacked_messages_per_subscription"),
    Policy(checks.MAX_SUBSCRIPTIONS_PER_TOPIC, integer, namespace="maxSubscriptionsPerTopic",
           topic="maxSubscriptionsPerTopic", pulsar_field="max_subscriptions_per_topic"),
    Policy(checks.MAX_TOPICS_PER_NAMESPACE, integer, namespace="maxTopicsPerNamespace",
           pulsar_field="max_topics_per_namespace", unset=0, null_in_policies=True),
    Policy(checks.MAX_MESSAGE_SIZE, integer, topic="maxMessageSize"),
    # properties have routes of their own (namespace_routes: PUT adds, property/{key}); here for Policies' view
    Policy(checks.PROPERTIES, lambda value, field: obj(value, field), pulsar_field="properties", unset={}),
    # delivery, schema and auth (policy_checks' validators; topic_policies, effective_policies, the registry
    # and the schema registry enforce them)
    Policy(checks.DELAYED_DELIVERY, lambda value, field: obj(value, "DelayedDeliveryPolicies"),
           namespace="delayedDelivery", topic="delayedDelivery", pulsar_field="delayed_delivery_policies"),
    Policy(checks.INACTIVE_TOPIC_POLICIES, lambda value, field: obj(value, "InactiveTopicPolicies"),
           namespace="inactiveTopicPolicies", topic="inactiveTopicPolicies", pulsar_field="inactive_topic_policies"),
    Policy(checks.DEDUP_SNAPSHOT_INTERVAL, integer, namespace="deduplicationSnapshotInterval",
           topic="deduplicationSnapshotInterval", pulsar_field="deduplicationSnapshotIntervalSeconds",
           namespace_methods=("GET", "POST"), empty_post_removes=True),
    Policy(checks.AUTO_SUBSCRIPTION_CREATION, lambda value, field: obj(value, "AutoSubscriptionCreationOverride"),
           namespace="autoSubscriptionCreation", topic="autoSubscriptionCreation",
           pulsar_field="autoSubscriptionCreationOverride"),
    Policy(checks.SUBSCRIPTION_TYPES_ENABLED, strings, namespace="subscriptionTypesEnabled",
           topic="subscriptionTypesEnabled", pulsar_field="subscription_types_enabled", unset=[]),
    Policy(checks.SUBSCRIPTION_AUTH_MODE, text, namespace="subscriptionAuthMode",
           pulsar_field="subscription_auth_mode", namespace_methods=("GET", "POST"), unset="None"),
    Policy(checks.ENCRYPTION_REQUIRED, boolean, namespace="encryptionRequired", pulsar_field="encryption_required",
           namespace_methods=("GET", "POST"), unset=False),
    Policy(checks.SCHEMA_VALIDATION_ENFORCED, boolean, namespace="schemaValidationEnforced",
           topic="schemaValidationEnforced", pulsar_field="schema_validation_enforced",
           namespace_methods=("GET", "POST"), topic_methods=("GET", "POST"), unset=False, topic_unset=False),
    Policy(checks.AUTO_UPDATE_SCHEMA, boolean, namespace="isAllowAutoUpdateSchema",
           pulsar_field="is_allow_auto_update_schema", namespace_methods=("GET", "POST"),
           unset_config="isAllowAutoUpdateSchemaEnabled"),
    Policy(checks.AUTO_UPDATE_STRATEGY, text, namespace="schemaAutoUpdateCompatibilityStrategy",
           pulsar_field="schema_auto_update_compatibility_strategy", namespace_methods=("GET", "PUT"),
           unset="Full"),  # what the broker applies while both are unset (UNDEFINED: FULL)
)
"""Every policy served by segment; the backlog quotas (a map by quota type) have routes of their own."""

BY_KEY = {policy.key: policy for policy in POLICIES}
BY_NAMESPACE_SEGMENT = {policy.namespace: policy for policy in POLICIES if policy.namespace}
BY_TOPIC_SEGMENT = {policy.topic: policy for policy in POLICIES if policy.topic}


def checked(key: str, value: Any) -> Any:
    """``value`` of policy ``key`` with its type checked (a key not in the table goes to the store as it is,
    whose validator refuses an unknown one)."""
    policy = BY_KEY.get(key)
    return value if policy is None or value is None else policy.body(value, key)
