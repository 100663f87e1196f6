"""A namespace's and a topic's backlog quotas and a topic's truncation over REST, on the admin core
(:class:`~broker_core.core.admin.namespaces.NamespaceAdmin`, :class:`~broker_core.core.admin.topic_quotas.
TopicQuotaAdmin`, :class:`~broker_core.core.admin.topics.TopicAdmin`).
The other policies (one value each) are :mod:`.policy_routes`'. Pulsar's paths and JSON; prefix
``/admin/v2/namespaces/{tenant}/{ns}`` unless said:

=================================================  ===========================================================
``GET /backlogQuotaMap``                           ``{"destination_storage": BacklogQuota, ...}`` ({} unset)
``POST /backlogQuota?backlogQuotaType=T``          set the quota of type ``T`` (``destination_storage``, the
                                                   default, or ``message_age``); body Pulsar's BacklogQuota
                                                   ``{"limitSize": bytes, "limitTime": s, "policy": p}``
``GET /backlogQuota?backlogQuotaType=T``           that quota (204 unset)
``DELETE /backlogQuota?backlogQuotaType=T``        remove it
``GET /admin/v2/{domain}/{tenant}/{ns}/{topic}/backlogQuotaMap``  the topic's own quotas by type ({} unset);
                                                   ``?applied=true``: its namespace's when it has none
``POST|DELETE .../{topic}/backlogQuota?backlogQuotaType=T``  set or remove the topic's quota of type ``T``:
                                                   in force for that type instead of the namespace's
``DELETE /admin/v2/persistent/{tenant}/{ns}/{topic}/truncate``  every subscription acknowledges everything
                                                   and every segment but the active one is removed (each
                                                   partition of a partitioned topic); 204, 404; under
                                                   ``non-persistent`` 412, as Pulsar's: nothing is stored
=================================================  ===========================================================

Every route needs the tenant's admin role (a topic's quotas: the topic's admin, reading them the lookup
permission; truncate: the topic's admin). The broker enforces each quota type's quota in force on every
partition -- the topic's, else its namespace's (:mod:`broker_core.core.backlog_quota`). A non-persistent topic
keeps no backlog, so no quota of its binds. Values out of range are 412 naming
the field, bodies of the wrong JSON type 400, as the other policies.
"""
from __future__ import annotations

from aiohttp import web

from broker_core.core.admin import TopicAdmin
from broker_core.core.admin.namespaces import NamespaceAdmin
from broker_core.core.admin.topic_quotas import TopicQuotaAdmin
from broker_core.core.backlog_quota import STORAGE
from broker_core.core.registry import TopicRegistry
from broker_core.frontends.http.admin.access import NAMESPACE as NS, TOPIC, namespace_of, needs, topic_of
from broker_core.frontends.http.admin.answers import body, flag, ok
from broker_core.security import ADMIN, LOOKUP

PREFIX = "/admin/v2/namespaces/{tenant}/{namespace}"
TOPIC_PATH = "/admin/v2/{domain:persistent|non-persistent}/{tenant}/{namespace}/{topic}"


def quota_type(request: web.Request) -> str:
    return request.query.get("backlogQuotaType", STORAGE)


class NamespacePolicyRoutes:
    def __init__(self, registry: TopicRegistry) -> None:
        self._namespaces = NamespaceAdmin(registry)
        self._topics = TopicAdmin(registry)
        self._topic_quotas = TopicQuotaAdmin(registry)

    def routes(self) -> list[web.RouteDef]:
        quota = f"{PREFIX}/backlogQuota"
        return [
            web.get(f"{PREFIX}/backlogQuotaMap", self.get_quota_map),
            web.get(quota, self.get_quota), web.post(quota, self.set_quota), web.delete(quota, self.remove_quota),
            web.get(TOPIC_PATH + "/backlogQuotaMap", self.get_topic_quota_map),
            web.post(TOPIC_PATH + "/backlogQuota", self.set_topic_quota),
            web.delete(TOPIC_PATH + "/backlogQuota", self.remove_topic_quota),
            web.delete(TOPIC_PATH + "/truncate", self.truncate),
        ]

    @needs(ADMIN, NS)
    async def get_quota_map(self, request: web.Request) -> web.Response:
        return ok(self._namespaces.backlog_quotas(namespace_of(request)))

    @needs(ADMIN, NS)
    async def get_quota(self, request: web.Request) -> web.Response:
        return ok(self._namespaces.backlog_quota(namespace_of(request), quota_type(request)))

    @needs(ADMIN, NS)
    async def set_quota(self, request: web.Request) -> web.Response:
        kind = quota_type(request)
        self._namespaces.set_backlog_quota(namespace_of(request), await body(request, "BacklogQuota"), kind)
        return ok()

    @needs(ADMIN, NS)
    async def remove_quota(self, request: web.Request) -> web.Response:
        self._namespaces.remove_backlog_quota(namespace_of(request), quota_type(request))
        return ok()

    @needs(LOOKUP, TOPIC)
    async def get_topic_quota_map(self, request: web.Request) -> web.Response:
        return ok(self._topic_quotas.quotas(topic_of(request), flag(request, "applied")))

    @needs(ADMIN, TOPIC)
    async def set_topic_quota(self, request: web.Request) -> web.Response:
        kind = quota_type(request)
        self._topic_quotas.set_quota(topic_of(request), await body(request, "BacklogQuota"), kind)
        return ok()

    @needs(ADMIN, TOPIC)
    async def remove_topic_quota(self, request: web.Request) -> web.Response:
        self._topic_quotas.remove_quota(topic_of(request), quota_type(request))
        return ok()

    @needs(ADMIN, TOPIC)
    async def truncate(self, request: web.Request) -> web.Response:
        await self._topics.truncate(topic_of(request))
        return ok()
