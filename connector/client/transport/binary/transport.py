"""The binary transport: :class:`BinaryTransport`, the :class:`~connector.client.transport.Transport` over
Pulsar's binary protocol, to pulsarlike's binary front end or to any Pulsar broker.

- Connections: one :class:`~connector.client.transport.binary.connection.PulsarConnection` per broker address (and per
  proxied broker, see below), opened on first use, dropped from the pool when it ends.
- Lookups (:meth:`BinaryTransport.connection_for`): ``LOOKUP`` on the service URL's connection, as Pulsar's
  clients do it: a ``Redirect`` answer is looked up again on the broker it names (with the ``authoritative``
  flag it carries), a ``Connect`` answer names the broker serving the topic (its ``brokerServiceUrlTls`` on
  TLS, its ``brokerServiceUrl`` otherwise). With ``proxy_through_service_url`` the connection goes to the
  service URL (a Pulsar proxy) and ``CONNECT`` names the broker (``proxy_to_broker_url``). The answer is
  cached per topic until its connection ends (or :meth:`~BinaryTransport.forget` is told the broker moved it).
- Unary calls (``partitions``, ``last_message``, ``schema`` ...: the :class:`~connector.client.transport.Transport`
  protocol's) carried by Pulsar's commands, answering plain values: :mod:`connector.client.transport.binary.unary`. Admin's
  calls are not carried: over another broker, Admin is its REST API (``admin.url``).
- Streams (:meth:`BinaryTransport.produce`, :meth:`BinaryTransport.consume`): the adapters of
  :mod:`connector.client.transport.binary.producing` and :mod:`connector.client.transport.binary.consuming`.
"""
from __future__ import annotations

import logging
import threading
import time
from typing import Any, Callable, TypeVar

from broker_core import errors
from broker_core.protocol import pulsar_commands_pb2 as cmd

from connector.client.transport.binary.connection import PulsarConnection
from connector.client.transport.binary.positions import PackedPositions
from connector.client.transport.binary import unary
from connector.client.transport.binary.unary import _left
from connector.client.transport.events import (ConsumerEvent, ConsumerSpec, LastMessage, ProducerEvent, ProducerSpec,
                                     TopicSchema)
from connector.client.reconnect import retry_until
from connector.client.security import Security, parse_service_url
from connector.client.transport import DENSE, Positions

log = logging.getLogger(__name__)

R = TypeVar("R")

T = cmd.BaseCommand
Lookup = cmd.CommandLookupTopicResponse
MAX_REDIRECTS = 20
"""Pulsar's clients give up after this many lookup redirects (a loop between misconfigured brokers)."""


class BinaryTransport:
    """See the module docstring. The constructor takes what
    :class:`connector.client.transport.grpc.connection.Connection`'s does; nothing is sent before the first use."""

    timer = None
    """The adapters bring their own timers."""
    _retired = False
    """Set by :meth:`retire`: no connection is opened any more."""

    def __init__(self, service_url: str, operation_timeout_s: float, connection_timeout_s: float,
                 security: Security | None = None, listener_name: str | None = None) -> None:
        self.target = parse_service_url(service_url)
        self.listener_name = listener_name or None
        """The advertised listener every ``LOOKUP`` asks for (pulsar-client's ``listener_name``)."""
        self.operation_timeout_s = operation_timeout_s
        self.connection_timeout_s = connection_timeout_s
        self.security = security or Security.for_url(service_url)
        self.closed = threading.Event()
        self._positions: Positions | None = None
        self._lock = threading.Lock()
        self._pool: dict[tuple[str, str], PulsarConnection] = {}
        self._opening: dict[tuple[str, str], threading.Lock] = {}
        self._topics: dict[str, PulsarConnection] = {}

    # ------------------------------------------------------------------ connections
    def connection(self, address: str, proxy_to: str = "") -> PulsarConnection:
        """The pooled connection to ``address`` (``host:port``), opened when there is none; ``proxy_to``: the
        broker a proxy at ``address`` is to forward it to."""
        if self.closed.is_set():
            raise errors.AlreadyClosed("the client is closed")
        if self._retired:  # retriable: the stream reconnects through the client's new service
            raise errors.ConnectError(f"the client switched from the service at {self.target} to another",
                                      target=self.target)
        key = (address, proxy_to)
        with self._lock:
            conn = self._pool.get(key)
            if conn is not None and not conn.closed:
                return conn
            opening = self._opening.setdefault(key, threading.Lock())
        with opening:  # one opening per address at a time: the others wait for it and share it
            with self._lock:
                conn = self._pool.get(key)
                if conn is not None and not conn.closed:
                    return conn
            conn = self._open(address, proxy_to)
            with self._lock:
                if self.closed.is_set():
                    conn.close()
                    raise errors.AlreadyClosed("the client is closed")
                self._pool[key] = conn
            conn.add_lost_listener(lambda error, conn=conn, key=key: self._lost(key, conn))
            if self._positions is None:
                self._positions = self._positions_for(conn)
            return conn

    def _open(self, address: str, proxy_to: str) -> PulsarConnection:
        return PulsarConnection(address, self.security, self.connection_timeout_s, proxy_to_broker_url=proxy_to or None)

    def _lost(self, key: tuple[str, str], conn: PulsarConnection) -> None:
        with self._lock:
            if self._pool.get(key) is conn:
                del self._pool[key]
            for topic in [t for t, c in self._topics.items() if c is conn]:
                del self._topics[topic]

    def service_connection(self) -> PulsarConnection:
        return self.connection(self.target)

    @staticmethod
    def _positions_for(conn: PulsarConnection) -> Positions:
        return DENSE if conn.is_pulsarlike else PackedPositions()

    @property
    def positions(self) -> Positions:
        """DENSE on pulsarlike, packed ``(ledger, entry, batch index)`` positions on another broker: known once
        the first connection is up (asking opens it)."""
        if self._positions is None:
            self.ensure_ready()
        assert self._positions is not None
        return self._positions

    def ensure_ready(self) -> None:
        """The service URL's connection, waited for within ``connection_timeout_s``; ``ConnectError`` naming it
        if there is none by then."""
        if self.closed.is_set():
            raise errors.AlreadyClosed("the client is closed")
        # As gRPC's channel readiness: a broker that is starting or restarting (connection refused) is waited
        # for, with the reconnection backoff, until connection_timeout_s.
        # The whole connection timeout, as a connect that hangs takes; then the call fails (reconnect.gives_up).
        deadline = time.monotonic() + self.connection_timeout_s
        try:
            retry_until(deadline, self.service_connection, self.closed, to_the_end=True)
        except errors.ConnectError as exc:
            raise errors.ConnectError(f"cannot connect to the broker at {self.target} within "
                                      f"{self.connection_timeout_s:g}s: {exc.message}", target=self.target,
                                      connection_timeout_s=self.connection_timeout_s) from None

    # ------------------------------------------------------------------ lookups
    def connection_for(self, topic: str, timeout_s: float | None = None) -> PulsarConnection:
        """The connection to the broker serving ``topic`` (see the module docstring); typed errors."""
        with self._lock:
            conn = self._topics.get(topic)
        if conn is not None and not conn.closed:
            return conn
        deadline = time.monotonic() + (timeout_s or self.operation_timeout_s)
        conn = self._lookup(topic, deadline)
        with self._lock:
            if not conn.closed:
                self._topics[topic] = conn
        return conn

    def forget(self, topic: str) -> None:
        """Look ``topic`` up again next time (the broker said it is not served there any more)."""
        with self._lock:
            self._topics.pop(topic, None)

    def _lookup(self, topic: str, deadline: float) -> PulsarConnection:
        conn = self.service_connection()
        authoritative = False
        for _ in range(MAX_REDIRECTS):
            request_id = conn.next_request_id()
            answer = conn.request(T(type=T.LOOKUP, lookupTopic=cmd.CommandLookupTopic(
                topic=topic, request_id=request_id, authoritative=authoritative,
                advertised_listener_name=self.listener_name)), _left(deadline, topic)
            ).lookupTopicResponse
            url = answer.brokerServiceUrlTls if self.security.tls is not None else answer.brokerServiceUrl
            if not url:
                raise errors.ServiceNotReady(f"the lookup of {topic} named no broker "
                                             f"{'TLS ' if self.security.tls is not None else ''}URL", topic=topic)
            address = parse_service_url(url)
            via_proxy = answer.proxy_through_service_url
            if answer.response == Lookup.Connect:
                log.debug("event=lookup topic=%s broker=%s proxied=%s", topic, address, via_proxy)
                return self.connection(self.target, address) if via_proxy else self.connection(address)
            authoritative = answer.authoritative  # Redirect: ask that broker
            conn = self.connection(self.target, address) if via_proxy else self.connection(address)
        raise errors.ServiceNotReady(f"the lookup of {topic} was redirected {MAX_REDIRECTS} times", topic=topic)

    # ------------------------------------------------------------------ unary calls (module docstring)
    def _call(self, call: Callable[[float], R], timeout_s: float | None, retry: bool) -> R:
        """``call(deadline)`` within ``timeout_s`` (the operation timeout when None); ``retry``: tried again while
        the broker is unreachable or not ready, with backoff, until the deadline."""
        deadline = time.monotonic() + (timeout_s or self.operation_timeout_s)
        if not retry:
            self.ensure_ready()
            return call(deadline)

        def attempt() -> R:
            self.ensure_ready()
            return call(deadline)
        return retry_until(deadline, attempt, self.closed)  # type: ignore[return-value]

    def partitions(self, topic: str, timeout_s: float | None = None, retry: bool = False) -> int:
        return self._call(lambda deadline: unary.partitions(self, topic, deadline), timeout_s, retry)

    def list_topics(self, namespace: str, timeout_s: float | None = None, retry: bool = False) -> list[str]:
        return self._call(lambda deadline: unary.list_topics(self, namespace, deadline), timeout_s, retry)

    def last_message(self, topic: str, read_compacted: bool = False, timeout_s: float | None = None,
                     retry: bool = False) -> LastMessage:
        return self._call(lambda deadline: unary.last_message(self, topic, read_compacted, deadline), timeout_s,
                          retry)

    def schema(self, topic: str, version: int = -1, timeout_s: float | None = None,
               retry: bool = False) -> TopicSchema:
        return self._call(lambda deadline: unary.get_schema(self, topic, version, deadline), timeout_s, retry)

    def register_schema(self, topic: str, schema: TopicSchema, check_only: bool = False,
                        timeout_s: float | None = None, retry: bool = False) -> int:
        return self._call(lambda deadline: unary.register_schema(self, topic, schema, check_only, deadline),
                          timeout_s, retry)

    def create_topic(self, topic: str, timeout_s: float | None = None, retry: bool = False) -> None:
        self._call(lambda deadline: unary.create_topic(self, topic, deadline), timeout_s, retry)

    def create_subscription(self, topic: str, subscription: str, timeout_s: float | None = None,
                            retry: bool = False, earliest: bool = False) -> None:
        self._call(lambda deadline: unary.create_subscription(self, topic, subscription, earliest, deadline),
                   timeout_s, retry)

    def broker_url(self, topic: str, timeout_s: float | None = None) -> str:
        """``pulsar://host:port`` (``pulsar+ssl://`` over TLS) of the broker serving ``topic``, by ``LOOKUP``."""
        return self._call(lambda deadline: unary.broker_url(self, topic, deadline), timeout_s, False)

    # ------------------------------------------------------------------ streams
    def consume(self, spec: ConsumerSpec, on_event: Callable[[ConsumerEvent], None], name: str = "consumer",
                reconnecting: bool = False) -> Any:
        """A consumer (:class:`~connector.client.transport.binary.consuming.ConsumeAdapter`), not started."""
        self._check_streamable(reconnecting)
        from connector.client.transport.binary.consuming import ConsumeAdapter
        return ConsumeAdapter(self, spec, on_event, name, reconnecting=reconnecting)

    def produce(self, spec: ProducerSpec, on_event: Callable[[ProducerEvent], None], name: str = "producer",
                reconnecting: bool = False) -> Any:
        """A producer (:class:`~connector.client.transport.binary.producing.ProduceAdapter`), not started."""
        self._check_streamable(reconnecting)
        from connector.client.transport.binary.producing import ProduceAdapter
        return ProduceAdapter(self, spec, on_event, name)

    def _check_streamable(self, reconnecting: bool) -> None:
        if not reconnecting:  # a first opening fails at once when there is no broker, as over gRPC
            self.ensure_ready()
        elif self.closed.is_set():
            raise errors.AlreadyClosed("the client is closed")

    def retire(self) -> None:
        """The client switched to another service (:mod:`connector.client.failover`): the connections are
        closed and none is opened any more (``ConnectError``, retriable), so every producer and consumer
        reconnects through the client's transport to the new service."""
        self._retired = True
        with self._lock:
            connections, self._pool, self._topics = list(self._pool.values()), {}, {}
        for conn in connections:
            conn.close()

    def close(self) -> None:
        self.closed.set()
        with self._lock:
            connections, self._pool, self._topics = list(self._pool.values()), {}, {}
        for conn in connections:
            conn.close()
