"""Watching a ``pulsarlike broker`` process while a test attacks it: its stderr read on a thread (so the
pipe never fills), its memory from ``/proc``, the gRPC health check, a round trip with the real client in a
namespace the attack never names, and snapshots of the files around the data dir.

A check that fails while fuzzing is recorded in :attr:`BrokerWatch.problems` with the requests that came
just before it (the fuzz loop stops; the test asserts there are none), rather than raised inside whatever
example happened to run: the example that caused it may be an earlier one.
"""
from __future__ import annotations

import hashlib
import os
import re
import threading
import time
import uuid
from collections import deque
from pathlib import Path
from urllib.parse import unquote

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from tests.brokers import BrokerProcess

LOG_PROBLEMS = ("Traceback", "level=ERROR", "level=CRITICAL")
"""A stderr line holding one of these is a broker bug under fuzzing: garbage from a client is a WARNING."""


_RUN = re.compile(r"(.)\1{15,}", re.DOTALL)


def compact(text: str, limit: int = 400) -> str:
    """``text`` for a report: runs of one character shortened to ``x*N``, the whole cut to ``limit``."""
    text = _RUN.sub(lambda m: f"{m.group(1)}*{len(m.group(0))}", text)
    return text if len(text) <= limit else text[:limit] + "..."


def memory_mb(pid: int, field: str = "VmRSS") -> float:
    """``VmRSS`` (resident now) or ``VmHWM`` (its peak) of a process, in MiB."""
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    raise AssertionError(f"no {field} in /proc/{pid}/status")


def file_tree(root: Path, skip: Path) -> dict[str, str]:
    """Every path under ``root`` but inside ``skip``: ``relative path -> sha256 | "dir" | "link:<target>"``."""
    tree: dict[str, str] = {}
    for folder, dirs, files in os.walk(root):
        here = Path(folder)
        dirs[:] = [d for d in dirs if here / d != skip]
        for name in dirs + files:
            path = here / name
            relative = str(path.relative_to(root))
            if path.is_symlink():
                tree[relative] = f"link:{os.readlink(path)}"
            elif path.is_dir():
                tree[relative] = "dir"
            elif path.is_file():
                tree[relative] = hashlib.sha256(path.read_bytes()).hexdigest()
    return tree


def top_level(folder: Path) -> set[str]:
    try:
        return set(os.listdir(folder))
    except OSError:
        return set()


def ours(entries: set[str], sent_names: set[str]) -> set[str]:
    """The entries whose name is (part of) a name the fuzzer sent, as sent or percent-decoded: in a folder
    shared with other processes (``/tmp``, the working folder), only those can be the broker's doing."""
    sent = [*sent_names, *(unquote(n) for n in sent_names)]
    return {e for e in entries if any(e in name for name in sent)}


class BrokerWatch:
    """``proc``'s health, memory, log and surroundings. ``parent`` holds the data dir (``parent/data``)
    and the broker's ``TMPDIR`` (``parent/tmp``): nothing but the data dir may change under it."""

    def __init__(self, proc: BrokerProcess, parent: Path, rss_limit_mb: float) -> None:
        self.proc = proc
        self.parent = parent
        self.rss_limit_mb = rss_limit_mb
        self.problems: list[str] = []
        self.findings: list[str] = []
        """Failing examples of a run in hunting mode (see test_fuzz_wire.EXPLORE)."""
        self.recent: deque[str] = deque(maxlen=3)
        self._lines: list[str] = []
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read_stderr, name="broker-stderr", daemon=True)
        self._reader.start()
        self._channel = grpc.insecure_channel(proc.address)
        self._last_check = time.monotonic()
        self._log_checked = 0
        self.check_namespace = f"fz-check-{uuid.uuid4().hex[:8]}/rt"
        """Where round trips go: a tenant no fuzzed request can name, so no fuzzed delete reaches it."""
        self._trips = 0

    def _read_stderr(self) -> None:
        assert self.proc.proc is not None and self.proc.proc.stderr is not None
        for line in self.proc.proc.stderr:
            with self._lock:
                self._lines.append(line.rstrip("\n"))

    # ------------------------------------------------------------------------------------------------
    def log_lines(self, since: int = 0) -> list[str]:
        with self._lock:
            return self._lines[since:]

    def log_mark(self) -> int:
        with self._lock:
            return len(self._lines)

    def log_problems(self, since: int = 0) -> list[str]:
        return [line for line in self.log_lines(since) if any(p in line for p in LOG_PROBLEMS)]

    def alive(self) -> bool:
        return self.proc.proc is not None and self.proc.proc.poll() is None

    def rss_mb(self, field: str = "VmRSS") -> float:
        assert self.proc.proc is not None
        return memory_mb(self.proc.proc.pid, field)

    def health(self) -> str:
        reply = health_pb2_grpc.HealthStub(self._channel).Check(health_pb2.HealthCheckRequest(service=""),
                                                                 timeout=10)
        return health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)

    def setup_check_namespace(self) -> None:
        from connector import Admin

        tenant, _ = self.check_namespace.split("/")
        with Admin(self.proc.service_url) as admin:
            admin.create_tenant(tenant)
            admin.create_namespace(self.check_namespace)

    def round_trip(self) -> bytes:
        """Produce, subscribe, receive and acknowledge one message on a fresh topic with the real client."""
        from connector import Client

        self._trips += 1
        topic = f"persistent://{self.check_namespace}/trip-{self._trips}"
        payload = f"round trip {self._trips}".encode()
        with Client(self.proc.service_url, operation_timeout_seconds=10) as client:
            consumer = client.subscribe(topic, "check")
            client.create_producer(topic, send_timeout_millis=10_000).send(payload)
            message = consumer.receive(timeout_millis=10_000)
            consumer.acknowledge(message)
            assert message.data() == payload
            return message.data()

    # ------------------------------------------------------------------------------------------------
    def start_test(self) -> int:
        """Forget the problems of an earlier test; its log lines are no longer this test's. The log mark."""
        self.problems, self.findings = [], []
        self._log_checked = self.log_mark()
        return self._log_checked

    def note(self, what: str) -> None:
        """Remember the request about to be sent (cut short) for the report of a later problem."""
        self.recent.append(compact(what))

    def problem(self, what: str) -> None:
        self.problems.append(f"{what}; the last requests before it: {list(self.recent)}")

    def maybe_check(self, every_s: float = 2.0) -> bool:
        """Alive; and every ``every_s`` seconds: SERVING, resident memory under the limit. False (with the
        problem recorded) when one fails: fuzzing a broker in that state finds nothing more. An error
        logged since the last call is recorded too (with the requests before it), and fuzzing goes on."""
        if not self.alive():
            self.problem(f"the broker exited with {self.proc.proc.returncode}")  # type: ignore[union-attr]
            return False
        logged = self.log_problems(self._log_checked)
        self._log_checked += len(self.log_lines(self._log_checked))
        for line in logged[:3]:
            self.problem(f"the broker logged: {line[:2000]}")
        if time.monotonic() - self._last_check < every_s:
            return True
        self._last_check = time.monotonic()
        try:
            status = self.health()
        except grpc.RpcError as exc:
            status = f"health check failed: {exc.code()} {exc.details()}"
        if status != "SERVING":
            self.problem(f"health is {status}")
            return False
        rss = self.rss_mb()
        if rss >= self.rss_limit_mb:
            self.problem(f"broker RSS {rss:.0f} MiB >= {self.rss_limit_mb} MiB")
            return False
        return True

    def stop(self) -> list[str]:
        """Stop the broker (SIGTERM: it flushes its log) and return every line it logged."""
        if self.alive():
            self.proc.terminate()
        self._reader.join(30)
        return self.log_lines()

    def close(self) -> None:
        self._channel.close()
