"""Issue 30 item 3: a Basic login's refusal does not tell whether the user exists, and its hash is computed
off the event loop. An unknown user's password is hashed against a decoy of the same scheme, rounds and
salt length as a user's (one per cost in the file, picked per name as users are spread over them); the
event loop's path awaits a worker thread. Deterministic checks of what is hashed and where, no timing."""
from __future__ import annotations

import asyncio
import threading
import warnings
from collections import Counter

import pytest

from broker_core.errors import AuthenticationError
from broker_core.net.peers import ClientIdentity
from broker_core.security import basic, password_hashes
from broker_core.security.basic import BasicAuthentication, parse_htpasswd
from broker_core.security.decoys import Decoys
from broker_core.security.failed_logins import FailureLimits
from broker_core.security.password_checks import PasswordChecks
from broker_core.security.password_hashes import HashCost, cost_of, decoy, md5_crypt, scheme_of, sha_crypt, verify

ME = ClientIdentity("ipv4:127.0.0.1:5000")
NO_LIMIT = FailureLimits(max_failures=0)

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    import crypt as libc_crypt

STORED = {
    "apr1": md5_crypt(b"pw", b"8charsal", "$apr1$"),
    "md5": libc_crypt.crypt("pw", "$1$saltsalt"),
    "sha256": libc_crypt.crypt("pw", "$5$sixteencharsalts"),
    "sha512": libc_crypt.crypt("pw", "$6$sixteencharsalts"),
    "sha256-rounds": libc_crypt.crypt("pw", "$5$rounds=1200$short"),
    "sha512-rounds": libc_crypt.crypt("pw", "$6$rounds=20000$twelve-chars"),
    "des": libc_crypt.crypt("pw", "ab"),
}
"""One stored hash of each format and cost htpasswd files hold (all for the password ``pw``)."""


@pytest.mark.parametrize("kind, cost", [
    ("apr1", HashCost("$apr1$", 1000, 8)), ("md5", HashCost("$1$", 1000, 8)),
    ("sha256", HashCost("$5$", 5000, 16)), ("sha512", HashCost("$6$", 5000, 16)),
    ("sha256-rounds", HashCost("$5$", 1200, 5)), ("sha512-rounds", HashCost("$6$", 20000, 12)),
    ("des", HashCost("des", 25, 2))])
def test_the_cost_of_a_hash_is_its_scheme_rounds_and_salt_length(kind, cost):
    assert cost_of(STORED[kind]) == cost


@pytest.mark.parametrize("kind", list(STORED))
def test_a_decoy_is_a_well_formed_hash_of_the_same_cost_that_the_password_does_not_match(kind):
    cost = cost_of(STORED[kind])
    made = decoy(cost)
    assert scheme_of(made) == cost.scheme and cost_of(made) == cost
    assert not verify("pw", made)
    assert decoy(cost) != made  # a random salt and digest each time


def test_rounds_beyond_the_bounds_cost_what_the_check_clamps_them_to():
    assert cost_of(sha_crypt(b"pw", "rounds=10$salt", "$5$")).rounds == password_hashes.ROUNDS_MIN
    assert cost_of(STORED["sha512"]).rounds == password_hashes.ROUNDS_DEFAULT


@pytest.mark.parametrize("kind", list(STORED))
def test_a_file_of_one_format_checks_every_unknown_user_against_a_decoy_of_that_cost(kind):
    decoys = Decoys({"alice": STORED[kind], "bob": STORED[kind]})
    assert decoys.costs == {cost_of(STORED[kind]): 2}
    assert {decoys.cost_for(f"user-{i}") for i in range(200)} == {cost_of(STORED[kind])}
    assert cost_of(decoys.for_name("nobody")) == cost_of(STORED[kind])


def test_a_mixed_file_spreads_unknown_users_over_its_costs_as_its_users_are():
    users = {"a": STORED["sha512"], "b": libc_crypt.crypt("x", "$6$othersixteensalt"),
             "c": libc_crypt.crypt("y", "$6$thirdsixteensalt"), "r": STORED["apr1"]}
    decoys = Decoys(users)
    assert decoys.costs == {HashCost("$6$", 5000, 16): 3, HashCost("$apr1$", 1000, 8): 1}
    spread = Counter(decoys.cost_for(f"user-{i}") for i in range(4000))
    assert 0.7 < spread[HashCost("$6$", 5000, 16)] / 4000 < 0.8  # 3 users in 4


def test_a_name_gets_the_same_decoy_cost_every_time_and_at_every_start():
    users = {"a": STORED["sha512-rounds"], "r": STORED["apr1"], "d": STORED["sha256"]}
    first, again = Decoys(users), Decoys(dict(reversed(users.items())))
    names = [f"user-{i}" for i in range(300)]
    assert [first.cost_for(n) for n in names] == [again.cost_for(n) for n in names]
    assert len({first.cost_for(n) for n in names}) == 3
    assert first.for_name("nobody") == first.for_name("nobody")


@pytest.fixture
def hashed(monkeypatch) -> list[tuple]:
    """What each check hashed: (function, magic, rounds, salt length, password)."""
    calls: list[tuple] = []
    real_md5, real_sha = password_hashes.md5_crypt, password_hashes.sha_crypt

    def md5_spy(password, salt, magic, pause=None):
        calls.append(("md5_crypt", magic, password_hashes.MD5_ROUNDS, len(salt[:8]), password))
        return real_md5(password, salt, magic, pause)

    def sha_spy(password, salt_field, magic, pause=None):
        rounds, _, salt = password_hashes._sha_salt_field(salt_field)
        calls.append(("sha_crypt", magic, rounds, len(salt), password))
        return real_sha(password, salt_field, magic, pause)

    monkeypatch.setattr(password_hashes, "md5_crypt", md5_spy)
    monkeypatch.setattr(password_hashes, "sha_crypt", sha_spy)
    return calls


@pytest.mark.parametrize("kind", ["apr1", "md5", "sha256", "sha512", "sha256-rounds", "sha512-rounds"])
def test_an_unknown_user_is_hashed_by_the_same_function_at_the_same_cost_as_a_known_one(kind, hashed):
    users = BasicAuthentication({"alice": STORED[kind], "bob": STORED[kind]}, limits=NO_LIMIT)
    for credentials in (b"alice:wrong", b"nobody:wrong", b"carol-" + b"x" * 40 + b":wrong"):
        with pytest.raises(AuthenticationError, match="unknown user or wrong password"):
            users.authenticate(credentials, ME)
    known, *unknown = hashed
    assert len(unknown) == 2 and all(call == known for call in unknown)


def test_in_a_mixed_file_an_unknown_user_costs_what_some_user_costs(hashed):
    users = BasicAuthentication({"alice": STORED["sha512-rounds"], "root": STORED["apr1"]}, limits=NO_LIMIT)
    for i in range(20):
        with pytest.raises(AuthenticationError):
            users.authenticate(f"user-{i}:wrong".encode(), ME)
    costs = {call[:4] for call in hashed}
    assert costs == {("sha_crypt", "$6$", 20000, 12), ("md5_crypt", "$apr1$", 1000, 8)}


def test_the_event_loop_path_hashes_on_a_worker_thread_and_compares_in_constant_time(monkeypatch):
    threads: list[str] = []
    compared: list[bytes] = []
    real_verify, real_compare = password_hashes.verify, password_hashes.hmac.compare_digest

    def verify_spy(password, stored, pause=None):
        threads.append(threading.current_thread().name)
        return real_verify(password, stored, pause)

    def compare_spy(a, b):
        compared.append(b)
        return real_compare(a, b)

    monkeypatch.setattr(basic, "verify", verify_spy)
    monkeypatch.setattr(password_hashes.hmac, "compare_digest", compare_spy)
    users = BasicAuthentication(parse_htpasswd(f"alice:{STORED['sha512']}"), limits=NO_LIMIT)

    async def logins() -> list:
        results = []
        for credentials in (b"alice:pw", b"alice:wrong", b"nobody:pw"):
            try:
                results.append((await users.authenticate_async(credentials, ME)).role)
            except AuthenticationError as exc:
                results.append(exc.fields["reason"])
        return results

    assert asyncio.run(logins()) == ["alice", "unknown user or wrong password", "unknown user or wrong password"]
    assert len(threads) == 3 and all(name.startswith("password-check") for name in threads)
    assert len(compared) == 3 and all(stored.startswith(b"$6$") for stored in compared)


def test_logins_with_the_same_credentials_at_once_share_one_hash(monkeypatch):
    release = threading.Event()
    hashes: list[str] = []

    def slow_verify(password, stored, pause=None):
        hashes.append(password)
        release.wait(10)
        return verify(password, stored)

    monkeypatch.setattr(basic, "verify", slow_verify)
    users = BasicAuthentication(parse_htpasswd(f"alice:{STORED['apr1']}"), limits=NO_LIMIT)

    async def together() -> list:
        logins = [asyncio.ensure_future(users.authenticate_async(b"alice:pw", ClientIdentity(f"ipv4:10.0.0.{i}:1")))
                  for i in range(5)]
        await asyncio.sleep(0)
        release.set()
        return [(await login).role for login in logins]

    assert asyncio.run(together()) == ["alice"] * 5
    assert hashes == ["pw"]


def test_a_client_that_hangs_up_before_its_answer_still_has_its_failure_counted(monkeypatch):
    release = threading.Event()
    real_verify = basic.verify
    monkeypatch.setattr(basic, "verify", lambda password, stored, pause: release.wait(10) and real_verify(password,
                                                                                                          stored))
    checks = PasswordChecks()
    users = BasicAuthentication(parse_htpasswd(f"alice:{STORED['apr1']}"), FailureLimits(max_failures=2),
                                checks=checks)

    async def scenario() -> str:
        gone = asyncio.ensure_future(users.authenticate_async(b"alice:guess-1", ME))
        await asyncio.sleep(0)
        gone.cancel()  # the connection closed while its password was being hashed
        with pytest.raises(AuthenticationError):
            waited = asyncio.ensure_future(users.authenticate_async(b"alice:guess-2", ME))
            release.set()
            await waited
        await checks.idle()
        try:
            await users.authenticate_async(b"alice:guess-3", ME)
        except Exception as exc:  # noqa: BLE001
            return type(exc).__name__
        return "admitted"

    assert asyncio.run(scenario()) == "TooManyRequests"  # both failures counted: blocked
