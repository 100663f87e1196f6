"""A topic's schema as the admin API and the clients' consumers ask for it, once for every front end: the REST
``/admin/v2/schemas`` routes, the gRPC schema admin calls (``GetSchemaAdmin``, ``UploadSchema``, ...) with the
same JSON, and the consumer check of the gRPC ``GetOrCreateSchema`` (``check_only``) and the binary
``SUBSCRIBE`` (:meth:`SchemaAdmin.consumer_schema`), over the broker's schema registry
(:mod:`broker_core.core.schemas`, checked by :mod:`broker_core.core.schema_compat` under the namespace's
``schemaCompatibilityStrategy``). A partition's schema is its partitioned topic's.

Pulsar's JSON: ``GetSchemaResponse`` ``{"version", "type", "timestamp", "data", "properties"}``
(:func:`shown`), ``PostSchemaPayload`` ``{"type", "schema", "properties"}`` (:func:`definition`),
``IsCompatibilityResponse`` (:func:`compatibility_answer`). ``type`` is Java's ``SchemaType`` name (``AVRO``,
``JSON``, ``STRING``, ``KEY_VALUE`` ...); a KeyValue schema's ``data`` is ``{"key": ..., "value": ...}``, each
part's definition, its parts' types in ``properties`` (``key.schema.type``, ...).

Errors: ``TopicNotFound`` without a schema (or that version), ``InvalidMessage`` for a payload that does not
parse (REST 400), ``InvalidSchema`` for a definition the registry cannot read (REST 422),
``IncompatibleSchema`` for an incompatible one (REST 409).
"""
from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from broker_core.core.schema_compat import DEFAULT_STRATEGY, KEY_VALUE, KV_LENGTH, split_key_value
from broker_core.core.schemas import SchemaInfo
from broker_core.errors import IncompatibleSchema, InvalidMessage, TopicNotFound
from broker_core.types import TopicName

if TYPE_CHECKING:
    from broker_core.core.registry import TopicRegistry

GET_LATEST, GET_ALL = -1, -2
"""The version numbers :meth:`SchemaAdmin.versions` reads as the latest one and as every one."""

# Java's SchemaType names <-> the binary protocol's Schema.Type names (what the registry stores)
_JAVA = {"None": "NONE", "String": "STRING", "Json": "JSON", "Protobuf": "PROTOBUF", "Avro": "AVRO",
         "Bool": "BOOLEAN", "Int8": "INT8", "Int16": "INT16", "Int32": "INT32", "Int64": "INT64",
         "Float": "FLOAT", "Double": "DOUBLE", "Date": "DATE", "Time": "TIME", "Timestamp": "TIMESTAMP",
         KEY_VALUE: "KEY_VALUE", "Instant": "INSTANT", "LocalDate": "LOCAL_DATE", "LocalTime": "LOCAL_TIME",
         "LocalDateTime": "LOCAL_DATE_TIME", "ProtobufNative": "PROTOBUF_NATIVE"}
_STORED = {java: stored for stored, java in _JAVA.items()} | {"BYTES": "None"}


def _text(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def _part_shown(data: bytes) -> Any:
    """A KeyValue part as Pulsar shows it: a JSON definition as JSON, anything else as text."""
    try:
        return json.loads(data) if data else ""
    except ValueError:
        return _text(data)


def shown(info: SchemaInfo) -> dict[str, Any]:
    """Pulsar's ``GetSchemaResponse`` of one version."""
    data = _text(info.data)
    if info.schema_type == KEY_VALUE:
        parts = split_key_value(info.data)
        if parts is not None:
            data = json.dumps({"key": _part_shown(parts[0]), "value": _part_shown(parts[1])})
    return {"version": info.version, "type": _JAVA.get(info.schema_type, info.schema_type.upper()),
            "timestamp": info.timestamp_ms, "data": data, "properties": dict(info.properties)}


def _quoted(value: Any) -> str:
    return json.dumps(value)[:64] if not isinstance(value, (dict, list)) else type(value).__name__


def _part_data(value: Any, field: str) -> bytes:
    if isinstance(value, str):
        return value.encode()
    if isinstance(value, (dict, list)):
        return json.dumps(value, separators=(",", ":")).encode()
    raise InvalidMessage(f"{field}: expected a schema definition (a JSON object or a string)", field=field)


def definition(found: Any) -> tuple[str, bytes, dict[str, str]]:
    """(stored type, definition, properties) of a parsed ``PostSchemaPayload``; ``InvalidMessage`` naming the
    field that is wrong."""
    if not isinstance(found, dict):
        raise InvalidMessage(f"PostSchemaPayload: expected a JSON object, got {_quoted(found)}")
    java = found.get("type")
    if not isinstance(java, str) or java.upper() not in _STORED:
        raise InvalidMessage(f"type: expected one of {', '.join(sorted(_STORED))}, got {_quoted(java)}")
    schema_type = _STORED[java.upper()]
    text = found.get("schema", "")
    if not isinstance(text, str):
        raise InvalidMessage(f"schema: expected the definition as a string, got {_quoted(text)}")
    properties = found.get("properties") or {}
    if not isinstance(properties, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                                   for k, v in properties.items()):
        raise InvalidMessage("properties: expected an object of strings")
    if schema_type != KEY_VALUE:
        return schema_type, text.encode(), properties
    try:
        parts = json.loads(text)
    except ValueError:
        parts = None
    if not isinstance(parts, dict):
        raise InvalidMessage("schema: a KEY_VALUE schema is {\"key\": ..., \"value\": ...} as JSON")
    data = b""
    for part in ("key", "value"):
        raw = _part_data(parts.get(part, ""), f"schema.{part}")
        data += KV_LENGTH.pack(len(raw)) + raw
    return schema_type, data, properties


def compatibility_answer(problem: str | None, strategy: str) -> dict[str, Any]:
    """Pulsar's ``IsCompatibilityResponse``: ``problem`` (None: compatible) under the namespace's ``strategy``;
    ``reason`` (not Pulsar's) says why when it is not compatible."""
    answer: dict[str, Any] = {"compatibility": problem is None,
                              "schemaCompatibilityStrategy": DEFAULT_STRATEGY if strategy == "UNDEFINED" else strategy}
    if problem:
        answer["reason"] = problem
    return answer


class SchemaAdmin:
    """The schemas of ``registry``'s topics."""

    def __init__(self, registry: "TopicRegistry") -> None:
        self._registry = registry
        self._schemas = registry.schemas

    def latest(self, name: TopicName) -> SchemaInfo:
        """The latest version of ``name``'s schema; ``TopicNotFound`` without one."""
        name = name.partitioned_base
        self._registry.namespaces.check_exists(name.namespace_name)
        found = self._schemas.latest(name)
        if found is None:
            raise TopicNotFound(f"{name} has no schema", topic=str(name))
        return found

    def version(self, name: TopicName, number: int) -> SchemaInfo:
        """Version ``number`` of ``name``'s schema; ``TopicNotFound`` naming the latest when it has not it."""
        latest = self.latest(name)
        found = self._schemas.get(name.partitioned_base, number) if number >= 0 else None
        if found is None:
            raise TopicNotFound(f"{name.partitioned_base} has no schema version {number} (its latest is"
                                f" {latest.version})", topic=str(name.partitioned_base), version=number)
        return found

    def versions(self, name: TopicName, number: int = GET_ALL) -> Any:
        """What REST's ``schema``, ``schema/{version}`` and ``schemas`` answer, by ``number``: the latest
        (:data:`GET_LATEST`), every version (:data:`GET_ALL`: ``{"getSchemaResponses": [...]}``, oldest first)
        or that version."""
        if number == GET_LATEST:
            return shown(self.latest(name))
        if number != GET_ALL:
            return shown(self.version(name, number))
        latest, base = self.latest(name), name.partitioned_base
        found = [self._schemas.get(base, v) for v in range(latest.version + 1)]
        return {"getSchemaResponses": [shown(info) for info in found if info is not None]}

    async def upload(self, name: TopicName, payload: Any) -> dict[str, Any]:
        """A ``PostSchemaPayload`` registered as a new version (or the identical one's):
        ``{"version": {"version": N}}``."""
        schema_type, data, properties = definition(payload)
        info = await self._schemas.get_or_create(name.partitioned_base, schema_type, data, properties=properties,
                                                 by_admin=True)
        return {"version": {"version": info.version}}

    def version_of(self, name: TopicName, payload: Any) -> dict[str, Any]:
        """The version a ``PostSchemaPayload`` was registered as (Pulsar's ``getVersionBySchema``, its
        ``LongSchemaVersion``): ``{"version": N}``, -1 when no version has this type and definition."""
        schema_type, data, _ = definition(payload)
        base = name.partitioned_base
        self._registry.namespaces.check_exists(base.namespace_name)
        found = self._schemas.find(base, schema_type, data)
        return {"version": -1 if found is None else found.version}

    async def delete(self, name: TopicName) -> dict[str, Any]:
        """Every version deleted: ``{"version": N}``, the latest one's number."""
        latest = self.latest(name)
        await self._schemas.delete(name.partitioned_base)
        return {"version": latest.version}

    async def compatibility(self, name: TopicName, payload: Any) -> dict[str, Any]:
        """Whether a ``PostSchemaPayload`` would be registered now, checked as a registration is (the
        namespace's strategy, transitive ones against every version); nothing written."""
        schema_type, data, properties = definition(payload)
        base = name.partitioned_base
        self._registry.namespaces.check_exists(base.namespace_name)
        problem = await self._schemas.compatibility(base, schema_type, data, properties)
        return compatibility_answer(problem, self._schemas.strategy(base))

    async def consumer_schema(self, name: TopicName, schema_type: str, data: bytes, *, schema_name: str = "",
                              properties: dict[str, str] | None = None) -> SchemaInfo | None:
        """Whether a consumer bringing a schema may read ``name``, as Pulsar's brokers check one at subscribe:
        on a topic without a schema it is registered (its version answered); else the identical version is
        answered, or it is checked compatible without a new version (None); ``IncompatibleSchema`` otherwise.
        What the gRPC ``GetOrCreateSchema`` with ``check_only`` and the binary ``SUBSCRIBE`` ask."""
        properties = dict(properties or {})
        schemas = self._schemas
        if schemas.latest(name) is None:
            return await schemas.get_or_create(name, schema_type, data, name=schema_name, properties=properties)
        found = schemas.find(name, schema_type, data)
        if found is not None:
            return found
        problem = await schemas.consumer_compatibility(name, schema_type, data, properties)
        if problem:
            raise IncompatibleSchema(f"schema of {name.partitioned_base} refuses this consumer's schema "
                                     f"({schemas.strategy(name)}): {problem}", topic=str(name.partitioned_base))
        return None
