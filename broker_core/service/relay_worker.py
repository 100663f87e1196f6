"""The relay process: moves the bytes of relayed gRPC connections between the client and the broker's
private gRPC port, in the kernel, away from the broker's interpreter.

Run as a script by :class:`broker_core.service.relay.RelayProcess` (``python relay_worker.py <fd>``, so no
package is imported): ``<fd>`` is its end of a ``SOCK_SEQPACKET`` control socket. Messages:

- broker -> worker: ``R`` + an 8-byte relay id, with two file descriptors attached (the client's socket,
  the socket connected to the gRPC port): relay them, one thread per direction, each ``os.splice`` -ing
  through its own pipe;
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
import os
import signal
import socket
import struct
import sys
import threading

RELAY_ID = struct.Struct(">Q")
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
        r, w = os.pipe()
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


def serve(control: socket.socket) -> None:
    relays: dict[int, _Relay] = {}
    lock = threading.Lock()

    def done(relay: _Relay) -> None:
        with lock:
            relays.pop(relay.relay_id, None)
            try:
                control.send(b"D" + RELAY_ID.pack(relay.relay_id))
            except OSError:
                pass  # the broker is gone

    while True:
        try:
            message, fds, _flags, _addr = socket.recv_fds(control, 64, 2)
        except OSError:
            message, fds = b"", []
        if not message:
            break
        if message[:1] != b"R" or len(fds) != 2 or len(message) != 1 + RELAY_ID.size:
            for fd in fds:
                os.close(fd)
            continue
        relay_id = RELAY_ID.unpack_from(message, 1)[0]
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


def main(argv: list[str]) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the broker decides when relaying ends
    control = socket.socket(fileno=int(argv[1]))
    serve(control)
    os._exit(0)


if __name__ == "__main__":
    main(sys.argv)
