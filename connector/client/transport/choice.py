"""Which transport a :class:`~connector.client.client.Client` uses: ``Client(..., transport="auto")``.

- ``"grpc"``: :class:`~connector.client.transport.grpc.connection.Connection`, pulsarlike's own gRPC service (pulsarlike only).
- ``"binary"``: :class:`~connector.client.transport.binary.transport.BinaryTransport`, Pulsar's binary protocol (any
  Pulsar broker, pulsarlike's binary front end included).
- ``"auto"`` (the default): :class:`AutoTransport` finds out which broker it talks to at first use -- one
  binary ``CONNECT``, whose ``CONNECTED.server_version`` names pulsarlike or not -- and then uses, against
  pulsarlike, the transport :data:`FASTER_ON_PULSARLIKE` names (measured with bench/client_latency.py; the
  figures are in bench/README.md), against any other broker the binary protocol (the only one it speaks).
  The probe's connection is kept when the binary transport is chosen, so it costs nothing then; building
  the ``Client`` does no network I/O either way.
"""
from __future__ import annotations

import logging
import threading
import time
from typing import Any, Callable

from broker_core import errors

from connector.client.transport.grpc.connection import Connection
from connector.client.transport.events import (ConsumerEvent, ConsumerSpec, LastMessage, ProducerEvent, ProducerSpec,
                                     TopicSchema)
from connector.client.transport.http_lookup import HttpLookup, HttpLookupTransport, is_http_url
from connector.client.reconnect import retry_until
from connector.client.security import Security, parse_service_url
from connector.client.transport import Transport, TransportStream

log = logging.getLogger(__name__)

TRANSPORTS = ("auto", "grpc", "binary")

FASTER_ON_PULSARLIKE = "binary"
"""The transport ``auto`` uses against pulsarlike (bench/client_latency.py, same broker process, same run;
bench/README.md has the figures): on a quiet machine (load average 0.2, 300k x 100 B, 3 interleaved rounds)
binary's e2e p50 was 0.63x gRPC's (0.80 vs 1.27 ms), its produce 1.09x and its consume 1.34x gRPC's, with less
client and broker CPU per consumed message; the whole suite runs with it (``auto``), the marked client tests
over both. ``transport="grpc"`` still picks gRPC."""


def check_transport(transport: Any) -> str:
    """``transport`` if it names a transport, else an ``InvalidConfiguration`` naming the valid values."""
    if not isinstance(transport, str) or transport not in TRANSPORTS:
        raise errors.InvalidConfiguration(
            f"transport={transport!r} is not valid; use one of {', '.join(repr(t) for t in TRANSPORTS)} "
            "('auto': the faster one against pulsarlike, Pulsar's binary protocol against any other broker)")
    return transport


def _binary(service_url: str, operation_timeout_s: float, connection_timeout_s: float,
            security: Security, listener_name: str | None = None) -> Transport:
    from connector.client.transport.binary.transport import BinaryTransport

    return BinaryTransport(service_url, operation_timeout_s, connection_timeout_s, security, listener_name)


def open_transport(transport: str, service_url: str, operation_timeout_s: float, connection_timeout_s: float,
                   security: Security, listener_name: str | None = None) -> Transport:
    """The transport ``transport`` (checked by :func:`check_transport`) names; none connects yet. An
    ``http(s)://`` service URL: the broker an HTTP lookup names, then that transport
    (:mod:`connector.client.transport.http_lookup`). ``listener_name``: the advertised listener lookups ask for (the
    binary protocol's; gRPC has none)."""
    if is_http_url(service_url):
        lookup = HttpLookup(service_url, security, connection_timeout_s, listener_name)
        return HttpLookupTransport(lookup, operation_timeout_s, connection_timeout_s, lambda broker_url:
                                   open_transport(transport, broker_url, operation_timeout_s, connection_timeout_s,
                                                  security, listener_name))
    if listener_name:
        if transport == "grpc":
            raise errors.NotSupported("listener_name needs the binary protocol (lookups name the listener): "
                                      "use transport='binary' or 'auto'")
        return _binary(service_url, operation_timeout_s, connection_timeout_s, security, listener_name)
    if transport == "grpc":
        return Connection(service_url, operation_timeout_s, connection_timeout_s, security)
    if transport == "binary":
        return _binary(service_url, operation_timeout_s, connection_timeout_s, security)
    return AutoTransport(service_url, operation_timeout_s, connection_timeout_s, security)


class AutoTransport:
    """A :class:`~connector.client.transport.Transport` that picks gRPC or binary at first use (module doc).

    Until then it answers what needs no broker (``target``, the timeouts, ``security``, ``closed``); the first
    call that needs one (``ensure_ready``, a unary call, a stream, or reading ``positions``) connects over the
    binary protocol and decides. A failed first connection decides nothing: the next use tries again."""

    def __init__(self, service_url: str, operation_timeout_s: float, connection_timeout_s: float,
                 security: Security, binary: Callable[..., Transport] = _binary,
                 grpc: Callable[..., Transport] = Connection, prefer: str = FASTER_ON_PULSARLIKE) -> None:
        self._service_url = service_url
        self._binary_factory, self._grpc_factory, self._prefer = binary, grpc, prefer
        self.target = parse_service_url(service_url)  # a wrong URL fails in Client(), as with "grpc"
        self.operation_timeout_s = operation_timeout_s
        self.connection_timeout_s = connection_timeout_s
        self.security = security
        self.closed = threading.Event()
        self.chosen: str | None = None
        """``"grpc"`` or ``"binary"`` once decided."""
        self._transport: Transport | None = None
        self._lock = threading.Lock()

    # --- the decision ---------------------------------------------------------------------------------
    def resolve(self) -> Transport:
        """The chosen transport, connecting (``connection_timeout_s``) to decide on the first call."""
        transport = self._transport
        if transport is not None:
            return transport
        with self._lock:
            if self._transport is not None:
                return self._transport
            if self.closed.is_set():
                raise errors.AlreadyClosed("the client is closed")
            self._transport = self._decide()
            return self._transport

    def _decide(self) -> Transport:
        args = (self._service_url, self.operation_timeout_s, self.connection_timeout_s, self.security)
        try:
            binary = self._binary_factory(*args)
        except ImportError as exc:  # a build without the binary transport: pulsarlike over gRPC only
            log.warning("event=transport_chosen transport=grpc cause=%r", exc)
            self.chosen = "grpc"
            return self._grpc(args)
        try:
            binary.ensure_ready()  # one CONNECT; its CONNECTED says whose broker it is (positions.dense)
            pulsarlike = bool(binary.positions.dense)
        except BaseException:
            binary.close()
            raise
        chosen = self._prefer if pulsarlike else "binary"
        log.info("event=transport_chosen transport=%s broker=%s target=%s", chosen,
                 "pulsarlike" if pulsarlike else "pulsar", self.target)
        self.chosen = chosen
        if chosen == "binary":
            return binary
        binary.close()
        return self._grpc(args)

    def _grpc(self, args: tuple[Any, ...]) -> Transport:
        grpc = self._grpc_factory(*args)
        grpc.closed = self.closed  # one "closed" for the waits of both
        return grpc

    def __getattr__(self, name: str) -> Any:
        # Attributes of the chosen transport (``positions``, and whatever a transport adds), copied onto
        # this object once read, so a hot path reads a plain attribute afterwards.
        if name.startswith("_"):
            raise AttributeError(name)
        value = getattr(self.resolve(), name)
        if name == "positions":
            self.__dict__[name] = value
        return value

    # --- the Transport API ----------------------------------------------------------------------------
    def ensure_ready(self) -> None:
        if self.closed.is_set():
            raise errors.AlreadyClosed("the client is closed")
        self.resolve().ensure_ready()

    def _ready(self, timeout_s: float | None, retry: bool) -> Transport:
        """The chosen transport; on a first use that may ``retry`` (the broker may be restarting), deciding is
        retried as the call would be."""
        if self._transport is None and retry:
            deadline = time.monotonic() + (timeout_s or self.operation_timeout_s)
            retry_until(deadline, self.resolve, self.closed)
        return self.resolve()

    def partitions(self, topic: str, timeout_s: float | None = None, retry: bool = False) -> int:
        return self._ready(timeout_s, retry).partitions(topic, timeout_s, retry)

    def list_topics(self, namespace: str, timeout_s: float | None = None, retry: bool = False) -> list[str]:
        return self._ready(timeout_s, retry).list_topics(namespace, timeout_s, retry)

    def last_message(self, topic: str, read_compacted: bool = False, timeout_s: float | None = None,
                     retry: bool = False) -> LastMessage:
        return self._ready(timeout_s, retry).last_message(topic, read_compacted, timeout_s, retry)

    def schema(self, topic: str, version: int = -1, timeout_s: float | None = None,
               retry: bool = False) -> TopicSchema:
        return self._ready(timeout_s, retry).schema(topic, version, timeout_s, retry)

    def register_schema(self, topic: str, schema: TopicSchema, check_only: bool = False,
                        timeout_s: float | None = None, retry: bool = False) -> int:
        return self._ready(timeout_s, retry).register_schema(topic, schema, check_only, timeout_s, retry)

    def create_topic(self, topic: str, timeout_s: float | None = None, retry: bool = False) -> None:
        self._ready(timeout_s, retry).create_topic(topic, timeout_s, retry)

    def create_subscription(self, topic: str, subscription: str, timeout_s: float | None = None,
                            retry: bool = False) -> None:
        self._ready(timeout_s, retry).create_subscription(topic, subscription, timeout_s, retry)

    def consume(self, spec: ConsumerSpec, on_event: Callable[[ConsumerEvent], None], name: str = "consumer",
                reconnecting: bool = False) -> TransportStream:
        if self.closed.is_set():
            raise errors.AlreadyClosed("the client is closed")
        return self.resolve().consume(spec, on_event, name, reconnecting)

    def produce(self, spec: ProducerSpec, on_event: Callable[[ProducerEvent], None], name: str = "producer",
                reconnecting: bool = False) -> TransportStream:
        if self.closed.is_set():
            raise errors.AlreadyClosed("the client is closed")
        return self.resolve().produce(spec, on_event, name, reconnecting)

    def close(self) -> None:
        self.closed.set()
        with self._lock:
            transport = self._transport
        if transport is not None:
            transport.close()
