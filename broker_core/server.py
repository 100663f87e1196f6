"""The composition root: wires storage, dispatch and the gRPC front end into a running broker."""
from __future__ import annotations

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
from broker_core.frontends.http.server import WebServer, lazy_app
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


def _server_context(config: BrokerConfig, alpn: tuple[str, ...] = ()):
    """The TLS server context of the configured files (selecting one of ``alpn``, when given);
    ``InvalidConfiguration`` naming the unusable one."""
    import ssl

    from broker_core.net.relay_tls import server_context

    try:
        return server_context(config.tlsCertificateFilePath, config.tlsKeyFilePath, config.tlsTrustCertsFilePath,
                              config.tlsRequireTrustedClientCertOnConnect, alpn)
    except (OSError, ssl.SSLError) as exc:
        # the path is the operator's own setting, on the operator's machine: it goes to the broker's log
        raise InvalidConfiguration("cannot load the TLS certificate, key or trust certificates (tlsCertificateFile"
                                   f"Path, tlsKeyFilePath, tlsTrustCertsFilePath): {exc}",
                                   key="tlsCertificateFilePath") from None


class BrokerService:
    """A started broker: ``port`` is the bound port (the real one when configured with 0), serving gRPC and
    Pulsar's binary protocol (:mod:`broker_core.net.listener`); ``tls_port`` the same over TLS (0 without
    ``brokerServicePortTls``); ``web_port`` the bound web service port (``webServicePort``: the admin REST
    API, ``/metrics``, ``/status.html``), ``web_tls_port`` its HTTPS twin (0 without ``webServicePortTls``);
    ``metrics_port``/``metrics_tls_port`` the same ports when ``/metrics`` is served there, 0 with
    ``metricsEnabled=false``."""

    def __init__(self, data_dir: Path, config: BrokerConfig, clock: Clock = SYSTEM_CLOCK) -> None:
        self.data_dir = Path(data_dir)
        self.config = config
        self._clock = clock
        self.port = 0
        self.tls_port = 0
        self.web_port = 0
        self.web_tls_port = 0
        self._web: WebServer | None = None
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
        budget = ConnectionBudget.from_config(config, self._clock)  # the broker's port's (the web port has its own)
        listener = PortListener(grpc_port, lambda identity, admitted: PulsarConnection(front, identity, admitted),
                                peers, tls, budget)
        self.port = _bind(listener.bind, config.bindAddress, config.brokerServicePort, "brokerServicePort")
        if config.brokerServicePortTls is not None:
            self.tls_port = _bind(listener.bind_tls, config.bindAddress, config.brokerServicePortTls,
                                  "brokerServicePortTls")
        listener.start()
        self._listener, self._front = listener, front
        host = advertised_host(self.config)
        front.broker_url = f"pulsar://{host}:{self.port}"
        front.broker_url_tls = f"pulsar+ssl://{host}:{self.tls_port}" if self.tls_port else ""
        self._start_web(security, ConnectionBudget.for_web(config, self._clock), host)
        grpc.advertise(front.broker_url, f"http://{host}:{self.web_port}")
        log.info("event=broker_started address=%s:%d tls_port=%d data_dir=%s sync_mode=%s web_port=%d "
                 "web_tls_port=%d metrics=%s authentication=%s authorization=%s", self.config.bindAddress,
                 self.port, self.tls_port, self.data_dir, self.config.journalSyncMode, self.web_port,
                 self.web_tls_port, "on" if config.metricsEnabled else "off",
                 ",".join(config.authentication_providers()) if config.authenticationEnabled else "off",
                 "on" if config.authorizationEnabled else "off")
        return self.port

    @property
    def metrics_port(self) -> int:
        return self.web_port if self.config.metricsEnabled else 0

    @property
    def metrics_tls_port(self) -> int:
        return self.web_tls_port if self.config.metricsEnabled else 0

    def _start_web(self, security: Security, budget: ConnectionBudget, host: str) -> None:
        """Bind the web service port(s); the application (admin REST API, ``/metrics``, ``/status.html``) is
        built by their first connection (:mod:`broker_core.frontends.http.server`)."""
        config, front = self.config, self._front
        assert self.registry is not None and front is not None
        secure = config.webServicePortTls is not None
        self._web = web = WebServer(budget, _server_context(config, ("http/1.1",)) if secure else None,
                                    float(config.tlsHandshakeTimeoutSeconds))  # set first: stop() closes what bound
        self.web_port = web.bind(config.bindAddress, config.webServicePort, "webServicePort")
        if secure:
            self.web_tls_port = web.bind_tls(config.bindAddress, config.webServicePortTls, "webServicePortTls")
        # the URLs the application gives out (clusters, lookups): the ports as bound
        web.start(lazy_app(registry=self.registry, security=security, config=config,
                           web_url=f"http://{host}:{self.web_port}",
                           web_url_tls=f"https://{host}:{self.web_tls_port}" if self.web_tls_port else None,
                           broker_url=front.broker_url, broker_url_tls=front.broker_url_tls or None))

    async def stop(self, grace: float = 1.0) -> None:
        """Stop accepting, end the streams (after ``grace`` seconds), then flush and sync every topic."""
        if self._grpc is not None:
            await self._grpc.enter_graceful_shutdown()
        if self._checks is not None:
            self._checks.stop()
        if self._web is not None:
            await self._web.stop()
            self._web = None
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
