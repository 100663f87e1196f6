"""``/admin/v2/clusters`` and ``/admin/v2/brokers``: the broker's one cluster (``clusterName``, Pulsar
standalone's ``standalone`` by default) and the broker itself, its own leader and only active broker, as the
admin core's :class:`~broker_core.core.admin.clusters.ClusterAdmin` answers them.

=====================================  =====================================================  ============
``GET /admin/v2/clusters``             ``["standalone"]``                                     anyone
``GET /admin/v2/clusters/{cluster}``   ClusterData: ``serviceUrl``, ``serviceUrlTls``,        super-user
                                       ``brokerServiceUrl``, ``brokerServiceUrlTls``; 404 for
                                       another name
``GET /admin/v2/brokers/health``       ``ok`` (text)                                          super-user
``GET /admin/v2/brokers/ready``        ``ok`` (text): the broker has started                  anyone
``GET /admin/v2/brokers/version``      the broker's version (text)                            anyone
``GET /admin/v2/brokers/leaderBroker`` ``{"serviceUrl": ..., "brokerId": "host:port"}``        super-user
``GET /admin/v2/brokers/{cluster}``    ``["host:port"]`` (active brokers); 404 for another    super-user
=====================================  =====================================================  ============
"""
from __future__ import annotations

from aiohttp import web

from broker_core.config import BrokerConfig
from broker_core.core.admin.clusters import BrokerUrls, ClusterAdmin
from broker_core.frontends.http.admin.access import ANYONE, BROKER, needs
from broker_core.frontends.http.admin.answers import ok, text
from broker_core.security import SUPER

Advertised = BrokerUrls
"""The broker's URLs, as clients reach it (the web service's and the binary protocol's)."""


class ClusterRoutes:
    def __init__(self, config: BrokerConfig, advertised: Advertised) -> None:
        self._clusters = ClusterAdmin(config.clusterName, advertised)

    def routes(self) -> list[web.RouteDef]:
        return [
            web.get("/admin/v2/clusters", self.list_clusters),
            web.get("/admin/v2/clusters/{cluster}", self.get_cluster),
            web.get("/admin/v2/brokers/health", self.health),
            web.get("/admin/v2/brokers/ready", self.ready),  # before {cluster}: not a cluster named "ready"
            web.get("/admin/v2/brokers/version", self.version),
            web.get("/admin/v2/brokers/leaderBroker", self.leader),
            web.get("/admin/v2/brokers", self.active_brokers),
            web.get("/admin/v2/brokers/{cluster}", self.active_brokers),
        ]

    @needs(ANYONE, BROKER)
    async def list_clusters(self, request: web.Request) -> web.Response:
        return ok(self._clusters.clusters())

    @needs(SUPER, BROKER)
    async def get_cluster(self, request: web.Request) -> web.Response:
        return ok(self._clusters.cluster_data(request.match_info["cluster"]))

    @needs(SUPER, BROKER)
    async def health(self, request: web.Request) -> web.Response:
        return text("ok")

    @needs(ANYONE, BROKER)
    async def ready(self, request: web.Request) -> web.Response:
        return text("ok")

    @needs(ANYONE, BROKER)
    async def version(self, request: web.Request) -> web.Response:
        return text(self._clusters.version)

    @needs(SUPER, BROKER)
    async def leader(self, request: web.Request) -> web.Response:
        return ok(self._clusters.leader())

    @needs(SUPER, BROKER)
    async def active_brokers(self, request: web.Request) -> web.Response:
        return ok(self._clusters.active_brokers(request.match_info.get("cluster")))
