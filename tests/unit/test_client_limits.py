"""Per-client limits (broker_core/net/client_limits.py): one client cannot take every stream, call or
connection of the broker; a refusal is a retriable TooManyRequests that counts nothing."""
from __future__ import annotations

import logging

import pytest

from broker_core.clock import FakeClock
from broker_core.config import BrokerConfig
from broker_core.errors import TooManyRequests
from broker_core.log_limits import LOG_EVERY_MS
from broker_core.net.client_limits import ClientLimits, Limits, peer_host

A = "ipv4:10.0.0.1:5000"
A2 = "ipv4:10.0.0.1:5001"  # the same host, another connection
B = "ipv4:10.0.0.2:5000"


def test_a_connection_over_its_stream_limit_is_refused_while_another_is_served() -> None:
    limits = ClientLimits(Limits(max_streams_per_connection=2))
    limits.admit(A, stream=True)
    limits.admit(A, stream=True)
    with pytest.raises(TooManyRequests) as refused:
        limits.admit(A, stream=True)
    assert refused.value.retriable and refused.value.limit == "maxStreamsPerConnection"
    assert refused.value.allowed == 2
    limits.admit(B, stream=True)
    assert limits.streams(A) == 2 and limits.streams(B) == 1


def test_a_closed_stream_makes_room_for_the_next() -> None:
    limits = ClientLimits(Limits(max_streams_per_connection=1))
    with limits.call(A, stream=True):
        with pytest.raises(TooManyRequests):
            limits.admit(A, stream=True)
    limits.admit(A, stream=True)


def test_unary_calls_are_limited_per_connection_and_broker_wide() -> None:
    limits = ClientLimits(Limits(max_requests=3, max_requests_per_connection=2))
    limits.admit(A, stream=False)
    limits.admit(A, stream=False)
    with pytest.raises(TooManyRequests, match="maxConcurrentRequestsPerConnection=2"):
        limits.admit(A, stream=False)
    limits.admit(B, stream=False)
    with pytest.raises(TooManyRequests, match="maxConcurrentLookupRequest=3"):
        limits.admit(B, stream=False)
    limits.release(A, stream=False)
    limits.admit(B, stream=False)
    assert limits.requests == 3


def test_streams_and_unary_calls_have_separate_limits() -> None:
    limits = ClientLimits(Limits(max_streams_per_connection=1, max_requests_per_connection=1))
    limits.admit(A, stream=True)
    limits.admit(A, stream=False)


def test_connections_are_limited_per_ip_and_in_total() -> None:
    limits = ClientLimits(Limits(max_connections=2, max_connections_per_ip=1))
    limits.admit(A, stream=True)
    with pytest.raises(TooManyRequests, match="brokerMaxConnectionsPerIp=1"):
        limits.admit(A2, stream=True)
    limits.admit(A, stream=True)  # more calls on a counted connection are no new connection
    limits.admit(B, stream=False)
    with pytest.raises(TooManyRequests, match="brokerMaxConnections=2"):
        limits.admit("ipv4:10.0.0.3:5000", stream=False)
    assert limits.connections == 2


def test_a_connection_stops_counting_once_its_last_call_ends() -> None:
    limits = ClientLimits(Limits(max_connections_per_ip=1))
    limits.admit(A, stream=True)
    limits.admit(A, stream=False)
    limits.release(A, stream=True)
    limits.release(A, stream=False)
    limits.admit(A2, stream=True)
    assert limits.connections == 1


def test_a_refused_call_counts_nothing() -> None:
    limits = ClientLimits(Limits(max_requests=1))
    limits.admit(A, stream=False)
    with pytest.raises(TooManyRequests):
        limits.admit(B, stream=False)
    assert limits.connections == 1 and limits.requests == 1


def test_zero_means_no_limit() -> None:
    limits = ClientLimits(Limits())
    for _ in range(1000):
        limits.admit(A, stream=True)
        limits.admit(A, stream=False)


def test_refusals_are_logged_at_most_once_per_limit_per_interval(caplog: pytest.LogCaptureFixture) -> None:
    clock = FakeClock()
    limits = ClientLimits(Limits(max_requests=1), clock)
    limits.admit(A, stream=False)
    with caplog.at_level(logging.WARNING, logger="broker_core.net.client_limits"):
        for _ in range(5):
            with pytest.raises(TooManyRequests):
                limits.admit(B, stream=False)
        clock.advance(LOG_EVERY_MS)
        with pytest.raises(TooManyRequests):
            limits.admit(B, stream=False)
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 2
    assert "limit=maxConcurrentLookupRequest" in lines[0] and "occurrences=1" in lines[0]
    assert "occurrences=5" in lines[1]  # the four not logged, and this one


def test_peer_host_drops_the_port() -> None:
    assert peer_host("ipv4:127.0.0.1:40000") == "ipv4:127.0.0.1"
    assert peer_host("ipv6:[::1]:40000") == "ipv6:[::1]"
    assert peer_host("unix:/tmp/sock") == "unix:/tmp/sock"


def test_default_limits_leave_room_for_hundreds_of_consumers_per_client() -> None:
    limits = Limits.from_config(BrokerConfig())
    assert limits.max_streams_per_connection >= 1000
    assert limits.max_connections == 0 and limits.max_connections_per_ip == 0
