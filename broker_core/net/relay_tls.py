"""TLS termination in the relay process (:mod:`broker_core.net.relay_worker`): the handshake, the
client certificate's common name, and the pump that moves bytes between a TLS client and a plain socket.

``os.splice`` moves bytes in the kernel and cannot decrypt, so a TLS connection is served by one thread of
the relay process that drives an ``ssl.SSLObject`` over memory buffers (no ``SSLSocket``: OpenSSL objects
must not be used by two threads at once, and one thread per connection handles both directions with
``poll``). The broker's interpreter never sees these bytes; only the relay process's GIL does, which nothing
else there wants.

Life of a TLS connection:

1. Handshake (:func:`handshake`), at most ``tlsHandshakeTimeoutSeconds``: the broker's certificate and key;
   a client certificate is asked for when trust certificates are configured, required with
   ``tlsRequireTrustedClientCertOnConnect``, and always verified against them. A failure (a plain client, an
   unknown CA, no certificate where one is required) is reported to the broker, which logs it, and the
   connection is closed.
2. The first decrypted bytes decide the protocol, as on the plain port (``P``: HTTP/2, else Pulsar's binary
   protocol).
3. :func:`pump` relays both directions until both have ended; a clean end of one direction half-closes the
   other side (TLS ``close_notify`` towards the client).

Imported by the relay worker as a sibling module (it runs as a script) and by the broker as
``broker_core.net.relay_tls`` (its metrics server uses :func:`server_context`).
"""
from __future__ import annotations

import select
import socket
import ssl
import time

BUFFER = 256 * 1024
"""Bytes read at once from either side."""
HIGH_WATER = 1 << 20
"""Bytes waiting to be written to one side beyond which the other side is not read (back-pressure)."""


class HandshakeFailed(Exception):
    """The TLS handshake did not complete; the message says why (for the broker's log). ``quiet``: the client
    just went away (e.g. a client reading the certificate, as pulsarlike's does without host name checks)."""

    def __init__(self, message: str, quiet: bool = False) -> None:
        super().__init__(message)
        self.quiet = quiet


def server_context(cert_file: str, key_file: str, trust_file: str = "", require_client_cert: bool = False,
                   alpn: tuple[str, ...] = ()) -> ssl.SSLContext:
    """The broker's TLS server context (TLS 1.2 or newer); ``alpn``: the protocols it selects (gRPC clients
    insist on ``h2``; Pulsar's binary clients offer none)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    if alpn:
        context.set_alpn_protocols(list(alpn))
    context.load_cert_chain(cert_file, key_file)
    if trust_file:
        context.load_verify_locations(cafile=trust_file)
        context.verify_mode = ssl.CERT_REQUIRED if require_client_cert else ssl.CERT_OPTIONAL
    return context


def common_name(cert: dict | None) -> str | None:
    """The subject's CN of a verified peer certificate (``SSLObject.getpeercert()``), None without one."""
    for rdn in (cert or {}).get("subject", ()):
        for key, value in rdn:
            if key == "commonName" and value:
                return str(value)[:1024]
    return None


class TlsSession:
    """A server-side TLS session over ``sock`` (blocking until :func:`pump` takes it over)."""

    def __init__(self, context: ssl.SSLContext, sock: socket.socket) -> None:
        self.sock = sock
        self.incoming = ssl.MemoryBIO()
        self.outgoing = ssl.MemoryBIO()
        self.tls = context.wrap_bio(self.incoming, self.outgoing, server_side=True)

    def _flush(self) -> None:
        data = self.outgoing.read()
        if data:
            self.sock.sendall(data)

    def _receive(self, deadline: float) -> None:
        self.sock.settimeout(max(deadline - time.monotonic(), 0.001))
        data = self.sock.recv(BUFFER)
        if not data:
            raise HandshakeFailed("the client closed the connection during the TLS handshake", quiet=True)
        self.incoming.write(data)

    def handshake(self, timeout_s: float) -> tuple[str | None, bytes]:
        """Complete the handshake and read the first application bytes: (client certificate CN, bytes)."""
        deadline = time.monotonic() + timeout_s
        try:
            while True:
                try:
                    self.tls.do_handshake()
                    break
                except ssl.SSLWantReadError:
                    self._flush()
                    self._receive(deadline)
            self._flush()
            subject = common_name(self.tls.getpeercert())
            while True:
                try:
                    first = self.tls.read(BUFFER)
                    break
                except ssl.SSLWantReadError:
                    self._flush()  # TLS 1.3 session tickets
                    self._receive(deadline)
            self._flush()
        except ssl.SSLError as exc:
            try:
                self._flush()  # the alert, so the client knows why
            except OSError:
                pass
            raise HandshakeFailed(f"TLS handshake failed: {exc.reason or exc}") from None
        except socket.timeout:
            raise HandshakeFailed(f"no TLS handshake and first request within {timeout_s:g} s") from None
        except OSError as exc:
            raise HandshakeFailed(f"connection lost during the TLS handshake ({exc.strerror or exc})",
                                  quiet=True) from None
        if not first:
            raise HandshakeFailed("the client closed the TLS connection before sending anything", quiet=True)
        return subject, first


def pump(session: TlsSession, plain: socket.socket, first: bytes) -> bool:
    """Relay ``session`` <-> ``plain`` until both directions ended; True when they ended cleanly."""
    raw, tls, incoming, outgoing = session.sock, session.tls, session.incoming, session.outgoing
    raw.setblocking(False)
    plain.setblocking(False)
    to_plain = bytearray(first)
    to_raw = bytearray(outgoing.read())
    raw_ended = plain_ended = plain_shut = raw_shut = False
    poller = select.poll()
    raw_fd, plain_fd = raw.fileno(), plain.fileno()
    poller.register(raw_fd, 0)
    poller.register(plain_fd, 0)
    try:
        while True:
            if raw_ended and not to_plain and not plain_shut:
                plain.shutdown(socket.SHUT_WR)
                plain_shut = True
            if plain_ended and not raw_shut:
                if not to_raw:
                    raw.shutdown(socket.SHUT_WR)
                    raw_shut = True
            if plain_shut and raw_shut:
                return True
            raw_mask = (select.POLLIN if not raw_ended and len(to_plain) < HIGH_WATER else 0) | \
                (select.POLLOUT if to_raw else 0)
            plain_mask = (select.POLLIN if not plain_ended and len(to_raw) < HIGH_WATER else 0) | \
                (select.POLLOUT if to_plain else 0)
            if not raw_mask and not plain_mask:
                return True
            poller.modify(raw_fd, raw_mask)
            poller.modify(plain_fd, plain_mask)
            for fd, events in poller.poll():
                if events & (select.POLLERR | select.POLLNVAL):
                    return False
                if fd == raw_fd:
                    if events & select.POLLOUT and to_raw:
                        del to_raw[:_send(raw, to_raw)]
                    if events & (select.POLLIN | select.POLLHUP):
                        if not raw_mask & select.POLLIN:
                            return False  # hung up while we could not read: the client is gone
                        data = _recv(raw)
                        if data is None:
                            continue
                        if not data:
                            raw_ended = True
                        else:
                            incoming.write(data)
                            raw_ended = _decrypt(tls, to_plain) or raw_ended
                            to_raw += outgoing.read()
                else:
                    if events & select.POLLOUT and to_plain:
                        del to_plain[:_send(plain, to_plain)]
                    if events & (select.POLLIN | select.POLLHUP):
                        if not plain_mask & select.POLLIN:
                            return False
                        data = _recv(plain)
                        if data is None:
                            continue
                        if not data:
                            plain_ended = True
                            try:
                                tls.unwrap()  # close_notify
                            except ssl.SSLError:
                                pass
                        else:
                            tls.write(data)
                        to_raw += outgoing.read()
    except (OSError, ssl.SSLError):
        return False
    finally:
        poller.unregister(raw_fd)
        poller.unregister(plain_fd)


def _send(sock: socket.socket, data: bytearray) -> int:
    try:
        return sock.send(data)
    except (BlockingIOError, InterruptedError):
        return 0


def _recv(sock: socket.socket) -> bytes | None:
    """What ``sock`` has (b"" at its end); None when nothing after all (a spurious wake-up)."""
    try:
        return sock.recv(BUFFER)
    except (BlockingIOError, InterruptedError):
        return None


_RECORD = 16 * 1024 + 256
"""One TLS record's plaintext at most: ``SSLObject.read`` returns one record per call."""


def _decrypt(tls: ssl.SSLObject, into: bytearray) -> bool:
    """Append what ``tls`` can decrypt now to ``into``; True once the client sent close_notify."""
    scratch = bytearray(_RECORD)  # read() into a buffer: read(n) alone would allocate n bytes per record
    view = memoryview(scratch)
    while True:
        try:
            n = tls.read(_RECORD, scratch)
        except ssl.SSLWantReadError:
            return False
        except ssl.SSLZeroReturnError:
            return True
        if not n:
            return True
        into += view[:n]
