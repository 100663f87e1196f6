"""GET_SCHEMA and GET_OR_CREATE_SCHEMA, over the broker's schema registry
(:mod:`broker_core.core.schemas`).

GET_SCHEMA answers the topic's latest schema, or the version asked for; a topic without one (or without
that version) is answered ``TopicNotFound``, as Pulsar answers "Topic not found or no-schema".
GET_OR_CREATE_SCHEMA registers the schema (or finds an identical one) and answers its version, or
``IncompatibleSchema``; the topic must exist (``TopicNotFound`` otherwise, as Pulsar answers; a topic of a
namespace that does not exist never has a schema). A new version is checked and written off the event loop,
and answered once it is durable.
"""
from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from broker_core.errors import PulsarLikeError, TopicNotFound
from broker_core.protocol import pulsar_api_pb2 as wire
from broker_core.protocol import pulsar_commands_pb2 as cmd
from broker_core.protocol.server_errors import server_error
from broker_core.protocol.status import wire_message
from broker_core.core.admin.schemas import SchemaAdmin
from broker_core.core.schemas import SchemaInfo, version_number
from broker_core.types import TopicName

if TYPE_CHECKING:
    from broker_core.frontends.pulsar.connection import PulsarConnection

T = cmd.BaseCommand


def to_wire(info: SchemaInfo) -> cmd.Schema:
    return cmd.Schema(name=info.name, schema_data=info.data, type=cmd.Schema.Type.Value(info.schema_type),
                      properties=[wire.KeyValue(key=k, value=v) for k, v in sorted(info.properties.items())])


async def register(conn: "PulsarConnection", name: TopicName, schema_type: str, schema: cmd.Schema,
                   request_id: int) -> SchemaInfo | None:
    """The version of ``schema`` registered for ``name`` (found or created, written off the event loop) for
    a PRODUCER or SUBSCRIBE carrying it; None when the command was answered with an error instead (a
    refusal, or an id for a broker bug or a failed write) or the connection closed meanwhile."""
    try:
        info = await conn.front.schemas.get_or_create(name, schema_type, schema.schema_data, name=schema.name,
                                                      properties={kv.key: kv.value for kv in schema.properties})
    except PulsarLikeError as exc:
        conn.error(request_id, exc)
        return None
    except Exception as exc:  # a broker bug or a failed write: the client gets an id to find it in the log
        from broker_core.frontends.pulsar.connection import unexpected
        conn.error(request_id, unexpected(exc, conn.peer))
        return None
    return None if conn.closed else info


async def check_for_consumer(conn: "PulsarConnection", name: TopicName, schema_type: str, schema: cmd.Schema,
                             request_id: int) -> bool:
    """Whether a SUBSCRIBE carrying ``schema`` may join: registered on a topic without a schema, else found or
    checked compatible without a new version, by the admin core's
    :meth:`~broker_core.core.admin.schemas.SchemaAdmin.consumer_schema` (the gRPC ``GetOrCreateSchema`` with
    ``check_only`` asks it too); a refusal (``IncompatibleSchema``...) is answered."""
    try:
        await SchemaAdmin(conn.front.registry).consumer_schema(
            name, schema_type, schema.schema_data, schema_name=schema.name,
            properties={kv.key: kv.value for kv in schema.properties})
    except PulsarLikeError as exc:
        conn.error(request_id, exc)
        return False
    except Exception as exc:  # a broker bug or a failed write: the client gets an id to find it in the log
        from broker_core.frontends.pulsar.connection import unexpected
        conn.error(request_id, unexpected(exc, conn.peer))
        return False
    return not conn.closed


class SchemaCommands:
    def __init__(self, conn: "PulsarConnection") -> None:
        self._conn = conn
        self._schemas = conn.front.schemas
        self._tasks: set[asyncio.Task] = set()

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
        try:
            name = TopicName.parse(request.topic)
            self._conn.authorize("produce", str(name))  # a producer's request (Pulsar: produce permission)
            self._conn.front.registry.check_schema_topic(name)
        except PulsarLikeError as exc:
            self._answer(request.request_id, exc)
            return
        # a new version is checked and written off the event loop: the answer follows once it is durable
        task = asyncio.get_running_loop().create_task(self._register(request, name))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _register(self, request: cmd.CommandGetOrCreateSchema, name: TopicName) -> None:
        schema = request.schema
        try:
            info = await self._schemas.get_or_create(name, cmd.Schema.Type.Name(schema.type), schema.schema_data,
                                                     name=schema.name,
                                                     properties={kv.key: kv.value for kv in schema.properties})
        except PulsarLikeError as exc:
            self._answer(request.request_id, exc)
        except Exception as exc:  # a broker bug or a failed write: the client gets an id to find it in the log
            from broker_core.frontends.pulsar.connection import unexpected
            self._answer(request.request_id, unexpected(exc, self._conn.peer))
        else:
            self._answer(request.request_id, info)

    def _answer(self, request_id: int, outcome: SchemaInfo | PulsarLikeError) -> None:
        reply = cmd.CommandGetOrCreateSchemaResponse(request_id=request_id)
        if isinstance(outcome, PulsarLikeError):
            reply.error_code, reply.error_message = server_error(outcome), wire_message(outcome)
        else:
            reply.schema_version = outcome.version_bytes
        self._conn.send(T(type=T.GET_OR_CREATE_SCHEMA_RESPONSE, getOrCreateSchemaResponse=reply))
