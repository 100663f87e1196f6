"""GET_SCHEMA and GET_OR_CREATE_SCHEMA, over the broker's schema registry
(:mod:`broker_core.service.schemas`).

GET_SCHEMA answers the topic's latest schema, or the version asked for; a topic without one (or without
that version) is answered ``TopicNotFound``, as Pulsar answers "Topic not found or no-schema".
GET_OR_CREATE_SCHEMA registers the schema (or finds an identical one) and answers its version, or
``IncompatibleSchema``.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from broker_core.errors import PulsarLikeError, TopicNotFound
from broker_core.protocol import pulsar_api_pb2 as wire
from broker_core.protocol import pulsar_commands_pb2 as cmd
from broker_core.protocol.server_errors import server_error
from broker_core.protocol.status import wire_message
from broker_core.service.schemas import SchemaInfo, version_number
from broker_core.types import TopicName

if TYPE_CHECKING:
    from broker_core.service.pulsar.connection import PulsarConnection

T = cmd.BaseCommand


def to_wire(info: SchemaInfo) -> cmd.Schema:
    return cmd.Schema(name=info.name, schema_data=info.data, type=cmd.Schema.Type.Value(info.schema_type),
                      properties=[wire.KeyValue(key=k, value=v) for k, v in sorted(info.properties.items())])


class SchemaCommands:
    def __init__(self, conn: "PulsarConnection") -> None:
        self._conn = conn
        self._schemas = conn.front.schemas

    def handlers(self) -> dict:
        return {T.GET_SCHEMA: self.get_schema, T.GET_OR_CREATE_SCHEMA: self.get_or_create}

    def get_schema(self, request: cmd.CommandGetSchema) -> None:
        reply = cmd.CommandGetSchemaResponse(request_id=request.request_id)
        try:
            name = TopicName.parse(request.topic)
            self._conn.authorize("lookup", str(name))
            if request.HasField("schema_version"):
                info = self._schemas.get(name, version_number(request.schema_version))
            else:
                info = self._schemas.latest(name)
            if info is None:
                raise TopicNotFound(f"topic {name} has no schema" + (" of that version" if request.HasField(
                    "schema_version") else ""), topic=str(name))
        except PulsarLikeError as exc:
            reply.error_code, reply.error_message = server_error(exc), wire_message(exc)
        else:
            reply.schema.CopyFrom(to_wire(info))
            reply.schema_version = info.version_bytes
        self._conn.send(T(type=T.GET_SCHEMA_RESPONSE, getSchemaResponse=reply))

    def get_or_create(self, request: cmd.CommandGetOrCreateSchema) -> None:
        reply = cmd.CommandGetOrCreateSchemaResponse(request_id=request.request_id)
        try:
            name = TopicName.parse(request.topic)
            self._conn.authorize("produce", str(name))  # a producer's request (Pulsar: produce permission)
            schema = request.schema
            info = self._schemas.get_or_create(name, cmd.Schema.Type.Name(schema.type), schema.schema_data,
                                               name=schema.name,
                                               properties={kv.key: kv.value for kv in schema.properties})
        except PulsarLikeError as exc:
            reply.error_code, reply.error_message = server_error(exc), wire_message(exc)
        else:
            reply.schema_version = info.version_bytes
        self._conn.send(T(type=T.GET_OR_CREATE_SCHEMA_RESPONSE, getOrCreateSchemaResponse=reply))
