"""The namespace policies with a shape of their own (backlog quotas, auto topic creation, the schema
compatibility strategy) and topic truncation, on the :class:`~broker_core.core.registry.TopicRegistry`.
Pulsar's paths and JSON; prefix ``/admin/v2/namespaces/{tenant}/{ns}`` unless said:

=================================================  ===========================================================
``GET /backlogQuotaMap``                           ``{"destination_storage": BacklogQuota, ...}`` ({} unset)
``POST /backlogQuota?backlogQuotaType=T``          set the quota of type ``T`` (``destination_storage``, the
                                                   default, or ``message_age``); body Pulsar's BacklogQuota
                                                   ``{"limitSize": bytes, "limitTime": s, "policy": p}``
``GET /backlogQuota?backlogQuotaType=T``           that quota (204 unset)
``DELETE /backlogQuota?backlogQuotaType=T``        remove it
``GET|POST|DELETE /autoTopicCreation``             Pulsar's AutoTopicCreationOverride ``{"allowAutoTopicCreation":
                                                   bool, "topicType": "non-partitioned"|"partitioned",
                                                   "defaultNumPartitions": n}`` (GET: 204 unset)
``GET|PUT|POST|DELETE /schemaCompatibilityStrategy``  a JSON string, one of Pulsar's strategies (GET:
                                                   ``"UNDEFINED"`` unset: the broker's BACKWARD)
``DELETE /admin/v2/persistent/{tenant}/{ns}/{topic}/truncate``  every subscription acknowledges everything
                                                   and every segment but the active one is removed (each
                                                   partition of a partitioned topic); 204, 404
=================================================  ===========================================================

Every route needs the tenant's admin role (truncate: the topic's admin). Values out of range are 412 naming
the field, bodies of the wrong JSON type 400, as the other policies.
"""
from __future__ import annotations

from typing import Any

from aiohttp import web

from broker_core.core.backlog_quota import STORAGE, as_pulsar, check_quota, check_type
from broker_core.core.policies import AUTO_TOPIC_CREATION, BACKLOG_QUOTA, NAMESPACE, SCHEMA_STRATEGY
from broker_core.core.registry import TopicRegistry
from broker_core.frontends.http.admin.access import NAMESPACE as NS, TOPIC, namespace_of, needs, topic_of
from broker_core.frontends.http.admin.answers import BadRequest, body, obj, ok
from broker_core.security import ADMIN

PREFIX = "/admin/v2/namespaces/{tenant}/{namespace}"


def _quota_type(request: web.Request) -> str:
    return check_type(request.query.get("backlogQuotaType", STORAGE))


class NamespacePolicyRoutes:
    def __init__(self, registry: TopicRegistry) -> None:
        self._registry = registry

    def routes(self) -> list[web.RouteDef]:
        quota, auto, strategy = (f"{PREFIX}/backlogQuota", f"{PREFIX}/autoTopicCreation",
                                 f"{PREFIX}/schemaCompatibilityStrategy")
        return [
            web.get(f"{PREFIX}/backlogQuotaMap", self.get_quota_map),
            web.get(quota, self.get_quota), web.post(quota, self.set_quota), web.delete(quota, self.remove_quota),
            web.get(auto, self.get_auto), web.post(auto, self.set_auto), web.delete(auto, self.remove_auto),
            web.get(strategy, self.get_strategy), web.put(strategy, self.set_strategy),
            web.post(strategy, self.set_strategy), web.delete(strategy, self.remove_strategy),
            web.delete("/admin/v2/{domain:persistent}/{tenant}/{namespace}/{topic}/truncate", self.truncate),
        ]

    def _stored(self, request: web.Request, key: str) -> Any:
        return self._registry.get_policies(NAMESPACE, namespace_of(request)).get(key)

    def _set(self, request: web.Request, key: str, value: Any) -> web.Response:
        self._registry.set_policy(NAMESPACE, namespace_of(request), key, value)
        return ok()

    # ------------------------------------------------------------------ backlog quotas
    @needs(ADMIN, NS)
    async def get_quota_map(self, request: web.Request) -> web.Response:
        quotas = self._stored(request, BACKLOG_QUOTA) or {}
        return ok({quota_type: as_pulsar(quota) for quota_type, quota in quotas.items()})

    @needs(ADMIN, NS)
    async def get_quota(self, request: web.Request) -> web.Response:
        quota = (self._stored(request, BACKLOG_QUOTA) or {}).get(_quota_type(request))
        return ok(None if quota is None else as_pulsar(quota))

    @needs(ADMIN, NS)
    async def set_quota(self, request: web.Request) -> web.Response:
        quota_type = _quota_type(request)
        value = obj(await body(request, "BacklogQuota"), "BacklogQuota")
        for field in ("limit", "limitSize", "limitTime"):
            if field in value and (isinstance(value[field], bool) or not isinstance(value[field], int)):
                raise BadRequest(f"BacklogQuota.{field}: expected an integer")
        quota = check_quota("BacklogQuota", value)
        quotas = dict(self._stored(request, BACKLOG_QUOTA) or {})
        quotas[quota_type] = quota
        return self._set(request, BACKLOG_QUOTA, quotas)

    @needs(ADMIN, NS)
    async def remove_quota(self, request: web.Request) -> web.Response:
        quota_type = _quota_type(request)
        quotas = {t: q for t, q in (self._stored(request, BACKLOG_QUOTA) or {}).items() if t != quota_type}
        return self._set(request, BACKLOG_QUOTA, quotas or None)

    # ------------------------------------------------------------------ auto topic creation
    @needs(ADMIN, NS)
    async def get_auto(self, request: web.Request) -> web.Response:
        return ok(self._stored(request, AUTO_TOPIC_CREATION))

    @needs(ADMIN, NS)
    async def set_auto(self, request: web.Request) -> web.Response:
        value = obj(await body(request, "AutoTopicCreationOverride"), "AutoTopicCreationOverride")
        return self._set(request, AUTO_TOPIC_CREATION, value)

    @needs(ADMIN, NS)
    async def remove_auto(self, request: web.Request) -> web.Response:
        return self._set(request, AUTO_TOPIC_CREATION, None)

    # ------------------------------------------------------------------ schema compatibility
    @needs(ADMIN, NS)
    async def get_strategy(self, request: web.Request) -> web.Response:
        return ok(self._stored(request, SCHEMA_STRATEGY) or "UNDEFINED")

    @needs(ADMIN, NS)
    async def set_strategy(self, request: web.Request) -> web.Response:
        value = await body(request, "SchemaCompatibilityStrategy")
        if not isinstance(value, str):
            raise BadRequest("SchemaCompatibilityStrategy: expected a JSON string such as \"FULL\"")
        return self._set(request, SCHEMA_STRATEGY, value)

    @needs(ADMIN, NS)
    async def remove_strategy(self, request: web.Request) -> web.Response:
        return self._set(request, SCHEMA_STRATEGY, None)

    # ------------------------------------------------------------------ truncate
    @needs(ADMIN, TOPIC)
    async def truncate(self, request: web.Request) -> web.Response:
        await self._registry.truncate(topic_of(request))
        return ok()

