"""The broker's one public port, serving two protocols: gRPC (our client, the Spark connector, the jobs)
and Pulsar's binary protocol (the official clients), told apart by the first byte a client sends.

gRPC Python cannot serve a socket it did not accept, so the gRPC server listens on a private loopback port
and this listener owns the public one:

1. It accepts a connection and waits for its first byte (without reading it: ``MSG_PEEK``). A client
   that sends nothing for :data:`SNIFF_TIMEOUT_S` is closed.
2. ``P`` -- the start of HTTP/2's client preface ``PRI * HTTP/2.0...``: the connection is relayed, byte for
   byte, to the gRPC server. A Pulsar frame never starts so (its first byte is the high byte of a frame
   size, which is 0 for any frame the broker accepts).
3. ``0x16 0x03`` -- a TLS handshake record on the plain port: refused with one log line (connect to the TLS
   port).
4. Anything else: the connection is served by the Pulsar binary protocol front end
   (:mod:`broker_core.service.pulsar`), on the event loop, where garbage is refused with a logged reason.

The TLS port (``brokerServicePortTls``), when configured, is a second listening socket of this listener: a
connection there must start with a TLS handshake record (``0x16``; anything else, a plain client, is refused
with one log line) and is handed whole to the relay process, which terminates TLS, sniffs the decrypted
first byte the same way and relays gRPC or hands the decrypted binary protocol back to the broker
(:mod:`broker_core.service.relay_tls`).

The relay moves bytes in the kernel (``os.splice``) in a separate process
(:mod:`broker_core.service.relay_worker`): neither the broker's event loop nor its interpreter's lock sees
them, so the gRPC path costs about what it cost before the listener (``docs/pulsar-protocol.md`` has the
figures). Before relaying, the connection is registered in the :class:`~broker_core.service.peers.PeerMap`
under the relay's own address, which is what gRPC sees as the peer, so per-client limits apply to the real
client.
"""
from __future__ import annotations

import asyncio
import logging
import socket
from typing import Callable

from broker_core.service.peers import ClientIdentity, PeerMap, peer_name
from broker_core.service.relay import RelayProcess

log = logging.getLogger(__name__)

HTTP2_FIRST_BYTE = b"P"
TLS_FIRST_BYTE = b"\x16"
SNIFF_TIMEOUT_S = 30.0


def _tls_record(conn: socket.socket) -> bool:
    """Whether the bytes waiting start a TLS record (``0x16``, then major version 3), not a Pulsar frame."""
    try:
        head = conn.recv(2, socket.MSG_PEEK | socket.MSG_DONTWAIT)
    except OSError:
        return False
    return head[1:2] == b"\x03"


class PortListener:
    """Accepts on the broker's port (and its TLS port) and hands each connection to the gRPC relay or to
    ``binary``."""

    def __init__(self, grpc_port: int, binary: Callable[[ClientIdentity], asyncio.Protocol], peers: PeerMap,
                 tls: str | None = None) -> None:
        """``tls``: the relay worker's TLS settings (:func:`~broker_core.service.relay_worker.tls_settings`)
        when :meth:`bind_tls` will be called."""
        self._grpc_address = ("127.0.0.1", grpc_port)
        self._binary = binary
        self._peers = peers
        self._sock: socket.socket | None = None
        self._tls_sock: socket.socket | None = None
        self._accepting: list[asyncio.Task] = []
        self._routing: set[asyncio.Task] = set()
        self._relays = RelayProcess(peers, tls, self._serve_decrypted)
        self.port = 0
        self.tls_port = 0

    def bind(self, host: str, port: int) -> int:
        """Bind and listen (raises ``OSError`` when the address is taken or not local); returns the port."""
        self._sock = self._listen(host, port)
        self.port = self._sock.getsockname()[1]
        return self.port

    def bind_tls(self, host: str, port: int) -> int:
        """The same for the TLS port."""
        self._tls_sock = self._listen(host, port)
        self.tls_port = self._tls_sock.getsockname()[1]
        return self.tls_port

    @staticmethod
    def _listen(host: str, port: int) -> socket.socket:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6 and host in ("::", ""):
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
            sock.bind((host, port))
            sock.listen(1024)
            sock.setblocking(False)
        except OSError:
            sock.close()
            raise
        return sock

    def start(self) -> None:
        self._relays.start()
        loop = asyncio.get_running_loop()
        assert self._sock is not None
        self._accepting = [loop.create_task(self._accept_loop(self._sock, self._route))]
        if self._tls_sock is not None:
            self._accepting.append(loop.create_task(self._accept_loop(self._tls_sock, self._route_tls)))

    async def _accept_loop(self, listening: socket.socket, route) -> None:
        loop = asyncio.get_running_loop()
        while True:
            try:
                conn, address = await loop.sock_accept(listening)
            except asyncio.CancelledError:
                raise
            except OSError as exc:  # out of file descriptors, a connection reset before accept
                log.warning("event=accept_failed error=%r", exc)
                await asyncio.sleep(0.1)  # not for correctness: do not spin while descriptors are short
                continue
            task = loop.create_task(route(conn, address))
            self._routing.add(task)
            task.add_done_callback(self._routing.discard)

    async def _route(self, conn: socket.socket, address) -> None:
        loop = asyncio.get_running_loop()
        identity = ClientIdentity(peer_name(address[0], address[1]))
        first = await self._first_byte(loop, conn)
        if not first:
            conn.close()
            return
        if first == HTTP2_FIRST_BYTE:
            await self._relay(loop, conn, identity)
        elif first == TLS_FIRST_BYTE and _tls_record(conn):
            log.warning("event=connection_refused peer=%s reason=a TLS handshake on the plain port: use pulsar+ssl://"
                        " and the broker's TLS port (brokerServicePortTls)", identity.address)
            conn.close()
        else:
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            try:
                await loop.connect_accepted_socket(lambda: self._binary(identity), conn)
            except OSError:
                conn.close()

    async def _route_tls(self, conn: socket.socket, address) -> None:
        loop = asyncio.get_running_loop()
        peer = peer_name(address[0], address[1])
        first = await self._first_byte(loop, conn)
        if first != TLS_FIRST_BYTE:
            if first:
                log.warning("event=connection_refused peer=%s reason=not a TLS handshake on the TLS port: a plain "
                            "client? use pulsar+ssl:// here, or pulsar:// on the plain port", peer)
            conn.close()
            return
        conn.setblocking(True)
        self._relays.relay_tls(conn, peer)

    def _serve_decrypted(self, sock: socket.socket, identity: ClientIdentity) -> None:
        """A TLS client speaking Pulsar's binary protocol, decrypted by the relay process."""
        loop = asyncio.get_running_loop()
        sock.setblocking(False)

        async def serve() -> None:
            try:
                await loop.connect_accepted_socket(lambda: self._binary(identity), sock)
            except OSError:
                sock.close()
        task = loop.create_task(serve())
        self._routing.add(task)
        task.add_done_callback(self._routing.discard)

    async def _first_byte(self, loop: asyncio.AbstractEventLoop, conn: socket.socket) -> bytes:
        """The connection's first byte, left in the socket; b"" when it ended, failed or sent nothing within
        ``SNIFF_TIMEOUT_S`` (the caller closes it). Cancelled, it closes the connection itself."""
        try:
            return await asyncio.wait_for(self._peek(loop, conn), SNIFF_TIMEOUT_S)
        except (asyncio.TimeoutError, OSError):
            return b""
        except asyncio.CancelledError:
            conn.close()
            raise

    @staticmethod
    async def _peek(loop: asyncio.AbstractEventLoop, conn: socket.socket) -> bytes:
        while True:
            try:
                return conn.recv(1, socket.MSG_PEEK)
            except BlockingIOError:
                ready = loop.create_future()
                loop.add_reader(conn.fileno(), lambda: ready.done() or ready.set_result(None))
                try:
                    await ready
                finally:
                    loop.remove_reader(conn.fileno())

    async def _relay(self, loop: asyncio.AbstractEventLoop, conn: socket.socket, identity: ClientIdentity) -> None:
        upstream = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            upstream.setblocking(False)
            await loop.sock_connect(upstream, self._grpc_address)
            upstream.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError as exc:
            log.warning("event=relay_connect_failed peer=%s error=%r", identity.address, exc)
            upstream.close()
            conn.close()
            return
        relay_peer = peer_name(*upstream.getsockname()[:2])
        self._peers.add(relay_peer, identity)  # before gRPC can see a byte of it
        if not self._relays.relay(conn, upstream, relay_peer):
            self._peers.remove(relay_peer)

    async def stop_accepting(self) -> None:
        for accepting in self._accepting:
            accepting.cancel()
            try:
                await accepting
            except asyncio.CancelledError:
                pass
        self._accepting = []
        for task in list(self._routing):
            task.cancel()
        for sock in (self._sock, self._tls_sock):
            if sock is not None:
                sock.close()
        self._sock = self._tls_sock = None

    async def close_relays(self) -> None:
        """End every relayed connection (after the gRPC server has said goodbye on them)."""
        await self._relays.stop()
