"""What an attack costs the broker's event loop, as a client of the broker's own port sees it: a second client
sends Pulsar's PING over one binary connection every 20 ms and keeps the worst round trip to its PONG (the
probe of ``tests/integration/test_pulsar_request_costs.py``, kept up for the whole attack).

It runs in a process of its own, so the test's threads (senders of bodies, trickling sockets) never hold up
the probe: what it measures is the broker. Example::

    with LoopProbe(proc.address) as probe:
        attack()
    assert probe.worst_ms < 100, probe
"""
from __future__ import annotations

import subprocess
import sys
import time

INTERVAL_S = 0.02


class LoopProbe:
    """Pings ``address`` every ``interval_s`` from a child process while the block runs; then
    :attr:`worst_ms` (the worst round trip) and :attr:`pings` (how many were answered)."""

    def __init__(self, address: str, interval_s: float = INTERVAL_S, token: str = "") -> None:
        """``token``: the probe's credentials when the broker wants them."""
        self.address = address
        self.token = token
        self.interval_s = interval_s
        self.worst_ms = float("nan")
        self.pings = 0
        self._child: subprocess.Popen | None = None

    def __enter__(self) -> "LoopProbe":
        self._child = subprocess.Popen([sys.executable, "-m", "tests.loop_stalls", self.address, str(self.interval_s),
                                        self.token],
                                       stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        ready = self._child.stdout.readline()  # connected, first PONG received
        if ready.strip() != "ready":
            self._child.kill()
            raise RuntimeError(f"the probe did not start: {ready!r}")
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._child is not None
        self._child.stdin.close()  # the child's signal to stop and report
        report = self._child.stdout.readline().split()
        self._child.wait(30)
        self._child.stdout.close()
        if len(report) == 2:
            self.worst_ms, self.pings = float(report[0]), int(report[1])

    def __repr__(self) -> str:
        return f"LoopProbe(worst round trip {self.worst_ms:.1f} ms over {self.pings} pings)"


def _probe(address: str, interval_s: float, token: str) -> None:
    import threading

    from broker_core.protocol import pulsar_commands_pb2 as cmd
    from tests.pulsar_wire import RawPulsar, frame

    ping = frame(cmd.BaseCommand(type=cmd.BaseCommand.PING, ping=cmd.CommandPing()))
    stop = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
    worst, count = 0.0, 0
    with RawPulsar(address, timeout=60) as raw:
        raw.connect(**({"auth_method_name": "token", "auth_data": token.encode()} if token else {}))
        print("ready", flush=True)
        while not stop.is_set():
            started = time.monotonic()
            raw.send(ping)
            raw.expect(cmd.BaseCommand.PONG)
            worst = max(worst, time.monotonic() - started)
            count += 1
            stop.wait(interval_s)
    print(f"{worst * 1000:.3f} {count}", flush=True)


if __name__ == "__main__":
    _probe(sys.argv[1], float(sys.argv[2]), sys.argv[3] if len(sys.argv) > 3 else "")
