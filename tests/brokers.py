"""Helpers to run real brokers in tests: a ``pulsarlike broker`` process on port 0 (``broker_process``),
and an in-process broker per test module with a client and an admin on it (``broker``, ``client``, ``admin``)."""
from __future__ import annotations

import os
import random
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

LISTENING = "pulsarlike broker listening on "
EVENT_LOOP = os.environ.get("PULSARLIKE_TEST_EVENT_LOOP", "")
"""``PULSARLIKE_TEST_EVENT_LOOP=uvloop`` runs the tests' brokers on that event loop (``eventLoop``): the
in-process ones (the key's default, for this test run) and the processes (``--set``); unset, the default."""
if EVENT_LOOP:
    from broker_core import config as _config

    _config._DEFAULTS["eventLoop"] = EVENT_LOOP


class DrainedStream:
    """A child's text pipe read on a thread from the start, so the child never blocks on a full pipe (a broker
    logging more than the pipe's 64 KiB while a test never reads its stderr stalled). Reads like the pipe:
    ``read()`` waits for the end and returns everything; iterating yields lines as they come."""

    def __init__(self, pipe) -> None:
        self._pipe = pipe
        self._lines: list[str] = []
        self._done = False
        self._changed = threading.Condition()
        self._thread = threading.Thread(target=self._drain, name="broker-stderr", daemon=True)
        self._thread.start()

    def _drain(self) -> None:
        try:
            for line in self._pipe:
                with self._changed:
                    self._lines.append(line)
                    self._changed.notify_all()
        except (OSError, ValueError):  # closed under us
            pass
        with self._changed:
            self._done = True
            self._changed.notify_all()

    def read(self) -> str:
        self._thread.join(timeout=30)
        with self._changed:
            return "".join(self._lines)

    def __iter__(self):
        i = 0
        while True:
            with self._changed:
                while i >= len(self._lines) and not self._done:
                    self._changed.wait()
                if i >= len(self._lines):
                    return
                line = self._lines[i]
            i += 1
            yield line

    @property
    def closed(self) -> bool:
        return self._pipe.closed

    def close(self) -> None:
        self._pipe.close()


class BrokerProcess:
    """``pulsarlike broker --port 0`` as a child process; ``address`` is read from its first line.
    :meth:`restart` starts it again on the same port (clients reconnect to the same URL)."""

    def __init__(self, data_dir: Path, *args: str, env: dict[str, str] | None = None, port: int = 0) -> None:
        self.data_dir = Path(data_dir)
        self.args = args
        self.env = {**os.environ, **(env or {})}
        self.port = port
        self.proc: subprocess.Popen | None = None
        self.address = ""

    def start(self, timeout: float = 30.0) -> "BrokerProcess":
        # A fixed port (a restart) must not fix the metrics port too (8080 by default): any free one.
        metrics = [] if self.port == 0 or any("webServicePort" in a for a in self.args) \
            else ["--set", "webServicePort=0"]
        if EVENT_LOOP and not any("eventLoop" in a for a in self.args):
            metrics += ["--set", f"eventLoop={EVENT_LOOP}"]
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "broker_core.cli", "broker", "--data-dir", str(self.data_dir), "--port",
             str(self.port), *metrics, *self.args],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=self.env)
        self.proc.stderr = DrainedStream(self.proc.stderr)  # type: ignore[assignment]
        line = self.proc.stdout.readline()  # the broker prints this first, flushed, once bound
        if not line.startswith(LISTENING):
            self.proc.kill()
            self.proc.wait(30)
            err = self.proc.stderr.read()
            raise RuntimeError(f"broker did not start: {line!r}\n{err}")
        self.address = line[len(LISTENING):].strip()
        self.port = int(self.address.rsplit(":", 1)[1])
        return self

    def restart(self) -> "BrokerProcess":
        """Start again, on the port it had (after :meth:`kill` or :meth:`terminate`)."""
        self._close_pipes()
        return self.start()

    @property
    def service_url(self) -> str:
        return f"pulsar://{self.address}"

    def terminate(self, timeout: float = 30.0) -> int:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout)

    def kill(self) -> int:
        assert self.proc is not None
        self.proc.kill()
        return self.proc.wait(30)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(30)
        self._close_pipes()

    def _close_pipes(self) -> None:
        if self.proc is not None:
            for stream in (self.proc.stdout, self.proc.stderr):
                if stream:
                    stream.close()


def restartable_port() -> int:
    """A free port below the kernel's ephemeral range: a broker restarted on it does not find it taken by
    some client's outgoing connection meanwhile (as a port 0 broker's may be)."""
    low = 32768
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as ranges:
            low = int(ranges.read().split()[0])
    except (OSError, ValueError, IndexError):
        pass
    for port in random.sample(range(max(1024, low - 12000), low), 200):
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError("no free port below the ephemeral range")


@pytest.fixture
def broker_process(tmp_path):
    """Factory: ``broker_process(*args, data_dir=None, env=None, restartable=False)`` starts a broker process
    (``restartable``: on a port :meth:`BrokerProcess.restart` can count on); all are killed at the end of the
    test."""
    started: list[BrokerProcess] = []

    def start(*args: str, data_dir: Path | None = None, env: dict[str, str] | None = None,
              restartable: bool = False) -> BrokerProcess:
        proc = BrokerProcess(data_dir or tmp_path / "broker", *args, env=env,
                             port=restartable_port() if restartable else 0).start()
        started.append(proc)
        return proc

    yield start
    for proc in started:
        proc.stop()


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    """A real in-process broker on port 0, one per test module."""
    from broker_core import Broker

    with Broker(data_dir=tmp_path_factory.mktemp("broker"), port=0) as running:
        yield running


@pytest.fixture
def client(broker):
    from connector import Client

    c = Client(broker.service_url)
    yield c
    c.close()


@pytest.fixture
def admin(broker):
    from connector import Admin

    a = Admin(broker.service_url)
    yield a
    a.close()
