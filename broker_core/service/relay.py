"""The broker's side of the relay process (:mod:`broker_core.service.relay_worker`): hands it connections
to relay, and forgets each one's entry in the :class:`~broker_core.service.peers.PeerMap` once the worker
says it ended. Runs on the broker's event loop."""
from __future__ import annotations

import asyncio
import itertools
import logging
import socket
import subprocess
import sys
from pathlib import Path

from broker_core.service import relay_worker
from broker_core.service.peers import PeerMap

log = logging.getLogger(__name__)

WORKER = Path(relay_worker.__file__)
STOP_TIMEOUT_S = 10.0


class RelayProcess:
    def __init__(self, peers: PeerMap) -> None:
        self._peers = peers
        self._control: socket.socket | None = None
        self._proc: subprocess.Popen | None = None
        self._ids = itertools.count(1)
        self._relays: dict[int, str] = {}  # relay id -> its PeerMap key
        self._loop: asyncio.AbstractEventLoop | None = None

    def start(self) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self._proc = subprocess.Popen([sys.executable, str(WORKER), str(theirs.fileno())],
                                          pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL,
                                          stdout=subprocess.DEVNULL)
        except OSError:
            ours.close()
            raise
        finally:
            theirs.close()
        ours.setblocking(False)
        self._control = ours
        self._loop = asyncio.get_running_loop()
        self._loop.add_reader(ours.fileno(), self._read)

    def relay(self, client: socket.socket, upstream: socket.socket, relay_peer: str) -> bool:
        """Hand both sockets to the worker (the broker's copies are closed); False when it is gone."""
        control = self._control
        relay_id = next(self._ids)
        try:
            if control is None:
                return False
            socket.send_fds(control, [b"R" + relay_worker.RELAY_ID.pack(relay_id)],
                            [client.fileno(), upstream.fileno()])
            self._relays[relay_id] = relay_peer
            return True
        except OSError as exc:
            log.error("event=relay_handover_failed error=%r", exc)
            return False
        finally:
            client.close()
            upstream.close()

    def _read(self) -> None:
        control = self._control
        while control is not None:
            try:
                message = control.recv(64)
            except BlockingIOError:
                return
            except OSError:
                message = b""
            if not message:
                log.error("event=relay_worker_gone exit_code=%s",
                          self._proc.poll() if self._proc is not None else None)
                self._close_control()
                return
            if message[:1] == b"D" and len(message) == 1 + relay_worker.RELAY_ID.size:
                relay_peer = self._relays.pop(relay_worker.RELAY_ID.unpack_from(message, 1)[0], None)
                if relay_peer is not None:
                    self._peers.remove(relay_peer)

    def _close_control(self) -> None:
        if self._control is not None:
            if self._loop is not None:
                self._loop.remove_reader(self._control.fileno())
            self._control.close()
            self._control = None
        for relay_peer in self._relays.values():
            self._peers.remove(relay_peer)
        self._relays.clear()

    async def stop(self) -> None:
        """End every relayed connection and the worker."""
        self._close_control()  # the worker sees the end of its control socket
        proc, self._proc = self._proc, None
        if proc is not None:
            try:
                await asyncio.get_running_loop().run_in_executor(None, proc.wait, STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
