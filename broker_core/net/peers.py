"""Who is really on the other end of a relayed gRPC connection.

The broker's public port is served by :mod:`broker_core.net.listener`, which relays HTTP/2
connections to the gRPC server on a private loopback port. gRPC then sees every client as
``ipv4:127.0.0.1:<the relay's own port>``; this map turns that back into the client's address, so the
per-client limits (:mod:`broker_core.net.client_limits`) count clients, not the relay.

Each relayed connection is registered under the local address of the relay's connection to gRPC (what
``context.peer()`` shows) before the first byte is relayed, and removed when the connection ends. An entry
carries a :class:`ClientIdentity`: the client's address today; the TLS layer of issue 13 adds the
verified certificate's subject there (the listener terminates TLS, so gRPC never sees the certificate).

Example::

    peers = PeerMap()
    peers.add("ipv4:127.0.0.1:40312", ClientIdentity("ipv4:10.0.0.5:51234"))
    peers.identity("ipv4:127.0.0.1:40312").address   # "ipv4:10.0.0.5:51234"
    peers.identity("ipv4:127.0.0.1:40999")           # None: not a relayed connection
"""
from __future__ import annotations

import threading
from dataclasses import dataclass


@dataclass(frozen=True)
class ClientIdentity:
    """One client connection as the broker's public port saw it."""

    address: str
    """The client's address in gRPC's peer form (``ipv4:10.0.0.5:51234``, ``ipv6:[::1]:40000``)."""
    tls_subject: str | None = None
    """The verified client certificate's subject (CN), when the connection came over TLS (issue 13)."""


def peer_name(host: str, port: int) -> str:
    """gRPC's peer form of a socket address: ``ipv4:H:P`` or ``ipv6:[H]:P``."""
    return f"ipv6:[{host}]:{port}" if ":" in host else f"ipv4:{host}:{port}"


class PeerMap:
    """Relay connection (gRPC's peer string) -> :class:`ClientIdentity`. Written by the relay's threads,
    read on the event loop: a lock keeps the two apart."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._peers: dict[str, ClientIdentity] = {}

    def __len__(self) -> int:
        return len(self._peers)

    def add(self, relay_peer: str, identity: ClientIdentity) -> None:
        with self._lock:
            self._peers[relay_peer] = identity

    def remove(self, relay_peer: str) -> None:
        with self._lock:
            self._peers.pop(relay_peer, None)

    def identity(self, relay_peer: str) -> ClientIdentity | None:
        """The client behind ``relay_peer``, or None when gRPC's peer is no relayed connection."""
        with self._lock:
            return self._peers.get(relay_peer)
