"""pulsar-lite (a Rust Pulsar-compatible embedded broker, the ``pulsar-lite`` dev package) as a test broker:
the ``pulsar_lite_broker`` module fixture runs its binary on a free port with a fresh db folder, so tests can
check that our client speaks to a broker that is not ours (issue 23).

Import the fixture into a conftest (``from tests.pulsar_lite import pulsar_lite_broker  # noqa: F401``); a
test that uses it is skipped, with the reason, only when the ``pulsar_lite`` package is not installed.
"""
from __future__ import annotations

import os
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.pulsar_wire import RawPulsar

START_TIMEOUT_S = 30.0
BIND_ATTEMPTS = 5
"""A free port is picked by binding port 0 and releasing it; another process may take it before pulsar-lite
binds it (the binary then exits): start again on another port, so many times."""


@dataclass
class PulsarLite:
    """A running pulsar-lite: ``service_url`` is ``pulsar://127.0.0.1:PORT``."""
    proc: subprocess.Popen
    port: int
    db_path: Path
    log_path: Path

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def service_url(self) -> str:
        return f"pulsar://{self.address}"

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(30)


def binary() -> str:
    """The pulsar-lite binary shipped in its wheel; skips the test when the package is not installed."""
    try:
        from pulsar_lite.binary_finder import find_pulsar_lite_binary
    except ImportError as exc:
        pytest.skip(f"pulsar-lite is not installed (the dev extra): {exc}")
    return str(find_pulsar_lite_binary())


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _connected(port: int) -> bool:
    """One CONNECT on a new connection answered CONNECTED (refused, closed or another answer: False)."""
    try:
        with RawPulsar(f"127.0.0.1:{port}", timeout=2.0) as raw:
            raw.connect()  # asserts the answer is CONNECTED
            return True
    except (OSError, ConnectionError, AssertionError):
        return False


def start_pulsar_lite(work_dir: Path, timeout_s: float = START_TIMEOUT_S) -> PulsarLite:
    """pulsar-lite on a free loopback port with its db under ``work_dir``, once it answers a Pulsar CONNECT."""
    exe = binary()
    work_dir.mkdir(parents=True, exist_ok=True)
    config = work_dir / "pulsar-lite.toml"
    # Its metrics endpoint defaults to the fixed 0.0.0.0:8080, which may be taken: any free loopback port.
    config.write_text('[metrics]\nenabled = true\naddr = "127.0.0.1:0"\n')
    failures = []
    for attempt in range(BIND_ATTEMPTS):
        port = free_port()
        log_path = work_dir / f"pulsar-lite-{attempt}.log"
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(
                [exe, "--config", str(config), "--addr", f"127.0.0.1:{port}",
                 "--db-path", str(work_dir / "db"), "--log-level", "warn"],
                cwd=work_dir, stdout=log, stderr=subprocess.STDOUT, env=dict(os.environ))
        lite = PulsarLite(proc, port, work_dir / "db", log_path)
        deadline = time.monotonic() + timeout_s
        while proc.poll() is None and time.monotonic() < deadline:
            # still running after the answer: the answer was its own, not another listener's on that port
            if _connected(port) and proc.poll() is None:
                return lite
            time.sleep(0.01)
        lite.stop()
        failures.append(f"port {port}: exit {proc.returncode}: {log_path.read_text(errors='replace')[-500:]}")
        if time.monotonic() >= deadline:
            break  # not a bind race: it did not answer in time
    raise RuntimeError("pulsar-lite did not start: " + " | ".join(failures))


@pytest.fixture(scope="module")
def pulsar_lite_broker(tmp_path_factory):
    """A pulsar-lite per test module (``.service_url``, ``.address``), killed after the module."""
    lite = start_pulsar_lite(tmp_path_factory.mktemp("pulsar-lite"))
    yield lite
    lite.stop()
