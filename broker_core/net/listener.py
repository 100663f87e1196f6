"""The broker's one public port, serving two protocols: gRPC (our client, the Spark connector, the jobs)
and Pulsar's binary protocol (the official clients), told apart by the first byte a client sends.

gRPC Python cannot serve a socket it did not accept, so the gRPC server listens on a private loopback port
(started by the first gRPC client: :mod:`broker_core.frontends.grpc.server`) and this listener owns the public
one:

1. It accepts a connection and asks the :class:`~broker_core.net.connection_budget.ConnectionBudget`
   for a place (``brokerMaxConnections``, ``brokerMaxConnectionsPerIp``, the open-file limit): a
   connection over a limit is closed at once, logged one line per limit and interval with a count. An
   admitted one has ``handshakeTimeoutSeconds`` from now to complete its handshake (steps 2 and 4).
2. It waits for the first byte (without reading it: ``MSG_PEEK``) until that deadline; a client silent
   until then is closed.
3. ``P`` -- the start of HTTP/2's client preface ``PRI * HTTP/2.0...``: once all 24 bytes of the preface
   came (before the deadline; anything else is refused), it is passed on and the connection is relayed,
   byte for byte, to the gRPC server (the first one waits until that server is started and listens). A
   Pulsar frame never starts so (its first byte is the high byte of a frame size, which is 0 for any frame
   the broker accepts).
4. ``0x16 0x03`` -- a TLS handshake record on the plain port: refused with a log line (connect to the TLS
   port).
5. Anything else: the connection is served by the Pulsar binary protocol front end
   (:mod:`broker_core.frontends.pulsar`), on the event loop, where garbage is refused with a logged reason
   and ``CONNECT`` must come before the deadline.

The connection keeps its place in the budget until it is closed: a relayed one until the relay process
says it ended, a Pulsar one until its connection is lost.

The TLS port (``brokerServicePortTls``), when configured, is a second listening socket of this listener: a
connection there is budgeted the same way, must start with a TLS handshake record (``0x16``; anything else,
a plain client, is refused with a log line) and is handed whole to the relay process, which terminates TLS
(within ``tlsHandshakeTimeoutSeconds``), sniffs the decrypted first byte the same way and relays gRPC or
hands the decrypted binary protocol back to the broker (:mod:`broker_core.net.relay_tls`), where its
``CONNECT`` deadline still counts from the accept.

The relay moves bytes in the kernel (``os.splice``) in a separate process
(:mod:`broker_core.net.relay_worker`): neither the broker's event loop nor its interpreter's lock sees
them, so the gRPC path costs about what it cost before the listener (``docs/pulsar-protocol.md`` has the
figures). Before relaying, the connection is registered in the :class:`~broker_core.net.peers.PeerMap`
under the relay's own address, which is what gRPC sees as the peer, so per-client limits apply to the real
client.
"""
from __future__ import annotations

import asyncio
import logging
import socket
from typing import Awaitable, Callable

from broker_core.errors import ServiceNotReady
from broker_core.log_limits import LogLimiter
from broker_core.net.connection_budget import Admitted, ConnectionBudget
from broker_core.net.peers import ClientIdentity, PeerMap, peer_name
from broker_core.net.relay import RelayProcess

log = logging.getLogger(__name__)

HTTP2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
"""What every HTTP/2 client sends first (RFC 9113 section 3.4)."""
HTTP2_FIRST_BYTE = HTTP2_PREFACE[:1]
TLS_FIRST_BYTE = b"\x16"
ACCEPT_RETRY_S = 0.1
"""Pause after a failed accept (out of file descriptors): not for correctness, so as not to spin."""

BinaryServer = Callable[[ClientIdentity, Admitted | None], asyncio.Protocol]
"""Makes the protocol serving a Pulsar binary connection (it releases its ``Admitted`` when lost)."""
GrpcPort = Callable[[], Awaitable[int]]
"""The gRPC server's private loopback port, once it listens (it is started by the first call)."""


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

    def __init__(self, grpc_port: GrpcPort, binary: BinaryServer, peers: PeerMap, tls: str | None = None,
                 budget: ConnectionBudget | None = None) -> None:
        """``tls``: the relay worker's TLS settings (:func:`~broker_core.net.relay_worker.tls_settings`)
        when :meth:`bind_tls` will be called; ``budget``: the connection limits (None: Pulsar's defaults, no
        limit but the open-file limit, a 30 s handshake)."""
        self._grpc_port = grpc_port
        self._binary = binary
        self._peers = peers
        self.budget = budget or ConnectionBudget()
        self._accept_failures = LogLimiter(log)
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
                self._accept_failures.warning("accept_failed", "event=accept_failed error=%r", exc)
                await asyncio.sleep(ACCEPT_RETRY_S)
                continue
            admitted = self.budget.admit(address[0], loop.time())
            if admitted is None:  # over a limit: logged by the budget
                conn.close()
                continue
            task = loop.create_task(route(conn, address, admitted))
            self._routing.add(task)
            task.add_done_callback(self._routing.discard)

    async def _route(self, conn: socket.socket, address, admitted: Admitted) -> None:
        loop = asyncio.get_running_loop()
        identity = ClientIdentity(peer_name(address[0], address[1]))
        handed = False  # once true, whoever serves the connection closes it and releases its place
        try:
            first = await self._first_byte(loop, conn, admitted.deadline)
            if first == HTTP2_FIRST_BYTE:
                handed = await self._relay(loop, conn, identity, admitted)
            elif first == TLS_FIRST_BYTE and _tls_record(conn):
                admitted.refusals.warning(
                    "tls_on_plain_port", "event=connection_refused peer=%s reason=a TLS handshake on the plain "
                    "port: use pulsar+ssl:// and the broker's TLS port (brokerServicePortTls)", identity.address)
            elif first:
                handed = await self._serve_binary(loop, conn, identity, admitted)
        finally:
            if not handed:
                conn.close()
                admitted.release()

    async def _route_tls(self, conn: socket.socket, address, admitted: Admitted) -> None:
        loop = asyncio.get_running_loop()
        peer = peer_name(address[0], address[1])
        handed = False
        try:
            first = await self._first_byte(loop, conn, admitted.deadline)
            if first == TLS_FIRST_BYTE:
                conn.setblocking(True)
                self._relays.relay_tls(conn, peer, admitted)
                handed = True
            elif first:
                admitted.refusals.warning(
                    "plain_on_tls_port", "event=connection_refused peer=%s reason=not a TLS handshake on the TLS "
                    "port: a plain client? use pulsar+ssl:// here, or pulsar:// on the plain port", peer)
        finally:
            if not handed:
                conn.close()
                admitted.release()

    async def _serve_binary(self, loop: asyncio.AbstractEventLoop, sock: socket.socket, identity: ClientIdentity,
                            admitted: Admitted | None) -> bool:
        """Serve Pulsar's binary protocol on ``sock``; False when it failed (the caller closes it)."""
        try:
            if sock.family != socket.AF_UNIX:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            await loop.connect_accepted_socket(lambda: self._binary(identity, admitted), sock)
        except OSError:
            return False
        return True

    def _serve_decrypted(self, sock: socket.socket, identity: ClientIdentity, admitted: Admitted | None) -> None:
        """A TLS client speaking Pulsar's binary protocol, decrypted by the relay process."""
        loop = asyncio.get_running_loop()
        sock.setblocking(False)

        async def serve() -> None:
            if not await self._serve_binary(loop, sock, identity, admitted):
                sock.close()
        task = loop.create_task(serve())
        self._routing.add(task)
        task.add_done_callback(self._routing.discard)

    async def _first_byte(self, loop: asyncio.AbstractEventLoop, conn: socket.socket, deadline: float) -> bytes:
        """The connection's first byte, left in the socket; b"" when it ended, failed or sent nothing by
        ``deadline`` (the event loop's time; the caller closes it)."""
        try:
            return await asyncio.wait_for(self._peek(loop, conn), max(deadline - loop.time(), 0.0))
        except (asyncio.TimeoutError, OSError):
            return b""

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

    async def _preface(self, loop: asyncio.AbstractEventLoop, conn: socket.socket, identity: ClientIdentity,
                       deadline: float) -> bool:
        """Read HTTP/2's preface from ``conn`` by ``deadline``; False (logged when it was something else)
        when it did not come."""
        got = b""
        try:
            async with asyncio.timeout_at(deadline):
                while len(got) < len(HTTP2_PREFACE):
                    chunk = await loop.sock_recv(conn, len(HTTP2_PREFACE) - len(got))
                    if not chunk:
                        return False
                    got += chunk
                    if not HTTP2_PREFACE.startswith(got):
                        self.budget.refusals.warning(
                            "not_http2", "event=connection_refused peer=%s reason=neither HTTP/2 (gRPC) nor Pulsar's"
                            " binary protocol", identity.address)
                        return False
        except (TimeoutError, OSError):
            return False
        return True

    async def _relay(self, loop: asyncio.AbstractEventLoop, conn: socket.socket, identity: ClientIdentity,
                     admitted: Admitted) -> bool:
        """Relay ``conn`` to the gRPC server once its preface came; False when it did not (the caller closes
        it). The relay releases ``admitted`` when the connection ends."""
        if not await self._preface(loop, conn, identity, admitted.deadline):
            return False
        try:
            grpc_port = await self._grpc_port()
        except ServiceNotReady as exc:  # the start failed (logged) or the broker is stopping
            log.warning("event=relay_connect_failed peer=%s error=%r", identity.address, exc)
            return False
        upstream = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            upstream.setblocking(False)
            await loop.sock_connect(upstream, ("127.0.0.1", grpc_port))
            await loop.sock_sendall(upstream, HTTP2_PREFACE)  # read from the client to check it
            upstream.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError as exc:
            log.warning("event=relay_connect_failed peer=%s error=%r", identity.address, exc)
            upstream.close()
            return False
        except BaseException:
            upstream.close()
            raise
        relay_peer = peer_name(*upstream.getsockname()[:2])
        self._peers.add(relay_peer, identity)  # before gRPC can see a byte of it
        if not self._relays.relay(conn, upstream, relay_peer, admitted):
            self._peers.remove(relay_peer)
        return True

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
