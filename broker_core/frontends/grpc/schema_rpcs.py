"""Schema calls of the ``PulsarLike`` service (issue 22): the client's typed schemas registered in, checked
against and read from the broker's schema registry (:mod:`broker_core.core.schemas`), as the Pulsar front
end's PRODUCER/SUBSCRIBE schemas and GET_SCHEMA (:mod:`broker_core.frontends.pulsar.schema_commands`).

``GetOrCreateSchema``: a producer's schema is found or registered as a new version (compatibility checked
under the namespace's strategy; ``IncompatibleSchema`` otherwise). A consumer's (``check_only``) is
registered only on a topic without a schema, else found or checked compatible without a new version, as
Pulsar's subscribe does. The topic must exist (``TopicNotFound``): clients register once their producer or
consumer is open. ``GetSchema``: one version (or the latest), ``TopicNotFound`` when there is none.

The schema admin calls (``pulsar-admin schemas``, the client's ``Admin``): ``GetSchemaAdmin`` (the latest, a
version or every version), ``UploadSchema``, ``DeleteSchema`` and ``CheckSchemaCompatibility`` make the same
registry calls as the REST API's ``/admin/v2/schemas`` routes (:mod:`broker_core.frontends.http.admin.schema_routes`)
and answer the same JSON, shaped by that module, so ``Admin`` answers alike over both transports.
"""
from __future__ import annotations

import json
from typing import Any

from broker_core.core.registry import TopicRegistry
from broker_core.core.schemas import SchemaInfo
from broker_core.errors import IncompatibleSchema, InvalidMessage, TopicNotFound
from broker_core.frontends.http.admin import schema_routes
from broker_core.frontends.http.admin.answers import Refused
from broker_core.protocol import broker_pb2 as pb
from broker_core.protocol import pulsar_commands_pb2 as cmd
from broker_core.types import TopicName


def _reply(info: SchemaInfo) -> pb.SchemaReply:
    return pb.SchemaReply(version=info.version, type=info.schema_type, data=info.data, name=info.name,
                          properties=info.properties)


class SchemaRpcs:
    def __init__(self, registry: TopicRegistry) -> None:
        self._registry = registry

    async def GetOrCreateSchema(self, request: pb.SchemaRequest) -> pb.SchemaReply:
        name = TopicName.parse(request.topic)
        if request.type not in cmd.Schema.Type.keys():
            raise InvalidMessage(f"schema type {request.type!r} is not one of Pulsar's: "
                                 f"{', '.join(cmd.Schema.Type.keys())}")
        self._registry.check_schema_topic(name)
        schemas, properties = self._registry.schemas, dict(request.properties)
        if request.check_only and schemas.latest(name) is not None:
            found = schemas.find(name, request.type, request.data)
            if found is not None:
                return _reply(found)
            problem = await schemas.compatibility(name, request.type, request.data, properties)
            if problem:
                raise IncompatibleSchema(f"schema of {name.partitioned_base} refuses this consumer's schema "
                                         f"({schemas.strategy(name)}): {problem}", topic=str(name.partitioned_base))
            return pb.SchemaReply(version=-1, type=request.type)
        info = await schemas.get_or_create(name, request.type, request.data, name=request.name,
                                           properties=properties)
        return _reply(info)

    def GetSchema(self, request: pb.SchemaRequest) -> pb.SchemaReply:
        name = TopicName.parse(request.topic)
        schemas = self._registry.schemas
        info = schemas.latest(name) if request.version < 0 else schemas.get(name, request.version)
        if info is None:
            raise TopicNotFound(f"topic {name} has no schema" + ("" if request.version < 0 else
                                                               f" of version {request.version}"), topic=str(name))
        return _reply(info)

    # --- schema admin (pulsar-admin schemas), as the REST routes -----------------------------------------
    def _latest(self, name: TopicName) -> SchemaInfo:
        self._registry.namespaces.check_exists(name.namespace_name)
        found = self._registry.schemas.latest(name)
        if found is None:
            raise TopicNotFound(f"{name} has no schema", topic=str(name))
        return found

    def GetSchemaAdmin(self, request: pb.SchemaAdminRequest) -> pb.SchemaAdminReply:
        name = _admin_topic(request)
        latest = self._latest(name)
        if request.version == -1:
            return _answer(schema_routes.shown(latest))
        schemas = self._registry.schemas
        if request.version == -2:
            found = [schemas.get(name, v) for v in range(latest.version + 1)]
            return _answer({"getSchemaResponses": [schema_routes.shown(info) for info in found if info is not None]})
        info = schemas.get(name, request.version) if request.version >= 0 else None
        if info is None:
            raise TopicNotFound(f"{name} has no schema version {request.version} (its latest is {latest.version})",
                                topic=str(name), version=request.version)
        return _answer(schema_routes.shown(info))

    async def UploadSchema(self, request: pb.SchemaAdminRequest) -> pb.SchemaAdminReply:
        name = _admin_topic(request)
        schema_type, data, properties = _definition(request)
        info = await self._registry.schemas.get_or_create(name, schema_type, data, properties=properties)
        return _answer({"version": {"version": info.version}})

    async def DeleteSchema(self, request: pb.SchemaAdminRequest) -> pb.SchemaAdminReply:
        name = _admin_topic(request)
        latest = self._latest(name)
        await self._registry.schemas.delete(name)
        return _answer({"version": latest.version})

    async def CheckSchemaCompatibility(self, request: pb.SchemaAdminRequest) -> pb.SchemaAdminReply:
        name = _admin_topic(request)
        schema_type, data, properties = _definition(request)
        self._registry.namespaces.check_exists(name.namespace_name)
        schemas = self._registry.schemas
        problem = await schemas.compatibility(name, schema_type, data, properties)
        return _answer(schema_routes.compatibility_answer(problem, schemas.strategy(name)))


def _admin_topic(request: pb.SchemaAdminRequest) -> TopicName:
    """A partition's schema is its partitioned topic's (as the REST path names it)."""
    return TopicName.parse(request.topic).partitioned_base


def _definition(request: pb.SchemaAdminRequest) -> tuple[str, bytes, dict[str, str]]:
    """The request's PostSchemaPayload; ``InvalidMessage`` naming what is wrong (REST's 400)."""
    try:
        return schema_routes.definition(json.loads(request.payload))
    except ValueError:
        raise InvalidMessage("payload: expected a PostSchemaPayload as JSON text") from None
    except Refused as exc:
        raise InvalidMessage(exc.reason) from None


def _answer(answer: Any) -> pb.SchemaAdminReply:
    return pb.SchemaAdminReply(answer=json.dumps(answer))
