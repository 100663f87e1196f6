"""``/admin/v2/schemas``: a topic's schema -- the latest version, one version, all of them, a new version
uploaded, the schema deleted, a compatibility check -- over the broker's schema registry
(:mod:`broker_core.core.schemas`, checked by :mod:`broker_core.core.schema_compat` under the namespace's
``schemaCompatibilityStrategy``, BACKWARD by default), the one the
binary protocol's producers and consumers register with. Prefix ``/admin/v2/schemas/{tenant}/{ns}/{topic}``
(a persistent topic, as Pulsar's path; a partition's schema is its partitioned topic's):

=========================  ==================================================================  =============
``GET /schema``            the latest version: ``{"version", "type", "timestamp", "data",        lookup
                           "properties"}``; 404 without a schema
``GET /schema/{version}``  that version; 404 when it does not exist                             lookup
``GET /schemas``           ``{"getSchemaResponses": [...]}``, oldest first                      lookup
``POST /schema``           PostSchemaPayload ``{"type", "schema", "properties"}``: a new        tenant admin
                           version (or the identical one's); ``{"version": {"version": N}}``;
                           409 incompatible, 422 a malformed definition
``DELETE /schema``         every version; ``{"version": N}`` (the latest deleted); 404 without  tenant admin
``POST /compatibility``    PostSchemaPayload: ``{"compatibility": bool,                          lookup
                           "schemaCompatibilityStrategy": ...}`` (the namespace's, checked as
                           a registration would be)
=========================  ==================================================================  =============

``type`` is Java's ``SchemaType`` name (``AVRO``, ``JSON``, ``STRING``, ``KEY_VALUE`` ...); ``data`` /
``schema`` is the definition as text. A KeyValue schema's is ``{"key": ..., "value": ...}``, each part's
definition, as Pulsar shows it; its parts' types are in ``properties`` (``key.schema.type``, ...).
"""
from __future__ import annotations

import json
from typing import Any

from aiohttp import web

from broker_core.core.registry import TopicRegistry
from broker_core.core.schema_compat import DEFAULT_STRATEGY, KEY_VALUE, KV_LENGTH, split_key_value
from broker_core.errors import IncompatibleSchema, InvalidSchema, TopicNotFound
from broker_core.frontends.http.admin.access import needs
from broker_core.frontends.http.admin.answers import BadRequest, Refused, body, obj, ok, path_int
from broker_core.security import ADMIN, LOOKUP
from broker_core.storage.schema_files import SchemaInfo
from broker_core.types import PERSISTENT, TopicName

SCHEMA_PATH = "/admin/v2/schemas/{tenant}/{namespace}/{topic}"

# Java's SchemaType names <-> the binary protocol's Schema.Type names (what the registry stores)
_JAVA = {"None": "NONE", "String": "STRING", "Json": "JSON", "Protobuf": "PROTOBUF", "Avro": "AVRO",
         "Bool": "BOOLEAN", "Int8": "INT8", "Int16": "INT16", "Int32": "INT32", "Int64": "INT64",
         "Float": "FLOAT", "Double": "DOUBLE", "Date": "DATE", "Time": "TIME", "Timestamp": "TIMESTAMP",
         KEY_VALUE: "KEY_VALUE", "Instant": "INSTANT", "LocalDate": "LOCAL_DATE", "LocalTime": "LOCAL_TIME",
         "LocalDateTime": "LOCAL_DATE_TIME", "ProtobufNative": "PROTOBUF_NATIVE"}
_STORED = {java: stored for stored, java in _JAVA.items()} | {"BYTES": "None"}


def schema_topic(request: web.Request) -> TopicName:
    m = request.match_info
    return TopicName.parse(f"{PERSISTENT}://{m['tenant']}/{m['namespace']}/{m['topic']}")


SCHEMA_TOPIC = lambda request: str(schema_topic(request))  # noqa: E731


def _text(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def _part_shown(data: bytes) -> Any:
    """A KeyValue part as Pulsar shows it: a JSON definition as JSON, anything else as text."""
    try:
        return json.loads(data) if data else ""
    except ValueError:
        return _text(data)


def shown(info: SchemaInfo) -> dict[str, Any]:
    """Pulsar's GetSchemaResponse."""
    data = _text(info.data)
    if info.schema_type == KEY_VALUE:
        parts = split_key_value(info.data)
        if parts is not None:
            data = json.dumps({"key": _part_shown(parts[0]), "value": _part_shown(parts[1])})
    return {"version": info.version, "type": _JAVA.get(info.schema_type, info.schema_type.upper()),
            "timestamp": info.timestamp_ms, "data": data, "properties": dict(info.properties)}


def _part_data(value: Any, field: str) -> bytes:
    if isinstance(value, str):
        return value.encode()
    if isinstance(value, (dict, list)):
        return json.dumps(value, separators=(",", ":")).encode()
    raise BadRequest(f"{field}: expected a schema definition (a JSON object or a string)")


async def payload(request: web.Request) -> tuple[str, bytes, dict[str, str]]:
    """(stored type, definition, properties) of a PostSchemaPayload body; 400 naming the field."""
    return definition(await body(request, "PostSchemaPayload"))


def definition(found: Any) -> tuple[str, bytes, dict[str, str]]:
    """(stored type, definition, properties) of a parsed PostSchemaPayload (also the gRPC schema admin's:
    :mod:`broker_core.frontends.grpc.schema_rpcs`); :class:`BadRequest` naming the field."""
    found = obj(found, "PostSchemaPayload")
    java = found.get("type")
    if not isinstance(java, str) or java.upper() not in _STORED:
        raise BadRequest(f"type: expected one of {', '.join(sorted(_STORED))}, got {json.dumps(java)[:64]}")
    schema_type = _STORED[java.upper()]
    definition = found.get("schema", "")
    if not isinstance(definition, str):
        raise BadRequest(f"schema: expected the definition as a string, got {json.dumps(definition)[:64]}")
    properties = obj(found.get("properties") or {}, "properties")
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in properties.items()):
        raise BadRequest("properties: expected an object of strings")
    if schema_type != KEY_VALUE:
        return schema_type, definition.encode(), properties
    try:
        parts = obj(json.loads(definition), "schema")
    except ValueError:
        raise BadRequest("schema: a KEY_VALUE schema is {\"key\": ..., \"value\": ...} as JSON") from None
    data = b""
    for part in ("key", "value"):
        raw = _part_data(parts.get(part, ""), f"schema.{part}")
        data += KV_LENGTH.pack(len(raw)) + raw
    return schema_type, data, properties


class SchemaRoutes:
    def __init__(self, registry: TopicRegistry) -> None:
        self._registry = registry
        self._schemas = registry.schemas

    def routes(self) -> list[web.RouteDef]:
        p = SCHEMA_PATH
        return [
            web.get(p + "/schema", self.latest),
            web.get(p + "/schema/{version}", self.version),
            web.get(p + "/schemas", self.all_versions),
            web.post(p + "/schema", self.upload),
            web.delete(p + "/schema", self.delete),
            web.post(p + "/compatibility", self.compatibility),
        ]

    def _latest(self, name: TopicName) -> SchemaInfo:
        self._registry.namespaces.check_exists(name.namespace_name)
        found = self._schemas.latest(name)
        if found is None:
            raise TopicNotFound(f"{name} has no schema", topic=str(name))
        return found

    @needs(LOOKUP, SCHEMA_TOPIC)
    async def latest(self, request: web.Request) -> web.Response:
        return ok(shown(self._latest(schema_topic(request))))

    @needs(LOOKUP, SCHEMA_TOPIC)
    async def version(self, request: web.Request) -> web.Response:
        name, number = schema_topic(request), path_int(request, "version")
        latest = self._latest(name)
        found = self._schemas.get(name, number)
        if found is None:
            raise TopicNotFound(f"{name} has no schema version {number} (its latest is {latest.version})",
                                topic=str(name), version=number)
        return ok(shown(found))

    @needs(LOOKUP, SCHEMA_TOPIC)
    async def all_versions(self, request: web.Request) -> web.Response:
        name = schema_topic(request)
        latest = self._latest(name)
        found = [self._schemas.get(name, v) for v in range(latest.version + 1)]
        return ok({"getSchemaResponses": [shown(info) for info in found if info is not None]})

    @needs(ADMIN, SCHEMA_TOPIC)
    async def upload(self, request: web.Request) -> web.Response:
        name = schema_topic(request)
        schema_type, data, properties = await payload(request)
        try:
            info = await self._schemas.get_or_create(name, schema_type, data, properties=properties)
        except InvalidSchema as exc:  # Pulsar: 422 for a definition it cannot parse
            raise Refused(422, exc.message) from None
        except IncompatibleSchema as exc:  # Pulsar: 409 "Incompatible schema"
            raise Refused(409, exc.message) from None
        return ok({"version": {"version": info.version}})

    @needs(ADMIN, SCHEMA_TOPIC)
    async def delete(self, request: web.Request) -> web.Response:
        name = schema_topic(request)
        latest = self._latest(name)
        await self._schemas.delete(name)
        return ok({"version": latest.version})

    @needs(LOOKUP, SCHEMA_TOPIC)
    async def compatibility(self, request: web.Request) -> web.Response:
        """Checked as a registration is (the namespace's strategy, transitive ones against every version);
        ``reason`` (not Pulsar's) says why when it is not compatible."""
        name = schema_topic(request)
        schema_type, data, properties = await payload(request)
        self._registry.namespaces.check_exists(name.namespace_name)
        try:
            problem = await self._schemas.compatibility(name, schema_type, data, properties)
        except InvalidSchema as exc:
            raise Refused(422, exc.message) from None
        return ok(compatibility_answer(problem, self._schemas.strategy(name)))


def compatibility_answer(problem: str | None, strategy: str) -> dict[str, Any]:
    """The compatibility check's answer: ``problem`` (None: compatible) under the namespace's ``strategy``."""
    answer: dict[str, Any] = {"compatibility": problem is None,
                              "schemaCompatibilityStrategy": DEFAULT_STRATEGY if strategy == "UNDEFINED" else strategy}
    if problem:
        answer["reason"] = problem
    return answer
