"""What each gRPC method of ``PulsarLike`` needs: the action and the resource it acts on, read from its
(first) request -- the table the admission interceptor (:mod:`broker_core.frontends.grpc.admission`) checks every
call against before the servicer sees it. Actions and the rules behind them:
:mod:`broker_core.security.authorization` (Pulsar's topic, namespace and tenant operations).

A method missing from the table is refused to everyone but super-users, so a new RPC is never open by
accident. Services other than ``PulsarLike`` (the gRPC health check) are not checked, as Pulsar's
``/status.html`` is not.
"""
from __future__ import annotations

from typing import Any, Callable

from broker_core.errors import InvalidMessage
from broker_core.security import ADMIN, CONSUME, LOOKUP, PRODUCE, SUPER
from broker_core.types import TopicName

SERVICE = "/pulsarlike.v1.PulsarLike/"
Resource = Callable[[Any], str]


def _topic(field: str = "topic") -> Resource:
    return lambda request: str(TopicName.parse(getattr(request, field)))


def _scope(scope: Any) -> str:
    if bool(scope.namespace) == bool(scope.topic):
        raise InvalidMessage("a policy or permission applies to a namespace or to a topic: set exactly one")
    return scope.namespace if scope.namespace else str(TopicName.parse(scope.topic))


_TOPIC = _topic()
_NAMESPACE: Resource = lambda request: request.namespace  # noqa: E731
_TENANT: Resource = lambda request: request.tenant  # noqa: E731
_BROKER: Resource = lambda request: ""  # noqa: E731

RULES: dict[str, tuple[Any, Resource]] = {
    "Produce": (PRODUCE, lambda request: str(TopicName.parse(request.open.topic))),
    "Consume": (CONSUME, lambda request: str(TopicName.parse(request.subscribe.topic))),
    # topics
    "GetPartitionedTopicMetadata": (LOOKUP, _TOPIC),
    "LookupTopic": (LOOKUP, _TOPIC),
    "TopicStats": (LOOKUP, _TOPIC),
    "TopicInternalStats": (LOOKUP, _TOPIC),
    "GetLastMessageId": (LOOKUP, _TOPIC),
    "ListTopics": (LOOKUP, _NAMESPACE),
    "ListPartitionedTopics": (LOOKUP, _NAMESPACE),
    "CreatePartitionedTopic": (ADMIN, _TOPIC),
    "UpdatePartitionedTopic": (ADMIN, _TOPIC),
    "CreateTopic": (ADMIN, _TOPIC),
    "DeleteTopic": (ADMIN, _TOPIC),
    "TerminateTopic": (ADMIN, _TOPIC),
    "UnloadTopic": (ADMIN, _TOPIC),
    "Compact": (ADMIN, _TOPIC),  # Pulsar's TopicOperation.COMPACT: the tenant's admins
    "CompactionStatus": (ADMIN, _TOPIC),
    "VerifyTopic": (ADMIN, _TOPIC),  # its stored files: the tenant's admins (as the REST route)
    "VerifyAllTopics": (SUPER, _BROKER),  # every tenant's topics
    # schemas (Pulsar: GET_OR_CREATE_SCHEMA is a producer's, a consumer's check its own; GET_SCHEMA a lookup)
    "GetOrCreateSchema": (lambda request: CONSUME if request.check_only else PRODUCE, _TOPIC),
    "GetSchema": (LOOKUP, _TOPIC),
    # schema admin (pulsar-admin schemas: as the REST API's routes)
    "GetSchemaAdmin": (LOOKUP, _TOPIC),
    "UploadSchema": (ADMIN, _TOPIC),
    "DeleteSchema": (ADMIN, _TOPIC),
    "CheckSchemaCompatibility": (LOOKUP, _TOPIC),
    "GetSchemaVersion": (LOOKUP, _TOPIC),
    # subscriptions (Pulsar: the consume permission)
    "OffsetForTimestamp": (CONSUME, _TOPIC),
    "ListSubscriptions": (CONSUME, _TOPIC),
    "CreateSubscription": (CONSUME, _TOPIC),
    "DeleteSubscription": (CONSUME, _TOPIC),
    "ResetCursor": (CONSUME, _TOPIC),
    "AcknowledgeUpTo": (CONSUME, _TOPIC),
    "SkipMessages": (CONSUME, _TOPIC),
    "ClearBacklog": (CONSUME, _TOPIC),
    "PeekMessages": (CONSUME, _TOPIC),
    "ExamineMessage": (CONSUME, _TOPIC),
    "ExpireMessages": (CONSUME, _TOPIC),
    "GetSubscriptionProperties": (CONSUME, _TOPIC),
    "SetSubscriptionProperties": (CONSUME, _TOPIC),
    # stored messages and backlogs (Pulsar: PEEK_MESSAGES, GET_BACKLOG_SIZE, CONSUME), storage (the admins)
    "GetMessageById": (CONSUME, _TOPIC),
    "GetMessageIdByTimestamp": (CONSUME, _TOPIC),
    "GetMessageIdByIndex": (CONSUME, _TOPIC),
    "GetBacklogSize": (CONSUME, _TOPIC),
    "AnalyzeBacklog": (CONSUME, _TOPIC),
    "TopicInternalInfo": (LOOKUP, _TOPIC),
    "TrimTopic": (ADMIN, _TOPIC),
    "CreateMissedPartitions": (ADMIN, _TOPIC),
    "TruncateTopic": (ADMIN, _TOPIC),
    "GetTopicProperties": (LOOKUP, _TOPIC),
    "UpdateTopicProperties": (ADMIN, _TOPIC),
    "RemoveTopicProperty": (ADMIN, _TOPIC),
    "ClearNamespaceBacklog": (CONSUME, _NAMESPACE),
    "UnsubscribeNamespace": (CONSUME, _NAMESPACE),
    # policies and permissions: the tenant's admins
    "SetPolicy": (ADMIN, lambda request: _scope(request.scope)),
    "GetPolicies": (lambda request: LOOKUP if request.topic else ADMIN, _scope),  # a producer may read its topic's
    "GrantPermission": (ADMIN, lambda request: _scope(request.scope)),
    "RevokePermission": (ADMIN, lambda request: _scope(request.scope)),
    "GetPermissions": (ADMIN, _scope),
    "GetPolicy": (lambda request: LOOKUP if request.scope.topic else ADMIN, lambda request: _scope(request.scope)),
    # namespace operations, properties and subscription permissions: the tenant's admins (as over REST)
    **{name: (ADMIN, _NAMESPACE) for name in (
        "UnloadNamespace", "GetNamespaceBundles", "GetNamespaceProperties", "SetNamespaceProperties",
        "ClearNamespaceProperties", "SetNamespaceProperty", "GetNamespaceProperty", "RemoveNamespaceProperty",
        "GetSubscriptionPermissions", "GrantSubscriptionPermission", "RevokeSubscriptionPermission")},
    # tenants and namespaces
    "ListTenants": (SUPER, _BROKER),
    "CreateTenant": (SUPER, _TENANT),
    "UpdateTenant": (SUPER, lambda request: request.info.tenant),
    "DeleteTenant": (SUPER, _TENANT),
    "GetTenant": (ADMIN, _TENANT),
    "ListNamespaces": (ADMIN, _TENANT),
    "CreateNamespace": (ADMIN, _NAMESPACE),
    "DeleteNamespace": (ADMIN, _NAMESPACE),
}
_UNLISTED = (SUPER, _BROKER)

_SUBSCRIPTIONS: dict[str, Callable[[Any], str]] = {
    "Consume": lambda request: request.subscribe.subscription,
    **{name: lambda request: request.subscription for name in (
        "DeleteSubscription", "CreateSubscription", "ResetCursor", "AcknowledgeUpTo", "SkipMessages",
        "ClearBacklog", "PeekMessages", "ExpireMessages")},
}
"""The calls that name a subscription of a topic: its namespace's subscription permissions and
``subscriptionAuthMode`` apply to them (as Pulsar's ``canConsume`` with the subscription)."""


def subscription_of(name: str, request: Any) -> str:
    """The subscription a ``consume`` call of method ``name`` uses (``""``: none)."""
    found = _SUBSCRIPTIONS.get(name)
    return found(request) if found is not None else ""


def checked(method: str) -> bool:
    """Whether calls of ``method`` (``/package.Service/Method``) go through authentication."""
    return method.startswith(SERVICE)


def rule(name: str) -> tuple[Any, Resource]:
    """(action, resource of a request) for the method ``name``; the action may depend on the request (a
    function of it)."""
    return RULES.get(name, _UNLISTED)
