"""Connections before CONNECT are budgeted (issue 18, point 4), against a real broker process and raw
sockets: a frame over the 64 KiB pre-CONNECT bound closes the connection, a client trickling bytes is closed
at the handshake deadline (on the plain port, through the HTTP/2 preface and through the TLS port), the
per-address and total connection limits refuse the extra connection while the others keep working, a
thousand idle connections plus forty partial 5 MiB frames leave the broker's memory bounded and its
answers fast, and running out of file descriptors (in the broker or its relay process) costs only the
connections that could not be taken."""
from __future__ import annotations

import os
import re
import resource
import socket
import ssl
import time
import uuid

import pytest

from broker_core.protocol import pulsar_commands_pb2 as cmd
from broker_core.frontends.pulsar.frames import PRE_CONNECT_MAX_FRAME
from connector import Client
from tests.broker_watch import BrokerWatch, memory_mb
from tests.pulsar_wire import HEADER, RawPulsar, entry, frame
from tests.security_certs import as_args, make_tls
from tests.waiting import wait_until

T = cmd.BaseCommand
OTHER_HOST = "127.0.0.2"
"""Another client address on loopback (Linux routes all of 127.0.0.0/8 there)."""
PING = frame(T(type=T.PING, ping=cmd.CommandPing()))
FIVE_MIB = 5 * 1024 * 1024


def host_port(address: str) -> tuple[str, int]:
    host, port = address.rsplit(":", 1)
    return host, int(port)


def closed_within(sock: socket.socket, seconds: float) -> bool:
    """Whether the broker closes ``sock`` within ``seconds`` (what it sends before is skipped); False when
    it is still open then."""
    deadline = time.monotonic() + seconds
    try:
        while (left := deadline - time.monotonic()) > 0:
            sock.settimeout(left)
            if not sock.recv(1 << 16):
                return True
    except socket.timeout:
        return False
    except OSError:  # reset
        return True
    return False


def trickle(sock: socket.socket, data: bytes) -> float:
    """Send ``data`` one byte every 0.2 s (more than any keep-alive or sniff window would need) until the
    broker closes ``sock``; returns how long it lived."""
    started = time.monotonic()
    for byte in data:
        try:
            sock.send(bytes([byte]))
        except OSError:
            break
        if closed_within(sock, 0.2):
            break
    return time.monotonic() - started


def answer_time(watch: BrokerWatch, address: str) -> float:
    """The slower of a gRPC health check and a Pulsar CONNECT round trip, in seconds."""
    started = time.monotonic()
    assert watch.health() == "SERVING"
    health = time.monotonic() - started
    started = time.monotonic()
    with RawPulsar(address) as raw:
        raw.connect()
    return max(health, time.monotonic() - started)


def logged(watch: BrokerWatch, *parts: str) -> list[str]:
    return [line for line in watch.log_lines() if all(p in line for p in parts)]


def tls_port(watch: BrokerWatch) -> int:
    """The TLS port the broker logged at its start."""
    found = wait_until(lambda: [m for line in watch.log_lines() if (m := re.search(r"tls_port=(\d+)", line))])
    return int(found[0].group(1))


def pings(raw: RawPulsar) -> bool:
    raw.send(PING)
    return raw.expect(T.PONG).type == T.PONG


@pytest.fixture
def watched(broker_process, tmp_path):
    """Factory: a broker process started with ``--set`` ``settings``, and its watch."""
    watches = []

    def start(*args: str) -> tuple:
        proc = broker_process(*args)
        watches.append(BrokerWatch(proc, tmp_path, rss_limit_mb=1000))
        return proc, watches[-1]
    yield start
    for watch in watches:
        watch.close()


def test_a_partial_frame_larger_than_the_pre_connect_bound_closes_the_connection(watched):
    proc, watch = watched()
    with RawPulsar(proc.address) as raw:
        raw.send(HEADER.pack(PRE_CONNECT_MAX_FRAME + 1, 100) + b"\0" * 4096)
        assert closed_within(raw.sock, 5)
    assert wait_until(lambda: logged(watch, "event=pulsar_connection_refused",
                                     f"frames hold 4 to {PRE_CONNECT_MAX_FRAME} bytes (before CONNECTED"))
    # once CONNECTED, frames up to maxMessageSize are read again
    with RawPulsar(proc.address) as good:
        good.connect()
        topic = f"persistent://public/default/budget-{uuid.uuid4().hex[:8]}"
        assert good.producer(topic).type == T.PRODUCER_SUCCESS
        assert good.send_entry(entry(b"x" * (4 * PRE_CONNECT_MAX_FRAME))).type == T.SEND_RECEIPT


@pytest.mark.parametrize("first_bytes", [
    HEADER.pack(1000, 900) + b"\0" * 40,  # a Pulsar frame that never completes
    b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"[:20],  # an HTTP/2 preface that never completes
], ids=["pulsar-frame", "http2-preface"])
def test_a_trickle_feeding_connection_is_closed_at_the_connect_deadline(watched, first_bytes):
    proc, watch = watched("--set", "handshakeTimeoutSeconds=1")
    with socket.create_connection(host_port(proc.address), timeout=5) as sock:
        lived = trickle(sock, first_bytes)
    assert 0.8 <= lived < 3.0, f"closed after {lived:.1f} s, the deadline is 1 s"
    assert answer_time(watch, proc.address) < 1.0


def test_a_silent_connection_is_closed_at_the_deadline_and_a_prompt_client_stays(watched):
    proc, watch = watched("--set", "handshakeTimeoutSeconds=1")
    with socket.create_connection(host_port(proc.address), timeout=5) as silent, RawPulsar(proc.address) as prompt:
        prompt.connect()
        started = time.monotonic()
        assert closed_within(silent, 5)
        assert 0.8 <= time.monotonic() - started < 3.0
        assert not closed_within(prompt.sock, 0.5)  # past the deadline: CONNECT completed in time
        assert pings(prompt)


def test_the_connect_deadline_of_a_tls_client_counts_from_its_accept(watched, tmp_path):
    tls = make_tls(tmp_path / "tls")
    proc, watch = watched(*as_args({**tls.broker_settings(), "brokerServicePortTls": "0",
                                    "handshakeTimeoutSeconds": "1"}))
    context = ssl.create_default_context(cafile=tls.ca)
    context.check_hostname = False
    with socket.create_connection(("127.0.0.1", tls_port(watch)), timeout=5) as raw, \
            context.wrap_socket(raw) as sock:
        lived = trickle(sock, HEADER.pack(1000, 900) + b"\0" * 40)
    assert lived < 3.0, f"closed after {lived:.1f} s, the deadline is 1 s"
    assert wait_until(lambda: logged(watch, "event=pulsar_connection_refused", "no CONNECT completed within 1 s"))


def test_a_trickled_tls_handshake_is_closed_at_the_tls_handshake_timeout(watched, tmp_path):
    tls = make_tls(tmp_path / "tls")
    proc, watch = watched(*as_args({**tls.broker_settings(), "brokerServicePortTls": "0",
                                    "tlsHandshakeTimeoutSeconds": "1"}))
    with socket.create_connection(("127.0.0.1", tls_port(watch)), timeout=5) as sock:
        lived = trickle(sock, b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + b"\0" * 40)  # a ClientHello
    assert 0.8 <= lived < 3.0, f"closed after {lived:.1f} s, tlsHandshakeTimeoutSeconds is 1"


def test_commands_before_connect_from_many_connections_are_one_log_line(watched):
    proc, watch = watched()
    producer = frame(T(type=T.PRODUCER, producer=cmd.CommandProducer(topic="persistent://public/default/x",
                                                                      producer_id=1, request_id=1)))
    for _ in range(50):
        with RawPulsar(proc.address) as raw:
            raw.send(producer)
            assert closed_within(raw.sock, 5)
    assert answer_time(watch, proc.address) < 1.0
    assert len(logged(watch, "event=pulsar_connection_refused", "PRODUCER before CONNECT")) == 1


def test_the_per_ip_limit_refuses_the_extra_connection_while_the_others_keep_working(watched):
    proc, watch = watched("--set", "brokerMaxConnectionsPerIp=3")
    admitted = [RawPulsar(proc.address, source=OTHER_HOST) for _ in range(3)]
    try:
        for raw in admitted:
            raw.connect()
        for _ in range(20):  # a client opening connections in a loop
            with RawPulsar(proc.address, source=OTHER_HOST) as extra:
                assert closed_within(extra.sock, 2)
        assert all(pings(raw) for raw in admitted)
        assert answer_time(watch, proc.address) < 1.0  # another address (127.0.0.1) is not refused
        refusals = wait_until(lambda: logged(watch, "event=connection_refused", "limit=brokerMaxConnectionsPerIp",
                                             f"peer={OTHER_HOST}"))
        assert len(refusals) == 1, "one line per interval, not one per refused connection"
        admitted.pop().close()
        later = wait_until(lambda: _admitted_from(proc.address, OTHER_HOST))
        assert later and pings(later)
        later.close()
    finally:
        for raw in admitted:
            raw.close()


def _admitted_from(address: str, source: str) -> RawPulsar | None:
    raw = RawPulsar(address, source=source)
    try:
        raw.connect()
        return raw
    except (ConnectionError, OSError):
        raw.close()
        return None


def test_the_total_limit_refuses_the_extra_connection_while_the_others_keep_working(watched):
    proc, watch = watched("--set", "brokerMaxConnections=3")
    admitted = [RawPulsar(proc.address, source=host) for host in ("127.0.0.1", OTHER_HOST, "127.0.0.3")]
    try:
        for raw in admitted:
            raw.connect()
        with RawPulsar(proc.address, source="127.0.0.4") as extra:
            assert closed_within(extra.sock, 2)
        assert all(pings(raw) for raw in admitted)
        assert wait_until(lambda: logged(watch, "event=connection_refused", "limit=brokerMaxConnections allowed=3"))
        admitted.pop().close()
        later = wait_until(lambda: _admitted_from(proc.address, "127.0.0.4"))
        assert later and pings(later)
        later.close()
    finally:
        for raw in admitted:
            raw.close()


def test_a_grpc_client_counts_once_and_is_served_within_the_per_ip_limit(watched):
    proc, watch = watched("--set", "brokerMaxConnectionsPerIp=2")
    with RawPulsar(proc.address) as raw:  # one of the two places of 127.0.0.1
        raw.connect()
        with Client(proc.service_url) as client:  # the other: its streams and calls add no connection
            topic = f"persistent://public/default/budget-{uuid.uuid4().hex[:8]}"
            consumer = client.subscribe(topic, "s")
            producer = client.create_producer(topic)
            for i in range(5):
                producer.send(f"m{i}".encode())
            assert [consumer.receive(timeout_millis=10_000).data() for _ in range(5)] == \
                [f"m{i}".encode() for i in range(5)]
        assert pings(raw)


def open_idle(address: str, count: int) -> list[socket.socket]:
    """``count`` connections: half send nothing, half one byte of a frame header (then nothing)."""
    sockets = []
    for i in range(count):
        sock = socket.create_connection(host_port(address), timeout=5)
        if i % 2:
            sock.send(b"\0")
        sockets.append(sock)
    return sockets


def open_partial_frames(address: str, count: int) -> list[socket.socket]:
    """``count`` connections, each sending (before CONNECT) the first 4 MiB of a 5 MiB frame; what the broker
    refuses to read is dropped."""
    sockets = []
    chunk = b"\0" * (1 << 20)
    for _ in range(count):
        sock = socket.create_connection(host_port(address), timeout=5)
        try:
            sock.sendall(HEADER.pack(FIVE_MIB, 100))
            for _ in range(4):
                sock.sendall(chunk)
        except OSError:  # closed by the broker, or its window full
            pass
        sockets.append(sock)
    return sockets


def test_a_thousand_idle_and_forty_partial_frame_connections_keep_memory_bounded_and_the_broker_answers(watched):
    proc, watch = watched()
    assert answer_time(watch, proc.address) < 1.0
    baseline = memory_mb(proc.proc.pid)
    idle = open_idle(proc.address, 1000)
    try:
        assert answer_time(watch, proc.address) < 1.0
        idle_rss = memory_mb(proc.proc.pid)
        partial = open_partial_frames(proc.address, 40)
        try:
            assert answer_time(watch, proc.address) < 1.0
            partial_rss = memory_mb(proc.proc.pid, "VmHWM")
        finally:
            for sock in partial:
                sock.close()
    finally:
        for sock in idle:
            sock.close()
    assert answer_time(watch, proc.address) < 1.0
    print(f"broker RSS: {baseline:.0f} MiB at rest, {idle_rss:.0f} MiB with 1,000 idle connections, "
          f"peak {partial_rss:.0f} MiB with 40 partial 5 MiB frames on top")
    assert idle_rss - baseline < 40, "1,000 idle connections cost the broker more than 40 MiB"
    # 40 x 4 MiB = 160 MiB would be buffered if the frames were read before CONNECT
    assert partial_rss - baseline < 60
    assert not watch.log_problems()


def test_a_broker_out_of_file_descriptors_keeps_serving_its_clients_and_accepts_again_once_freed(watched):
    proc, watch = watched()
    pid = proc.proc.pid
    # the first gRPC call starts the gRPC server and the relay process (imports, a fork): done before, so that
    # the answer time measured below is the crunch's, not that start's (over 1 s on a loaded machine)
    assert watch.health() == "SERVING"
    with RawPulsar(proc.address) as established:
        established.connect()
        in_use = len(os.listdir(f"/proc/{pid}/fd"))
        _soft, hard = resource.prlimit(pid, resource.RLIMIT_NOFILE)
        resource.prlimit(pid, resource.RLIMIT_NOFILE, (in_use + 20, hard))  # as if clients had taken the rest
        hogs = open_idle(proc.address, 100)
        try:
            assert wait_until(lambda: logged(watch, "event=accept_failed", "Too many open files"))
            assert pings(established)
        finally:
            for sock in hogs:
                sock.close()
        assert wait_until(lambda: len(os.listdir(f"/proc/{pid}/fd")) < in_use + 10)
        assert answer_time(watch, proc.address) < 1.0
        assert len(logged(watch, "event=accept_failed")) == 1, "one line per interval, not one per retry"
        assert pings(established)


def test_connections_the_relay_cannot_take_for_lack_of_descriptors_give_their_places_back(watched):
    proc, watch = watched("--set", "brokerMaxConnectionsPerIp=5")
    pid = proc.proc.pid
    assert watch.health() == "SERVING"  # the first gRPC connection starts the relay process

    def relay_pid() -> int | None:
        with open(f"/proc/{pid}/task/{pid}/children") as children:
            found = children.read().split()
        return int(found[0]) if found else None
    relay = wait_until(relay_pid)
    _soft, hard = resource.prlimit(relay, resource.RLIMIT_NOFILE)
    resource.prlimit(relay, resource.RLIMIT_NOFILE, (len(os.listdir(f"/proc/{relay}/fd")) + 1, hard))
    try:
        grpc_clients = [socket.create_connection(host_port(proc.address), timeout=5, source_address=(OTHER_HOST, 0))
                        for _ in range(5)]
        for sock in grpc_clients:
            sock.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
        assert all(closed_within(sock, 5) for sock in grpc_clients)  # the relay could not take them
    finally:
        resource.prlimit(relay, resource.RLIMIT_NOFILE, (hard, hard))
    later = wait_until(lambda: _admitted_from(proc.address, OTHER_HOST))
    assert later, "the five places of the relay's failed connections were never given back"
    later.close()
    assert not watch.log_problems()
