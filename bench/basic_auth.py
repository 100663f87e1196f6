"""Basic authentication's costs (issue 30, item 3): whether a failure's time tells an existing user from an
unknown one, and what a client failing again and again costs everybody else.

Run it with ``python bench/basic_auth.py [--tries N] [--seconds S] [--sections hashes,wire,ping]``. Prints
figures; asserts nothing.

- ``hashes``: the ``basic`` provider in this process, one htpasswd file per hash format (APR1 ``$apr1$``,
  SHA-256-crypt ``$5$``, SHA-512-crypt ``$6$``, ``$6$rounds=20000$``): the median time of ``--tries``
  refusals for an existing user with a wrong password and for an unknown user, interleaved, with an
  8-byte and a 500-byte password, and their difference. The provider is built with the failed-login limit
  off, where it has one, so every try is hashed. Then a file of two ``$6$`` users and one ``$apr1$``: how
  many unknown names take a ``$6$`` user's time (users: two in three).
- ``wire``: a ``pulsarlike broker`` process whose users are three ``$6$`` hashes (``openssl passwd -6``), the
  failed-login limit off: the median of ``--tries`` refused logins, existing user vs unknown user, as a
  client sees them: a new connection's ``CONNECT`` (method ``basic``) to its ``ERROR``, and an admin REST
  ``GET /admin/v2/tenants`` with ``Authorization: Basic`` to its 401 (one keep-alive connection).
- ``ping``: the same broker; for ``--seconds`` a connected client sends ``PING`` every 10 ms, alone (the
  baseline), then while another (from 127.0.0.2, in a process of its own) fails ``CONNECT`` as fast as it
  can with a 500-byte wrong password: the PING round trips' p50, p99 and worst, and the failures per second. Then again on a broker with the default
  failed-login limit (``basicAuthMaxFailuresPerAddress`` and friends, when the broker has them): how many
  of the failing client's attempts were hashed and how many refused at once.

Run against an older checkout by copying this file into its ``bench/`` folder: it imports the code next to
it and starts that broker.
"""
from __future__ import annotations

import argparse
import base64
import http.client
import inspect
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from broker_core.config import BrokerConfig  # noqa: E402
from broker_core.net.peers import ClientIdentity  # noqa: E402
from broker_core.protocol import pulsar_commands_pb2 as cmd  # noqa: E402
from broker_core.security import basic  # noqa: E402

T = cmd.BaseCommand
HEADER = struct.Struct(">II")
LISTENING, METRICS = "pulsarlike broker listening on ", "pulsarlike metrics on "
LIMIT_KEYS = ("basicAuthMaxFailuresPerAddress", "basicAuthFailureWindowSeconds", "basicAuthBlockSeconds")
HAS_LIMIT = hasattr(BrokerConfig(), LIMIT_KEYS[0])
ROOT_PASSWORD = "r00t-secret"
HAMMER_FROM = "127.0.0.2"
"""The failing client's address (Linux routes all of 127.0.0.0/8 to loopback)."""


def openssl(scheme: str, password: str) -> str:
    args = ["openssl", "passwd", scheme, password]
    return subprocess.run(args, capture_output=True, text=True, check=True).stdout.strip()


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


# ------------------------------------------------------------------ hashes: the provider in this process
def provider(lines: list[str]):
    users = basic.parse_htpasswd("\n".join(lines))
    if "limits" in inspect.signature(basic.BasicAuthentication).parameters:
        from broker_core.security.failed_logins import FailureLimits

        return basic.BasicAuthentication(users, limits=FailureLimits(max_failures=0))
    return basic.BasicAuthentication(users)


def refusal_time(users, credentials: bytes, me: ClientIdentity) -> float:
    started = time.perf_counter()
    try:
        users.authenticate(credentials, me)
    except Exception:  # noqa: BLE001 - the refusal is what is timed
        pass
    return time.perf_counter() - started


def hashes(tries: int) -> None:
    print("## the basic provider in process: median refusal, existing user vs unknown user")
    formats = {"$apr1$": lambda pw: openssl("-apr1", pw), "$5$": lambda pw: openssl("-5", pw),
               "$6$": lambda pw: openssl("-6", pw),
               "$6$rounds=20000$": _sha_rounds}
    me = ClientIdentity("ipv4:127.0.0.1:5000")
    for name, make in formats.items():
        users = provider([f"alice:{make('alice-secret')}", f"bob:{make('bob-secret')}"])
        for length in (8, 500):
            wrong = ("w" * length).encode()
            known, unknown = [], []
            for _ in range(tries):
                known.append(refusal_time(users, b"alice:" + wrong, me))
                unknown.append(refusal_time(users, b"nobody:" + wrong, me))
            k, u = median_ms(known), median_ms(unknown)
            print(f"{name:18} password {length:3} B: existing {k:7.2f} ms  unknown {u:7.2f} ms  "
                  f"difference {k - u:+7.2f} ms")
    mixed(tries, me)


def mixed(tries: int, me: ClientIdentity) -> None:
    """A file of two ``$6$`` users and one ``$apr1$``: each user's median refusal, and how many of ``tries``
    unknown names take a ``$6$`` user's time (nearer its median than the ``$apr1$`` one's, geometrically)."""
    users = provider([f"alice:{openssl('-6', 'a')}", f"bob:{openssl('-6', 'b')}", f"root:{openssl('-apr1', 'r')}"])
    wrong = b"w" * 8
    medians = {user: median_ms([refusal_time(users, f"{user}:".encode() + wrong, me) for _ in range(30)])
               for user in ("alice", "root")}
    cut = (medians["alice"] * medians["root"]) ** 0.5  # geometric: $6$ is ~5x APR1, load only adds time
    slow = sum(refusal_time(users, f"nobody-{i}:".encode() + wrong, me) * 1000 > cut for i in range(tries))
    print(f"mixed file, 2 x $6$ + 1 x $apr1$: $6$ user {medians['alice']:.2f} ms, $apr1$ user {medians['root']:.2f}"
          f" ms; unknown names timed as $6$: {slow / tries:.0%} (users: 67%), as $apr1$: {1 - slow / tries:.0%}")


def _sha_rounds(password: str) -> str:
    from broker_core.security.password_hashes import sha_crypt

    return sha_crypt(password.encode(), "rounds=20000$bench20000salt", "$6$")


# ------------------------------------------------------------------ a broker process
class Broker:
    def __init__(self, folder: Path, limited: bool) -> None:
        users = folder / "users.htpasswd"
        users.write_text(f"root:{openssl('-6', ROOT_PASSWORD)}\nalice:{openssl('-6', 'alice-secret')}\n"
                         f"carol:{openssl('-6', 'carol-secret')}\n")
        settings = {"authenticationEnabled": "true", "authenticationProviders": "basic",
                    "basicAuthConf": f"file://{users}", "webServicePort": "0"}
        if HAS_LIMIT and not limited:
            settings[LIMIT_KEYS[0]] = "0"
        args = [a for key, value in settings.items() for a in ("--set", f"{key}={value}")]
        self.proc = subprocess.Popen([sys.executable, "-m", "broker_core.cli", "broker", "--data-dir",
                                      str(folder / "data"), "--port", "0", "--log-level", "ERROR", *args],
                                     cwd=REPO, stdout=subprocess.PIPE, text=True)
        address = self.proc.stdout.readline().strip()
        web = self.proc.stdout.readline().strip()
        if not (address.startswith(LISTENING) and web.startswith(METRICS)):
            self.proc.kill()
            raise SystemExit(f"the broker did not start: {address!r} {web!r}")
        host, port = address[len(LISTENING):].rsplit(":", 1)
        self.address = (host, int(port))
        self.web = web[len(METRICS):].split("//", 1)[1].split("/", 1)[0]

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait(30)


class Raw:
    """One binary protocol connection."""

    def __init__(self, address: tuple[str, int], source: str = "127.0.0.1") -> None:
        self.sock = socket.create_connection(address, timeout=30, source_address=(source, 0))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""

    def send(self, command: cmd.BaseCommand) -> None:
        body = command.SerializeToString()
        self.sock.sendall(HEADER.pack(4 + len(body), len(body)) + body)

    def read(self) -> cmd.BaseCommand | None:
        while True:
            if len(self.buf) >= 8:
                total, size = HEADER.unpack(self.buf[:8])
                if len(self.buf) >= 4 + total:
                    command = T()
                    command.ParseFromString(self.buf[8:8 + size])
                    self.buf = self.buf[4 + total:]
                    if command.type == T.PING:  # the broker's keep-alive
                        self.send(T(type=T.PONG, pong=cmd.CommandPong()))
                        continue
                    return command
            chunk = self.sock.recv(65536)
            if not chunk:
                return None
            self.buf += chunk

    def connect(self, user: str, password: str) -> cmd.BaseCommand | None:
        self.send(T(type=T.CONNECT, connect=cmd.CommandConnect(
            client_version="bench", protocol_version=20, auth_method_name="basic",
            auth_data=f"{user}:{password}".encode())))
        return self.read()

    def close(self) -> None:
        self.sock.close()


def failed_connect(address: tuple[str, int], user: str, password: str, source: str = "127.0.0.1") -> float:
    """Seconds from sending CONNECT to the broker's answer (a refusal)."""
    raw = Raw(address, source)
    try:
        started = time.perf_counter()
        answer = raw.connect(user, password)
        took = time.perf_counter() - started
        assert answer is None or answer.type == T.ERROR, answer
        return took
    finally:
        raw.close()


def wire(tries: int) -> None:
    print("## a broker process (3 $6$ users, failed-login limit off): median refusal as a client sees it")
    with tempfile.TemporaryDirectory() as folder:
        broker = Broker(Path(folder), limited=False)
        try:
            for length in (8, 500):
                wrong = "w" * length
                known, unknown = [], []
                for _ in range(tries):
                    known.append(failed_connect(broker.address, "alice", wrong))
                    unknown.append(failed_connect(broker.address, "nobody", wrong))
                k, u = median_ms(known), median_ms(unknown)
                print(f"binary CONNECT password {length:3} B: existing {k:7.2f} ms  unknown {u:7.2f} ms  "
                      f"difference {k - u:+7.2f} ms")
            http_conn = http.client.HTTPConnection(broker.web, timeout=30)
            for length in (8, 500):
                wrong = "w" * length
                known, unknown = [], []
                for _ in range(tries):
                    for user, into in (("alice", known), ("nobody", unknown)):
                        header = "Basic " + base64.b64encode(f"{user}:{wrong}".encode()).decode()
                        started = time.perf_counter()
                        http_conn.request("GET", "/admin/v2/tenants", headers={"Authorization": header})
                        reply = http_conn.getresponse()
                        reply.read()
                        into.append(time.perf_counter() - started)
                        assert reply.status == 401, reply.status
                k, u = median_ms(known), median_ms(unknown)
                print(f"HTTP 401          password {length:3} B: existing {k:7.2f} ms  unknown {u:7.2f} ms  "
                      f"difference {k - u:+7.2f} ms")
            http_conn.close()
        finally:
            broker.stop()


# ------------------------------------------------------------------ ping: a failing client and a pinger
def hammer(address: tuple[str, int], stop, counts) -> None:
    """Fail CONNECT until ``stop`` is set (in a process of its own: no GIL shared with the pinger)."""
    wrong = "w" * 500
    while not stop.is_set():
        raw = Raw(address, HAMMER_FROM)
        try:
            answer = raw.connect("alice", wrong)
            message = answer.error.message if answer is not None and answer.type == T.ERROR else ""
            with counts.get_lock():
                counts[0 if "unknown user or wrong password" in message else 1] += 1
        finally:
            raw.close()


def pings_under_hammer(address: tuple[str, int], seconds: float,
                       hammering: bool = True) -> tuple[list[float], dict[str, int]]:
    import multiprocessing

    pinger = Raw(address)
    answer = pinger.connect("root", ROOT_PASSWORD)
    assert answer is not None and answer.type == T.CONNECTED, answer
    context = multiprocessing.get_context("fork")
    stop, counts = context.Event(), context.Array("l", 2)
    failing = context.Process(target=hammer, args=(address, stop, counts), daemon=True)
    if hammering:
        failing.start()
    trips: list[float] = []
    deadline = time.monotonic() + seconds
    try:
        while time.monotonic() < deadline:
            started = time.perf_counter()
            pinger.send(T(type=T.PING, ping=cmd.CommandPing()))
            pong = pinger.read()
            trips.append(time.perf_counter() - started)
            assert pong is not None and pong.type == T.PONG, pong
            time.sleep(0.01)
    finally:
        stop.set()
        if hammering:
            failing.join(30)
        pinger.close()
    return trips, {"hashed": counts[0], "refused at once": counts[1]}


def report_pings(label: str, trips: list[float], counts: dict[str, int], seconds: float) -> None:
    ordered = sorted(trips)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    failures = ", ".join(f"{n / seconds:.0f}/s {what}" for what, n in counts.items())
    print(f"{label}: PING p50 {median_ms(trips):6.2f} ms  p99 {p99 * 1000:6.2f} ms  worst {ordered[-1] * 1000:6.2f}"
          f" ms over {len(trips)} pings; failing client: {failures}")


def ping(seconds: float) -> None:
    print("## PING round trips of a connected client while another fails CONNECT ($6$, 500-byte password)")
    for limited in (False, True):
        if limited and not HAS_LIMIT:
            print("failed-login limit: this broker has none")
            continue
        with tempfile.TemporaryDirectory() as folder:
            broker = Broker(Path(folder), limited=limited)
            try:
                if not limited:
                    trips, counts = pings_under_hammer(broker.address, seconds, hammering=False)
                    report_pings("no failing client", trips, counts, seconds)
                trips, counts = pings_under_hammer(broker.address, seconds)
            finally:
                broker.stop()
        report_pings("default limit    " if limited else "limit off        ", trips, counts, seconds)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tries", type=int, default=200, help="refusals per median (default 200)")
    parser.add_argument("--seconds", type=float, default=10.0, help="length of each ping run (default 10)")
    parser.add_argument("--sections", default="hashes,wire,ping", help="comma-separated: hashes, wire, ping")
    args = parser.parse_args(argv)
    sections = {s.strip() for s in args.sections.split(",") if s.strip()}
    print(f"code: {REPO}  python {sys.version.split()[0]}  failed-login limit: {'yes' if HAS_LIMIT else 'no'}")
    if "hashes" in sections:
        hashes(args.tries)
    if "wire" in sections:
        wire(args.tries)
    if "ping" in sections:
        ping(args.seconds)


if __name__ == "__main__":
    main()
