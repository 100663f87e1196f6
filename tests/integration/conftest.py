"""Integration fixtures: a fresh topic name per test (``broker``, ``client`` and ``admin`` come from
tests/brokers.py, shared with the Spark tests), and ``official`` / ``ours``: the official pulsar-client and our
client on the ``broker_proc`` (a :class:`~tests.brokers.BrokerProcess`) that a module defines."""
from __future__ import annotations

import uuid

import pytest

from tests.pulsar_lite import pulsar_lite_broker  # noqa: F401  (pulsar-lite for modules that ask for it)


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
def ours(broker_proc):
    """Our client on the module's ``broker_proc``."""
    from connector import Client

    client = Client(broker_proc.service_url)
    yield client
    client.close()
