"""Cluster, broker and schema calls of :class:`~connector.client.admin.Admin` (``pulsar-admin clusters
list|get``, ``brokers list|healthcheck|version|leader-broker``, ``schemas get|upload|delete|compatibility``),
the cluster and broker calls over Pulsar's admin REST API only (``Admin(admin_url=...)``; over a ``pulsar://``
service URL they raise :class:`~connector.client.admin.wire.NotSupported` naming them), the schema calls over
both: the broker's gRPC schema admin calls answer the REST API's JSON.

Answers are Pulsar's JSON as it comes (``ClusterData``, ``GetSchemaResponse`` ...)."""
from __future__ import annotations

import json
from typing import Any, Mapping

from broker_core.errors import IncompatibleSchema, TopicNotFound
from broker_core.protocol import broker_pb2
from broker_core.types import TopicName

from connector.client.admin.rest import path
from connector.client.admin.wire import UnaryWire, rest_of, topic_name, whole


def _schema_path(topic: str, *rest: str) -> str:
    t = TopicName.parse(topic_name(topic)).partitioned_base  # a partition's schema is its topic's
    return path("admin", "v2", "schemas", t.tenant, t.namespace, t.local_name, *rest)


class ClustersAdmin:
    """Clusters, brokers and schemas: a part of :class:`~connector.client.admin.Admin`, which serves its
    public methods."""

    def __init__(self, wire: UnaryWire) -> None:
        self._wire = wire

    def _get(self, method: str, *segments: str, **kwargs: Any) -> Any:
        return rest_of(self._wire, method).call("GET", path("admin", "v2", *segments), **kwargs)

    # --- clusters and brokers ------------------------------------------------------------------------
    def list_clusters(self) -> list[str]:
        return list(self._get("list_clusters", "clusters") or [])

    def get_cluster(self, cluster: str) -> dict[str, Any]:
        """Pulsar's ClusterData (``serviceUrl``, ``brokerServiceUrl`` ...); ``TopicNotFound`` for a cluster
        that does not exist (Pulsar's 404)."""
        return self._get("get_cluster", "clusters", cluster)

    def list_brokers(self, cluster: str | None = None) -> list[str]:
        """The active brokers (``host:port``) of ``cluster`` (the admin URL's own when None)."""
        if cluster is None:
            cluster = self.list_clusters()[0]
        return list(self._get("list_brokers", "brokers", cluster) or [])

    def broker_healthcheck(self) -> str:
        """``"ok"`` when the broker is healthy (an error otherwise)."""
        return str(self._get("broker_healthcheck", "brokers", "health"))

    def get_broker_version(self) -> str:
        return str(self._get("get_broker_version", "brokers", "version"))

    def get_leader_broker(self) -> dict[str, Any]:
        """``{"serviceUrl": ..., "brokerId": ...}`` of the cluster's leader broker."""
        return self._get("get_leader_broker", "brokers", "leaderBroker")

    # --- schemas (REST or the broker's gRPC schema admin calls) -----------------------------------------
    def _over_grpc(self) -> bool:
        return getattr(self._wire, "transport", None) is None

    def _grpc(self, method: str, topic: str, version: int = -1, payload: dict | None = None) -> Any:
        """The JSON answer of the broker's gRPC schema admin ``method`` (the REST route's)."""
        base = str(TopicName.parse(topic_name(topic)).partitioned_base)
        request = broker_pb2.SchemaAdminRequest(topic=base, version=version,
                                                payload="" if payload is None else json.dumps(payload))
        return self._wire.unary(method, request)

    def get_schema(self, topic: str, version: int | None = None) -> dict[str, Any]:
        """The topic's latest schema (or ``version``): ``{"version", "type", "timestamp", "data",
        "properties"}``; ``TopicNotFound`` when it has none."""
        if self._over_grpc():
            return self._grpc("GetSchemaAdmin", topic, -1 if version is None else whole("version", version, 0))
        rest = ("schema",) if version is None else ("schema", str(int(version)))
        return rest_of(self._wire, "get_schema").call("GET", _schema_path(topic, *rest), not_found=TopicNotFound)

    def get_all_schemas(self, topic: str) -> list[dict[str, Any]]:
        if self._over_grpc():
            found = self._grpc("GetSchemaAdmin", topic, -2)
        else:
            found = rest_of(self._wire, "get_all_schemas").call("GET", _schema_path(topic, "schemas"),
                                                                 not_found=TopicNotFound)
        return list((found or {}).get("getSchemaResponses") or [])

    def upload_schema(self, topic: str, schema_type: str, schema: str | Mapping[str, Any] = "",
                      properties: Mapping[str, str] | None = None) -> int:
        """Register a schema (``type`` as Java's ``SchemaType``: ``AVRO``, ``JSON``, ``STRING`` ...; the
        definition as text or as a JSON object); returns its version. ``IncompatibleSchema`` when the
        topic's latest schema does not accept it."""
        if self._over_grpc():
            answer = self._grpc("UploadSchema", topic, payload=_payload(schema_type, schema, properties))
        else:
            answer = rest_of(self._wire, "upload_schema").call(
                "POST", _schema_path(topic, "schema"), _payload(schema_type, schema, properties),
                conflict=IncompatibleSchema, not_found=TopicNotFound)
        version = (answer or {}).get("version")
        return int(version.get("version") if isinstance(version, dict) else version)

    def delete_schema(self, topic: str) -> int | None:
        """Delete every version of the topic's schema; returns the latest deleted version (None when the
        server says none)."""
        if self._over_grpc():
            answer = self._grpc("DeleteSchema", topic)
        else:
            answer = rest_of(self._wire, "delete_schema").call("DELETE", _schema_path(topic, "schema"),
                                                                not_found=TopicNotFound)
        version = (answer or {}).get("version")
        return None if version is None else int(version.get("version") if isinstance(version, dict) else version)

    def test_schema_compatibility(self, topic: str, schema_type: str, schema: str | Mapping[str, Any] = "",
                                  properties: Mapping[str, str] | None = None) -> dict[str, Any]:
        """``{"compatibility": bool, "schemaCompatibilityStrategy": ...}``: whether the topic would accept
        this schema, nothing registered."""
        if self._over_grpc():
            return self._grpc("CheckSchemaCompatibility", topic, payload=_payload(schema_type, schema, properties))
        return rest_of(self._wire, "test_schema_compatibility").call(
            "POST", _schema_path(topic, "compatibility"), _payload(schema_type, schema, properties),
            not_found=TopicNotFound)


def _payload(schema_type: str, schema: str | Mapping[str, Any], properties: Mapping[str, str] | None) -> dict:
    if not isinstance(schema_type, str) or not schema_type:
        raise ValueError(f"schema_type={schema_type!r} is not valid; use a SchemaType name such as AVRO")
    text = schema if isinstance(schema, str) else json.dumps(schema)
    return {"type": schema_type.upper(), "schema": text, "properties": dict(properties or {})}
