"""Schema calls of the ``PulsarLike`` service (issue 22): the client's typed schemas registered in, checked
against and read from the broker's schema registry (:mod:`broker_core.core.schemas`), as the Pulsar front
end's PRODUCER/SUBSCRIBE schemas and GET_SCHEMA (:mod:`broker_core.frontends.pulsar.schema_commands`).

``GetOrCreateSchema``: a producer's schema is found or registered as a new version (compatibility checked
under the namespace's strategy; ``IncompatibleSchema`` otherwise). A consumer's (``check_only``) is
registered only on a topic without a schema, else found or checked compatible without a new version, as
Pulsar's subscribe does. The topic must exist (``TopicNotFound``): clients register once their producer or
consumer is open. ``GetSchema``: one version (or the latest), ``TopicNotFound`` when there is none.
"""
from __future__ import annotations

from broker_core.core.registry import TopicRegistry
from broker_core.core.schemas import SchemaInfo
from broker_core.errors import IncompatibleSchema, InvalidMessage, TopicNotFound
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
