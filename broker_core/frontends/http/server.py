"""The HTTP(S) server under :class:`~broker_core.frontends.http.metrics.MetricsServer`: the standard library's WSGI
server on a socket the broker already bound and listens on.

Imported by the metrics port's first connection, not at the broker's start: ``wsgiref`` brings
``http.server``, ``http.client``, ``email`` and ``html`` (~10 ms of a start a client waits for, for an
endpoint that may never be scraped).
"""
from __future__ import annotations

import logging
import socket
import ssl
from socketserver import TCPServer, ThreadingMixIn
from typing import Any, Callable, Iterable
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer

log = logging.getLogger(__name__)


class _Server(ThreadingMixIn, WSGIServer):
    daemon_threads = True
    allow_reuse_address = True

    def server_bind(self) -> None:
        # HTTPServer's looks the bound address up in reverse DNS (socket.getfqdn) for WSGI's SERVER_NAME
        # alone: ~3 ms, seconds where the resolver does not answer
        TCPServer.server_bind(self)
        self._named()

    def _named(self) -> None:
        self.server_name, self.server_port = str(self.server_address[0]), int(self.server_address[1])
        self.setup_environ()


class _TlsServer(_Server):
    ssl_context: ssl.SSLContext
    handshake_timeout_s = 10.0

    def finish_request(self, request: Any, client_address: Any) -> None:
        try:
            request.settimeout(self.handshake_timeout_s)
            secure = self.ssl_context.wrap_socket(request, server_side=True)
        except (OSError, ssl.SSLError) as exc:
            log.info("event=tls_handshake_failed port=metrics peer=%s reason=%s", client_address[0], exc)
            return
        try:
            super().finish_request(secure, client_address)
        finally:
            secure.close()


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        log.debug("event=http_request client=%s request=%r", self.client_address[0], format % args)


def http_server(listening: socket.socket, app: Callable[..., Iterable[bytes]],
                tls: ssl.SSLContext | None) -> _Server:
    """A threading WSGI server serving ``app`` on ``listening`` (bound and listening; the server owns it
    from now on), over TLS with ``tls``."""
    attributes: dict[str, Any] = {"address_family": listening.family}
    if tls is not None:
        attributes["ssl_context"] = tls
    server_class = type("MetricsHTTPServer", (_TlsServer if tls is not None else _Server,), attributes)
    httpd = server_class(listening.getsockname()[:2], _QuietHandler, bind_and_activate=False)
    httpd.socket.close()
    httpd.socket = listening
    httpd.server_address = listening.getsockname()
    httpd._named()
    httpd.set_app(app)
    return httpd
