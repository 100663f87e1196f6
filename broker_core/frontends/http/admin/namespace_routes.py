"""``/admin/v2/namespaces``: list, create, delete, Pulsar's ``Policies``, the topics, and the namespace-wide
subscription verbs: each handler parses the request, calls the admin core
(:class:`~broker_core.core.admin.namespaces.NamespaceAdmin`,
:class:`~broker_core.core.admin.subscriptions.SubscriptionAdmin`: what ``pulsarlike admin namespaces`` calls
over gRPC too) and renders its answer. One policy at a time: :mod:`.policy_routes`; backlog quotas:
:mod:`.namespace_policy_routes`. Prefix ``/admin/v2/namespaces``:

===========================================  =================================================  ============
``GET /{tenant}``                            ``["tenant/ns", ...]``; 404                        tenant admin
``PUT /{tenant}/{ns}``                       create (a Policies body is accepted, not read);    tenant admin
                                             204, 409, 404 without the tenant, 412 bad name
``DELETE /{tenant}/{ns}``                    ``?force=true`` deletes its topics first; 204,     tenant admin
                                             409 while it has topics
``GET /{tenant}/{ns}``                       Pulsar's Policies (the fields the broker has)      tenant admin
``GET /{tenant}/{ns}/topics``                its topics, ``?mode=PERSISTENT`` (default),        lookup
                                             ``NON_PERSISTENT`` or ``ALL``
``POST /{tenant}/{ns}/clearBacklog[/{sub}]`` acknowledge everything (on one subscription)       consume
``POST /{tenant}/{ns}/unsubscribe/{sub}``    delete the subscription from every topic           consume
``PUT /{tenant}/{ns}/unload``                unload its loaded topics (clients reconnect); 204  tenant admin
``GET /{tenant}/{ns}/bundles``               Pulsar's BundlesData: one bundle, the whole range  tenant admin
``GET|PUT|DELETE /{tenant}/{ns}/properties`` its properties; PUT adds a map's; DELETE all       tenant admin
``PUT /{tenant}/{ns}/property/{key}/{value}`` one property set                                  tenant admin
``GET|DELETE /{tenant}/{ns}/property/{key}`` one property's value (204 unset); removed         tenant admin
===========================================  =================================================  ============

Unload, bundles and properties: the admin core's
:class:`~broker_core.core.admin.namespace_operations.NamespaceOperations`.
"""
from __future__ import annotations

from aiohttp import web

from broker_core.core import topic_lookup
from broker_core.core.admin import SubscriptionAdmin
from broker_core.core.admin.namespaces import NamespaceAdmin
from broker_core.core.admin.namespace_operations import NamespaceOperations
from broker_core.core.registry import TopicRegistry
from broker_core.frontends.http.admin.access import NAMESPACE as NS, TENANT, namespace_of, needs, tenant_of
from broker_core.core.admin.values import string_map
from broker_core.frontends.http.admin.answers import BadRequest, acknowledged, body, flag, obj, ok
from broker_core.security import ADMIN, CONSUME, LOOKUP


class NamespaceRoutes:
    def __init__(self, registry: TopicRegistry) -> None:
        self._namespaces = NamespaceAdmin(registry)
        self._subscriptions = SubscriptionAdmin(registry)
        self._operations = NamespaceOperations(registry)

    def routes(self) -> list[web.RouteDef]:
        prefix = "/admin/v2/namespaces/{tenant}"
        ns = prefix + "/{namespace}"
        return [
            web.get(prefix, self.list_namespaces),
            web.put(ns, self.create_namespace),
            web.delete(ns, self.delete_namespace),
            web.get(ns, self.get_policies),
            web.get(ns + "/topics", self.list_topics),
            web.post(ns + "/clearBacklog", self.clear_backlog),
            web.post(ns + "/clearBacklog/{subscription}", self.clear_backlog),
            web.post(ns + "/unsubscribe/{subscription}", self.unsubscribe),
            web.put(ns + "/unload", self.unload),
            web.get(ns + "/bundles", self.bundles),
            web.get(ns + "/properties", self.properties),
            web.put(ns + "/properties", self.set_properties),
            web.delete(ns + "/properties", self.clear_properties),
            web.put(ns + "/property/{key}/{value}", self.set_property),
            web.get(ns + "/property/{key}", self.get_property),
            web.delete(ns + "/property/{key}", self.remove_property),
        ]

    @needs(ADMIN, TENANT)
    async def list_namespaces(self, request: web.Request) -> web.Response:
        return ok(self._namespaces.list(tenant_of(request)))

    @needs(ADMIN, NS)
    async def create_namespace(self, request: web.Request) -> web.Response:
        obj(await body(request, "Policies", {}), "Policies")
        self._namespaces.create(namespace_of(request))
        return ok()

    @needs(ADMIN, NS)
    async def delete_namespace(self, request: web.Request) -> web.Response:
        await self._namespaces.delete(namespace_of(request), force=flag(request, "force"))
        return ok()

    @needs(ADMIN, NS)
    async def get_policies(self, request: web.Request) -> web.Response:
        return ok(self._namespaces.pulsar_policies(namespace_of(request)))

    @needs(LOOKUP, NS)
    async def list_topics(self, request: web.Request) -> web.Response:
        """``?mode=PERSISTENT`` (the default), ``NON_PERSISTENT`` or ``ALL``, as the clients' regex
        subscriptions ask over HTTP (the same listing as the binary GET_TOPICS_OF_NAMESPACE)."""
        mode = request.query.get("mode", "PERSISTENT")
        if mode.upper() not in topic_lookup.MODES:
            raise BadRequest(f"mode: expected one of {', '.join(topic_lookup.MODES)}, got {mode[:64]!r}")
        return ok(self._namespaces.topics(namespace_of(request), mode))

    # ------------------------------------------------------------------ every topic's subscriptions
    @needs(CONSUME, NS)
    async def clear_backlog(self, request: web.Request) -> web.Response:
        return acknowledged(self._subscriptions.clear_namespace_backlog(
            namespace_of(request), request.match_info.get("subscription", "")).acknowledged)

    @needs(CONSUME, NS)
    async def unsubscribe(self, request: web.Request) -> web.Response:
        self._subscriptions.unsubscribe_namespace(namespace_of(request), request.match_info["subscription"])
        return ok()

    # ------------------------------------------------------------------ unload, bundles, properties
    @needs(ADMIN, NS)
    async def unload(self, request: web.Request) -> web.Response:
        await self._operations.unload(namespace_of(request))
        return ok()

    @needs(ADMIN, NS)
    async def bundles(self, request: web.Request) -> web.Response:
        return ok(self._operations.bundles(namespace_of(request)))

    @needs(ADMIN, NS)
    async def properties(self, request: web.Request) -> web.Response:
        return ok(self._operations.properties(namespace_of(request)))

    @needs(ADMIN, NS)
    async def set_properties(self, request: web.Request) -> web.Response:
        properties = string_map(await body(request, "properties"), "properties")
        self._operations.set_properties(namespace_of(request), properties)
        return ok()

    @needs(ADMIN, NS)
    async def clear_properties(self, request: web.Request) -> web.Response:
        self._operations.clear_properties(namespace_of(request))
        return ok()

    @needs(ADMIN, NS)
    async def set_property(self, request: web.Request) -> web.Response:
        self._operations.set_property(namespace_of(request), request.match_info["key"], request.match_info["value"])
        return ok()

    @needs(ADMIN, NS)
    async def get_property(self, request: web.Request) -> web.Response:
        return ok(self._operations.property(namespace_of(request), request.match_info["key"]))

    @needs(ADMIN, NS)
    async def remove_property(self, request: web.Request) -> web.Response:
        self._operations.remove_property(namespace_of(request), request.match_info["key"])
        return ok()
