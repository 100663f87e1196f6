"""A topic's properties and backlog quotas, and the version a schema was registered as: a part of
:class:`~connector.client.admin.Admin` (``pulsar-admin topics get-properties|update-properties|
remove-properties|get-backlog-quotas|set-backlog-quota|remove-backlog-quota``, ``schemas get-version``).

Over ``admin_url`` each call sends what Pulsar's Java admin sends:

==========================================  ==============================================================
``get_topic_properties``                    ``GET .../{topic}/properties``
``update_topic_properties``                 ``PUT .../{topic}/properties`` with ``{"k": "v"}``
``remove_topic_properties``                 ``DELETE .../{topic}/properties?key=K``
``get_topic_backlog_quotas``                ``GET .../{topic}/backlogQuotaMap[?applied=true]``
``set_topic_backlog_quota``                 ``POST .../{topic}/backlogQuota?backlogQuotaType=T`` with
                                            ``{"limitSize", "limitTime", "policy"}``
``remove_topic_backlog_quota``              ``DELETE .../{topic}/backlogQuota?backlogQuotaType=T``
``get_schema_version``                      ``POST /admin/v2/schemas/{t}/{ns}/{topic}/version`` with a
                                            PostSchemaPayload
==========================================  ==============================================================

Over gRPC: ``GetTopicProperties``, ``UpdateTopicProperties``, ``RemoveTopicProperty``, ``GetSchemaVersion``;
the quotas through the topic-level ``backlogQuota`` policy (``GetPolicies``/``SetPolicy``: the topic's map read
and written back, as the REST route does on the broker).
"""
from __future__ import annotations

import json
from typing import Any, Mapping

from broker_core import errors
from broker_core.protocol import broker_pb2
from broker_core.types import TopicName

from connector.client.admin.wire import UnaryWire, topic_name

QUOTA_TYPES = ("destination_storage", "message_age")
QUOTA_POLICIES = ("producer_request_hold", "producer_exception", "consumer_backlog_eviction")
BACKLOG_QUOTA = "backlogQuota"


def _choice(name: str, value: Any, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise ValueError(f"{name}={value!r} is not valid; use one of {', '.join(choices)}")
    return value


def _strings(properties: Any) -> dict[str, str]:
    if not isinstance(properties, Mapping) or not all(isinstance(k, str) and k and isinstance(v, str)
                                                      for k, v in properties.items()):
        raise TypeError("properties must be a dict of non-empty strings to strings")
    return dict(properties)


class TopicSettingsAdmin:
    """The calls above: a part of :class:`~connector.client.admin.Admin`, which serves its public methods."""

    def __init__(self, wire: UnaryWire) -> None:
        self._wire = wire

    @property
    def _rest(self) -> Any:
        """The REST transport under an ``admin_url`` admin; None over gRPC."""
        return getattr(self._wire, "transport", None)

    def _topic_call(self, method: str, topic: TopicName, segment: str, body: Any = None, **query: Any) -> Any:
        from connector.client.admin.rest import path
        args = () if body is None else (body,)
        return self._rest.call(method, path("admin", "v2", topic.domain, topic.tenant, topic.namespace,
                                            topic.local_name, segment), *args, query=query or None,
                               not_found=errors.TopicNotFound, refused=errors.InvalidConfiguration)

    # --- properties ------------------------------------------------------------------------------------
    def get_topic_properties(self, topic: str) -> dict[str, str]:
        """The topic's properties (a partitioned topic's, or a persistent topic partition's; ``topics
        get-properties``)."""
        name = TopicName.parse(topic_name(topic))
        if self._rest is not None:
            return self._topic_call("GET", name, "properties") or {}
        return self._wire.unary("GetTopicProperties", broker_pb2.TopicRequest(topic=str(name)))

    def update_topic_properties(self, topic: str, properties: Mapping[str, str]) -> None:
        """Set these properties of the topic, keeping its others (``topics update-properties``)."""
        name, given = TopicName.parse(topic_name(topic)), _strings(properties)
        if self._rest is not None:
            self._topic_call("PUT", name, "properties", given)
            return
        self._wire.unary("UpdateTopicProperties", broker_pb2.PropertiesRequest(topic=str(name), properties=given))

    def remove_topic_properties(self, topic: str, key: str) -> None:
        """Remove the topic's property ``key`` (``topics remove-properties``)."""
        name = TopicName.parse(topic_name(topic))
        if not isinstance(key, str) or not key:
            raise ValueError(f"key={key!r} is not valid; give the property's name")
        if self._rest is not None:
            self._topic_call("DELETE", name, "properties", key=key)
            return
        self._wire.unary("RemoveTopicProperty", broker_pb2.PropertyKeyRequest(topic=str(name), key=key))

    # --- backlog quotas --------------------------------------------------------------------------------
    def _policies(self, scope: broker_pb2.PolicyScope) -> dict[str, Any]:
        found = self._wire.unary("GetPolicies", scope)
        return found if found is not None else {}

    def get_topic_backlog_quotas(self, topic: str, applied: bool = False) -> dict[str, dict[str, Any]]:
        """The topic's own backlog quotas by type, as Pulsar's ``BacklogQuota`` (``{}``: none); ``applied``:
        its namespace's when it has none (``topics get-backlog-quotas [-ap]``)."""
        name = TopicName.parse(topic_name(topic))
        if self._rest is not None:
            query = {"applied": "true"} if applied else {}
            return self._topic_call("GET", name, "backlogQuotaMap", **query) or {}
        found = self._policies(broker_pb2.PolicyScope(topic=str(name))).get(BACKLOG_QUOTA) or {}
        if applied and not found:
            found = self._policies(broker_pb2.PolicyScope(namespace=name.namespace_name)).get(BACKLOG_QUOTA) or {}
        return {kind: {"limit": quota.get("limitSize", -1), **quota} for kind, quota in found.items()}

    def set_topic_backlog_quota(self, topic: str, policy: str, limit_size: int = -1, limit_time: int = -1,
                                quota_type: str = "destination_storage") -> None:
        """The topic's backlog quota of ``quota_type`` (``destination_storage``: ``limit_size`` bytes;
        ``message_age``: ``limit_time`` seconds; -1: no limit of that kind), in force on it instead of its
        namespace's of that type, and what happens past it (``producer_request_hold``,
        ``producer_exception``, ``consumer_backlog_eviction``; ``topics set-backlog-quota``)."""
        name = TopicName.parse(topic_name(topic))
        quota = {"limitSize": int(limit_size), "limitTime": int(limit_time),
                 "policy": _choice("policy", policy, QUOTA_POLICIES)}
        _choice("quota_type", quota_type, QUOTA_TYPES)
        if self._rest is not None:
            self._topic_call("POST", name, BACKLOG_QUOTA, quota, backlogQuotaType=quota_type)
            return
        quotas = dict(self._policies(broker_pb2.PolicyScope(topic=str(name))).get(BACKLOG_QUOTA) or {})
        quotas[quota_type] = quota
        self._set_quotas(name, quotas)

    def remove_topic_backlog_quota(self, topic: str, quota_type: str = "destination_storage") -> None:
        """Remove the topic's quota of ``quota_type``: its namespace's applies again (``topics
        remove-backlog-quota``)."""
        name = TopicName.parse(topic_name(topic))
        _choice("quota_type", quota_type, QUOTA_TYPES)
        if self._rest is not None:
            self._topic_call("DELETE", name, BACKLOG_QUOTA, backlogQuotaType=quota_type)
            return
        quotas = {kind: quota for kind, quota in (self._policies(broker_pb2.PolicyScope(topic=str(name))).get(
            BACKLOG_QUOTA) or {}).items() if kind != quota_type}
        self._set_quotas(name, quotas or None)

    def _set_quotas(self, name: TopicName, quotas: dict[str, Any] | None) -> None:
        self._wire.unary("SetPolicy", broker_pb2.PolicyRequest(
            scope=broker_pb2.PolicyScope(topic=str(name)), key=BACKLOG_QUOTA,
            value_json="" if quotas is None else json.dumps(quotas)))

    # --- schemas ---------------------------------------------------------------------------------------
    def get_schema_version(self, topic: str, schema_type: str, schema: str | Mapping[str, Any] = "",
                           properties: Mapping[str, str] | None = None) -> int:
        """The version the topic's schema registry holds this schema (type and definition) as; -1 when it
        holds no such version (Pulsar's ``getVersionBySchema``)."""
        if not isinstance(schema_type, str) or not schema_type:
            raise ValueError(f"schema_type={schema_type!r} is not valid; use a SchemaType name such as AVRO")
        payload = {"type": schema_type.upper(), "schema": schema if isinstance(schema, str) else json.dumps(schema),
                   "properties": dict(properties or {})}
        base = TopicName.parse(topic_name(topic)).partitioned_base
        if self._rest is not None:
            from connector.client.admin.rest import path
            answer = self._rest.call("POST", path("admin", "v2", "schemas", base.tenant, base.namespace,
                                                  base.local_name, "version"), payload,
                                     not_found=errors.TopicNotFound)
        else:
            answer = self._wire.unary("GetSchemaVersion", broker_pb2.SchemaAdminRequest(
                topic=str(base), payload=json.dumps(payload)))
        version = (answer or {}).get("version", -1)
        return int(version.get("version", -1) if isinstance(version, dict) else version)
