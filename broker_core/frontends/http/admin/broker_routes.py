"""``/admin/v2/brokers/configuration``, ``brokers/backlog-quota-check`` and ``/admin/v2/broker-stats``: the broker's
dynamic configuration and its stats, as the admin core's :class:`~broker_core.core.admin.brokers.BrokerAdmin`
answers them (super-users only, as Pulsar's).

==============================================================  ==============================================
``GET /admin/v2/brokers/configuration``                         the keys that may be changed
``GET /admin/v2/brokers/configuration/values``                  ``{key: value}`` of those set (text)
``GET /admin/v2/brokers/configuration/runtime``                 ``{key: value}`` of every key in force (text)
``POST /admin/v2/brokers/configuration/{configName}/{value}``   set one, durable, applied at once; 412 for a key
                                                                not dynamic here or a value it does not take
``DELETE /admin/v2/brokers/configuration/{configName}``         back to broker.conf's value; 412 as above
``GET /admin/v2/brokers/backlog-quota-check``                   enforce the backlog quotas now; 204
``GET /admin/v2/broker-stats/topics`` (and ``destinations``)    every loaded topic's stats by namespace, bundle
                                                                and domain
``GET /admin/v2/broker-stats/metrics``                          Pulsar's ``Metrics`` of each namespace
``GET /admin/v2/brokers/{cluster}/{broker}/ownedNamespaces``    every namespace's bundle and its
                                                                ``NamespaceOwnershipStatus``; 404 for another
                                                                cluster or broker
==============================================================  ==============================================

``POST /admin/v2/brokers/shutdown`` is not served (501): the admin API cannot stop the process that embeds it
(``pulsarlike broker`` stops on SIGINT/SIGTERM, an embedded ``Broker`` on ``stop()``).

These routes are added before :mod:`.cluster_routes`' ``brokers/{cluster}``, which would take
``brokers/configuration`` for a cluster's name.
"""
from __future__ import annotations

from aiohttp import web

from broker_core.core.admin.brokers import BrokerAdmin
from broker_core.core.admin.clusters import BrokerUrls, ClusterAdmin
from broker_core.core.registry import TopicRegistry
from broker_core.frontends.http.admin.access import BROKER, needs
from broker_core.frontends.http.admin.answers import ok
from broker_core.security import SUPER

CONFIGURATION = "/admin/v2/brokers/configuration"


class BrokerRoutes:
    def __init__(self, registry: TopicRegistry, advertised: BrokerUrls) -> None:
        self._brokers = BrokerAdmin(registry)
        self._clusters = ClusterAdmin(registry.config.clusterName, advertised)

    def routes(self) -> list[web.RouteDef]:
        return [
            web.get(CONFIGURATION, self.dynamic_names),
            web.get(f"{CONFIGURATION}/values", self.dynamic_values),
            web.get(f"{CONFIGURATION}/runtime", self.runtime),
            web.post(f"{CONFIGURATION}/{{configName}}/{{configValue}}", self.update),
            web.delete(f"{CONFIGURATION}/{{configName}}", self.delete),
            web.get("/admin/v2/brokers/backlog-quota-check", self.backlog_quota_check),
            web.get("/admin/v2/broker-stats/topics", self.topics),
            web.get("/admin/v2/broker-stats/destinations", self.topics),
            web.get("/admin/v2/broker-stats/metrics", self.metrics),
            web.get("/admin/v2/brokers/{cluster}/{broker}/ownedNamespaces", self.owned_namespaces),
        ]

    @needs(SUPER, BROKER)
    async def dynamic_names(self, request: web.Request) -> web.Response:
        return ok(self._brokers.dynamic_names())

    @needs(SUPER, BROKER)
    async def dynamic_values(self, request: web.Request) -> web.Response:
        return ok(self._brokers.dynamic_values())

    @needs(SUPER, BROKER)
    async def runtime(self, request: web.Request) -> web.Response:
        return ok(self._brokers.runtime())

    @needs(SUPER, BROKER)
    async def update(self, request: web.Request) -> web.Response:
        self._brokers.update_dynamic(request.match_info["configName"], request.match_info["configValue"])
        return ok()

    @needs(SUPER, BROKER)
    async def delete(self, request: web.Request) -> web.Response:
        self._brokers.delete_dynamic(request.match_info["configName"])
        return ok()

    @needs(SUPER, BROKER)
    async def backlog_quota_check(self, request: web.Request) -> web.Response:
        self._brokers.backlog_quota_check()
        return ok()

    @needs(SUPER, BROKER)
    async def topics(self, request: web.Request) -> web.Response:
        return ok(self._brokers.topics())

    @needs(SUPER, BROKER)
    async def metrics(self, request: web.Request) -> web.Response:
        return ok(self._brokers.metrics())

    @needs(SUPER, BROKER)
    async def owned_namespaces(self, request: web.Request) -> web.Response:
        return ok(self._brokers.owned_namespaces(self._clusters, request.match_info["cluster"],
                                                 request.match_info["broker"]))
