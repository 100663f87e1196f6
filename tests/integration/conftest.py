"""Integration fixtures: a fresh topic name per test (``broker``, ``client`` and ``admin`` come from
tests/brokers.py, shared with the Spark tests)."""
from __future__ import annotations

import uuid

import pytest


@pytest.fixture
def topic():
    """A fresh topic name per test."""
    return f"persistent://public/default/t-{uuid.uuid4().hex[:12]}"
