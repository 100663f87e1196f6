"""``/admin/v2/schemas``: a topic's schema -- the latest version, one version, all of them, a new version
uploaded, the schema deleted, a compatibility check -- each handler parsing the path, calling the admin core's
:class:`~broker_core.core.admin.schemas.SchemaAdmin` (the gRPC schema admin calls' too) and rendering its
JSON, over the broker's schema registry, the one the binary protocol's producers and consumers register with
(checked under the namespace's ``schemaCompatibilityStrategy``, Pulsar's FULL by default). Prefix ``/admin/v2/schemas/{tenant}/{ns}/{topic}``
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
``POST /version``          PostSchemaPayload: ``{"version": N}``, the version registered with   lookup
                           this type and definition (-1: none), as Pulsar's getVersionBySchema
=========================  ==================================================================  =============

``type`` is Java's ``SchemaType`` name (``AVRO``, ``JSON``, ``STRING``, ``KEY_VALUE`` ...); ``data`` /
``schema`` is the definition as text. A KeyValue schema's is ``{"key": ..., "value": ...}``, each part's
definition, as Pulsar shows it; its parts' types are in ``properties`` (``key.schema.type``, ...). A payload
that does not parse is 400 naming the field.
"""
from __future__ import annotations

from aiohttp import web

from broker_core.core.admin.schemas import GET_ALL, GET_LATEST, SchemaAdmin, shown
from broker_core.core.registry import TopicRegistry
from broker_core.frontends.http.admin.access import needs
from broker_core.frontends.http.admin.answers import body, ok, path_int
from broker_core.security import ADMIN, LOOKUP
from broker_core.types import PERSISTENT, TopicName

SCHEMA_PATH = "/admin/v2/schemas/{tenant}/{namespace}/{topic}"


def schema_topic(request: web.Request) -> TopicName:
    m = request.match_info
    return TopicName.parse(f"{PERSISTENT}://{m['tenant']}/{m['namespace']}/{m['topic']}")


SCHEMA_TOPIC = lambda request: str(schema_topic(request))  # noqa: E731


class SchemaRoutes:
    def __init__(self, registry: TopicRegistry) -> None:
        self._schemas = SchemaAdmin(registry)

    def routes(self) -> list[web.RouteDef]:
        p = SCHEMA_PATH
        return [
            web.get(p + "/schema", self.latest),
            web.get(p + "/schema/{version}", self.version),
            web.get(p + "/schemas", self.all_versions),
            web.post(p + "/schema", self.upload),
            web.delete(p + "/schema", self.delete),
            web.post(p + "/compatibility", self.compatibility),
            web.post(p + "/version", self.version_of),
        ]

    @needs(LOOKUP, SCHEMA_TOPIC)
    async def latest(self, request: web.Request) -> web.Response:
        return ok(self._schemas.versions(schema_topic(request), GET_LATEST))

    @needs(LOOKUP, SCHEMA_TOPIC)
    async def version(self, request: web.Request) -> web.Response:
        return ok(shown(self._schemas.version(schema_topic(request), path_int(request, "version"))))

    @needs(LOOKUP, SCHEMA_TOPIC)
    async def all_versions(self, request: web.Request) -> web.Response:
        return ok(self._schemas.versions(schema_topic(request), GET_ALL))

    @needs(ADMIN, SCHEMA_TOPIC)
    async def upload(self, request: web.Request) -> web.Response:
        return ok(await self._schemas.upload(schema_topic(request), await body(request, "PostSchemaPayload")))

    @needs(ADMIN, SCHEMA_TOPIC)
    async def delete(self, request: web.Request) -> web.Response:
        return ok(await self._schemas.delete(schema_topic(request)))

    @needs(LOOKUP, SCHEMA_TOPIC)
    async def compatibility(self, request: web.Request) -> web.Response:
        """Checked as a registration is (the namespace's strategy, transitive ones against every version);
        ``reason`` (not Pulsar's) says why when it is not compatible."""
        return ok(await self._schemas.compatibility(schema_topic(request),
                                                    await body(request, "PostSchemaPayload")))

    @needs(LOOKUP, SCHEMA_TOPIC)
    async def version_of(self, request: web.Request) -> web.Response:
        return ok(self._schemas.version_of(schema_topic(request), await body(request, "PostSchemaPayload")))
