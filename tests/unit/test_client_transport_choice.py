"""Client(transport=...): the value is checked, and "auto" picks its transport at first use from the broker's
CONNECTED answer (connector/client/transport/choice.py), with fake transports."""
from __future__ import annotations

import socket
import threading
import time

import pytest

from broker_core import errors
from connector import Client
from connector.client.transport.grpc.connection import Connection
from connector.client.security import Security
from connector.client.transport.choice import AutoTransport, check_transport


class FakeTransport:
    def __init__(self, kind, dense=True, fail=None):
        self.kind, self.fail = kind, fail
        self.positions = type("P", (), {"dense": dense})()
        self.closed = threading.Event()
        self.readied = self.closes = 0
        self.calls = []

    def ensure_ready(self):
        self.readied += 1
        if self.fail:
            raise self.fail.pop(0)

    def list_topics(self, namespace, timeout_s=None, retry=False):
        self.calls.append("list_topics")
        return self.kind

    def schema(self, topic, version=-1, timeout_s=None, retry=False):
        self.calls.append("schema")
        return self.kind

    def partitions(self, topic, timeout_s=None, retry=False):
        self.calls.append("partitions")
        return self.kind

    def produce(self, spec, on_event, name="producer", reconnecting=False):
        self.calls.append("produce")
        return self.kind

    def close(self):
        self.closes += 1
        self.closed.set()


def auto(binary, prefer="binary", made=None):
    made = made if made is not None else []

    def grpc(*args):
        made.append(FakeTransport("grpc"))
        return made[-1]
    return AutoTransport("pulsar://127.0.0.1:6650", 5, 1, Security(), binary=lambda *a: binary, grpc=grpc,
                         prefer=prefer)


@pytest.mark.parametrize("value", ["tcp", "GRPC", None, 1])
def test_a_wrong_transport_is_refused_naming_the_valid_values(value):
    with pytest.raises(errors.InvalidConfiguration, match="'auto', 'grpc', 'binary'"):
        Client("pulsar://127.0.0.1:6650", transport=value)
    with pytest.raises(errors.InvalidConfiguration):
        check_transport(value)


def test_an_auto_client_is_built_without_touching_the_network():
    with socket.socket() as unused:  # a port nobody listens on: a connect attempt would fail or wait
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
        start = time.monotonic()
        client = Client(f"pulsar://127.0.0.1:{port}", connection_timeout_ms=5000)
        built_s = time.monotonic() - start
        assert client._connection.chosen is None
        client.close()
    assert built_s < 1.0


def test_grpc_builds_the_grpc_connection():
    with Client("pulsar://127.0.0.1:6650", transport="grpc") as client:
        assert isinstance(client._connection, Connection)


def test_against_pulsarlike_auto_uses_the_preferred_transport_and_closes_the_probe():
    probe, made = FakeTransport("binary", dense=True), []
    transport = auto(probe, prefer="grpc", made=made)
    assert transport.list_topics("public/default") == "grpc"
    assert (transport.chosen, probe.readied, probe.closes) == ("grpc", 1, 1)
    assert made[0].closed is transport.closed


def test_against_pulsarlike_preferring_binary_auto_keeps_the_probe_connection():
    probe = FakeTransport("binary", dense=True)
    transport = auto(probe, prefer="binary")
    assert transport.produce(None, None) == "binary"
    assert (transport.chosen, probe.closes) == ("binary", 0)


def test_against_another_broker_auto_uses_binary_whatever_is_preferred():
    probe = FakeTransport("binary", dense=False)
    transport = auto(probe, prefer="grpc")
    assert transport.positions is probe.positions
    assert (transport.chosen, probe.closes) == ("binary", 0)
    assert transport.schema("t") == "binary"


def test_a_failed_first_connection_decides_nothing_and_the_next_use_tries_again():
    probe = FakeTransport("binary", dense=False, fail=[errors.ConnectError("down")])
    transport = auto(probe)
    with pytest.raises(errors.ConnectError):
        transport.ensure_ready()
    assert transport.chosen is None
    transport.ensure_ready()
    assert transport.chosen == "binary"


def test_an_idempotent_call_waits_through_a_failing_first_connection():
    probe = FakeTransport("binary", dense=False, fail=[errors.ConnectError("restarting")])
    transport = auto(probe)
    assert transport.partitions("t", retry=True) == "binary"


def test_without_the_binary_transport_auto_falls_back_to_grpc():
    def missing(*args):
        raise ImportError("no connector.client.transport.binary")
    made = []
    transport = AutoTransport("pulsar://127.0.0.1:6650", 5, 1, Security(), binary=missing,
                              grpc=lambda *a: made.append(FakeTransport("grpc")) or made[-1])
    assert transport.list_topics("public/default") == "grpc"
    assert transport.chosen == "grpc"


def test_closing_before_first_use_connects_nothing_and_later_use_is_already_closed():
    probe = FakeTransport("binary")
    transport = auto(probe)
    transport.close()
    with pytest.raises(errors.AlreadyClosed):
        transport.ensure_ready()
    assert probe.readied == 0
