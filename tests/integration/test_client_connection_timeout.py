"""pulsar-client's ``connection_timeout_ms``: a service URL not reachable within it fails ``create_producer`` and
``subscribe`` with ``ConnectError`` then -- not at the much longer operation timeout, as the client did by
retrying the connection with backoff -- over both transports. A refused connection is retried until the
timeout has passed (a connect that hangs takes that long too). No broker: a free port, or a socket that
accepts and never answers."""
from __future__ import annotations

import socket
import time

import pytest

from connector import Client, ConnectError, MessageId


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("transport", ["grpc", "binary", "auto"])
def test_a_refused_service_fails_create_producer_and_subscribe_at_the_connection_timeout(transport):
    client = Client(f"pulsar://127.0.0.1:{_free_port()}", connection_timeout_ms=400, operation_timeout_seconds=30,
                    transport=transport)
    try:
        for call in (lambda: client.create_producer("t"), lambda: client.subscribe("t", "s")):
            started = time.monotonic()
            with pytest.raises(ConnectError, match="within 0.4s"):
                call()
            assert 0.4 <= time.monotonic() - started < 2.5
    finally:
        client.close()


@pytest.mark.parametrize("transport", ["grpc", "binary"])
def test_a_service_that_accepts_and_never_answers_fails_at_the_connection_timeout(transport):
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(16)  # connections complete in the backlog and are never answered
    client = Client(f"pulsar://127.0.0.1:{silent.getsockname()[1]}", connection_timeout_ms=400,
                    operation_timeout_seconds=30, transport=transport)
    try:
        started = time.monotonic()
        with pytest.raises(ConnectError):
            client.create_reader("t", MessageId.earliest)
        assert time.monotonic() - started < 2.5
    finally:
        client.close()
        silent.close()
