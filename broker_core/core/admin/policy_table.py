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

from broker_core.core.admin.values import boolean, integer, obj, text
from broker_core.core.policies import (AUTO_TOPIC_CREATION, RETENTION_SIZE, RETENTION_TIME, SCHEMA_STRATEGY)


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
           set_with_put=True, unset="UNDEFINED"),
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
