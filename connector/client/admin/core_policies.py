"""Namespace backlog quotas, schema compatibility strategy and auto topic creation, and a partitioned topic
terminated, for :class:`~connector.client.admin.Admin` (``pulsar-admin namespaces set-backlog-quota``,
``set-schema-compatibility-strategy``, ``set-auto-topic-creation``, ``topics partitioned-terminate``).

Over ``admin_url`` each call sends what Pulsar's Java admin sends:

=====================================================  ==================================================
``set_namespace_backlog_quota``                        ``POST .../backlogQuota?backlogQuotaType=T`` with
                                                       ``{"limitSize", "limitTime", "policy"}``
``get_namespace_backlog_quotas``                       ``GET .../backlogQuotaMap``
``remove_namespace_backlog_quota``                     ``DELETE .../backlogQuota?backlogQuotaType=T``
``set_namespace_schema_compatibility_strategy``        ``PUT .../schemaCompatibilityStrategy`` with ``"FULL"``
``get_namespace_schema_compatibility_strategy``        ``GET .../schemaCompatibilityStrategy``
``set|get|remove_namespace_auto_topic_creation``       ``POST|GET|DELETE .../autoTopicCreation``
``terminate_partitioned_topic``                        ``POST /admin/v2/{domain}/{t}/{ns}/{topic}/terminate/partitions``
=====================================================  ==================================================

Over gRPC the same values go through the broker's ``SetPolicy``/``GetPolicies`` (a quota set or removed is the
namespace's quota map read and written back), and a partitioned topic's partitions are terminated one by one.
"""
from __future__ import annotations

import json
from typing import Any

from broker_core import errors
from broker_core.protocol import broker_pb2
from broker_core.types import TopicName

from connector.client.admin.operations import OperationsAdmin
from connector.client.admin.wire import UnaryWire, topic_name
from connector.client.message_id import MessageId

BACKLOG_QUOTA, SCHEMA_STRATEGY, AUTO_TOPIC_CREATION = "backlogQuota", "schemaCompatibilityStrategy", "autoTopicCreation"
QUOTA_TYPES = ("destination_storage", "message_age")
QUOTA_POLICIES = ("producer_request_hold", "producer_exception", "consumer_backlog_eviction")
STRATEGIES = ("UNDEFINED", "ALWAYS_INCOMPATIBLE", "ALWAYS_COMPATIBLE", "BACKWARD", "FORWARD", "FULL",
              "BACKWARD_TRANSITIVE", "FORWARD_TRANSITIVE", "FULL_TRANSITIVE")
TOPIC_TYPES = ("non-partitioned", "partitioned")


def _choice(name: str, value: Any, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise ValueError(f"{name}={value!r} is not valid; use one of {', '.join(choices)}")
    return value


def _namespace_path(namespace: str, *rest: str) -> str:
    from connector.client.admin.rest import path
    tenant, _, ns = namespace.partition("/")
    return path("admin", "v2", "namespaces", tenant, ns, *rest)


def _message_id(found: Any, partition: int) -> MessageId:
    found = found if isinstance(found, dict) else {}
    return MessageId(partition=int(found.get("partitionIndex", partition)), ledger_id=int(found.get("ledgerId", -1)),
                     entry_id=int(found.get("entryId", -1)), batch_index=int(found.get("batchIndex", -1)))


class CorePoliciesAdmin:
    """The calls above: a part of :class:`~connector.client.admin.Admin`, which serves its public methods."""

    def __init__(self, wire: UnaryWire) -> None:
        self._wire = wire
        self._operations = OperationsAdmin(wire)

    @property
    def _rest(self) -> Any:
        """The REST transport under an ``admin_url`` admin; None over gRPC."""
        return getattr(self._wire, "transport", None)

    def _rest_call(self, method: str, namespace: str, segment: str, body: Any = None, **query: Any) -> Any:
        args = () if body is None else (body,)
        return self._rest.call(method, _namespace_path(namespace, segment), *args, query=query or None,
                               not_found=errors.NamespaceNotFound, refused=errors.InvalidConfiguration)

    def _policies(self, namespace: str) -> dict[str, Any]:
        found = self._wire.unary("GetPolicies", broker_pb2.PolicyScope(namespace=namespace))
        return found if found is not None else {}

    def _set(self, namespace: str, key: str, value: Any) -> None:
        self._wire.unary("SetPolicy", broker_pb2.PolicyRequest(
            scope=broker_pb2.PolicyScope(namespace=namespace), key=key,
            value_json="" if value is None else json.dumps(value)))

    # --- backlog quotas ------------------------------------------------------------------------------
    def set_namespace_backlog_quota(self, namespace: str, policy: str, limit_size: int = -1, limit_time: int = -1,
                                    quota_type: str = "destination_storage") -> None:
        """The namespace's backlog quota of ``quota_type`` (``destination_storage``: ``limit_size`` bytes;
        ``message_age``: ``limit_time`` seconds; -1: no limit of that kind) and what happens when a topic
        exceeds it (``producer_request_hold``, ``producer_exception``, ``consumer_backlog_eviction``)."""
        quota = {"limitSize": int(limit_size), "limitTime": int(limit_time),
                 "policy": _choice("policy", policy, QUOTA_POLICIES)}
        _choice("quota_type", quota_type, QUOTA_TYPES)
        if self._rest is not None:
            self._rest_call("POST", namespace, BACKLOG_QUOTA, quota, backlogQuotaType=quota_type)
            return
        quotas = dict(self._policies(namespace).get(BACKLOG_QUOTA) or {})
        quotas[quota_type] = quota
        self._set(namespace, BACKLOG_QUOTA, quotas)

    def get_namespace_backlog_quotas(self, namespace: str) -> dict[str, dict[str, Any]]:
        """Every quota of the namespace by type, as Pulsar's ``BacklogQuota`` (``{}``: none)."""
        if self._rest is not None:
            return self._rest_call("GET", namespace, "backlogQuotaMap") or {}
        return {kind: {"limit": quota.get("limitSize", -1), **quota}
                for kind, quota in (self._policies(namespace).get(BACKLOG_QUOTA) or {}).items()}

    def remove_namespace_backlog_quota(self, namespace: str, quota_type: str = "destination_storage") -> None:
        _choice("quota_type", quota_type, QUOTA_TYPES)
        if self._rest is not None:
            self._rest_call("DELETE", namespace, BACKLOG_QUOTA, backlogQuotaType=quota_type)
            return
        quotas = {kind: q for kind, q in (self._policies(namespace).get(BACKLOG_QUOTA) or {}).items()
                  if kind != quota_type}
        self._set(namespace, BACKLOG_QUOTA, quotas or None)

    # --- schema compatibility strategy ---------------------------------------------------------------
    def set_namespace_schema_compatibility_strategy(self, namespace: str, strategy: str) -> None:
        """How a new schema version is checked on the namespace's topics (``UNDEFINED``: the broker's
        ``schemaCompatibilityStrategy``)."""
        strategy = _choice("strategy", strategy, STRATEGIES)
        if self._rest is not None:
            self._rest_call("PUT", namespace, SCHEMA_STRATEGY, strategy)
            return
        self._set(namespace, SCHEMA_STRATEGY, None if strategy == "UNDEFINED" else strategy)

    def get_namespace_schema_compatibility_strategy(self, namespace: str) -> str:
        """The namespace's strategy (``UNDEFINED`` while it has none)."""
        if self._rest is not None:
            return self._rest_call("GET", namespace, SCHEMA_STRATEGY) or "UNDEFINED"
        return self._policies(namespace).get(SCHEMA_STRATEGY) or "UNDEFINED"

    # --- auto topic creation -------------------------------------------------------------------------
    def set_namespace_auto_topic_creation(self, namespace: str, allow: bool, topic_type: str = "non-partitioned",
                                          default_num_partitions: int | None = None) -> None:
        """Whether a topic of the namespace is created on first use, and as what (Pulsar's
        ``AutoTopicCreationOverride``); replaces the broker's ``allowAutoTopicCreation*`` there."""
        if not isinstance(allow, bool):
            raise ValueError(f"allow={allow!r} is not valid; use True or False")
        body: dict[str, Any] = {"allowAutoTopicCreation": allow,
                                "topicType": _choice("topic_type", topic_type, TOPIC_TYPES)}
        if default_num_partitions is not None:
            body["defaultNumPartitions"] = int(default_num_partitions)
        if self._rest is not None:
            self._rest_call("POST", namespace, AUTO_TOPIC_CREATION, body)
            return
        self._set(namespace, AUTO_TOPIC_CREATION, body)

    def get_namespace_auto_topic_creation(self, namespace: str) -> dict[str, Any] | None:
        """The namespace's ``AutoTopicCreationOverride`` (None: not set)."""
        if self._rest is not None:
            return self._rest_call("GET", namespace, AUTO_TOPIC_CREATION)
        return self._policies(namespace).get(AUTO_TOPIC_CREATION)

    def remove_namespace_auto_topic_creation(self, namespace: str) -> None:
        if self._rest is not None:
            self._rest_call("DELETE", namespace, AUTO_TOPIC_CREATION)
            return
        self._set(namespace, AUTO_TOPIC_CREATION, None)

    # --- a partitioned topic terminated ---------------------------------------------------------------
    def terminate_partitioned_topic(self, topic: str) -> dict[int, MessageId]:
        """Terminate every partition of partitioned topic ``topic``: each partition's last message id."""
        name = TopicName.parse(topic_name(topic))
        if self._rest is not None:
            from connector.client.admin.rest import path
            found = self._rest.call("POST", path("admin", "v2", name.domain, name.tenant, name.namespace,
                                                 name.local_name, "terminate", "partitions"),
                                    not_found=errors.TopicNotFound) or {}
            return {int(index): _message_id(mid, int(index)) for index, mid in found.items()}
        partitions = self._wire.unary("GetPartitionedTopicMetadata", broker_pb2.TopicRequest(topic=str(name)))
        if partitions == 0:
            raise errors.NotAllowedError(f"{name} is not a partitioned topic: use topics terminate")
        return {i: self._operations.terminate_topic(str(name.partition(i))) for i in range(partitions)}
