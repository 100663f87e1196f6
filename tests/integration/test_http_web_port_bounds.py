"""The web service port held to the broker port's standard (issue 30, items 1, 2 and 4), against a real
``pulsarlike broker`` process, with a second client pinging it over Pulsar's binary protocol every 20 ms
(:class:`~tests.loop_stalls.LoopProbe`): a gzip bomb is refused unread, with credentials or none; a body
trickling past its deadline gets 408 and its connection is closed; forty hostile web connections never cost a
binary CONNECT its place; a body over the size bound is refused while it comes, never buffered whole; 32 JSON
bodies of a megabyte each (over the value bound, or within it) leave the event loop free."""
from __future__ import annotations

import json
import re
import socket
import struct
import threading
import time
import zlib

import pytest

from broker_core.protocol import pulsar_commands_pb2 as cmd
from broker_core.security.tokens import create_token, generate_secret_key
from tests.broker_watch import BrokerWatch, memory_mb
from tests.integration.test_pulsar_connection_budget import closed_within
from tests.loop_stalls import LoopProbe
from tests.pulsar_wire import RawPulsar
from tests.security_certs import as_args, secret_setting
from tests.waiting import wait_until

SECRET = generate_secret_key()
ROOT = create_token(SECRET, "root")
SECURED = {"authenticationEnabled": "true", "authenticationProviders": "token", "authorizationEnabled": "true",
           "superUserRoles": "root", "tokenSecretKey": secret_setting(SECRET)}
WORST_ROUND_TRIP_MS = 100


def gzip_bomb(inflated_mib: int = 1000) -> bytes:
    """A valid gzip member of ~1 KiB per MiB it inflates to (zeros): one deflate block of a MiB, fully
    flushed (so it stands alone), repeated."""
    deflate = zlib.compressobj(9, zlib.DEFLATED, -15)
    block = deflate.compress(b"\0" * (1 << 20)) + deflate.flush(zlib.Z_FULL_FLUSH)
    last = deflate.flush()
    crc, mib = 0, b"\0" * (1 << 20)
    for _ in range(inflated_mib):
        crc = zlib.crc32(mib, crc)
    return (b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff" + block * inflated_mib + last
            + struct.pack("<II", crc, (inflated_mib << 20) & 0xFFFFFFFF))


@pytest.fixture
def watched(broker_process, tmp_path):
    """Factory: a broker process started with ``settings`` (and ``--set`` ``args``), its watch and its web
    port (read from its start line)."""
    watches = []

    def start(settings: dict[str, str] | None = None, *args: str) -> tuple:
        proc = broker_process(*as_args(settings or {}), *args)
        watch = BrokerWatch(proc, tmp_path, rss_limit_mb=2000)
        watches.append(watch)
        found = wait_until(lambda: [m for line in watch.log_lines() if (m := re.search(r"web_port=(\d+)", line))])
        port = int(found[0].group(1))
        assert exchange(port, "GET", "/status.html")[0] == 200  # the first connection builds the application
        return proc, watch, port
    yield start
    for watch in watches:
        watch.close()


def head(method: str, path: str, length: int | None, token: str | None = None, **headers: str) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", "Host: broker", "Content-Type: application/json"]
    if length is not None:
        lines.append(f"Content-Length: {length}")
    if token:
        lines.append(f"Authorization: Bearer {token}")
    lines += [f"{name.replace('_', '-')}: {value}" for name, value in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def read_answer(sock: socket.socket) -> tuple[int, dict | bytes, dict[str, str]]:
    """The status, the body (JSON decoded) and the headers of the answer on ``sock``."""
    got = b""
    while b"\r\n\r\n" not in got:
        chunk = sock.recv(1 << 16)
        if not chunk:
            raise ConnectionError(f"closed before an answer: {got!r}")
        got += chunk
    top, _, rest = got.partition(b"\r\n\r\n")
    status_line, *header_lines = top.decode().split("\r\n")
    headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in header_lines)}
    length = int(headers.get("content-length", 0))
    while len(rest) < length:
        chunk = sock.recv(1 << 16)
        if not chunk:
            break
        rest += chunk
    body = json.loads(rest) if headers.get("content-type", "").startswith("application/json") else rest
    return int(status_line.split()[1]), body, headers


def exchange(port: int, method: str, path: str, body: bytes = b"", token: str | None = None,
             **headers: str) -> tuple[int, dict | bytes, dict[str, str]]:
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(head(method, path, len(body) if body or method != "GET" else None, token, **headers) + body)
        return read_answer(sock)


# ------------------------------------------------------------------ item 1: compressed bodies
def test_a_gzip_bomb_is_refused_unread_on_a_public_and_an_authenticated_route_and_the_loop_stays_free(watched):
    proc, watch, port = watched(SECURED)
    bomb = gzip_bomb()  # just under 1 MiB, inflating to 1000 MiB (1.8-2.5 s of a frozen broker each, before)
    baseline = memory_mb(proc.proc.pid, "VmHWM")
    attempts = [("POST", "/status.html", None), ("PUT", "/admin/v2/tenants/bombed", None),
                ("PUT", "/admin/v2/tenants/bombed", ROOT)]
    with LoopProbe(proc.address, token=ROOT) as probe:
        for method, path, token in attempts:
            for _ in range(5):
                with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
                    sock.sendall(head(method, path, len(bomb), token, Content_Encoding="gzip") + bomb)
                    status, answer, headers = read_answer(sock)
                    assert status == 415, (path, token, answer)
                    assert "Content-Encoding: gzip" in answer["reason"] and headers.get("connection") == "close"
                    assert closed_within(sock, 10)  # what the bomb cost came before this, if anything
    print(f"3 x 5 gzip bombs: {probe}")
    assert probe.worst_ms < WORST_ROUND_TRIP_MS, probe
    assert memory_mb(proc.proc.pid, "VmHWM") - baseline < 50, "a bomb was inflated"
    assert exchange(port, "GET", "/admin/v2/tenants/bombed", token=ROOT)[0] == 404
    status, _answer, _headers = exchange(port, "PUT", "/admin/v2/tenants/plain", b"{}", ROOT, Content_Encoding="identity")
    assert status == 204
    assert not watch.log_problems()


# ------------------------------------------------------------------ item 2: slow bodies, the connection budget
def trickle_all(socks: list[socket.socket], seconds: float, every_s: float = 0.25) -> tuple[dict, list[bytes]]:
    """Send one byte of body on each socket every ``every_s`` until the broker closes it or ``seconds``
    pass: when each was closed (seconds from now), for those that were, and what each was answered."""
    started = time.monotonic()
    closed: dict[int, float] = {}
    answers = [b""] * len(socks)
    while time.monotonic() - started < seconds and len(closed) < len(socks):
        for i, sock in enumerate(socks):
            if i in closed:
                continue
            sock.settimeout(0)
            try:
                sock.send(b" ")
                while chunk := sock.recv(1 << 16):
                    answers[i] += chunk
                closed[i] = time.monotonic() - started
            except BlockingIOError:
                pass
            except OSError:
                closed[i] = time.monotonic() - started
        time.sleep(every_s)
    return closed, answers


def test_a_body_trickling_past_its_deadline_gets_408_and_its_connection_is_closed(watched):
    proc, watch, port = watched({**SECURED, "httpRequestBodyTimeoutMs": "1500"})
    paths = [("PUT", "/admin/v2/tenants/slow", ROOT),  # read by its handler: 408
             ("PUT", "/admin/v2/tenants/slow", None),  # refused at once (401), its body never read
             ("POST", "/status.html", None)]  # 405, public
    socks = []
    for method, path, token in paths * 4:
        sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        sock.sendall(head(method, path, 100_000, token) + b"[")
        socks.append(sock)
    with LoopProbe(proc.address, token=ROOT) as probe:
        closed, answers = trickle_all(socks, seconds=8)
    for sock in socks:
        sock.close()
    print(f"closed after {min(closed.values()):.2f}-{max(closed.values()):.2f} s: {probe}")
    assert sorted(closed) == list(range(len(socks))), f"still open after 8 s: {set(range(len(socks))) - set(closed)}"
    assert max(closed.values()) < 4.0, closed  # 1.5 s from the headers, a trickle round and a scheduling slack
    statuses = [answer.split(b" ", 2)[1] for answer in answers]
    assert statuses == [b"408", b"401", b"405"] * 4, statuses  # answered, then closed at the deadline
    assert all(b"httpRequestBodyTimeoutMs" in answer for answer in answers[0::3])
    assert all(b"connection: close" in answer.lower() for answer in answers)
    assert probe.worst_ms < WORST_ROUND_TRIP_MS, probe


def test_forty_hostile_web_connections_never_cost_a_binary_connect(watched):
    proc, watch, port = watched({}, "--set", "brokerMaxConnections=40", "--set", "maxHttpServerConnections=40",
                                "--set", "httpRequestBodyTimeoutMs=60000")
    hostile = []
    for i in range(40):  # a body at a byte every few seconds: before, they took the broker's 40 places
        sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        sock.sendall(head("PUT", f"/admin/v2/tenants/h{i}", 100_000) + b"[")
        hostile.append(sock)
    extra = socket.create_connection(("127.0.0.1", port), timeout=10)  # the web port's 41st: refused
    assert closed_within(extra, 5)
    extra.close()
    clients = []
    try:
        for _ in range(40):  # the broker's port still has its 40 places
            raw = RawPulsar(proc.address, timeout=10)
            clients.append(raw)
            assert raw.connect().type == cmd.BaseCommand.CONNECTED
        assert all(not closed_within(sock, 0.01) for sock in hostile)  # the hostile ones still open, at the web port
    finally:
        for raw in clients:
            raw.close()
        for sock in hostile:
            sock.close()
    assert [line for line in watch.log_lines() if "limit=maxHttpServerConnections" in line]
    assert not [line for line in watch.log_lines() if "limit=brokerMaxConnections allowed" in line]


def test_a_declared_body_over_the_size_bound_is_refused_before_it_is_read(watched):
    proc, watch, port = watched({"httpMaxRequestSize": "65536"})
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(head("PUT", "/admin/v2/tenants/huge", 64 << 20))  # the headers only
        status, answer, headers = read_answer(sock)
        assert status == 413 and "the limit is 65536 bytes (httpMaxRequestSize)" in answer["reason"]
        assert headers.get("connection") == "close"
        assert closed_within(sock, 5)


def test_a_chunked_body_over_the_size_bound_is_refused_while_it_comes_never_buffered_whole(watched):
    proc, watch, port = watched({"httpMaxRequestSize": "65536"})
    baseline = memory_mb(proc.proc.pid, "VmHWM")
    sent = 0
    chunk = b"%x\r\n%s\r\n" % (1 << 16, b" " * (1 << 16))
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(head("PUT", "/admin/v2/tenants/endless", None, Transfer_Encoding="chunked"))
        try:
            for _ in range(1024):  # 64 MiB, if it were all taken
                sock.sendall(chunk)
                sent += len(chunk)
        except OSError:  # the broker closed it
            pass
        try:
            status, answer, _headers = read_answer(sock)
            assert status == 413 and "65536" in answer["reason"]
        except ConnectionError:  # the answer lost to the reset of a connection closed with bytes unread
            pass
    assert sent < 16 << 20, f"the broker took {sent} bytes of a body bounded at 64 KiB"
    assert memory_mb(proc.proc.pid, "VmHWM") - baseline < 20
    assert exchange(port, "GET", "/admin/v2/tenants/endless")[0] == 404


# ------------------------------------------------------------------ item 4: JSON bodies
def test_thirty_two_json_bodies_of_a_megabyte_leave_the_event_loop_free(watched):
    proc, watch, port = watched(SECURED)
    assert exchange(port, "PUT", "/admin/v2/persistent/public/default/partitioned/partitions", b"2", ROOT)[0] == 204
    path = "/admin/v2/persistent/public/default/partitioned/partitions"
    many_values = json.dumps([f"role-{i:06d}" for i in range(65_000)]).encode()  # ~1 MB, 65,000 values
    few_values = json.dumps(["x" * 20_000 for _ in range(50)]).encode()  # ~1 MB, 50 values
    for body, expected in ((many_values, "more than 10000 values (httpMaxRequestJsonValues)"),
                           (few_values, "expected an integer")):
        answers: list = []

        def send() -> None:
            answers.append(exchange(port, "POST", path, body, ROOT))
        senders = [threading.Thread(target=send) for _ in range(32)]
        with LoopProbe(proc.address, token=ROOT) as probe:
            for sender in senders:
                sender.start()
            for sender in senders:
                sender.join(60)
        print(f"32 x {len(body)} bytes of JSON ({expected}): {probe}")
        assert [status for status, _a, _h in answers] == [400] * 32
        assert all(expected in answer["reason"] for _s, answer, _h in answers), answers[0]
        assert probe.worst_ms < WORST_ROUND_TRIP_MS, probe
    assert not watch.log_problems()
