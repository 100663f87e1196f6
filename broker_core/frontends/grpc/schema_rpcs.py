"""Schema calls of the ``PulsarLike`` service (issue 22): the client's typed schemas registered in, checked
against and read from the broker's schema registry (:mod:`broker_core.core.schemas`), as the Pulsar front
end's PRODUCER/SUBSCRIBE schemas and GET_SCHEMA (:mod:`broker_core.frontends.pulsar.schema_commands`).

``GetOrCreateSchema``: a producer's schema is found or registered as a new version (compatibility checked
under the namespace's strategy; ``IncompatibleSchema`` otherwise). A consumer's (``check_only``) is
registered only on a topic without a schema, else found or checked compatible without a new version, as
Pulsar's subscribe does: the admin core's :meth:`~broker_core.core.admin.schemas.SchemaAdmin.consumer_schema`,
the binary ``SUBSCRIBE``'s check too. The topic must exist (``TopicNotFound``): clients register once their producer or
consumer is open. ``GetSchema``: one version (or the latest), ``TopicNotFound`` when there is none.

The schema admin calls (``pulsar-admin schemas``, the client's ``Admin``): ``GetSchemaAdmin`` (the latest, a
version or every version), ``UploadSchema``, ``DeleteSchema``, ``CheckSchemaCompatibility`` and ``GetSchemaVersion`` call the admin
core's :class:`~broker_core.core.admin.schemas.SchemaAdmin` as the REST API's ``/admin/v2/schemas`` routes do
and answer the same JSON, so ``Admin`` answers alike over both transports.
"""
from __future__ import annotations

import json
from typing import Any

from broker_core.core.admin.schemas import SchemaAdmin
from broker_core.core.registry import TopicRegistry
from broker_core.core.schemas import SchemaInfo
from broker_core.errors import InvalidMessage, TopicNotFound
from broker_core.protocol import broker_pb2 as pb
from broker_core.protocol import pulsar_commands_pb2 as cmd
from broker_core.types import TopicName


def _reply(info: SchemaInfo) -> pb.SchemaReply:
    return pb.SchemaReply(version=info.version, type=info.schema_type, data=info.data, name=info.name,
                          properties=info.properties)


class SchemaRpcs:
    def __init__(self, registry: TopicRegistry) -> None:
        self._registry = registry
        self._admin = SchemaAdmin(registry)

    async def GetOrCreateSchema(self, request: pb.SchemaRequest) -> pb.SchemaReply:
        name = TopicName.parse(request.topic)
        if request.type not in cmd.Schema.Type.keys():
            raise InvalidMessage(f"schema type {request.type!r} is not one of Pulsar's: "
                                 f"{', '.join(cmd.Schema.Type.keys())}")
        self._registry.check_schema_topic(name)
        properties = dict(request.properties)
        if request.check_only:
            found = await self._admin.consumer_schema(name, request.type, request.data, schema_name=request.name,
                                                      properties=properties)
            return _reply(found) if found is not None else pb.SchemaReply(version=-1, type=request.type)
        info = await self._registry.schemas.get_or_create(name, request.type, request.data, name=request.name,
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
    def GetSchemaAdmin(self, request: pb.SchemaAdminRequest) -> pb.SchemaAdminReply:
        """``version``: -1 the latest, -2 every version, else that version."""
        return _answer(self._admin.versions(TopicName.parse(request.topic), request.version))

    async def UploadSchema(self, request: pb.SchemaAdminRequest) -> pb.SchemaAdminReply:
        return _answer(await self._admin.upload(TopicName.parse(request.topic), _payload(request)))

    async def DeleteSchema(self, request: pb.SchemaAdminRequest) -> pb.SchemaAdminReply:
        return _answer(await self._admin.delete(TopicName.parse(request.topic)))

    async def CheckSchemaCompatibility(self, request: pb.SchemaAdminRequest) -> pb.SchemaAdminReply:
        return _answer(await self._admin.compatibility(TopicName.parse(request.topic), _payload(request)))

    def GetSchemaVersion(self, request: pb.SchemaAdminRequest) -> pb.SchemaAdminReply:
        return _answer(self._admin.version_of(TopicName.parse(request.topic), _payload(request)))


def _payload(request: pb.SchemaAdminRequest) -> Any:
    """The request's PostSchemaPayload, parsed; ``InvalidMessage`` when it is not JSON (REST's 400)."""
    try:
        return json.loads(request.payload)
    except ValueError:
        raise InvalidMessage("payload: expected a PostSchemaPayload as JSON text") from None
    except RecursionError:
        raise InvalidMessage("payload: the PostSchemaPayload is nested too deeply") from None


def _answer(answer: Any) -> pb.SchemaAdminReply:
    return pb.SchemaAdminReply(answer=json.dumps(answer))
