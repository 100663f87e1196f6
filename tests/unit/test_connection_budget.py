"""Connection limits at accept (broker_core.net.connection_budget): per client address, in all, and what
the open-file limit leaves; refusals logged one line per limit and interval with their count; the web service
port's budget apart from the broker port's."""
from __future__ import annotations

import logging
import resource

from broker_core.clock import FakeClock
from broker_core.config import BrokerConfig
from broker_core.net.connection_budget import (FD_RESERVE, MAX_OPEN_FILES, ConnectionBudget, client_host,
                                                   descriptor_budget, raise_open_file_limit)

NO_FILE_LIMIT = 0


def budget(total: int = 0, per_ip: int = 0, clock: FakeClock | None = None, **kwargs) -> ConnectionBudget:
    return ConnectionBudget(total, per_ip, 30.0, file_limit=kwargs.pop("file_limit", NO_FILE_LIMIT),
                            clock=clock or FakeClock(), **kwargs)


def test_a_client_address_gets_its_limit_and_another_address_still_gets_in():
    b = budget(per_ip=2)
    assert b.admit("10.0.0.5", 0.0) and b.admit("10.0.0.5", 0.0)
    assert b.admit("10.0.0.5", 0.0) is None
    assert b.admit("10.0.0.6", 0.0) is not None
    assert b.connections("10.0.0.5") == 2 and b.open == 3


def test_the_total_limit_refuses_every_address_once_reached():
    b = budget(total=2)
    assert b.admit("10.0.0.5", 0.0) and b.admit("10.0.0.6", 0.0)
    assert b.admit("10.0.0.7", 0.0) is None


def test_a_released_place_is_free_again_and_releasing_twice_frees_it_once():
    b = budget(total=1)
    first = b.admit("10.0.0.5", 0.0)
    first.release()
    first.release()
    assert b.open == 0 and b.connections("10.0.0.5") == 0
    assert b.admit("10.0.0.5", 0.0) is not None
    assert b.admit("10.0.0.6", 0.0) is None


def test_the_handshake_deadline_counts_from_the_accept():
    assert budget().admit("10.0.0.5", 100.0).deadline == 130.0


def test_an_ipv4_client_on_a_dual_stack_socket_counts_as_itself():
    assert client_host("::ffff:10.0.0.5") == "10.0.0.5"
    assert client_host("::1") == "::1"
    b = budget(per_ip=1)
    assert b.admit("10.0.0.5", 0.0)
    assert b.admit("::ffff:10.0.0.5", 0.0) is None


def test_the_open_file_limit_caps_the_total_keeping_a_reserve_for_storage():
    assert descriptor_budget(0, 256, 20_000) == (20_000 - 256 - FD_RESERVE, "open file limit (ulimit -n)")
    assert descriptor_budget(1000, 256, 20_000) == (1000, "brokerMaxConnections")
    assert descriptor_budget(50_000, 256, 20_000)[0] == 20_000 - 256 - FD_RESERVE
    assert descriptor_budget(0, 256, 0) == (0, "brokerMaxConnections")  # no file limit: none here either
    assert descriptor_budget(0, 256, 256)[0] == 64  # a tiny limit still lets a few clients in


def test_a_process_whose_file_limit_is_reached_refuses_naming_the_open_file_limit(caplog):
    b = budget(file_limit=256 + FD_RESERVE + 64, max_open_files=256)
    places = [b.admit(f"10.0.{i // 250}.{i % 250}", 0.0) for i in range(64)]
    assert all(places)
    with caplog.at_level(logging.WARNING, logger="broker_core.net.connection_budget"):
        assert b.admit("10.1.0.1", 0.0) is None
    assert "limit=open file limit (ulimit -n) allowed=64" in caplog.text


def test_refusals_are_one_line_per_limit_and_interval_with_their_count(caplog):
    clock = FakeClock()
    b = budget(per_ip=1, clock=clock)
    b.admit("10.0.0.5", 0.0)
    with caplog.at_level(logging.WARNING, logger="broker_core.net.connection_budget"):
        for _ in range(1000):
            assert b.admit("10.0.0.5", 0.0) is None
        assert len(caplog.records) == 1
        assert "limit=brokerMaxConnectionsPerIp allowed=1 peer=10.0.0.5" in caplog.records[0].getMessage()
        clock.advance(10_000)
        assert b.admit("10.0.0.5", 0.0) is None
    assert len(caplog.records) == 2 and "occurrences=1000" in caplog.records[1].getMessage()


def test_the_web_port_has_a_budget_of_its_own_refusals_naming_its_setting(caplog):
    config = BrokerConfig(brokerMaxConnections=2, maxHttpServerConnections=1)
    broker_port, web_port = ConnectionBudget.from_config(config), ConnectionBudget.for_web(config)
    assert web_port.admit("10.0.0.5", 0.0) is not None
    with caplog.at_level(logging.WARNING, logger="broker_core.net.connection_budget"):
        assert web_port.admit("10.0.0.6", 0.0) is None
    assert "limit=maxHttpServerConnections allowed=1" in caplog.text
    assert broker_port.admit("10.0.0.5", 0.0) and broker_port.admit("10.0.0.6", 0.0)  # the web port took none
    assert descriptor_budget(0, 256, 0, "maxHttpServerConnections") == (0, "maxHttpServerConnections")


def test_the_soft_open_file_limit_is_raised_to_the_hard_one():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(soft, 512), hard))
    try:
        raised = raise_open_file_limit()
        assert raised == (MAX_OPEN_FILES if hard == resource.RLIM_INFINITY else min(hard, MAX_OPEN_FILES))
        assert resource.getrlimit(resource.RLIMIT_NOFILE)[0] == raised
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
