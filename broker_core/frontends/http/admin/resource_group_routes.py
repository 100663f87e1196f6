"""``/admin/v2/resourcegroups`` and the attachments of namespaces and topics to resource groups, served by the
admin core's :class:`~broker_core.core.admin.resource_groups.ResourceGroupAdmin` (whose docstring has Pulsar's
answers):

============================================================  =================================  ============
``GET /admin/v2/resourcegroups``                              the groups' names                  super-user
``GET /admin/v2/resourcegroups/{resourcegroup}``              Pulsar's ``ResourceGroup``; 404    super-user
``PUT`` same                                                  create, or update the fields given super-user
``DELETE`` same                                               404; 409 while attached            super-user
``GET /admin/v2/namespaces/{t}/{ns}/resourcegroup``           the group's name (text); 204 none  tenant admin
``POST /admin/v2/namespaces/{t}/{ns}/resourcegroup/{name}``   attach; 412 for an unknown group   tenant admin
``DELETE /admin/v2/namespaces/{t}/{ns}/resourcegroup``        detach                             tenant admin
``GET /admin/v2/{domain}/{t}/{ns}/{topic}/resourceGroup``     the topic's own group (text); 204  lookup
``POST`` same, the group's name as the body                   attach; 404 for an unknown group;  tenant admin
                                                              no body: detach (Pulsar has no
                                                              DELETE: its remove sets null)
============================================================  =================================  ============
"""
from __future__ import annotations

import json

from aiohttp import web

from broker_core.core.admin.resource_groups import ResourceGroupAdmin
from broker_core.core.registry import TopicRegistry
from broker_core.frontends.http.admin.access import BROKER, NAMESPACE, TOPIC, namespace_of, needs, topic_of
from broker_core.frontends.http.admin.answers import BadRequest, body, ok, text
from broker_core.frontends.http.request_limits import read_body
from broker_core.security import ADMIN, LOOKUP, SUPER

GROUPS = "/admin/v2/resourcegroups"
NAMESPACE_GROUP = "/admin/v2/namespaces/{tenant}/{namespace}/resourcegroup"
TOPIC_GROUP = "/admin/v2/{domain:persistent|non-persistent}/{tenant}/{namespace}/{topic}/resourceGroup"


def _name(value: str | None) -> web.Response:
    """A group's name as Pulsar answers a ``String`` (plain text); 204 when there is none."""
    return ok() if value is None else text(value)


class ResourceGroupRoutes:
    def __init__(self, registry: TopicRegistry) -> None:
        self._groups = ResourceGroupAdmin(registry)

    def routes(self) -> list[web.RouteDef]:
        return [
            web.get(GROUPS, self.list_groups),
            web.get(f"{GROUPS}/{{resourcegroup}}", self.get_group),
            web.put(f"{GROUPS}/{{resourcegroup}}", self.put_group),
            web.delete(f"{GROUPS}/{{resourcegroup}}", self.delete_group),
            web.get(NAMESPACE_GROUP, self.namespace_group),
            web.post(f"{NAMESPACE_GROUP}/{{resourcegroup}}", self.attach_namespace),
            web.delete(NAMESPACE_GROUP, self.detach_namespace),
            web.get(TOPIC_GROUP, self.topic_group),
            web.post(TOPIC_GROUP, self.attach_topic),
        ]

    @needs(SUPER, BROKER)
    async def list_groups(self, request: web.Request) -> web.Response:
        return ok(self._groups.list())

    @needs(SUPER, BROKER)
    async def get_group(self, request: web.Request) -> web.Response:
        return ok(self._groups.get(request.match_info["resourcegroup"]))

    @needs(SUPER, BROKER)
    async def put_group(self, request: web.Request) -> web.Response:
        self._groups.put(request.match_info["resourcegroup"], await body(request, "ResourceGroup"))
        return ok()

    @needs(SUPER, BROKER)
    async def delete_group(self, request: web.Request) -> web.Response:
        self._groups.delete(request.match_info["resourcegroup"])
        return ok()

    @needs(ADMIN, NAMESPACE)
    async def namespace_group(self, request: web.Request) -> web.Response:
        return _name(self._groups.namespace_group(namespace_of(request)))

    @needs(ADMIN, NAMESPACE)
    async def attach_namespace(self, request: web.Request) -> web.Response:
        self._groups.attach_namespace(namespace_of(request), request.match_info["resourcegroup"])
        return ok()

    @needs(ADMIN, NAMESPACE)
    async def detach_namespace(self, request: web.Request) -> web.Response:
        self._groups.detach_namespace(namespace_of(request))
        return ok()

    @needs(LOOKUP, TOPIC)
    async def topic_group(self, request: web.Request) -> web.Response:
        return _name(self._groups.topic_group(topic_of(request)))

    @needs(ADMIN, TOPIC)
    async def attach_topic(self, request: web.Request) -> web.Response:
        raw = (await read_body(request)).decode("utf-8", "replace").strip()
        if not raw or raw == "null":  # no name: Pulsar's setResourceGroup(null), the topic's own group removed
            self._groups.detach_topic(topic_of(request))
            return ok()
        if raw.startswith('"'):  # a JSON string, as a JSON client sends it (pulsar-admin sends the bare name)
            try:
                raw = json.loads(raw)
            except ValueError:
                raise BadRequest("resourceGroupName: the body is not a JSON string") from None
        self._groups.attach_topic(topic_of(request), raw)
        return ok()
