"""Integration fixtures: a real in-process broker on port 0 per test module, and real clients."""
from __future__ import annotations

import uuid

import pytest

from broker_core import Broker


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    with Broker(data_dir=tmp_path_factory.mktemp("broker"), port=0) as running:
        yield running


@pytest.fixture
def client(broker):
    from connector import Client

    c = Client(broker.service_url)
    yield c
    c.close()


@pytest.fixture
def admin(broker):
    from connector import Admin

    a = Admin(broker.service_url)
    yield a
    a.close()


@pytest.fixture
def topic():
    """A fresh topic name per test."""
    return f"persistent://public/default/t-{uuid.uuid4().hex[:12]}"
