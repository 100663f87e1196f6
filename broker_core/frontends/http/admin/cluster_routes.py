"""``/admin/v2/clusters`` and ``/admin/v2/brokers``: the broker's one cluster (``clusterName``, Pulsar
standalone's ``standalone`` by default) and the broker itself, its own leader and only active broker.

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

import importlib.metadata
from dataclasses import dataclass
from urllib.parse import urlsplit

from aiohttp import web

from broker_core.config import BrokerConfig
from broker_core.errors import TopicNotFound
from broker_core.frontends.http.admin.access import ANYONE, BROKER, needs
from broker_core.frontends.http.admin.answers import ok, text
from broker_core.security import SUPER


class ClusterNotFound(TopicNotFound):
    """Not an error of the broker core (it has one cluster): answered 404 as Pulsar's "Cluster does not
    exist"."""


@dataclass(frozen=True)
class Advertised:
    """The broker's URLs, as clients reach it (the web service's and the binary protocol's)."""

    web_url: str
    """``http://host:webServicePort``."""
    broker_url: str
    """``pulsar://host:brokerServicePort``."""
    web_url_tls: str | None = None
    broker_url_tls: str | None = None

    @property
    def broker_id(self) -> str:
        """Pulsar's broker id: ``host:webServicePort``."""
        return urlsplit(self.web_url).netloc


def _version() -> str:
    try:
        return importlib.metadata.version("pulsarlike")
    except importlib.metadata.PackageNotFoundError:  # run from a checkout that was never installed
        return "unknown"


class ClusterRoutes:
    def __init__(self, config: BrokerConfig, advertised: Advertised) -> None:
        self._cluster = config.clusterName
        self._advertised = advertised
        self._version = _version()

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

    def _check(self, request: web.Request) -> None:
        cluster = request.match_info.get("cluster", self._cluster)
        if cluster != self._cluster:
            raise ClusterNotFound(f"cluster {cluster[:64]} does not exist: this broker's cluster is"
                                  f" {self._cluster} (clusterName)", cluster=cluster[:64])

    @needs(ANYONE, BROKER)
    async def list_clusters(self, request: web.Request) -> web.Response:
        return ok([self._cluster])

    @needs(SUPER, BROKER)
    async def get_cluster(self, request: web.Request) -> web.Response:
        self._check(request)
        a = self._advertised
        return ok({"serviceUrl": a.web_url, "serviceUrlTls": a.web_url_tls, "brokerServiceUrl": a.broker_url,
                   "brokerServiceUrlTls": a.broker_url_tls})

    @needs(SUPER, BROKER)
    async def health(self, request: web.Request) -> web.Response:
        return text("ok")

    @needs(ANYONE, BROKER)
    async def ready(self, request: web.Request) -> web.Response:
        return text("ok")

    @needs(ANYONE, BROKER)
    async def version(self, request: web.Request) -> web.Response:
        return text(self._version)

    @needs(SUPER, BROKER)
    async def leader(self, request: web.Request) -> web.Response:
        return ok({"serviceUrl": self._advertised.web_url, "brokerId": self._advertised.broker_id})

    @needs(SUPER, BROKER)
    async def active_brokers(self, request: web.Request) -> web.Response:
        self._check(request)
        return ok([self._advertised.broker_id])
