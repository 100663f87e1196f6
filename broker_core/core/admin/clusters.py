"""The broker's one cluster (``clusterName``, Pulsar standalone's ``standalone`` by default) and the broker
itself, its own leader and only active broker, as Pulsar's ``clusters`` and ``brokers`` admin resources answer
them: ``ClusterData``, the active brokers' ids (``host:webServicePort``), the leader's ``BrokerInfo``. A cluster
of another name is ``ClusterNotFound`` (404, "Cluster does not exist")."""
from __future__ import annotations

import importlib.metadata
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from broker_core.errors import ClusterNotFound


@dataclass(frozen=True)
class BrokerUrls:
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


def version() -> str:
    """The broker's version (``unknown`` run from a checkout that was never installed)."""
    try:
        return importlib.metadata.version("pulsarlike")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


class ClusterAdmin:
    """Cluster ``cluster`` of one broker reached at ``urls``."""

    def __init__(self, cluster: str, urls: BrokerUrls) -> None:
        self.cluster = cluster
        self._urls = urls
        self.version = version()

    def clusters(self) -> list[str]:
        return [self.cluster]

    def check(self, cluster: str) -> None:
        """``ClusterNotFound`` unless ``cluster`` is this broker's."""
        if cluster != self.cluster:
            raise ClusterNotFound(f"cluster {cluster[:64]} does not exist: this broker's cluster is {self.cluster}"
                                  " (clusterName)", cluster=cluster[:64])

    def cluster_data(self, cluster: str) -> dict[str, Any]:
        """Pulsar's ``ClusterData``: the web service's and the broker's URLs."""
        self.check(cluster)
        u = self._urls
        return {"serviceUrl": u.web_url, "serviceUrlTls": u.web_url_tls, "brokerServiceUrl": u.broker_url,
                "brokerServiceUrlTls": u.broker_url_tls}

    def active_brokers(self, cluster: str | None = None) -> list[str]:
        self.check(self.cluster if cluster is None else cluster)
        return [self._urls.broker_id]

    def leader(self) -> dict[str, str]:
        """Pulsar's ``BrokerInfo`` of the leader broker: this one."""
        return {"serviceUrl": self._urls.web_url, "brokerId": self._urls.broker_id}
