"""The broker's side of the relay process (:mod:`broker_core.net.relay_worker`): hands it connections
to relay, and forgets each one's entry in the :class:`~broker_core.net.peers.PeerMap` once the worker
says it ended. TLS clients are handed over whole: the worker terminates TLS and tells back what it found --
a gRPC connection to register in the PeerMap (with the client certificate's CN) before it relays a byte, or
a socket to serve Pulsar's binary protocol on, or a failed handshake to log (one line per interval with a
count: anyone can fail handshakes by the thousand). Each connection's place in the listener's budget
(:class:`~broker_core.net.connection_budget.Admitted`) is released when the worker says it ended. Runs on
the broker's event loop."""
from __future__ import annotations

import asyncio
import itertools
import json
import logging
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Callable

from broker_core.log_limits import LogLimiter
from broker_core.net import relay_worker
from broker_core.net.connection_budget import Admitted
from broker_core.net.peers import ClientIdentity, PeerMap

log = logging.getLogger(__name__)

WORKER = Path(relay_worker.__file__)
STOP_TIMEOUT_S = 10.0


BinaryServer = Callable[[socket.socket, ClientIdentity, "Admitted | None"], None]


class RelayProcess:
    def __init__(self, peers: PeerMap, tls: str | None = None, binary: BinaryServer | None = None) -> None:
        """``tls``: the worker's TLS settings (:func:`~broker_core.net.relay_worker.tls_settings`), None
        without a TLS port; ``binary`` serves a decrypted Pulsar binary protocol connection."""
        self._peers = peers
        self._tls = tls
        self._binary = binary
        self._control: socket.socket | None = None
        self._proc: subprocess.Popen | None = None
        self._ids = itertools.count(1)
        self._relays: dict[int, str] = {}  # relay id -> its PeerMap key
        self._tls_clients: dict[int, str] = {}  # relay id -> the TLS client's address
        self._admitted: dict[int, Admitted] = {}  # relay id -> its client's place in the connection budget
        self._handshake_failures = LogLimiter(log)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._spawned = False

    def start(self) -> None:
        """Ready to relay; the worker itself is started by the first connection handed over, so a broker
        that only ever serves Pulsar's binary protocol on its plain port never pays for a second interpreter
        (about 17 MB resident, and a core busy starting it while the broker is starting)."""
        self._loop = asyncio.get_running_loop()

    def _spawn(self) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        args = [self._tls] if self._tls else []
        try:
            self._proc = subprocess.Popen([sys.executable, str(WORKER), str(theirs.fileno()), *args],
                                          pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL,
                                          stdout=subprocess.DEVNULL)
        except OSError:
            ours.close()
            raise
        finally:
            theirs.close()
        ours.setblocking(False)
        self._control = ours
        assert self._loop is not None
        self._loop.add_reader(ours.fileno(), self._read)
        log.info("event=relay_worker_started pid=%d", self._proc.pid)

    def relay(self, client: socket.socket, upstream: socket.socket, relay_peer: str,
              admitted: Admitted | None = None) -> bool:
        """Hand both sockets to the worker (the broker's copies are closed) and release ``admitted`` once
        the relay ended; False when the worker is gone (``admitted`` is released now)."""
        relay_id = self._hand_over(b"R", client, upstream)
        if relay_id is None:
            if admitted is not None:
                admitted.release()
            return False
        self._relays[relay_id] = relay_peer
        if admitted is not None:
            self._admitted[relay_id] = admitted
        return True

    def relay_tls(self, client: socket.socket, address: str, admitted: Admitted | None = None) -> bool:
        """Hand a TLS port's client to the worker (the broker's copy is closed), as :meth:`relay`."""
        relay_id = self._hand_over(b"T", client)
        if relay_id is None:
            if admitted is not None:
                admitted.release()
            return False
        self._tls_clients[relay_id] = address
        if admitted is not None:
            self._admitted[relay_id] = admitted
        return True

    def _hand_over(self, kind: bytes, *sockets: socket.socket) -> int | None:
        """Send ``kind`` + a new relay id with the sockets to the worker and close the broker's copies;
        the relay id, or None when the worker is gone."""
        relay_id = next(self._ids)
        try:
            if not self._spawned and self._loop is not None:
                self._spawned = True  # once: a worker that died is reported, not restarted
                self._spawn()
            control = self._control
            if control is None:
                return None
            socket.send_fds(control, [kind + relay_worker.RELAY_ID.pack(relay_id)], [s.fileno() for s in sockets])
            return relay_id
        except OSError as exc:
            log.error("event=relay_handover_failed error=%r", exc)
            return None
        finally:
            for s in sockets:
                s.close()

    def _read(self) -> None:
        control = self._control
        id_size = relay_worker.RELAY_ID.size
        while control is not None:
            fds: list[int] = []
            try:
                message, fds, _flags, _addr = socket.recv_fds(control, relay_worker.CONTROL_BYTES, 1)
            except BlockingIOError:
                return
            except OSError:
                message = b""
            if not message:
                log.error("event=relay_worker_gone exit_code=%s",
                          self._proc.poll() if self._proc is not None else None)
                self._close_control()
                return
            kind = message[:1]
            if len(message) < 1 + id_size:
                continue
            relay_id = relay_worker.RELAY_ID.unpack_from(message, 1)[0]
            body = message[1 + id_size:]
            if kind == b"D" and not body:
                self._tls_clients.pop(relay_id, None)
                admitted = self._admitted.pop(relay_id, None)
                if admitted is not None:
                    admitted.release()
                relay_peer = self._relays.pop(relay_id, None)
                if relay_peer is not None:
                    self._peers.remove(relay_peer)
            elif kind in (b"G", b"B", b"F"):
                self._tls_report(kind, relay_id, body, fds)
                fds = []
            for fd in fds:  # attached where none belongs
                os.close(fd)

    def _tls_report(self, kind: bytes, relay_id: int, body: bytes, fds: list[int]) -> None:
        address = self._tls_clients.get(relay_id, "unknown")
        if kind == b"F":
            self._tls_clients.pop(relay_id, None)
            quiet = body[:1] == b"~"
            reason = body[1 if quiet else 0:].decode("utf-8", "replace")
            if quiet:
                log.debug("event=tls_handshake_failed peer=%s reason=%s", address, reason)
            else:
                self._handshake_failures.warning("tls_handshake_failed", "event=tls_handshake_failed peer=%s "
                                                 "reason=%s", address, reason)
            return
        try:
            found = json.loads(body)
        except ValueError:
            found = {}
        identity = ClientIdentity(address, found.get("subject") or None)
        if kind == b"G":
            relay_peer = str(found.get("peer", ""))
            self._peers.add(relay_peer, identity)  # before the worker relays a byte to gRPC
            self._relays[relay_id] = relay_peer
            if self._control is not None:
                try:
                    self._control.send(b"K" + relay_worker.RELAY_ID.pack(relay_id))
                except OSError:
                    pass
        elif fds and self._binary is not None:
            self._binary(socket.socket(fileno=fds[0]), identity, self._admitted.get(relay_id))
        else:
            for fd in fds:
                os.close(fd)

    def _close_control(self) -> None:
        if self._control is not None:
            if self._loop is not None:
                self._loop.remove_reader(self._control.fileno())
            self._control.close()
            self._control = None
        for relay_peer in self._relays.values():
            self._peers.remove(relay_peer)
        self._relays.clear()
        for admitted in self._admitted.values():
            admitted.release()
        self._admitted.clear()

    async def stop(self) -> None:
        """End every relayed connection and the worker."""
        self._spawned = True  # no worker is started by a late hand-over
        self._close_control()  # the worker sees the end of its control socket
        proc, self._proc = self._proc, None
        if proc is not None:
            try:
                await asyncio.get_running_loop().run_in_executor(None, proc.wait, STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
