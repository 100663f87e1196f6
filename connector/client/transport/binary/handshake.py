"""Opening a binary protocol connection: TCP, TLS, ``CONNECT`` -> ``CONNECTED`` (:func:`open_connection`), and
the credentials ``CONNECT`` and ``AUTH_RESPONSE`` carry (:func:`auth_data`).

- TCP with ``TCP_NODELAY`` (small frames go out at once: latency matters more than packets);
- TLS when the :class:`~connector.client.security.Security` has :class:`~connector.client.security.TlsOptions`,
  with the gRPC transport's rules: the CA file (else the system's roots), ``allow_insecure`` (trust any
  certificate), ``validate_hostname`` (off by default, as pulsar-client), a client certificate for mTLS;
- ``CONNECT`` with client version ``pulsarlike-python``, protocol version :data:`PROTOCOL_VERSION`,
  ``supports_auth_refresh``, the credentials (``token``, ``basic`` as ``user:password``, or ``tls``: the
  certificate is in the handshake) and, through a proxy, ``proxy_to_broker_url``. An ``AUTH_CHALLENGE``
  before ``CONNECTED`` is answered with fresh credentials; an ``ERROR`` is raised as its typed error.

Everything is bounded by the connection timeout; a failure is a ``ConnectError`` naming the address.
"""
from __future__ import annotations

import base64
import socket
import ssl
import time
from dataclasses import dataclass
from typing import Any

from broker_core import errors
from broker_core.protocol import pulsar_commands_pb2 as cmd

from connector.client.security.authentication import Authentication, AuthenticationBasic
from connector.client.transport.binary import wire
from connector.client.security import TlsOptions, ssl_context

T = cmd.BaseCommand
CLIENT_VERSION = "pulsarlike-python"
PROTOCOL_VERSION = 21
"""What Pulsar's current clients announce; a broker answers ``min(ours, its)`` (pulsarlike: 20)."""
READ_SIZE = 64 * 1024
"""Bytes asked per ``recv``: a 256 KiB ask costs ~20 us per small frame (the buffer is allocated at the size
asked), 64 KiB ~3 us, and reads large frames as fast."""


def auth_data(authentication: Authentication | None) -> tuple[str, bytes] | None:
    """``(auth_method_name, auth_data)`` for CONNECT and AUTH_RESPONSE, asked from the source now (None:
    anonymous). A TLS client certificate is presented in the handshake: its method name says so."""
    if authentication is None:
        return None
    if isinstance(authentication, AuthenticationBasic):  # the broker's basic provider takes user:password
        return authentication.method, base64.b64decode(authentication.authorization()[len("Basic "):])
    if authentication.tls_files() is not None:
        return "tls", b""
    token = authentication.token()
    return ("token", token.encode()) if token else None


def auth_response(security: Any) -> cmd.BaseCommand:
    """``AUTH_RESPONSE`` to a broker's ``AUTH_CHALLENGE``: the credentials, asked from their source again."""
    response = cmd.CommandAuthResponse(client_version=CLIENT_VERSION, protocol_version=PROTOCOL_VERSION)
    credentials = auth_data(getattr(security, "authentication", None))
    if credentials is not None:
        response.response.auth_method_name, response.response.auth_data = credentials
    return T(type=T.AUTH_RESPONSE, authResponse=response)


def tls_context(options: TlsOptions) -> ssl.SSLContext:
    """An ``ssl`` context doing what ``options`` say (see the module docstring)."""
    return ssl_context(options, check_hostname=bool(options.validate_hostname))


@dataclass
class Opened:
    """A connection ``CONNECTED`` answered: the socket, the answer, the frame reader (bounded by the broker's
    ``maxMessageSize``) and the frames that came right after ``CONNECTED`` in the same read."""
    sock: socket.socket
    connected: cmd.CommandConnected
    max_message_size: int
    reader: wire.FrameReader
    early: list[tuple[cmd.BaseCommand, memoryview]]


def open_connection(address: str, security: Any, timeout_s: float, proxy_to_broker_url: str | None = None) -> Opened:
    """Connect to ``address`` (``host:port``) as the module docstring says."""
    host, _, port = address.rpartition(":")
    host = host.strip("[]")
    deadline = time.monotonic() + timeout_s
    tls = getattr(security, "tls", None)
    try:
        sock = socket.create_connection((host, int(port)), timeout=timeout_s)
    except OSError as exc:
        raise errors.ConnectError(f"cannot connect to the broker at {address}: {exc.strerror or exc}; is it "
                                  "running?", target=address) from None
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if tls is not None:
            sock = _tls_handshake(sock, host, tls, address)
        return _connect(sock, address, security, deadline, proxy_to_broker_url)
    except BaseException:
        sock.close()
        raise


def _tls_handshake(sock: socket.socket, host: str, tls: TlsOptions, address: str) -> ssl.SSLSocket:
    try:
        return tls_context(tls).wrap_socket(sock, server_hostname=host)
    except ssl.SSLCertVerificationError as exc:
        raise errors.ConnectError(f"the broker's certificate at {address} is not trusted ({exc.verify_message}): "
                                  "give tls_trust_certs_file_path the CA that signed it", target=address) from None
    except (OSError, ssl.SSLError) as exc:
        raise errors.ConnectError(f"TLS handshake with the broker at {address} failed: {exc}; is it a TLS port "
                                  "(brokerServicePortTls)?", target=address) from None


def _connect(sock: socket.socket, address: str, security: Any, deadline: float,
             proxy_to_broker_url: str | None) -> Opened:
    connect = cmd.CommandConnect(client_version=CLIENT_VERSION, protocol_version=PROTOCOL_VERSION,
                                 feature_flags=cmd.FeatureFlags(supports_auth_refresh=True,
                                                                pulsarlike_consumer_errors=True))
    credentials = auth_data(getattr(security, "authentication", None))
    if credentials is not None:
        connect.auth_method_name, connect.auth_data = credentials
    if proxy_to_broker_url:
        connect.proxy_to_broker_url = proxy_to_broker_url
    reader = wire.FrameReader(wire.max_frame(wire.DEFAULT_MAX_MESSAGE_SIZE))
    sock.sendall(wire.encode(T(type=T.CONNECT, connect=connect)))
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise errors.ConnectError(f"the broker at {address} did not answer CONNECT in time", target=address)
        sock.settimeout(remaining)
        try:
            data = sock.recv(READ_SIZE)
        except socket.timeout:
            continue
        except OSError as exc:
            raise errors.ConnectError(f"the connection to the broker at {address} failed while connecting: {exc}",
                                      target=address) from None
        if not data:
            raise errors.ConnectError(f"the broker at {address} closed the connection during CONNECT", target=address)
        try:
            frames = list(reader.feed(data))
        except wire.FrameError as exc:
            raise errors.ConnectError(f"the broker at {address} answered CONNECT with a bad frame ({exc.reason}): "
                                      "is it a Pulsar binary port?", target=address) from None
        for i, (command, _) in enumerate(frames):
            if command.type == T.CONNECTED:
                connected = command.connected
                size = connected.max_message_size if connected.max_message_size > 0 else wire.DEFAULT_MAX_MESSAGE_SIZE
                reader.limit(wire.max_frame(size), "the broker's maxMessageSize plus framing")
                return Opened(sock, connected, size, reader, frames[i + 1:])
            if command.type == T.ERROR:
                raise wire.answer_error(command)  # type: ignore[misc]
            if command.type == T.AUTH_CHALLENGE:
                sock.sendall(wire.encode(auth_response(security)))
            elif command.type == T.PING:
                sock.sendall(wire.encode(T(type=T.PONG, pong=cmd.CommandPong())))
