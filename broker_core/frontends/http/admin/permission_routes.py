"""Permissions of a namespace or a topic: list, grant, revoke, on the admin core's
:class:`~broker_core.core.admin.namespaces.NamespaceAdmin` (what ``pulsarlike admin namespaces|topics
grant-permission|revoke-permission|permissions`` calls over gRPC). All for the tenant's admins.

=================================================================  ======================================
``GET /admin/v2/namespaces/{tenant}/{ns}/permissions``             ``{"role": ["consume", ...]}``
``POST /admin/v2/namespaces/{tenant}/{ns}/permissions/{role}``     body: the actions (``["produce",
                                                                   "consume"]``); 204, 412 unknown action
``DELETE /admin/v2/namespaces/{tenant}/{ns}/permissions/{role}``   204
``GET /admin/v2/namespaces/{tenant}/{ns}/permissions/subscription`` ``{"sub": ["role", ...]}``: the roles
                                                                   each subscription is reserved for
``POST /admin/v2/namespaces/{tenant}/{ns}/permissions/subscription/ body: the roles (``["r1"]``); only they
{subscription}``                                                   may consume from it; 204
``DELETE /admin/v2/namespaces/{tenant}/{ns}/permissions/           that role no longer; 204
{subscription}/{role}``
``GET|POST|DELETE /admin/v2/{domain}/{tenant}/{ns}/{topic}/        the same on one topic
permissions[/{role}]``
=================================================================  ======================================
"""
from __future__ import annotations

from aiohttp import web

from broker_core.core.admin.namespace_operations import NamespaceOperations
from broker_core.core.admin.namespaces import NamespaceAdmin, Scope
from broker_core.core.registry import TopicRegistry
from broker_core.frontends.http.admin.access import NAMESPACE as NS, TOPIC as TOPIC_RESOURCE
from broker_core.frontends.http.admin.access import namespace_of, needs, topic_of
from broker_core.frontends.http.admin.answers import body, ok, strings
from broker_core.security import ADMIN

TOPIC_PATH = "/admin/v2/{domain:persistent|non-persistent}/{tenant}/{namespace}/{topic}"
NAMESPACE_PATH = "/admin/v2/namespaces/{tenant}/{namespace}"


def _scope(request: web.Request) -> Scope:
    """The namespace or the topic the path names."""
    if "domain" in request.match_info:
        return Scope.of_topic(topic_of(request))
    return Scope.of_namespace(namespace_of(request))


class PermissionRoutes:
    def __init__(self, registry: TopicRegistry) -> None:
        self._namespaces = NamespaceAdmin(registry)
        self._operations = NamespaceOperations(registry)

    def routes(self) -> list[web.RouteDef]:
        found = [web.get(NAMESPACE_PATH + "/permissions/subscription", needs(ADMIN, NS)(self.subscription_roles)),
                 web.post(NAMESPACE_PATH + "/permissions/subscription/{subscription}",
                          needs(ADMIN, NS)(self.grant_subscription)),
                 web.delete(NAMESPACE_PATH + "/permissions/{subscription}/{role}",
                            needs(ADMIN, NS)(self.revoke_subscription))]
        for path, resource in ((NAMESPACE_PATH, NS), (TOPIC_PATH, TOPIC_RESOURCE)):
            found += [
                web.get(path + "/permissions", needs(ADMIN, resource)(self.permissions)),
                web.post(path + "/permissions/{role}", needs(ADMIN, resource)(self.grant)),
                web.delete(path + "/permissions/{role}", needs(ADMIN, resource)(self.revoke)),
            ]
        return found

    async def permissions(self, request: web.Request) -> web.Response:
        return ok(self._namespaces.permissions(_scope(request)))

    async def subscription_roles(self, request: web.Request) -> web.Response:
        return ok(self._operations.subscription_permissions(namespace_of(request)))

    async def grant_subscription(self, request: web.Request) -> web.Response:
        roles = strings(await body(request, "roles"), "roles")
        self._operations.grant_subscription(namespace_of(request), request.match_info["subscription"], roles)
        return ok()

    async def revoke_subscription(self, request: web.Request) -> web.Response:
        m = request.match_info
        self._operations.revoke_subscription(namespace_of(request), m["subscription"], m["role"])
        return ok()

    async def grant(self, request: web.Request) -> web.Response:
        scope = _scope(request)
        self._namespaces.grant(scope, request.match_info["role"], strings(await body(request, "actions"), "actions"))
        return ok()

    async def revoke(self, request: web.Request) -> web.Response:
        self._namespaces.revoke(_scope(request), request.match_info["role"])
        return ok()
