"""``Admin(admin_url=...)``'s wire: each admin call (what the parts of :class:`~connector.client.admin.Admin`
send) made with Pulsar's admin REST API, its JSON translated into the call's answer, the admin's own values
(:class:`~connector.client.admin.wire.UnaryWire`), as :mod:`.grpc_wire` translates the broker's gRPC replies
-- so one ``Admin`` administers a pulsarlike broker over gRPC, or over its web
service port, or an Apache Pulsar cluster, with the same methods.

Calls with no REST equivalent raise :class:`~connector.client.admin.wire.NotSupported` naming them
(:data:`NOT_SERVED`). Peeked and examined messages come as Pulsar sends them (a payload and ``X-Pulsar-*``
headers, :mod:`connector.client.admin.rest_messages`); Pulsar counts ``examine``'s position in entries and
answers a whole batch, so ``examine_message`` on a batched topic shows the batch's first message.

Each call sends the request(s) Pulsar's Java admin sends for it, and nothing more:

- a partitioned topic's call goes once to the topic's own route, which the broker applies to each partition
  (:attr:`RestWire.fans_out_partitions`): no partition count is read first. What Pulsar refuses on a
  partitioned topic (skip, peek, a reset or expiry to a message id) the broker refuses;
- the messages a skip, clear-backlog or expire acknowledged (which Pulsar's answers do not carry) come from a
  pulsarlike broker's ``X-Pulsarlike-Acknowledged`` header (:data:`~broker_core.types.ACKNOWLEDGED_HEADER`);
  a server without it (Apache Pulsar) leaves the count unknown: -1;
- a policy read (``get-retention``) reads the policy's own route (``GetPolicy``), not the whole policies.

A message id given to ``create_subscription``, ``reset_cursor`` or ``expire_messages`` reaches the wire as an
offset, so it travels as ``{"ledgerId": 0, "entryId": offset}``: what a pulsarlike broker reads (its entry
id is the offset), not an Apache Pulsar ledger position; use ``earliest``/``latest`` or a time there.
"""
from __future__ import annotations

import json
from typing import Any, Callable

from broker_core import errors
from broker_core.protocol import broker_pb2
from broker_core.types import ACKNOWLEDGED_HEADER, TopicName

from connector.client.admin.rest import RestTransport, path
from connector.client.admin.rest_messages import delivered_entry
from connector.client.admin.rest_namespaces import RestNamespaces
from connector.client.admin.rest_topics import RestTopicCalls
from connector.client.admin.wire import CompactionState, LookupAnswer, NotSupported
from connector.client.transport.events import Entry, LastMessage

LATEST = (1 << 63) - 1
"""Pulsar's ``MessageId.latest``: ledger and entry ``Long.MAX_VALUE``."""
DOMAINS = ("persistent", "non-persistent")
NOT_SERVED = {"AcknowledgeUpTo": "acknowledge_up_to", "OffsetForTimestamp": "offset_for_timestamp"}
"""gRPC calls with no REST equivalent here -> the Admin method that makes them."""

# the broker's policy keys -> Pulsar's namespace path segment / Policies field, topic path segment
NAMESPACE_POLICIES = {"retention": ("retention", "retention_policies"),
                      "messageTTLInSeconds": ("messageTTL", "message_ttl_in_seconds"),
                      "deduplicationEnabled": ("deduplication", "deduplicationEnabled"),
                      "subscriptionExpirationTimeMinutes": ("subscriptionExpirationTime",
                                                            "subscription_expiration_time_minutes"),
                      "maxProducersPerTopic": ("maxProducersPerTopic", "max_producers_per_topic"),
                      "maxConsumersPerTopic": ("maxConsumersPerTopic", "max_consumers_per_topic"),
                      "compactionThreshold": ("compactionThreshold", "compaction_threshold"),
                      "maxConsumersPerSubscription": ("maxConsumersPerSubscription", "max_consumers_per_subscription"),
                      "maxUnackedMessagesPerConsumer": ("maxUnackedMessagesPerConsumer",
                                                        "max_unacked_messages_per_consumer"),
                      "maxUnackedMessagesPerSubscription": ("maxUnackedMessagesPerSubscription",
                                                            "max_unacked_messages_per_subscription"),
                      "maxSubscriptionsPerTopic": ("maxSubscriptionsPerTopic", "max_subscriptions_per_topic"),
                      "maxTopicsPerNamespace": ("maxTopicsPerNamespace", "max_topics_per_namespace"),
                      "delayedDelivery": ("delayedDelivery", "delayed_delivery_policies"),
                      "inactiveTopicPolicies": ("inactiveTopicPolicies", "inactive_topic_policies"),
                      "deduplicationSnapshotIntervalSeconds": ("deduplicationSnapshotInterval",
                                                               "deduplicationSnapshotIntervalSeconds"),
                      "autoSubscriptionCreation": ("autoSubscriptionCreation", "autoSubscriptionCreationOverride"),
                      "subscriptionTypesEnabled": ("subscriptionTypesEnabled", "subscription_types_enabled"),
                      "subscriptionAuthMode": ("subscriptionAuthMode", "subscription_auth_mode"),
                      "encryptionRequired": ("encryptionRequired", "encryption_required"),
                      "schemaValidationEnforced": ("schemaValidationEnforced", "schema_validation_enforced"),
                      "isAllowAutoUpdateSchema": ("isAllowAutoUpdateSchema", "is_allow_auto_update_schema"),
                      "schemaAutoUpdateCompatibilityStrategy": ("schemaAutoUpdateCompatibilityStrategy",
                                                                "schema_auto_update_compatibility_strategy")}
NAMESPACE_SET_WITH_PUT = frozenset({"compactionThreshold", "schemaAutoUpdateCompatibilityStrategy"})
"""The namespace policies Pulsar's admin API sets with PUT, as its Java admin sends them (the others: POST)."""
REMOVED_BY_EMPTY_POST = frozenset({"deduplicationSnapshotIntervalSeconds"})
"""The namespace policies Pulsar removes by a POST without a body (it has no DELETE for them)."""
TOPIC_SET_WITH_PUT = frozenset({"schemaCompatibilityStrategy"})
SHOWN_WHEN_UNSET = frozenset({"encryptionRequired", "schemaValidationEnforced", "schemaAutoUpdateCompatibilityStrategy",
                              "subscriptionAuthMode", "subscriptionTypesEnabled"})
"""Namespace policies Pulsar's ``Policies`` shows with a value while unset: a namespace's GetPolicies over REST
cannot tell them from set ones, so leaves them out (GetPolicy reads each)."""
FIRST_TOPIC_POLICIES = ("retention", "messageTTLInSeconds", "deduplicationEnabled", "maxProducersPerTopic",
                        "maxConsumersPerTopic", "compactionThreshold")
"""What ``GetPolicies`` of a topic reads over REST: Pulsar has no route answering a topic's policies at once."""
TOPIC_POLICIES = {"retention": "retention", "messageTTLInSeconds": "messageTTL",
                  "deduplicationEnabled": "deduplicationEnabled", "maxProducersPerTopic": "maxProducers",
                  "maxConsumersPerTopic": "maxConsumers", "compactionThreshold": "compactionThreshold",
                  "maxConsumersPerSubscription": "maxConsumersPerSubscription",
                  "maxUnackedMessagesPerConsumer": "maxUnackedMessagesOnConsumer",
                  "maxUnackedMessagesPerSubscription": "maxUnackedMessagesOnSubscription",
                  "maxSubscriptionsPerTopic": "maxSubscriptionsPerTopic", "maxMessageSize": "maxMessageSize",
                  "delayedDelivery": "delayedDelivery", "inactiveTopicPolicies": "inactiveTopicPolicies",
                  "deduplicationSnapshotIntervalSeconds": "deduplicationSnapshotInterval",
                  "autoSubscriptionCreation": "autoSubscriptionCreation",
                  "subscriptionTypesEnabled": "subscriptionTypesEnabled",
                  "schemaCompatibilityStrategy": "schemaCompatibilityStrategy",
                  "schemaValidationEnforced": "schemaValidationEnforced"}


def topic_path(topic: str, *rest: str) -> str:
    """``/admin/v2/{domain}/{tenant}/{ns}/{topic}/...``."""
    t = TopicName.parse(topic)
    return path("admin", "v2", t.domain, t.tenant, t.namespace, t.local_name, *rest)


def namespace_path(namespace: str, *rest: str) -> str:
    tenant, _, ns = namespace.partition("/")
    return path("admin", "v2", "namespaces", tenant, ns, *rest)


def message_id_body(position: broker_pb2.Position) -> dict[str, int]:
    """A gRPC position as the REST API's MessageId body (see the module's docstring)."""
    return _message_id(position)


def _message_id(position: broker_pb2.Position) -> dict[str, int]:
    kind = position.WhichOneof("position")
    if kind == "earliest" or kind is None:
        return {"ledgerId": -1, "entryId": -1}
    if kind == "latest":
        return {"ledgerId": LATEST, "entryId": LATEST}
    return {"ledgerId": 0, "entryId": position.offset}


def _last_message_id(found: Any) -> LastMessage:
    found = found if isinstance(found, dict) else {}
    ledger, entry = int(found.get("ledgerId", -1)), int(found.get("entryId", -1))
    batch = int(found.get("batchIndex", -1))
    if ledger < 0 or entry < 0:
        return LastMessage(last_offset=-1, batch_index=-1)
    return LastMessage(ledger_id=ledger, entry_id=entry, batch_index=batch, last_offset=entry + max(batch, 0))


def stats_query(options: broker_pb2.StatsOptions | None) -> dict[str, bool]:
    """Pulsar's stats query parameters, as its admin sends them with every stats request (none when the request
    carries no options: the server's defaults)."""
    if options is None:
        return {}
    return {"getPreciseBacklog": options.get_precise_backlog,
            "subscriptionBacklogSize": options.subscription_backlog_size,
            "getEarliestTimeInBacklog": options.get_earliest_time_in_backlog}


UNKNOWN_COUNT = -1
"""What a skip, clear-backlog or expire answers for its count when the server does not say (Apache Pulsar)."""


class RestWire:
    """A :class:`~connector.client.admin.wire.UnaryWire` over :class:`~connector.client.admin.rest.RestTransport`
    (``transport``, which the REST-only parts use directly)."""

    fans_out_partitions = True
    """A call naming a partitioned topic is sent once, as Pulsar's admin sends it, and the server applies it to
    each partition (:func:`~connector.client.admin.wire.fans_out`)."""

    def __init__(self, transport: RestTransport, retry: bool = False) -> None:
        self.transport = transport
        self._retry = retry
        self._topic_calls = RestTopicCalls(self._call, self._fetch, topic_path, message_id_body, _last_message_id)
        self._namespace_calls = RestNamespaces(
            self._call, namespace_path, topic_path, {key: segment for key, (segment, _) in NAMESPACE_POLICIES.items()},
            TOPIC_POLICIES)

    def close(self) -> None:
        self.transport.close()

    def unary(self, method: str, request: Any, timeout_s: float | None = None, retry: bool = False) -> Any:
        if method in NOT_SERVED:
            raise NotSupported(f"{NOT_SERVED[method]} has no equivalent in Pulsar's admin REST API (the Admin"
                               " uses admin_url); use Admin(service_url='pulsar://HOST:6650') for it",
                               method=NOT_SERVED[method])
        handler: Callable[[Any], Any] | None = (getattr(self, "_" + method, None) or self._topic_calls.handler(method)
                                                or self._namespace_calls.handler(method))
        if handler is None:
            raise NotSupported(f"{method} is not mapped onto the admin REST API", method=method)
        self._timeout, self._retrying = timeout_s, retry or self._retry
        return handler(request)

    def _call(self, method: str, where: str, *args: Any, **kwargs: Any) -> Any:
        reads = method == "GET"  # only reads are retried: a create retried might have been applied
        return self.transport.call(method, where, *args, timeout_s=self._timeout,
                                   retry=self._retrying and reads, **kwargs)

    def _fetch(self, method: str, where: str, **kwargs: Any) -> Any:
        return self.transport.fetch(method, where, timeout_s=self._timeout, **kwargs)

    # ------------------------------------------------------------------ tenants and namespaces
    def _ListTenants(self, request: Any) -> list[str]:
        return list(self._call("GET", path("admin", "v2", "tenants")) or [])

    def _GetTenant(self, request: broker_pb2.TenantRequest) -> dict[str, list[str]]:
        return self._tenant(request.tenant)

    def _tenant(self, tenant: str) -> dict[str, list[str]]:
        info = self._call("GET", path("admin", "v2", "tenants", tenant), not_found=errors.TenantNotFound)
        return {"adminRoles": list(info.get("adminRoles") or []),
                "allowedClusters": list(info.get("allowedClusters") or [])}

    def _tenant_body(self, roles: Any, clusters: Any) -> dict[str, list[str]]:
        # pulsar-admin's default for allowed clusters: every cluster (this broker: its one)
        return {"adminRoles": list(roles),
                "allowedClusters": list(clusters) or self._call("GET", path("admin", "v2", "clusters"))}

    def _CreateTenant(self, request: broker_pb2.TenantInfo) -> None:
        self._call("PUT", path("admin", "v2", "tenants", request.tenant),
                   self._tenant_body(request.admin_roles, request.allowed_clusters),
                   conflict=errors.TenantAlreadyExists, refused=errors.InvalidConfiguration)

    def _UpdateTenant(self, request: broker_pb2.UpdateTenantRequest) -> None:
        info = request.info  # Pulsar replaces the whole TenantInfo: what is not given is kept
        current = self._tenant(info.tenant)
        roles = info.admin_roles if request.set_admin_roles else current["adminRoles"]
        clusters = info.allowed_clusters if request.set_allowed_clusters else current["allowedClusters"]
        self._call("POST", path("admin", "v2", "tenants", info.tenant), self._tenant_body(roles, clusters),
                   not_found=errors.TenantNotFound, refused=errors.InvalidConfiguration)

    def _DeleteTenant(self, request: broker_pb2.DeleteTenantRequest) -> None:
        self._call("DELETE", path("admin", "v2", "tenants", request.tenant), query={"force": request.force},
                   not_found=errors.TenantNotFound, conflict=errors.TenantNotEmpty)

    def _ListNamespaces(self, request: broker_pb2.TenantRequest) -> list[str]:
        return list(self._call("GET", path("admin", "v2", "namespaces", request.tenant),
                               not_found=errors.TenantNotFound) or [])

    def _CreateNamespace(self, request: broker_pb2.NamespaceRequest) -> None:
        self._call("PUT", namespace_path(request.namespace), not_found=errors.TenantNotFound,
                   conflict=errors.NamespaceAlreadyExists, refused=errors.InvalidConfiguration)

    def _DeleteNamespace(self, request: broker_pb2.DeleteNamespaceRequest) -> None:
        self._call("DELETE", namespace_path(request.namespace), query={"force": request.force},
                   not_found=errors.NamespaceNotFound, conflict=errors.NamespaceNotEmpty)

    # ------------------------------------------------------------------ topics
    def _partitions(self, topic: str) -> int:
        return int(self._call("GET", topic_path(topic, "partitions"))["partitions"])

    def _GetPartitionedTopicMetadata(self, request: broker_pb2.TopicRequest) -> int:
        return self._partitions(request.topic)

    def _CreatePartitionedTopic(self, request: broker_pb2.CreatePartitionedTopicRequest) -> None:
        self._call("PUT", topic_path(request.topic, "partitions"), request.partitions,
                   not_found=errors.NamespaceNotFound, conflict=errors.TopicAlreadyExists)

    def _UpdatePartitionedTopic(self, request: broker_pb2.CreatePartitionedTopicRequest) -> None:
        self._call("POST", topic_path(request.topic, "partitions"), request.partitions)

    def _CreateTopic(self, request: broker_pb2.TopicRequest) -> None:
        self._call("PUT", topic_path(request.topic), not_found=errors.NamespaceNotFound,
                   conflict=errors.TopicAlreadyExists)

    def _of_domains(self, namespace: str, *rest: str) -> list[str]:
        tenant, _, ns = namespace.partition("/")
        found: list[str] = []
        for domain in DOMAINS:
            found += self._call("GET", path("admin", "v2", domain, tenant, ns, *rest),
                                not_found=errors.NamespaceNotFound) or []
        return found

    def _ListTopics(self, request: broker_pb2.ListTopicsRequest) -> list[str]:
        return self._of_domains(request.namespace)

    def _ListPartitionedTopics(self, request: broker_pb2.ListTopicsRequest) -> list[str]:
        return self._of_domains(request.namespace, "partitioned")

    def _DeleteTopic(self, request: broker_pb2.DeleteTopicRequest) -> None:
        rest = ("partitions",) if self._partitions(request.topic) else ()
        self._call("DELETE", topic_path(request.topic, *rest), query={"force": request.force})

    def _TopicStats(self, request: broker_pb2.TopicRequest) -> Any:
        # a pulsarlike broker answers a partitioned topic's merged stats here; Apache Pulsar answers 404 (use
        # partitioned_topic_stats)
        query = stats_query(request.stats if request.HasField("stats") else None)
        return self._call("GET", topic_path(request.topic, "stats"), query=query)

    def _TopicInternalStats(self, request: broker_pb2.TopicRequest) -> Any:
        return self._call("GET", topic_path(request.topic, "internalStats"))

    def partitioned_stats(self, topic: str, per_partition: bool,
                          options: broker_pb2.StatsOptions | None = None) -> dict[str, Any]:
        """``GET .../partitioned-stats?perPartition=`` and Pulsar's stats options: a partitioned topic's stats
        (``TopicNotFound`` for one that is not partitioned, as Pulsar answers)."""
        self._timeout, self._retrying = None, self._retry
        query = {"perPartition": per_partition, **stats_query(options)}
        return self._call("GET", topic_path(topic, "partitioned-stats"), query=query,
                          not_found=errors.TopicNotFound) or {}

    def _GetLastMessageId(self, request: broker_pb2.TopicRequest) -> LastMessage:
        return _last_message_id(self._call("GET", topic_path(request.topic, "lastMessageId")))

    def _TerminateTopic(self, request: broker_pb2.TopicRequest) -> LastMessage:
        return _last_message_id(self._call("POST", topic_path(request.topic, "terminate")))

    def _UnloadTopic(self, request: broker_pb2.TopicRequest) -> None:
        self._call("PUT", topic_path(request.topic, "unload"))

    def _Compact(self, request: broker_pb2.TopicRequest) -> None:
        self._call("PUT", topic_path(request.topic, "compaction"), conflict=errors.CompactionAlreadyRunning)

    def _CompactionStatus(self, request: broker_pb2.TopicRequest) -> CompactionState:
        found = self._call("GET", topic_path(request.topic, "compaction")) or {}
        return CompactionState(found.get("status") or "", found.get("lastError") or "")

    def _VerifyTopic(self, request: broker_pb2.TopicRequest) -> Any:
        return self._call("GET", topic_path(request.topic, "verify"))

    def _VerifyAllTopics(self, request: broker_pb2.Empty) -> Any:
        return self._call("GET", path("admin", "v2", "pulsarlike", "verify"))

    def _LookupTopic(self, request: broker_pb2.TopicRequest) -> LookupAnswer:
        t = TopicName.parse(request.topic)
        found = self._call("GET", path("lookup", "v2", "topic", t.domain, t.tenant, t.namespace, t.local_name))
        return LookupAnswer(found.get("brokerUrl") or "", found.get("httpUrl") or "")

    # ------------------------------------------------------------------ subscriptions
    def _ListSubscriptions(self, request: broker_pb2.TopicRequest) -> list[str]:
        return list(self._call("GET", topic_path(request.topic, "subscriptions")) or [])

    def _sub(self, request: Any, *rest: str) -> str:
        return topic_path(request.topic, "subscription", request.subscription, *rest)

    def _DeleteSubscription(self, request: broker_pb2.UnsubscribeRequest) -> None:
        self._call("DELETE", self._sub(request), query={"force": request.force},
                   not_found=errors.SubscriptionNotFound)

    def _CreateSubscription(self, request: broker_pb2.SubscriptionRequest) -> None:
        self._call("PUT", self._sub(request), _message_id(request.position), conflict=errors.NotAllowedError)

    def _ResetCursor(self, request: broker_pb2.SubscriptionRequest) -> None:
        if request.HasField("position"):
            self._call("POST", self._sub(request, "resetcursor"), _message_id(request.position),
                       not_found=errors.SubscriptionNotFound)
        else:
            self._call("POST", self._sub(request, "resetcursor", str(request.publish_time_ms)),
                       not_found=errors.SubscriptionNotFound)

    def _acknowledging(self, where: str, *body: Any, **options: Any) -> int:
        """POST a skip, clear-backlog or expire; its count from the broker's answer (:data:`UNKNOWN_COUNT`
        when the server does not say)."""
        _, headers = self.transport.fetch("POST", where, *body, timeout_s=self._timeout, **options)
        found = headers.get(ACKNOWLEDGED_HEADER, "")
        return int(found) if found.isdigit() else UNKNOWN_COUNT

    def _SkipMessages(self, request: broker_pb2.SubscriptionRequest) -> int:
        return self._acknowledging(self._sub(request, "skip", str(request.count)),
                                   not_found=errors.SubscriptionNotFound)

    def _ClearBacklog(self, request: broker_pb2.SubscriptionRequest) -> int:
        return self._acknowledging(self._sub(request, "skip_all"), not_found=errors.SubscriptionNotFound)

    def _ExpireMessages(self, request: broker_pb2.ExpireMessagesRequest) -> int:
        if request.all_subscriptions:
            return self._acknowledging(topic_path(request.topic, "all_subscription", "expireMessages",
                                                  str(request.expire_time_seconds)))
        if request.HasField("position"):
            return self._acknowledging(self._sub(request, "expireMessages"), _message_id(request.position),
                                       not_found=errors.SubscriptionNotFound)
        return self._acknowledging(self._sub(request, "expireMessages", str(request.expire_time_seconds)),
                                   not_found=errors.SubscriptionNotFound)

    def _ClearNamespaceBacklog(self, request: broker_pb2.NamespaceSubscriptionRequest) -> int:
        rest = ("clearBacklog", request.subscription) if request.subscription else ("clearBacklog",)
        return self._acknowledging(namespace_path(request.namespace, *rest), not_found=errors.NamespaceNotFound)

    def _UnsubscribeNamespace(self, request: broker_pb2.NamespaceSubscriptionRequest) -> list[str]:
        having = [t for t in self._of_domains(request.namespace)
                  if request.subscription in (self._call("GET", topic_path(t, "subscriptions")) or [])]
        if not having:
            raise errors.SubscriptionNotFound(f"no topic of {request.namespace} has subscription"
                                              f" {request.subscription!r}", subscription=request.subscription)
        self._call("POST", namespace_path(request.namespace, "unsubscribe", request.subscription),
                   not_found=errors.NamespaceNotFound, refused=errors.NotAllowedError)
        return having

    # ------------------------------------------------------------------ stored messages
    def _PeekMessages(self, request: broker_pb2.SubscriptionRequest) -> list[Entry]:
        """Entries 1, 2 ... of the subscription until they hold ``count`` messages (or there are no more)."""
        found: list[Entry] = []
        messages = 0
        while messages < request.count:
            where = self._sub(request, "position", str(len(found) + 1))
            try:
                raw, headers = self.transport.fetch("GET", where, not_found=errors.SubscriptionNotFound,
                                                    timeout_s=self._timeout)
            except errors.PulsarLikeError as exc:
                if getattr(exc, "status", None) == 404 and "Message not found" in exc.message:
                    break  # past the last
                raise
            entry = delivered_entry(raw, headers)
            found.append(entry)
            messages += entry.num_messages
        return found

    def _ExamineMessage(self, request: broker_pb2.ExamineMessageRequest) -> list[Entry]:
        raw, headers = self.transport.fetch(
            "GET", topic_path(request.topic, "examinemessage"), timeout_s=self._timeout,
            query={"initialPosition": "latest" if request.latest else "earliest",
                   "messagePosition": request.position})
        return [delivered_entry(raw, headers)]

    # ------------------------------------------------------------------ policies and permissions
    def _SetPolicy(self, request: broker_pb2.PolicyRequest) -> None:
        scope, key = request.scope, request.key
        value = json.loads(request.value_json) if request.value_json else None
        query: dict[str, Any] | None = None
        if scope.topic:
            if key not in TOPIC_POLICIES:
                raise NotSupported(f"the topic policy {key} is not mapped onto the admin REST API", method=key)
            where = topic_path(scope.topic, TOPIC_POLICIES[key])
            if key == "messageTTLInSeconds" and value is not None:  # as pulsar-admin sends it
                query, value = {"messageTTL": value}, None
        else:
            if key not in NAMESPACE_POLICIES:
                raise NotSupported(f"the namespace policy {key} is not mapped onto the admin REST API", method=key)
            where = namespace_path(scope.namespace, NAMESPACE_POLICIES[key][0])
        if value is None and query is None and not scope.topic and key in REMOVED_BY_EMPTY_POST:
            self._call("POST", where, not_found=errors.NamespaceNotFound, refused=errors.InvalidConfiguration)
        elif value is None and query is None:
            self._call("DELETE", where, not_found=errors.NamespaceNotFound if not scope.topic else None,
                       refused=errors.InvalidConfiguration)
        elif value is None:
            self._call("POST", where, query=query, refused=errors.InvalidConfiguration)
        else:
            method = "PUT" if key in (TOPIC_SET_WITH_PUT if scope.topic else NAMESPACE_SET_WITH_PUT) else "POST"
            self._call(method, where, value, not_found=errors.NamespaceNotFound if not scope.topic else None,
                       refused=errors.InvalidConfiguration)

    def _GetPolicies(self, scope: broker_pb2.PolicyScope) -> Any:
        found: dict[str, Any] = {}
        if scope.topic:
            for key in FIRST_TOPIC_POLICIES:  # the later ones are read one at a time (GetPolicy)
                segment = TOPIC_POLICIES[key]
                value = self._call("GET", topic_path(scope.topic, segment))
                if value is not None:
                    found[key] = value
        else:
            policies = self._call("GET", namespace_path(scope.namespace), not_found=errors.NamespaceNotFound)
            for key, (_, field) in NAMESPACE_POLICIES.items():
                if policies.get(field) is not None and key not in SHOWN_WHEN_UNSET:
                    found[key] = policies[field]
        return found

    def _permissions_path(self, scope: broker_pb2.PolicyScope, *rest: str) -> str:
        if scope.topic:
            return topic_path(scope.topic, "permissions", *rest)
        return namespace_path(scope.namespace, "permissions", *rest)

    def _GrantPermission(self, request: broker_pb2.PermissionRequest) -> None:
        self._call("POST", self._permissions_path(request.scope, request.role), list(request.actions),
                   refused=errors.InvalidConfiguration)

    def _RevokePermission(self, request: broker_pb2.PermissionRequest) -> None:
        self._call("DELETE", self._permissions_path(request.scope, request.role))

    def _GetPermissions(self, scope: broker_pb2.PolicyScope) -> Any:
        return self._call("GET", self._permissions_path(scope)) or {}
