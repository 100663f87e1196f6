"""Failed Basic logins per client address (issue 30 item 3; Pulsar has no such limit): N refusals within the
window block the address for the block time, a blocked address is refused at once with nothing hashed, other
addresses go on. An injected clock, no sleeps."""
from __future__ import annotations

import logging

import pytest

from broker_core.clock import FakeClock
from broker_core.config import BrokerConfig
from broker_core.errors import AuthenticationError, TooManyRequests
from broker_core.net.peers import ClientIdentity
from broker_core.security import Security, basic
from broker_core.security.basic import BasicAuthentication, parse_htpasswd
from broker_core.security.failed_logins import FailedLogins, FailureLimits, client_address
from broker_core.security.password_hashes import md5_crypt

LIMITS = FailureLimits(max_failures=3, window_ms=60_000, block_ms=30_000)
ALICE = f"alice:{md5_crypt(b'pw', b'saltsalt', '$apr1$')}"
ATTACKER, OTHER = ClientIdentity("ipv4:10.0.0.66:4000"), ClientIdentity("ipv4:10.0.0.7:5000")


def provider(clock: FakeClock, limits: FailureLimits = LIMITS) -> BasicAuthentication:
    return BasicAuthentication(parse_htpasswd(ALICE), limits, clock)


def fail(users: BasicAuthentication, identity: ClientIdentity = ATTACKER, password: bytes = b"wrong") -> None:
    with pytest.raises(AuthenticationError, match="unknown user or wrong password"):
        users.authenticate(b"alice:" + password, identity)


def test_n_failures_within_the_window_block_the_address_for_the_block_time():
    clock = FakeClock()
    users = provider(clock)
    for _ in range(3):
        fail(users)
        clock.advance(10_000)
    with pytest.raises(TooManyRequests, match="3 failed logins from this address within 60 s") as refused:
        users.authenticate(b"alice:pw", ATTACKER)  # even the right password, while blocked
    assert refused.value.fields["limit"] == "basicAuthMaxFailuresPerAddress" and refused.value.retriable
    clock.advance(19_999)  # blocked at t=20 s, for 30 s
    with pytest.raises(TooManyRequests):
        users.authenticate(b"alice:pw", ATTACKER)
    clock.advance(1)
    assert users.authenticate(b"alice:pw", ATTACKER).role == "alice"


def test_a_blocked_address_is_refused_at_once_with_nothing_hashed(monkeypatch):
    clock = FakeClock()
    users = provider(clock)
    for _ in range(3):
        fail(users)
    monkeypatch.setattr(basic, "verify", lambda *a: pytest.fail("a blocked address's password was hashed"))
    for password in (b"pw", b"guess"):
        with pytest.raises(TooManyRequests):
            users.authenticate(b"alice:" + password, ATTACKER)


def test_other_addresses_are_not_affected_by_a_blocked_one():
    clock = FakeClock()
    users = provider(clock)
    for _ in range(3):
        fail(users)
    assert users.authenticate(b"alice:pw", OTHER).role == "alice"
    fail(users, OTHER)  # and their own failures count from none
    assert users.authenticate(b"alice:pw", OTHER).role == "alice"


def test_failures_further_apart_than_the_window_never_block():
    clock = FakeClock()
    users = provider(clock)
    for _ in range(10):
        fail(users)
        clock.advance(30_001)  # at most two within any 60 s
    assert users.authenticate(b"alice:pw", ATTACKER).role == "alice"


def test_attempts_while_blocked_do_not_extend_the_block_and_counting_starts_again_after_it():
    clock = FakeClock()
    users = provider(clock)
    for _ in range(3):
        fail(users)
    for _ in range(29):
        clock.advance(1_000)
        with pytest.raises(TooManyRequests):
            users.authenticate(b"alice:guess", ATTACKER)
    clock.advance(1_000)
    fail(users)
    fail(users)  # two failures after the block: not blocked yet
    assert users.authenticate(b"alice:pw", ATTACKER).role == "alice"


def test_a_port_is_not_an_address_and_ipv6_counts_per_64():
    assert client_address("ipv4:10.0.0.66:4000") == client_address("ipv4:10.0.0.66:4001") == "ipv4:10.0.0.66"
    assert client_address("ipv6:[2001:db8::1]:4000") == client_address("ipv6:[2001:db8::ffff:1]:5") \
        == "ipv6:[2001:db8::]/64"
    assert client_address("ipv6:[2001:db8:0:1::1]:4000") != client_address("ipv6:[2001:db8::1]:4000")
    clock = FakeClock()
    users = provider(clock)
    for port in range(3):
        fail(users, ClientIdentity(f"ipv6:[2001:db8::{port + 1}]:{4000 + port}"))
    with pytest.raises(TooManyRequests):
        users.authenticate(b"alice:pw", ClientIdentity("ipv6:[2001:db8::99]:1"))


def test_checks_under_way_count_so_a_burst_gets_no_more_than_n_passwords_hashed():
    failed = FailedLogins(LIMITS, FakeClock())
    for key in (b"1", b"2", b"3"):
        failed.admit("a", key)
        failed.checking("a", key)
    with pytest.raises(TooManyRequests, match="3 logins from this address are being checked"):
        failed.admit("a", b"4")
    failed.admit("a", b"2")  # the same credentials again share the check under way
    failed.admit("b", b"4")  # another address
    failed.checked("a", b"1", failed=False)
    failed.admit("a", b"4")


def test_the_same_credentials_checked_twice_at_once_count_as_one_check():
    failed = FailedLogins(LIMITS, FakeClock())
    failed.checking("a", b"1")
    failed.checking("a", b"1")
    failed.admit("a", b"2")
    failed.admit("a", b"3")


def test_no_limit_when_max_failures_is_zero():
    clock = FakeClock()
    users = provider(clock, FailureLimits(max_failures=0))
    for _ in range(50):
        fail(users)
    assert users.authenticate(b"alice:pw", ATTACKER).role == "alice"


def test_remembered_addresses_are_bounded_oldest_first():
    clock = FakeClock()
    failed = FailedLogins(FailureLimits(max_failures=1, block_ms=60_000), clock, max_addresses=100)
    for i in range(250):
        failed.checking(f"ipv4:10.0.0.{i}", b"k")
        failed.checked(f"ipv4:10.0.0.{i}", b"k", failed=True)
    assert not failed.blocked("ipv4:10.0.0.0") and failed.blocked("ipv4:10.0.0.249")
    assert sum(failed.blocked(f"ipv4:10.0.0.{i}") for i in range(250)) == 100


def test_a_block_is_one_warning_line_and_refusals_while_blocked_are_counted_not_each_logged(caplog):
    clock = FakeClock()
    users = provider(clock)
    with caplog.at_level(logging.WARNING, logger="broker_core.security.failed_logins"):
        for _ in range(3):
            fail(users)
        for _ in range(100):
            with pytest.raises(TooManyRequests):
                users.authenticate(b"alice:guess", ATTACKER)
    blocked = [r.getMessage() for r in caplog.records if "event=authentication_blocked" in r.getMessage()]
    refused = [r.getMessage() for r in caplog.records if "event=authentication_refused" in r.getMessage()]
    assert blocked == ["event=authentication_blocked peer=ipv4:10.0.0.66 method=basic failures=3 window_s=60 "
                       "block_s=30 occurrences=1"]
    assert len(refused) == 1 and "wrong" not in refused[0] and "guess" not in refused[0]


def test_the_limits_are_read_from_the_broker_configuration(tmp_path):
    users = tmp_path / "users"
    users.write_text(ALICE + "\n")
    clock = FakeClock()
    security = Security(BrokerConfig(authenticationEnabled=True, authenticationProviders="basic",
                                     basicAuthConf=str(users), basicAuthMaxFailuresPerAddress=2,
                                     basicAuthFailureWindowSeconds=5, basicAuthBlockSeconds=7), clock=clock)
    for _ in range(2):
        with pytest.raises(AuthenticationError):
            security.authenticate("basic", b"alice:wrong", ATTACKER)
    with pytest.raises(TooManyRequests):  # not turned into an AuthenticationError: HTTP answers 429
        security.authenticate("basic", b"alice:pw", ATTACKER)
    clock.advance(7_000)
    assert security.authenticate("basic", b"alice:pw", ATTACKER).role == "alice"
    assert BrokerConfig().basicAuthMaxFailuresPerAddress == 10
