"""Integration fixtures: a fresh topic name per test (``broker`` and ``admin`` come from tests/brokers.py, shared
with the Spark tests), ``client``: our client on ``broker`` over the test's ``transport``, and ``official`` /
``ours``: the official pulsar-client and our client on the ``broker_proc`` (a :class:`~tests.brokers.
BrokerProcess`) that a module defines.

``transport`` is ``"auto"`` (what users get) unless a test, class or module is marked
``@pytest.mark.transports``: then it runs once per transport, ``[grpc]`` and ``[binary]`` (or the ones the marker
names), and a client the test builds itself takes ``transport=transport``. The marker goes on the tests whose
paths differ between transports (the streams, acks, redelivery, seeks, lookups, schemas); the rest run once."""
from __future__ import annotations

import os
import uuid

import pytest

from tests.pulsar_lite import pulsar_lite_broker  # noqa: F401  (pulsar-lite for modules that ask for it)

# PULSARLIKE_TEST_TRANSPORTS=grpc (or binary) runs the marked tests over one transport only.
TRANSPORTS = tuple(os.environ.get("PULSARLIKE_TEST_TRANSPORTS", "grpc,binary").split(","))


def pytest_generate_tests(metafunc):
    marker = metafunc.definition.get_closest_marker("transports")
    if marker is not None and "transport" in metafunc.fixturenames:
        metafunc.parametrize("transport", marker.args or TRANSPORTS, indirect=True)


@pytest.fixture
def transport(request):
    """The transport our clients use in this test (module doc)."""
    return getattr(request, "param", "auto")


@pytest.fixture
def client(broker, transport):
    """Our client on the module's in-process ``broker``, over ``transport``."""
    from connector import Client

    c = Client(broker.service_url, transport=transport)
    yield c
    c.close()


@pytest.fixture
def topic():
    """A fresh topic name per test."""
    return f"persistent://public/default/t-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def official(broker_proc):
    """pulsar-client on the module's ``broker_proc``, logging errors only."""
    pulsar = pytest.importorskip("pulsar")
    client = pulsar.Client(broker_proc.service_url, operation_timeout_seconds=10,
                           logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    yield client
    client.close()


@pytest.fixture
def ours(broker_proc, transport):
    """Our client on the module's ``broker_proc``, over ``transport``."""
    from connector import Client

    client = Client(broker_proc.service_url, transport=transport)
    yield client
    client.close()
