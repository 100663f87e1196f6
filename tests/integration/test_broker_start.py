"""What a broker process holds from its start (issue 19: start time and idle memory): the relay process and
the gRPC server, which only gRPC and TLS clients need, are started by the first connection that needs them,
not at start."""
from __future__ import annotations

import os

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from broker_core.protocol import pulsar_commands_pb2 as cmd
from tests.pulsar_wire import RawPulsar
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
    with RawPulsar(proc.address) as raw:
        assert raw.connect().type == T.CONNECTED
        assert raw.producer("persistent://public/default/no-grpc").type == T.PRODUCER_SUCCESS
    assert listening_ports(proc.proc.pid) == {proc.port}, "only the public port: no private gRPC port"


def test_the_first_grpc_client_starts_the_grpc_server_and_is_served_on_its_first_try(broker_process):
    proc = broker_process("--set", "metricsEnabled=false")
    assert listening_ports(proc.proc.pid) == {proc.port}
    assert health(proc.address) == "SERVING"
    assert len(listening_ports(proc.proc.pid) - {proc.port}) == 1, "the private gRPC port, once"
    assert health(proc.address) == "SERVING"
    assert len(listening_ports(proc.proc.pid)) == 2
