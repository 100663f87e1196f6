"""Per-client limits: how many connections, streams and unary calls a client may hold open at once.

gRPC names a call's client by its peer (``ipv4:10.0.0.5:51234``, ``ipv6:[::1]:40000``, ``unix:...``): the
whole string is one connection, the address without its port is the client's host. A connection counts
while it has a call open (gRPC does not show idle connections to the application), so:

- ``brokerMaxConnections`` / ``brokerMaxConnectionsPerIp`` (Pulsar's names): a call from a connection
  with nothing open yet opens a connection. The port listener applies the same limits to every socket it
  accepts (:mod:`broker_core.net.connection_budget`), idle or not; the connections counted here are
  a subset of those sockets, so a client the listener admitted is refused here only in the moment between
  a connection's end and gRPC ending its calls;
- ``maxStreamsPerConnection``: producer and consumer streams open on one connection (one ``Client``);
- ``maxConcurrentLookupRequest`` (Pulsar's name) / ``maxConcurrentRequestsPerConnection``: unary calls
  (lookups, admin) being served, broker-wide / per connection.

0 turns a limit off. A refused call raises :class:`TooManyRequests` naming the limit and counts nothing.
Example: with ``maxStreamsPerConnection=2``, a client's third consumer is refused while its first two are
open; a second client (another connection) still gets its two, and the first gets one more once it closes
a consumer. Refusals are logged at most once per limit every 10 s, with how many there were
(:class:`~broker_core.log_limits.LogLimiter`).
"""
from __future__ import annotations

import logging
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterator

from broker_core.clock import SYSTEM_CLOCK, Clock
from broker_core.errors import TooManyRequests
from broker_core.log_limits import LogLimiter

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Limits:
    """The limits, each 0 for none (see the module docstring for the configuration keys)."""

    max_connections: int = 0
    max_connections_per_ip: int = 0
    max_streams_per_connection: int = 0
    max_requests: int = 0
    max_requests_per_connection: int = 0

    @classmethod
    def from_config(cls, config: Any) -> "Limits":
        return cls(config.brokerMaxConnections, config.brokerMaxConnectionsPerIp, config.maxStreamsPerConnection,
                   config.maxConcurrentLookupRequest, config.maxConcurrentRequestsPerConnection)


def peer_host(peer: str) -> str:
    """The client's address without its port: ``ipv4:10.0.0.5:51234`` -> ``ipv4:10.0.0.5``,
    ``ipv6:[::1]:40000`` -> ``ipv6:[::1]``; anything else (``unix:...``) as it is."""
    kind, _, address = peer.partition(":")
    if kind in ("ipv4", "ipv6"):
        host, sep, port = address.rpartition(":")
        if sep and port.isdigit():
            return f"{kind}:{host}"
    return peer


class ClientLimits:
    """Counts the calls open per connection and refuses those over a limit. Not thread-safe: the broker
    calls it from its event loop only."""

    def __init__(self, limits: Limits, clock: Clock = SYSTEM_CLOCK) -> None:
        self.limits = limits
        self._open: dict[str, list[int]] = {}  # peer -> [streams, unary calls]
        self._per_host: Counter[str] = Counter()
        self.requests = 0
        """Unary calls being served, broker-wide."""
        self._refusals = LogLimiter(log, clock=clock)

    @property
    def connections(self) -> int:
        return len(self._open)

    def streams(self, peer: str) -> int:
        return self._open.get(peer, (0, 0))[0]

    @contextmanager
    def call(self, peer: str, *, stream: bool) -> Iterator[None]:
        """Count a call of ``peer`` while the block runs; raises :class:`TooManyRequests` (counting
        nothing) when a limit is reached."""
        self.admit(peer, stream=stream)
        try:
            yield
        finally:
            self.release(peer, stream=stream)

    def admit(self, peer: str, *, stream: bool) -> None:
        limits = self.limits
        counts = self._open.get(peer)
        host = peer_host(peer)
        if counts is None:
            if limits.max_connections and len(self._open) >= limits.max_connections:
                self._refuse(peer, "brokerMaxConnections", limits.max_connections,
                             "the broker has this many client connections")
            if limits.max_connections_per_ip and self._per_host[host] >= limits.max_connections_per_ip:
                self._refuse(peer, "brokerMaxConnectionsPerIp", limits.max_connections_per_ip,
                             "this client address has this many connections to the broker")
        if stream:
            if limits.max_streams_per_connection and counts is not None \
                    and counts[0] >= limits.max_streams_per_connection:
                self._refuse(peer, "maxStreamsPerConnection", limits.max_streams_per_connection,
                             "this client has this many producers, consumers and readers open")
        else:
            if limits.max_requests_per_connection and counts is not None \
                    and counts[1] >= limits.max_requests_per_connection:
                self._refuse(peer, "maxConcurrentRequestsPerConnection", limits.max_requests_per_connection,
                             "this client has this many lookup and admin calls waiting")
            if limits.max_requests and self.requests >= limits.max_requests:
                self._refuse(peer, "maxConcurrentLookupRequest", limits.max_requests,
                             "the broker is serving this many lookup and admin calls")
        if counts is None:
            counts = self._open[peer] = [0, 0]
            self._per_host[host] += 1
        counts[0 if stream else 1] += 1
        if not stream:
            self.requests += 1

    def release(self, peer: str, *, stream: bool) -> None:
        counts = self._open.get(peer)
        if counts is None:
            return
        counts[0 if stream else 1] -= 1
        if not stream:
            self.requests -= 1
        if counts[0] <= 0 and counts[1] <= 0:
            del self._open[peer]
            host = peer_host(peer)
            self._per_host[host] -= 1
            if self._per_host[host] <= 0:
                del self._per_host[host]

    def _refuse(self, peer: str, limit: str, allowed: int, what: str) -> None:
        self._refusals.warning(limit, "event=client_refused limit=%s allowed=%d peer=%s", limit, allowed, peer)
        raise TooManyRequests(
            f"too many requests: {what} ({limit}={allowed}); close producers, consumers or clients you no "
            "longer use, retry later, or raise the limit on the broker", limit=limit, allowed=allowed)
