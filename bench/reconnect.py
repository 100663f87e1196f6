"""How long clients take to come back after a broker restart (issue 12), measured, never asserted.

Run it with ``python bench/reconnect.py [--restarts 20] [--signal kill|term] [--json]``.

A broker process (``journalSyncMode=group``, the default) runs on a fixed port with one producer and one
consumer on a topic. Each round: the broker is stopped (SIGKILL by default) and started again on the same
port; a ``send()`` is issued as soon as the old process is gone, and the consumer waits for that message.
Reported per round, and as p50/p90 over the rounds:

- **ready -> sent**: from the new broker's "listening" line to the producer's ``send()`` returning -- the
  client's own share of the outage (its backoff, re-registering, re-sending);
- **ready -> received**: the same, to the consumer's ``receive()`` returning the message;
- **stop -> sent**: from the stop signal to the send returning: what an application sees (includes the
  broker's start-up).
"""
from __future__ import annotations

import argparse
import json
import logging
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from connector import Client, InitialPosition  # noqa: E402

LISTENING = "pulsarlike broker listening on "


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_broker(data_dir: str, port: int) -> tuple[subprocess.Popen, float]:
    """The broker process and the ``time.perf_counter()`` at which it said it listens."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "broker_core.cli", "broker", "--data-dir", data_dir, "--port", str(port),
         "--log-level", "WARNING", "--set", "webServicePort=0"],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = proc.stdout.readline()
    ready = time.perf_counter()
    if not line.startswith(LISTENING):
        proc.kill()
        raise SystemExit(f"broker did not start: {line!r}")
    return proc, ready


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--restarts", type=int, default=20)
    parser.add_argument("--signal", choices=["kill", "term"], default="kill")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    logging.getLogger("connector").setLevel(logging.ERROR)  # one reconnection line per stream and round
    sig = signal.SIGKILL if args.signal == "kill" else signal.SIGTERM
    data_dir = tempfile.mkdtemp(prefix="pulsarlike-reconnect-")
    port = free_port()
    proc, _ = start_broker(data_dir, port)
    client = Client(f"pulsar://127.0.0.1:{port}")
    producer = client.create_producer("reconnect", send_timeout_millis=60_000)
    consumer = client.subscribe("reconnect", "bench", initial_position=InitialPosition.Earliest)
    producer.send(b"warm-up")
    consumer.acknowledge(consumer.receive(10_000))
    rounds = []
    try:
        for i in range(args.restarts):
            stopped = time.perf_counter()
            proc.send_signal(sig)
            proc.wait(30)
            result: dict[str, float] = {}

            def send(i: int = i) -> None:
                producer.send(b"after-%d" % i)
                result["sent"] = time.perf_counter()

            sender = threading.Thread(target=send)
            sender.start()  # the producer is (or will find itself) disconnected: the send waits for it
            proc, ready = start_broker(data_dir, port)
            sender.join(60)
            msg = consumer.receive(60_000)
            received = time.perf_counter()
            consumer.acknowledge(msg)
            rounds.append({"ready_to_sent_ms": (result["sent"] - ready) * 1000,
                           "ready_to_received_ms": (received - ready) * 1000,
                           "stop_to_sent_ms": (result["sent"] - stopped) * 1000})
            print(f"round {i + 1:2d}: ready->sent {rounds[-1]['ready_to_sent_ms']:7.1f} ms  ready->received "
                  f"{rounds[-1]['ready_to_received_ms']:7.1f} ms  stop->sent {rounds[-1]['stop_to_sent_ms']:7.1f} ms",
                  flush=True)
    finally:
        client.close()
        proc.kill()
        proc.wait()
    summary = {key: {"p50": statistics.median(r[key] for r in rounds),
                     "p90": percentile([r[key] for r in rounds], 0.9)} for key in rounds[0]}
    for key, figures in summary.items():
        print(f"{key:22s} p50 {figures['p50']:7.1f} ms   p90 {figures['p90']:7.1f} ms")
    if args.json:
        print(json.dumps({"restarts": len(rounds), "signal": args.signal, **summary}))


if __name__ == "__main__":
    main()
