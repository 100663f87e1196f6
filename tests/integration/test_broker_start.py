"""What a broker process holds from its start (issue 19: start time and idle memory): the relay process,
which only gRPC and TLS clients need, is started by the first connection that needs it, not at start."""
from __future__ import annotations

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
