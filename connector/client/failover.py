"""A client whose service changes: ``Client(ServiceInfoProvider)`` and ``Client(AutoClusterFailover(...))``
(pulsar-client 3.13; :mod:`connector.client.service_info` holds the user-facing classes).

- :class:`SwitchingTransport`: the client's :class:`~connector.client.transport.Transport` when its service may
  change. It forwards every call to the transport of the current service; :meth:`SwitchingTransport.switch`
  opens a transport to the new service and retires the old one -- its connections are closed and it opens no
  new one -- so every producer, consumer and reader sees its connection lost (a retriable ``ConnectError``)
  and reconnects, through this transport, to the new service, as pulsar-client's ``updateServiceInfo`` closes
  its connection pool and makes a new lookup service. What was unsent is sent again there (sends fail only at
  ``send_timeout_millis``). Services are numbered (``service_epoch``, 0 first; every ``Subscribed`` carries the
  number of the service it is open on), so a consumer that moves knows it: nothing it knew of the old cluster's
  positions goes with it (pulsar-client's ``onClusterSwitching``) -- a durable subscription resumes at the new
  cluster's own cursor, a reader (or a non-durable subscription) at its start position, acks not yet sent are
  dropped, and acks of messages received from the old cluster are not sent (they would name other messages).
- :class:`FailoverProbe`: the built-in provider behind ``AutoClusterFailover``, pulsar-client-cpp's state
  machine: every ``check_interval_ms`` the current service is probed (a TCP connection to one of its hosts
  within the probe timeout); on the primary, ``failover_threshold`` consecutive failures switch to the first
  secondary that answers; on a secondary, ``switch_back_threshold`` consecutive successful probes of the
  primary switch back, and a secondary failing ``failover_threshold`` times switches to the primary if it
  answers, else to another secondary that does. :meth:`FailoverProbe.check` is one round (tests call it with
  an injected ``probe``); :meth:`FailoverProbe.initialize` runs rounds on a daemon thread until ``close``.
"""
from __future__ import annotations

import dataclasses
import logging
import socket
import threading
from typing import Any, Callable
from urllib.parse import urlsplit

from broker_core import errors

from connector.client.transport.events import Subscribed
from connector.client.service_info import AutoClusterFailover, ServiceInfo

log = logging.getLogger(__name__)

PROBE_TIMEOUT_S = 30.0
"""pulsar-client-cpp's probe timeout; the client passes its ``connection_timeout_ms`` when shorter."""


def service_hosts(service_url: str) -> list[tuple[str, int]]:
    """The ``(host, port)`` pairs of a service URL (``pulsar://h1:6650,h2:6650``, ``http://h:8080`` ...); the
    scheme's default port when none is given."""
    try:
        parts = urlsplit(service_url.strip())
    except ValueError:
        return []
    default = {"pulsar": 6650, "pulsar+ssl": 6651, "http": 80, "https": 443}.get(parts.scheme.lower())
    hosts: list[tuple[str, int]] = []
    for item in (part.strip() for part in parts.netloc.rsplit("@", 1)[-1].split(",")):
        if item.startswith("["):  # [v6 address]:port
            host, _, rest = item[1:].partition("]")
            port = rest[1:] if rest.startswith(":") else ""
        elif ":" in item:
            host, _, port = item.rpartition(":")
        else:
            host, port = item, ""
        try:
            number = int(port) if port else default
        except ValueError:
            continue
        if host and number is not None and 0 < number < 65536:
            hosts.append((host, number))
    return hosts


def tcp_probe(service_url: str, timeout_s: float) -> bool:
    """Whether one of the service's hosts accepts a TCP connection within ``timeout_s`` (pulsar-client-cpp's
    probe: a connection, no handshake)."""
    for host, port in service_hosts(service_url):
        try:
            with socket.create_connection((host, port), timeout=timeout_s):
                return True
        except OSError:
            continue
    return False


class FailoverProbe:
    """``AutoClusterFailover``'s provider (module docstring). ``probe(service_url) -> bool`` is injected in
    tests; by default :func:`tcp_probe` with ``probe_timeout_s``."""

    def __init__(self, config: AutoClusterFailover, probe: Callable[[str], bool] | None = None,
                 probe_timeout_s: float = PROBE_TIMEOUT_S) -> None:
        self.config = config
        self._probe = probe or (lambda url: tcp_probe(url, probe_timeout_s))
        self.current: ServiceInfo = config.primary
        self._failures = 0
        self._primary_recoveries = 0
        self._update: Callable[[ServiceInfo], None] | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # --- the provider API (what the client calls) -----------------------------------------------------
    def initial_service_info(self) -> ServiceInfo:
        return self.config.primary

    def initialize(self, on_service_info_update: Callable[[ServiceInfo], None], start: bool = True) -> None:
        self._update = on_service_info_update
        if start:
            self._thread = threading.Thread(target=self._run, name="pulsarlike-cluster-failover", daemon=True)
            self._thread.start()

    def close(self) -> None:
        self._stop.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=5)

    def _run(self) -> None:
        interval_s = self.config.check_interval_ms / 1000.0
        while not self._stop.wait(interval_s):
            try:
                self.check()
            except Exception:  # a failing callback must not end the probing
                log.exception("event=failover_check_failed")

    # --- one round ------------------------------------------------------------------------------------
    @property
    def on_primary(self) -> bool:
        return self.current is self.config.primary

    def check(self) -> None:
        """One probe round (pulsar-client-cpp's ``executeFailoverCheck``)."""
        if self.on_primary:
            if self._available(self.current):
                self._failures = 0
                return
            self._failures += 1
            if self._failures >= self.config.failover_threshold:
                self._switch_to_secondary(exclude=None)
            return
        if self._available(self.current):
            self._failures = 0
            self._check_switch_back()
            return
        self._failures += 1
        if self._failures < self.config.failover_threshold:
            self._check_switch_back()
            return
        if self._available(self.config.primary):  # the secondary is down: the primary at once if it answers
            self._switch(self.config.primary)
        elif not self._switch_to_secondary(exclude=self.current):
            self._check_switch_back(primary_available=False)

    def _check_switch_back(self, primary_available: bool | None = None) -> None:
        if primary_available is None:
            primary_available = self._available(self.config.primary)
        if not primary_available:
            self._primary_recoveries = 0
            return
        self._primary_recoveries += 1
        if self._primary_recoveries >= self.config.switch_back_threshold:
            self._switch(self.config.primary)

    def _switch_to_secondary(self, exclude: ServiceInfo | None) -> bool:
        for info in self.config.secondary:
            if info is exclude:
                continue
            if self._available(info):
                self._switch(info)
                return True
        return False

    def _available(self, info: ServiceInfo) -> bool:
        try:
            return bool(self._probe(info.service_url))
        except Exception:
            return False

    def _switch(self, info: ServiceInfo) -> None:
        if info is self.current:
            return
        log.info("event=service_switch from=%s to=%s", self.current.service_url, info.service_url)
        self.current = info
        self._failures = 0
        self._primary_recoveries = 0
        if self._update is not None:
            self._update(info)


class SwitchingTransport:
    """The client's transport when its service may change (module docstring). ``open_for(info)`` builds the
    transport of one service (it connects at first use, not here)."""

    def __init__(self, info: ServiceInfo, open_for: Callable[[ServiceInfo], Any]) -> None:
        self._open_for = open_for
        self._current = open_for(info)
        self.operation_timeout_s = self._current.operation_timeout_s
        self.connection_timeout_s = self._current.connection_timeout_s
        self.closed = threading.Event()
        self._lock = threading.Lock()
        self._retired: list[Any] = []
        self._subscribed: set[tuple[str, str]] = set()
        """(topic, subscription) of the consumers subscribed on the current service (since the switch to it)."""
        self.service_epoch = 0
        """The number of the current service: 0 first, one more at each switch."""

    @property
    def current(self) -> Any:
        return self._current

    @property
    def target(self) -> str:
        return self._current.target

    @property
    def security(self) -> Any:
        return self._current.security

    @property
    def positions(self) -> Any:
        return self._current.positions

    def switch(self, info: ServiceInfo) -> None:
        """Use ``info``'s service from now on: its transport replaces the current one, which is retired (its
        connections closed, so every stream reconnects here)."""
        new = self._open_for(info)
        with self._lock:
            if self.closed.is_set():
                new.close()
                return
            old, self._current = self._current, new
            self._subscribed = set()
            self.service_epoch += 1
            self._retired.append(old)
        retire = getattr(old, "retire", None)
        if callable(retire):
            retire()
        else:
            old.close()

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._current, name)

    def _use(self) -> Any:
        if self.closed.is_set():
            raise errors.AlreadyClosed("the client is closed")
        return self._current

    def ensure_ready(self) -> None:
        self._use().ensure_ready()

    def partitions(self, topic: str, timeout_s: float | None = None, retry: bool = False) -> int:
        return self._use().partitions(topic, timeout_s, retry)

    def list_topics(self, namespace: str, timeout_s: float | None = None, retry: bool = False) -> list[str]:
        return self._use().list_topics(namespace, timeout_s, retry)

    def last_message(self, topic: str, read_compacted: bool = False, timeout_s: float | None = None,
                     retry: bool = False) -> Any:
        return self._use().last_message(topic, read_compacted, timeout_s, retry)

    def schema(self, topic: str, version: int = -1, timeout_s: float | None = None, retry: bool = False) -> Any:
        return self._use().schema(topic, version, timeout_s, retry)

    def register_schema(self, topic: str, schema: Any, check_only: bool = False, timeout_s: float | None = None,
                        retry: bool = False) -> int:
        return self._use().register_schema(topic, schema, check_only, timeout_s, retry)

    def create_topic(self, topic: str, timeout_s: float | None = None, retry: bool = False) -> None:
        self._use().create_topic(topic, timeout_s, retry)

    def create_subscription(self, topic: str, subscription: str, timeout_s: float | None = None,
                            retry: bool = False) -> None:
        self._use().create_subscription(topic, subscription, timeout_s, retry)

    def consume(self, spec: Any, on_event: Callable[[Any], None], name: str = "consumer",
                reconnecting: bool = False) -> Any:
        """A consumer's stream on the current service. A consumer subscribing again after a switch, to a service
        where it never subscribed, may create the topic there (a first subscription may), while one that
        subscribed there before may not (a deleted topic must end it, as without failover)."""
        with self._lock:
            transport, subscribed, epoch = self._current, self._subscribed, self.service_epoch
        key = (spec.topic, spec.subscription)

        def relay(event: Any) -> None:
            if type(event) is Subscribed:
                subscribed.add(key)
                event = dataclasses.replace(event, service_epoch=epoch)
            on_event(event)
        if self.closed.is_set():
            raise errors.AlreadyClosed("the client is closed")
        stream = transport.consume(spec, relay, name, reconnecting)
        allow = getattr(stream, "allow_topic_creation", None)
        if reconnecting and key not in subscribed and callable(allow):
            allow()
        return stream

    def produce(self, spec: Any, on_event: Callable[[Any], None], name: str = "producer",
                reconnecting: bool = False) -> Any:
        return self._use().produce(spec, on_event, name, reconnecting)

    def close(self) -> None:
        self.closed.set()
        with self._lock:
            transports, self._retired = [self._current, *self._retired], []
        for transport in transports:
            transport.close()
