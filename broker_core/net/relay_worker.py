"""The relay process: moves the bytes of relayed gRPC connections between the client and the broker's
private gRPC port, in the kernel, away from the broker's interpreter.

Run as a script by :class:`broker_core.net.relay.RelayProcess` (``python relay_worker.py <fd> [<tls>]``,
so no package is imported): ``<fd>`` is its end of a ``SOCK_SEQPACKET`` control socket, ``<tls>`` the JSON of
the TLS port's settings (:func:`tls_settings`) when the broker has one. Messages:

- broker -> worker: ``R`` + an 8-byte relay id, with two file descriptors attached (the client's socket,
  the socket connected to the gRPC port): relay them, one thread per direction, each ``os.splice`` -ing
  through its own pipe;
- broker -> worker: ``T`` + relay id, with the socket of a client of the TLS port: one thread does the
  handshake and serves it (:mod:`broker_core.net.relay_tls`), then tells the broker what it is:
- worker -> broker: ``G`` + relay id + JSON ``{"peer": <the gRPC connection's local address>, "subject":
  <client certificate CN or null>}`` for HTTP/2: the worker connects to the gRPC port itself and relays
  nothing until the broker answered ``K`` + relay id (its PeerMap then knows the client before gRPC sees a
  byte); ``B`` + relay id + JSON ``{"subject": ...}`` with one end of a socket pair attached for Pulsar's
  binary protocol: the broker serves that end, the worker relays the TLS session to the other;
  ``F`` + relay id + a reason when the handshake failed (the broker logs it; ``~`` before the reason: the
  client just went away, logged at DEBUG); the relay is over;
- worker -> broker: ``D`` + the relay id, once both directions have ended and both sockets are closed;
- end of file on the control socket (the broker stopped, or died): every relayed connection is shut down
  and the worker exits.

Why a process: a thread of the broker returning from ``splice`` needs the broker's GIL, which its busy
event loop holds; each chunk then waits for a GIL switch. Here nothing else wants this interpreter's GIL.
A clean end of one direction half-closes the other side (``SHUT_WR``), as TCP does; an error shuts both
sockets down so the other direction ends too.
"""
from __future__ import annotations

import errno
import fcntl
import json
import os
import signal
import socket
import struct
import sys
import threading


RELAY_ID = struct.Struct(">Q")
CONTROL_BYTES = 4096
"""Largest control message (a TLS client's subject is cut to 1 KiB)."""
ACK_TIMEOUT_S = 10.0
PIPE_BYTES = 1 << 20
"""Capacity asked for each pipe (Linux caps it at ``/proc/sys/fs/pipe-max-size``, 1 MiB by default)."""
_F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)


class _Relay:
    def __init__(self, relay_id: int, client: socket.socket, upstream: socket.socket, done) -> None:
        self.relay_id = relay_id
        self.sockets = (client, upstream)
        self._done = done
        self._lock = threading.Lock()
        self._running = 2

    def start(self) -> None:
        client, upstream = self.sockets
        for src, dst in ((client, upstream), (upstream, client)):
            threading.Thread(target=self._pump, args=(src, dst), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            r, w = os.pipe()
        except OSError:  # out of file descriptors: end this relay (both directions) rather than leak it
            self._ended(dst, False)
            return
        clean = True
        try:
            try:
                fcntl.fcntl(w, _F_SETPIPE_SZ, PIPE_BYTES)
            except OSError:
                pass  # the default 64 KiB pipe works, with more calls
            src_fd, dst_fd = src.fileno(), dst.fileno()
            while True:
                n = os.splice(src_fd, w, PIPE_BYTES)
                if n == 0:
                    break
                while n:
                    n -= os.splice(r, dst_fd, n)
        except OSError as exc:
            clean = exc.errno in (errno.EBADF, errno.ENOTCONN)
        finally:
            os.close(r)
            os.close(w)
            self._ended(dst, clean)

    def _ended(self, dst: socket.socket, clean: bool) -> None:
        try:
            dst.shutdown(socket.SHUT_WR if clean else socket.SHUT_RDWR)
        except OSError:
            pass
        if not clean:
            self.shutdown()
        with self._lock:
            self._running -= 1
            last = self._running == 0
        if last:
            for sock in self.sockets:
                sock.close()
            self._done(self)

    def shutdown(self) -> None:
        for sock in self.sockets:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def tls_settings(cert: str, key: str, trust: str, require: bool, grpc_port: int, timeout_s: float) -> str:
    """The ``<tls>`` argument: file paths only, never key material."""
    return json.dumps({"cert": cert, "key": key, "trust": trust, "require": require, "grpc_port": grpc_port,
                       "timeout_s": timeout_s})


def _relay_tls():
    """:mod:`relay_tls`, imported by a worker with a TLS port only: ``ssl`` costs a plain worker ~7 MB."""
    if __package__:
        from broker_core.net import relay_tls
    else:  # run as a script: its folder is on sys.path
        import relay_tls  # type: ignore[no-redef]
    return relay_tls


class _TlsClients:
    """The TLS connections being served: one thread each (see :mod:`relay_tls`)."""

    def __init__(self, settings: dict, control: socket.socket, lock: threading.Lock) -> None:
        relay_tls = self._tls = _relay_tls()
        self._context = relay_tls.server_context(settings["cert"], settings["key"], settings["trust"],
                                                 settings["require"], alpn=("h2",))
        self._grpc = ("127.0.0.1", int(settings["grpc_port"]))
        self._timeout_s = float(settings["timeout_s"])
        self._control = control
        self._lock = lock
        self.sockets: dict[int, list[socket.socket]] = {}
        self.acks: dict[int, threading.Event] = {}

    def start(self, relay_id: int, client: socket.socket) -> None:
        with self._lock:
            self.sockets[relay_id] = [client]
            self.acks[relay_id] = threading.Event()
        threading.Thread(target=self._serve, args=(relay_id, client), daemon=True).start()

    def acked(self, relay_id: int) -> None:
        with self._lock:
            ack = self.acks.get(relay_id)
        if ack is not None:
            ack.set()

    def _send(self, message: bytes, fds: list[int] | None = None) -> None:
        try:
            if fds:
                socket.send_fds(self._control, [message], fds)
            else:
                self._control.send(message)
        except OSError:
            pass  # the broker is gone

    def _serve(self, relay_id: int, client: socket.socket) -> None:
        tag = RELAY_ID.pack(relay_id)
        other: socket.socket | None = None
        try:
            session = self._tls.TlsSession(self._context, client)
            try:
                subject, first = session.handshake(self._timeout_s)
            except self._tls.HandshakeFailed as exc:
                self._send(b"F" + tag + (b"~" if exc.quiet else b"") + str(exc).encode()[:1024])
                return
            if first[:1] == b"P":  # HTTP/2's preface: gRPC
                other = socket.create_connection(self._grpc)
                other.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                host, port = other.getsockname()[:2]
                self._register(relay_id, other)
                self._send(b"G" + tag + json.dumps({"peer": f"ipv4:{host}:{port}", "subject": subject}).encode())
                if not self.acks[relay_id].wait(ACK_TIMEOUT_S):
                    return
            else:
                other, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
                self._register(relay_id, other)
                self._send(b"B" + tag + json.dumps({"subject": subject}).encode(), [theirs.fileno()])
                theirs.close()
            client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._tls.pump(session, other, first)
        except OSError:
            pass
        finally:
            for sock in (client, other):
                if sock is not None:
                    sock.close()
            with self._lock:
                self.sockets.pop(relay_id, None)
                self.acks.pop(relay_id, None)
            self._send(b"D" + tag)

    def _register(self, relay_id: int, sock: socket.socket) -> None:
        with self._lock:
            self.sockets.setdefault(relay_id, []).append(sock)

    def shutdown(self) -> None:
        with self._lock:
            remaining = [sock for socks in self.sockets.values() for sock in socks]
            for ack in self.acks.values():
                ack.set()
        for sock in remaining:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def serve(control: socket.socket, tls: dict | None = None) -> None:
    relays: dict[int, _Relay] = {}
    lock = threading.Lock()
    tls_clients = _TlsClients(tls, control, lock) if tls else None

    def done(relay: _Relay) -> None:
        with lock:
            relays.pop(relay.relay_id, None)
        _tell(control, lock, b"D" + RELAY_ID.pack(relay.relay_id))

    while True:
        try:
            message, fds, _flags, _addr = socket.recv_fds(control, CONTROL_BYTES, 2)
        except OSError:
            message, fds = b"", []
        if not message:
            break
        kind = message[:1]
        if len(message) != 1 + RELAY_ID.size or (kind, len(fds)) not in ((b"R", 2), (b"T", 1), (b"K", 0)) \
                or (kind != b"R" and tls_clients is None):
            for fd in fds:
                os.close(fd)
            if kind in (b"R", b"T") and len(message) == 1 + RELAY_ID.size:
                # its sockets did not arrive (this process is out of file descriptors): the broker must not
                # wait for this relay's end forever
                _tell(control, lock, b"D" + message[1:])
            continue
        relay_id = RELAY_ID.unpack_from(message, 1)[0]
        if kind == b"K":
            tls_clients.acked(relay_id)  # type: ignore[union-attr]
            continue
        if kind == b"T":
            tls_clients.start(relay_id, socket.socket(fileno=fds[0]))  # type: ignore[union-attr]
            continue
        client, upstream = (socket.socket(fileno=fd) for fd in fds)
        client.setblocking(True)
        upstream.setblocking(True)
        relay = _Relay(relay_id, client, upstream, done)
        with lock:
            relays[relay_id] = relay
        relay.start()
    with lock:
        remaining = list(relays.values())
    for relay in remaining:
        relay.shutdown()
    if tls_clients is not None:
        tls_clients.shutdown()


def _tell(control: socket.socket, lock: threading.Lock, message: bytes) -> None:
    with lock:
        try:
            control.send(message)
        except OSError:
            pass  # the broker is gone


def main(argv: list[str]) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the broker decides when relaying ends
    control = socket.socket(fileno=int(argv[1]))
    serve(control, json.loads(argv[2]) if len(argv) > 2 else None)
    os._exit(0)


if __name__ == "__main__":
    main(sys.argv)
