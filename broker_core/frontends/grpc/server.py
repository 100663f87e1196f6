"""The gRPC front end (our client, the Spark connector, the jobs, the health service), started by its first
client.

The public port's listener (:mod:`broker_core.net.listener`) tells gRPC clients from Pulsar ones by their
first byte and relays gRPC to this server's private loopback port. A broker serving the official clients only
never needs it, and building it is most of what the start would otherwise spend beyond the Pulsar front end:
importing gRPC and its health service, the servicer's modules and their protobuf descriptors (~60-80 ms
here, and ~8 MB resident). So :meth:`GrpcServer.port` builds and starts it on the first call -- the listener
calls it once a client's HTTP/2 preface came, holding that connection until the server listens -- and every
later call returns the same port. The health service answers SERVING from its first call on.
"""
from __future__ import annotations

import asyncio
import itertools
import logging
from typing import TYPE_CHECKING

from broker_core.config import BrokerConfig
from broker_core.errors import InvalidConfiguration, ServiceNotReady
from broker_core.protocol.entry_limits import FRAME_PADDING
from broker_core.net.client_limits import ClientLimits
from broker_core.security.credential_checks import CredentialChecks
from broker_core.net.peers import PeerMap
from broker_core.core.producers import ProducerNames
from broker_core.security import Security
from broker_core.core.registry import TopicRegistry

if TYPE_CHECKING:
    import grpc
    from grpc_health.v1 import health

    from broker_core.frontends.grpc.servicer import BrokerServicer

log = logging.getLogger(__name__)

SERVICE_NAME = "pulsarlike.v1.PulsarLike"
GRPC_PRIVATE_ADDRESS = "127.0.0.1:0"
"""Where the gRPC server listens: the public port's listener relays HTTP/2 connections to it."""
REQUEST_MARGIN = 64 * 1024
"""Bytes a request may take beyond the largest entry it carries (its own fields and the entry's)."""
MIN_REQUEST_LIMIT = 1 << 20
"""The least request size the broker reads, whatever ``maxMessageSize``: room for the other requests
(e.g. an acknowledgment of a thousand ranges)."""
MIN_REPLY_LIMIT = 64 * 1024 * 1024


def max_request_bytes(max_message_size: int) -> int:
    """gRPC's receive limit: a request carrying one entry as large as a topic stores (``maxMessageSize +
    FRAME_PADDING``) and a margin -- no more, so an oversized request is refused before it is decoded.
    Clients pack their entries into requests of at most ``maxMessageSize`` bytes (the broker tells each
    producer its ``max_message_size``)."""
    return max(max_message_size + FRAME_PADDING + REQUEST_MARGIN, MIN_REQUEST_LIMIT)


def max_reply_bytes(max_message_size: int, max_delivery_bytes: int) -> int:
    """gRPC's send limit: a delivery holds up to ``dispatcherMaxDeliveryBytes`` of entries, or one larger
    entry alone (an entry stored under a larger ``maxMessageSize`` may still be read)."""
    return max(2 * max(max_delivery_bytes, max_message_size + FRAME_PADDING) + REQUEST_MARGIN, MIN_REPLY_LIMIT)


class GrpcServer:
    """The gRPC server of one broker, built by the first :meth:`port` call."""

    def __init__(self, config: BrokerConfig, registry: TopicRegistry, names: ProducerNames,
                 consumer_ids: itertools.count, limits: ClientLimits, peers: PeerMap, security: Security,
                 checks: CredentialChecks) -> None:
        self._config = config
        self._registry = registry
        self._names = names
        self._consumer_ids = consumer_ids
        self._limits = limits
        self._peers = peers
        self._security = security
        self._checks = checks
        self._advertised = ("", "")
        self._servicer: BrokerServicer | None = None
        self._server: grpc.aio.Server | None = None
        self._health: health.aio.HealthServicer | None = None
        self._starting: asyncio.Task[int] | None = None
        self._closed = False

    def advertise(self, broker_url: str, http_url: str) -> None:
        """What a gRPC LOOKUP answers (known once the broker's ports are bound)."""
        self._advertised = (broker_url, http_url)
        if self._servicer is not None:
            self._servicer.advertised = self._lookup_result()

    def _lookup_result(self):
        from broker_core.protocol import broker_pb2

        broker_url, http_url = self._advertised
        return broker_pb2.LookupResult(broker_url=broker_url, http_url=http_url)

    async def port(self) -> int:
        """The private port the server listens on, building and starting it first on the first call
        (callers meanwhile wait for that same start); ``ServiceNotReady`` once the broker is stopping. A
        start that failed is logged and tried again by the next call."""
        if self._closed:
            raise ServiceNotReady("the broker is stopping")
        if self._starting is None:
            self._starting = asyncio.get_running_loop().create_task(self._start())
        starting = self._starting
        try:
            return await asyncio.shield(starting)
        except Exception as exc:  # noqa: BLE001 - whatever failed, the listener closes this client, serves others
            if self._starting is starting:
                log.error("event=grpc_start_failed error=%r", exc)
                self._starting = None
            raise ServiceNotReady(f"the gRPC server could not start: {exc}") from None

    async def _start(self) -> int:
        import grpc
        from grpc_health.v1 import health, health_pb2, health_pb2_grpc

        from broker_core.frontends.grpc import handlers
        from broker_core.frontends.grpc.admission import Admission
        from broker_core.frontends.grpc.servicer import BrokerServicer

        config = self._config
        server = grpc.aio.server(
            interceptors=[Admission(self._limits, self._peers, self._security, self._checks)],
            options=[("grpc.max_receive_message_length", max_request_bytes(config.maxMessageSize)),
                     ("grpc.max_send_message_length",
                      max_reply_bytes(config.maxMessageSize, config.dispatcherMaxDeliveryBytes)),
                     ("grpc.so_reuseport", 0)])
        servicer = BrokerServicer(self._registry, self._names, self._consumer_ids)
        servicer.advertised = self._lookup_result()
        handlers.register(server, servicer.components)
        # the asyncio servicer: a Watch is a task on the loop, not a thread of gRPC's pool for each watcher
        health_servicer = health.aio.HealthServicer()
        health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
        port = server.add_insecure_port(GRPC_PRIVATE_ADDRESS)
        if not port:
            raise InvalidConfiguration(f"cannot bind the private gRPC address {GRPC_PRIVATE_ADDRESS}")
        await server.start()
        for name in ("", SERVICE_NAME):
            await health_servicer.set(name, health_pb2.HealthCheckResponse.SERVING)
        self._server, self._health, self._servicer = server, health_servicer, servicer
        log.info("event=grpc_started private_port=%d", port)
        return port

    async def _started(self) -> None:
        """Wait for a start in progress (its failure is the caller's no more)."""
        if self._starting is not None:
            try:
                await asyncio.shield(self._starting)
            except Exception:  # noqa: BLE001 - logged by port(); nothing to stop then
                pass

    async def enter_graceful_shutdown(self) -> None:
        """No new start; health watchers are told NOT_SERVING."""
        self._closed = True
        await self._started()
        if self._health is not None:
            await self._health.enter_graceful_shutdown()

    async def stop(self, grace: float) -> None:
        """End the streams after ``grace`` seconds and stop the server (when it was ever started)."""
        self._closed = True
        await self._started()
        if self._server is not None:
            await self._server.stop(grace)
            self._server = None
