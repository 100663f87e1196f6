"""What a broker process holds from its start (issue 19: start time and idle memory): the relay process and
the gRPC server, which only gRPC and TLS clients need, are started by the first connection that needs them,
not at start."""
from __future__ import annotations

import os

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from broker_core.protocol import pulsar_commands_pb2 as cmd
from tests.pulsar_wire import RawPulsar, frame
from tests.waiting import wait_until

T = cmd.BaseCommand


def children(pid: int) -> list[int]:
    with open(f"/proc/{pid}/task/{pid}/children") as found:
        return [int(child) for child in found.read().split()]


def health(address: str) -> str:
    with grpc.insecure_channel(address) as channel:
        reply = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(service=""), timeout=10)
    return health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)


def test_a_broker_serving_only_pulsar_clients_starts_no_relay_process(broker_process):
    proc = broker_process()
    with RawPulsar(proc.address) as raw:
        assert raw.connect().type == T.CONNECTED
        assert raw.producer("persistent://public/default/no-relay").type == T.PRODUCER_SUCCESS
    assert children(proc.proc.pid) == []


def test_the_first_grpc_client_starts_the_relay_process_and_is_served(broker_process):
    proc = broker_process()
    assert health(proc.address) == "SERVING"
    assert wait_until(lambda: children(proc.proc.pid))
    assert health(proc.address) == "SERVING"
    assert len(children(proc.proc.pid)) == 1, "one relay process for every gRPC connection"


def listening_ports(pid: int) -> set[int]:
    """The TCP ports ``pid`` listens on (its sockets' inodes in ``/proc/net/tcp``, state LISTEN)."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:["):-1])
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as rows:
            for row in list(rows)[1:]:
                fields = row.split()
                if fields[3] == "0A" and fields[9] in inodes:
                    ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


def test_a_broker_serving_only_pulsar_clients_never_starts_its_grpc_server(broker_process):
    proc = broker_process("--set", "metricsEnabled=false")
    at_start = listening_ports(proc.proc.pid)  # the public port and the web service port (the admin API)
    assert proc.port in at_start and len(at_start) == 2
    with RawPulsar(proc.address) as raw:
        assert raw.connect().type == T.CONNECTED
        assert raw.producer("persistent://public/default/no-grpc").type == T.PRODUCER_SUCCESS
    assert listening_ports(proc.proc.pid) == at_start, "no private gRPC port"


def test_the_first_grpc_client_starts_the_grpc_server_and_is_served_on_its_first_try(broker_process):
    proc = broker_process("--set", "metricsEnabled=false")
    at_start = listening_ports(proc.proc.pid)  # the public port and the web service port (the admin API)
    assert proc.port in at_start and len(at_start) == 2
    assert health(proc.address) == "SERVING"
    assert len(listening_ports(proc.proc.pid) - at_start) == 1, "the private gRPC port, once"
    assert health(proc.address) == "SERVING"
    assert len(listening_ports(proc.proc.pid)) == 3


def test_a_connect_and_a_producer_sent_in_one_write_are_both_answered(broker_process):
    # the handlers of every command but the handshake are added at the first command after CONNECT: here that
    # command comes in the same read as the CONNECT
    proc = broker_process()
    with RawPulsar(proc.address) as raw:
        raw.send(frame(T(type=T.CONNECT, connect=cmd.CommandConnect(client_version="one-write", protocol_version=20)))
                 + frame(T(type=T.PRODUCER, producer=cmd.CommandProducer(
                     topic="persistent://public/default/one-write", producer_id=1, request_id=1))))
        assert raw.read()[0].type == T.CONNECTED
        assert raw.read()[0].type == T.PRODUCER_SUCCESS


def test_a_client_that_only_connects_and_leaves_is_forgotten_and_the_next_is_served(broker_process):
    proc = broker_process()
    with RawPulsar(proc.address) as raw:
        assert raw.connect().type == T.CONNECTED
        raw.send(frame(T(type=T.PING, ping=cmd.CommandPing())))
        assert raw.read()[0].type == T.PONG
    with RawPulsar(proc.address) as raw:
        assert raw.connect().type == T.CONNECTED
        assert raw.producer("persistent://public/default/after-a-quiet-one").type == T.PRODUCER_SUCCESS
    assert proc.terminate() == 0
    assert "level=ERROR" not in proc.proc.stderr.read()
