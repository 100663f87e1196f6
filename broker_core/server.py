"""The composition root: wires storage, dispatch and the gRPC front end into a running broker."""
from __future__ import annotations

import asyncio
import itertools
import logging
import socket
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from broker_core.clock import SYSTEM_CLOCK, Clock
from broker_core.config import BrokerConfig
from broker_core.errors import InvalidConfiguration
from broker_core.net.client_limits import ClientLimits, Limits
from broker_core.net.connection_budget import ConnectionBudget, raise_open_file_limit
from broker_core.security.credential_checks import CredentialChecks
from broker_core.frontends.grpc.server import GrpcServer, max_reply_bytes, max_request_bytes  # noqa: F401 (theirs)
from broker_core.net.listener import PortListener
from broker_core.frontends.http.metrics import BrokerCollector, MetricsServer, call_on_loop
from broker_core.net.peers import PeerMap
from broker_core.core.producers import ProducerNames
from broker_core.frontends.pulsar.connection import PulsarConnection
from broker_core.frontends.pulsar.context import FrontEnd
from broker_core.core.rates import StatsUpdater
from broker_core.net.relay_worker import tls_settings
from broker_core.security import Authorizer, Security
from broker_core.core.subscription_expiry import StoredSubscriptionSweep
from broker_core.storage.sync_threads import SyncThreads
from broker_core.core.registry import TopicRegistry
from broker_core.storage.dir_lock import DataDirLock

log = logging.getLogger(__name__)

SYNC_THREADS = 4
"""Threads fsyncing topics' logs (group commit): fsyncs of different files proceed in parallel."""


def advertised_host(config: BrokerConfig) -> str:
    """The host in the URLs the broker gives out (see ``advertisedAddress``), bracketed when IPv6."""
    host = config.advertisedAddress or config.bindAddress
    if not config.advertisedAddress and host in ("0.0.0.0", "::", ""):
        host = socket.gethostname()
    return f"[{host}]" if ":" in host else host


def _bind(bind, host: str, port: int, key: str) -> int:
    try:
        return bind(host, port)
    except OSError as exc:
        raise InvalidConfiguration(f"cannot bind {host}:{port} ({key}; in use or not a local address): "
                                   f"{exc.strerror}", key=key) from None


def _server_context(config: BrokerConfig):
    """The TLS server context of the configured files; ``InvalidConfiguration`` naming the unusable one."""
    import ssl

    from broker_core.net.relay_tls import server_context

    try:
        return server_context(config.tlsCertificateFilePath, config.tlsKeyFilePath, config.tlsTrustCertsFilePath,
                              config.tlsRequireTrustedClientCertOnConnect)
    except (OSError, ssl.SSLError) as exc:
        # the path is the operator's own setting, on the operator's machine: it goes to the broker's log
        raise InvalidConfiguration("cannot load the TLS certificate, key or trust certificates (tlsCertificateFile"
                                   f"Path, tlsKeyFilePath, tlsTrustCertsFilePath): {exc}",
                                   key="tlsCertificateFilePath") from None


class BrokerService:
    """A started broker: ``port`` is the bound port (the real one when configured with 0), serving gRPC and
    Pulsar's binary protocol (:mod:`broker_core.net.listener`); ``tls_port`` the same over TLS (0 without
    ``brokerServicePortTls``); ``metrics_port`` the bound HTTP port of ``/metrics`` (0 when
    ``metricsEnabled=false``), ``metrics_tls_port`` its HTTPS one (0 without ``webServicePortTls``)."""

    def __init__(self, data_dir: Path, config: BrokerConfig, clock: Clock = SYSTEM_CLOCK) -> None:
        self.data_dir = Path(data_dir)
        self.config = config
        self._clock = clock
        self.port = 0
        self.tls_port = 0
        self.metrics_port = 0
        self.metrics_tls_port = 0
        self._metrics: list[MetricsServer] = []
        self._checks: CredentialChecks | None = None
        self._grpc: GrpcServer | None = None
        self._executor: ThreadPoolExecutor | None = None
        self._sync_pool: SyncThreads | None = None
        self.registry: TopicRegistry | None = None
        self._sweep: StoredSubscriptionSweep | None = None
        self._stats: StatsUpdater | None = None
        self._listener: PortListener | None = None
        self._front: FrontEnd | None = None
        self._data_dir_lock = DataDirLock(self.data_dir)

    async def start(self) -> int:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self._data_dir_lock.acquire()  # before anything in the data dir is opened
        self._executor = ThreadPoolExecutor(max_workers=4, thread_name_prefix="pulsarlike-io")
        # every topic's group-commit fsyncs, apart from the slow file work so a removal never delays them
        self._sync_pool = SyncThreads(SYNC_THREADS, "pulsarlike-sync")
        self.registry = TopicRegistry(self.data_dir, self.config, self._executor, self._clock,
                                      sync_pool=self._sync_pool)
        self.registry.start_unloading()
        self._sweep = StoredSubscriptionSweep(self.registry, self._clock, self.config.subscription_expiry_check_s())
        self._sweep.start()
        self._stats = StatsUpdater(self.registry, self.config.statsUpdateFrequencyInSecs)
        self._stats.start()
        config = self.config
        limits = ClientLimits(Limits.from_config(config), self._clock)
        peers = PeerMap()
        registry = self.registry
        security = Security(config, Authorizer(config.super_user_roles(), registry.namespaces, registry.policies),
                            self._clock)
        self._checks = checks = CredentialChecks(config.authenticationRefreshCheckSeconds)
        names = ProducerNames(self.config.clusterName)
        consumer_ids = itertools.count(1)
        self._grpc = grpc = GrpcServer(config, registry, names, consumer_ids, limits, peers, security, checks)
        grpc_port = grpc.port
        tls = None
        if config.brokerServicePortTls is not None:
            _server_context(config)  # unreadable files fail the start, not each handshake in the relay
            # the TLS relay connects to the gRPC port itself, told at its spawn: started now (the plain port's
            # first gRPC client starts it otherwise)
            tls = tls_settings(config.tlsCertificateFilePath, config.tlsKeyFilePath, config.tlsTrustCertsFilePath,
                               config.tlsRequireTrustedClientCertOnConnect, await grpc.port(),
                               config.tlsHandshakeTimeoutSeconds)
        front = FrontEnd(self.registry, config, names, self.registry.schemas,
                         limits, consumer_ids, self._clock, security=security, checks=checks)
        raise_open_file_limit()  # before the budget reads it: each client connection holds a descriptor
        listener = PortListener(grpc_port, lambda identity, admitted: PulsarConnection(front, identity, admitted),
                                peers, tls, ConnectionBudget.from_config(config, self._clock))
        self.port = _bind(listener.bind, config.bindAddress, config.brokerServicePort, "brokerServicePort")
        if config.brokerServicePortTls is not None:
            self.tls_port = _bind(listener.bind_tls, config.bindAddress, config.brokerServicePortTls,
                                  "brokerServicePortTls")
        listener.start()
        self._listener, self._front = listener, front
        if self.config.metricsEnabled:
            self._start_metrics(asyncio.get_running_loop())
        host = advertised_host(self.config)
        front.broker_url = f"pulsar://{host}:{self.port}"
        front.broker_url_tls = f"pulsar+ssl://{host}:{self.tls_port}" if self.tls_port else ""
        grpc.advertise(f"pulsar://{host}:{self.port}",
                       f"http://{host}:{self.metrics_port}" if self.metrics_port else "")
        log.info("event=broker_started address=%s:%d tls_port=%d data_dir=%s sync_mode=%s metrics_port=%d "
                 "authentication=%s authorization=%s", self.config.bindAddress, self.port, self.tls_port,
                 self.data_dir, self.config.journalSyncMode, self.metrics_port,
                 ",".join(config.authentication_providers()) if config.authenticationEnabled else "off",
                 "on" if config.authorizationEnabled else "off")
        return self.port

    def _start_metrics(self, loop: asyncio.AbstractEventLoop) -> None:
        timeout_s = self.config.metricsServletTimeoutMs / 1000.0

        def topic_stats() -> dict:  # runs on the loop, where topics live
            registry = self.registry
            return {} if registry is None else {name: t.stats() for name, t in registry.loaded_topics().items()}

        collector = BrokerCollector(lambda: call_on_loop(loop, topic_stats, timeout_s), self.config.clusterName,
                                    self.config.exposeTopicLevelMetricsInPrometheus)
        plain = MetricsServer(collector, self.config.bindAddress, self.config.webServicePort)
        self._metrics.append(plain)
        self.metrics_port = plain.start()
        if self.config.webServicePortTls is not None:
            secure = MetricsServer(collector, self.config.bindAddress, self.config.webServicePortTls,
                                   _server_context(self.config), port_key="webServicePortTls")
            self._metrics.append(secure)
            self.metrics_tls_port = secure.start()

    async def stop(self, grace: float = 1.0) -> None:
        """Stop accepting, end the streams (after ``grace`` seconds), then flush and sync every topic."""
        if self._grpc is not None:
            await self._grpc.enter_graceful_shutdown()
        if self._checks is not None:
            self._checks.stop()
        for metrics in self._metrics:
            await asyncio.get_running_loop().run_in_executor(None, metrics.stop)
        self._metrics = []
        if self._listener is not None:
            await self._listener.stop_accepting()
        if self._front is not None:
            for conn in list(self._front.connections):
                conn.close()
        if self._grpc is not None:
            await self._grpc.stop(grace)
            self._grpc = None
        if self._listener is not None:
            await self._listener.close_relays()
            self._listener = None
        for timer in (self._sweep, self._stats):
            if timer is not None:
                timer.stop()
        if self.registry is not None:
            await self.registry.close()
            self.registry = None
        for pool in (self._sync_pool, self._executor):
            if pool is not None:
                pool.shutdown(wait=True)
        self._executor = self._sync_pool = None
        self._data_dir_lock.release()
        log.info("event=broker_stopped port=%d", self.port)
