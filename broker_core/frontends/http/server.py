"""The web service port (``webServicePort``) and its TLS twin (``webServicePortTls``): bound at the broker's
start, served by the application of :mod:`broker_core.frontends.http.web` (the admin REST API, ``/metrics``,
``/status.html``), which the first connection builds.

Why it accepts its connections itself rather than through ``aiohttp.web.SockSite``: the broker's start must not
pay for aiohttp (~100 ms of imports for a port that may never see a request; ``bench/start_instructions.py``
counts the start), so the port accepts from the start with nothing but asyncio, and the first connection
imports the application on a worker thread (the event loop serves the broker's other clients meanwhile) and
sets it up; every connection then goes to its protocol factory (``runner.server``), over TLS with the
broker's server context (client certificates requested as on the broker's TLS port, so authentication can
read them from the transport).

Each accepted connection asks the web port's own :class:`~broker_core.net.connection_budget.ConnectionBudget`
for a place first (``maxHttpServerConnections``, ``brokerMaxConnectionsPerIp``, the open-file limit: see
:meth:`~broker_core.net.connection_budget.ConnectionBudget.for_web`), and keeps it until the connection is lost.
It is not the broker's port's budget: however many web connections are open, slow or not, they take no place
a binary or gRPC client needs. A TLS handshake must complete within ``tlsHandshakeTimeoutSeconds``; it happens
on the event loop, like everything else here, so a slow or silent client holds up no one else. Nothing here
looks a name up in DNS.
"""
from __future__ import annotations

import asyncio
import errno
import importlib
import logging
import socket
import ssl
from typing import Any, Awaitable, Callable, Protocol

from broker_core.errors import InvalidConfiguration
from broker_core.log_limits import LogLimiter
from broker_core.net.connection_budget import Admitted, ConnectionBudget

log = logging.getLogger(__name__)

WEB_MODULE = "broker_core.frontends.http.web"
ACCEPT_RETRY_S = 0.1
"""Pause after a failed accept (out of descriptors): the listening socket stays readable, so retrying at
once would spin."""
LISTEN_BACKLOG = 1024


class Runner(Protocol):
    """What serves the connections: an ``aiohttp.web.AppRunner`` after ``setup()``."""

    @property
    def server(self) -> Callable[[], asyncio.Protocol] | None: ...

    async def cleanup(self) -> None: ...


def lazy_app(**arguments: Any) -> Callable[[], Awaitable[Runner]]:
    """A builder of :func:`broker_core.frontends.http.web.start_app` ``(**arguments)``, importing that module
    (and aiohttp) on a worker thread when called."""
    async def build() -> Runner:
        module = await asyncio.get_running_loop().run_in_executor(None, importlib.import_module, WEB_MODULE)
        return await module.start_app(**arguments)
    return build


class _Counted(asyncio.Protocol):
    """The application's protocol for one connection, releasing its place in the budget when it is lost."""

    __slots__ = ("_inner", "_admitted")

    def __init__(self, inner: asyncio.Protocol, admitted: Admitted) -> None:
        self._inner = inner
        self._admitted = admitted

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._inner.connection_made(transport)

    def data_received(self, data: bytes) -> None:
        self._inner.data_received(data)

    def eof_received(self) -> bool | None:
        return self._inner.eof_received()

    def pause_writing(self) -> None:
        self._inner.pause_writing()

    def resume_writing(self) -> None:
        self._inner.resume_writing()

    def connection_lost(self, exc: Exception | None) -> None:
        try:
            self._inner.connection_lost(exc)
        finally:
            self._admitted.release()


class WebServer:
    """Accepts on the web service port(s) and serves the application that :meth:`start`'s ``build()``
    makes at the first connection. Used on the event loop only."""

    def __init__(self, budget: ConnectionBudget, tls: ssl.SSLContext | None = None,
                 tls_handshake_timeout_s: float = 10.0) -> None:
        """``tls``: the server context of :meth:`bind_tls`'s port."""
        self._build: Callable[[], Awaitable[Runner]] | None = None
        self._budget = budget
        self._tls = tls
        self._tls_handshake_timeout_s = tls_handshake_timeout_s
        self._runner: asyncio.Task[Runner] | None = None
        self._sockets: list[tuple[socket.socket, ssl.SSLContext | None]] = []
        self._accepting: list[asyncio.Task] = []
        self._serving: set[asyncio.Task] = set()
        self._failures = LogLimiter(log)
        self.port = 0
        self.tls_port = 0

    def bind(self, host: str, port: int, key: str = "webServicePort") -> int:
        """Bind and listen; the bound port (``InvalidConfiguration`` naming ``key`` when it cannot)."""
        self.port = self._listen(host, port, key, None)
        return self.port

    def bind_tls(self, host: str, port: int, key: str = "webServicePortTls") -> int:
        assert self._tls is not None, "bind_tls needs the TLS server context"
        self.tls_port = self._listen(host, port, key, self._tls)
        return self.tls_port

    def _listen(self, host: str, port: int, key: str, tls: ssl.SSLContext | None) -> int:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6 and host in ("::", ""):
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
            sock.bind((host, port))
            sock.listen(LISTEN_BACKLOG)
            sock.setblocking(False)
        except OSError as exc:
            sock.close()
            hint = ""
            if exc.errno == errno.EADDRINUSE and port:
                # as Pulsar's, a broker fails rather than move its admin API where tools do not look for it
                hint = (f"; another broker (or program) has it: give this one its own with --set {key}=<port> "
                        f"(or {key}=0 for any free port; the line 'pulsarlike metrics on ...' names it)")
            raise InvalidConfiguration(f"cannot bind {host}:{port} for the web service ({key}; in use or not a "
                                       f"local address): {exc.strerror}{hint}", key=key) from None
        self._sockets.append((sock, tls))
        return int(sock.getsockname()[1])

    def start(self, build: Callable[[], Awaitable[Runner]]) -> None:
        """Accept on the bound port(s); ``build()`` makes the application at the first connection."""
        self._build = build
        loop = asyncio.get_running_loop()
        self._accepting = [loop.create_task(self._accept_loop(sock, tls)) for sock, tls in self._sockets]

    async def _accept_loop(self, listening: socket.socket, tls: ssl.SSLContext | None) -> None:
        loop = asyncio.get_running_loop()
        while True:
            try:
                conn, address = await loop.sock_accept(listening)
            except OSError as exc:  # out of file descriptors, a connection reset before accept
                self._failures.warning("accept_failed", "event=accept_failed port=web error=%r", exc)
                await asyncio.sleep(ACCEPT_RETRY_S)
                continue
            admitted = self._budget.admit(address[0], loop.time())
            if admitted is None:  # over a limit: logged by the budget
                conn.close()
                continue
            task = loop.create_task(self._serve(conn, address, admitted, tls))
            self._serving.add(task)
            task.add_done_callback(self._serving.discard)

    def _application(self) -> asyncio.Task[Runner]:
        if self._runner is None:
            assert self._build is not None
            self._runner = asyncio.get_running_loop().create_task(self._build())
            self._runner.add_done_callback(_log_failed_build)
        return self._runner

    async def _serve(self, conn: socket.socket, address: Any, admitted: Admitted,
                     tls: ssl.SSLContext | None) -> None:
        loop = asyncio.get_running_loop()
        handed = False  # once true, the connection's protocol releases its place when it is lost
        try:
            runner = await asyncio.shield(self._application())
            factory = runner.server
            if factory is None:
                return
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            await loop.connect_accepted_socket(
                lambda: _Counted(factory(), admitted), conn, ssl=tls,
                ssl_handshake_timeout=self._tls_handshake_timeout_s if tls is not None else None)
            handed = True
        except (OSError, ssl.SSLError, asyncio.TimeoutError) as exc:
            self._failures.log(logging.INFO, "handshake_failed", "event=web_connection_failed peer=%s tls=%s error=%r",
                                address[0], tls is not None, exc)
        except Exception:  # noqa: BLE001 - the application did not build: logged once by its task
            pass
        finally:
            if not handed:
                conn.close()
                admitted.release()

    async def stop(self) -> None:
        """Close the port(s), end every connection (requests in progress get a moment), clean the
        application up."""
        for task in self._accepting:
            task.cancel()
        for task in (*self._accepting, *self._serving):
            task.cancel()
        await asyncio.gather(*self._accepting, *self._serving, return_exceptions=True)
        self._accepting = []
        for sock, _tls in self._sockets:
            sock.close()
        self._sockets = []
        runner, self._runner = self._runner, None
        if runner is None:
            return
        if not runner.done():
            runner.cancel()
        try:
            built = await runner
        except BaseException:  # noqa: BLE001 - failed or cancelled: nothing to clean up (logged when it failed)
            return
        await built.cleanup()


def _log_failed_build(task: asyncio.Task) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("event=web_service_failed reason=the web application did not start error=%r", task.exception(),
                  exc_info=task.exception())
