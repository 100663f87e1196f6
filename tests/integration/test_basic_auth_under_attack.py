"""Issue 30 item 3 against a real ``pulsarlike broker`` process with Basic authentication: a client failing
logins in a loop holds up no one (passwords are hashed off the event loop: another client's PING round trip
stays under 100 ms, its correct logins pass throughout), and its address is refused at once after
``basicAuthMaxFailuresPerAddress`` failures until ``basicAuthBlockSeconds`` have passed (``ERROR
(AuthenticationError)`` on the binary protocol, 429 on the admin REST API), while other addresses log in.

The attacked user's hash is ``$6$rounds=40000$``: checking a 500-byte password against it costs ~100-200 ms,
which on the event loop would have held every PING that long. The failing clients connect from 127.0.0.2 and
127.0.0.3 (Linux routes all of 127.0.0.0/8 to loopback), everyone else from 127.0.0.1."""
from __future__ import annotations

import base64
import http.client
import threading
import time

import pytest

from broker_core.protocol import pulsar_commands_pb2 as cmd
from broker_core.security.password_hashes import md5_crypt, sha_crypt
from tests.brokers import BrokerProcess
from tests.loop_stalls import LoopProbe
from tests.pulsar_wire import RawPulsar, frame
from tests.waiting import wait_until

T = cmd.BaseCommand
MAX_FAILURES, BLOCK_S = 8, 3
PASSWORDS = {"root": "r00t-secret", "carol": "carol-secret", "alice": "alice-secret"}
WRONG = "w" * 500
BINARY_ATTACKER, HTTP_ATTACKER = "127.0.0.2", "127.0.0.3"
REFUSED, BLOCKED = "unknown user or wrong password", "failed logins from this address"


@pytest.fixture(scope="module")
def attacked(tmp_path_factory):
    folder = tmp_path_factory.mktemp("attacked")
    users = folder / ".htpasswd"
    users.write_text(f"root:{md5_crypt(PASSWORDS['root'].encode(), b'rootsalt', '$apr1$')}\n"
                     f"carol:{md5_crypt(PASSWORDS['carol'].encode(), b'carolsal', '$apr1$')}\n"
                     f"alice:{sha_crypt(PASSWORDS['alice'].encode(), 'rounds=40000$attackedsalt', '$6$')}\n")
    settings = {"authenticationEnabled": "true", "authenticationProviders": "basic", "basicAuthConf": str(users),
                "anonymousUserRole": "probe",  # the loop probe connects without credentials
                "basicAuthMaxFailuresPerAddress": str(MAX_FAILURES), "basicAuthFailureWindowSeconds": "60",
                "basicAuthBlockSeconds": str(BLOCK_S), "webServicePort": "0"}
    process = BrokerProcess(folder / "data", *[a for k, v in settings.items() for a in ("--set", f"{k}={v}")],
                            "--log-level", "WARNING").start()
    try:
        line = process.proc.stdout.readline().strip()
        assert line.startswith("pulsarlike metrics on http://"), line
        process.web = line.rsplit(" ", 1)[1].removesuffix("/metrics").removeprefix("http://")
        yield process
    finally:
        process.stop()


def connect(address: str, user: str, password: str, source: str = "127.0.0.1") -> cmd.BaseCommand:
    """The broker's answer to a new connection's CONNECT with Basic credentials."""
    with RawPulsar(address, timeout=30, source=source) as raw:
        raw.send(frame(T(type=T.CONNECT, connect=cmd.CommandConnect(
            client_version="attack-test", protocol_version=20, auth_method_name="basic",
            auth_data=f"{user}:{password}".encode()))))
        return raw.read()[0]


def refusal(answer: cmd.BaseCommand) -> str:
    assert answer.type == T.ERROR and answer.error.error == cmd.AuthenticationError, answer
    return REFUSED if REFUSED in answer.error.message else BLOCKED if BLOCKED in answer.error.message else \
        answer.error.message


def admin_status(web: str, user: str, password: str, source: str = "127.0.0.1") -> int:
    host, port = web.rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=30, source_address=(source, 0))
    try:
        secret = base64.b64encode(f"{user}:{password}".encode()).decode()
        conn.request("GET", "/admin/v2/tenants", headers={"Authorization": f"Basic {secret}"})
        return conn.getresponse().status
    finally:
        conn.close()


class GoodLogins:
    """Correct logins from 127.0.0.1, one after the other, on a thread while the block runs: each new
    connection's CONNECT as root must be answered CONNECTED."""

    def __init__(self, address: str) -> None:
        self.address = address
        self.answers: list[int] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.answers.append(connect(self.address, "root", PASSWORDS["root"]).type)
            self._stop.wait(0.05)

    def __enter__(self) -> "GoodLogins":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(30)


def test_a_client_failing_logins_holds_up_no_one_and_is_refused_at_once_until_the_block_time_passed(attacked):
    address = attacked.address
    with LoopProbe(address) as probe, GoodLogins(address) as good:
        answers = [refusal(connect(address, "alice", WRONG, BINARY_ATTACKER)) for _ in range(MAX_FAILURES)]
        blocked_at = time.monotonic()
        answers += [refusal(connect(address, "alice", WRONG, BINARY_ATTACKER)) for _ in range(20)]
        assert answers == [REFUSED] * MAX_FAILURES + [BLOCKED] * 20
        # blocked, even the right password; other addresses log in, with credentials hashed now
        assert refusal(connect(address, "alice", PASSWORDS["alice"], BINARY_ATTACKER)) == BLOCKED
        assert connect(address, "carol", PASSWORDS["carol"]).type == T.CONNECTED
        assert admin_status(attacked.web, "carol", PASSWORDS["carol"]) == 200
        assert admin_status(attacked.web, "root", PASSWORDS["root"], BINARY_ATTACKER) == 429
        back = wait_until(lambda: connect(address, "alice", PASSWORDS["alice"], BINARY_ATTACKER).type == T.CONNECTED,
                          timeout_s=BLOCK_S + 10, interval_s=0.2)
        let_back_after = time.monotonic() - blocked_at
    assert back and BLOCK_S - 0.5 < let_back_after < BLOCK_S + 10, let_back_after
    assert good.answers and set(good.answers) == {T.CONNECTED}, good.answers
    assert probe.pings > 20 and probe.worst_ms < 100, probe


def test_an_admin_api_client_failing_logins_gets_401_then_429_while_others_get_200(attacked):
    statuses = [admin_status(attacked.web, "alice", WRONG, HTTP_ATTACKER) for _ in range(MAX_FAILURES + 3)]
    assert statuses == [401] * MAX_FAILURES + [429] * 3
    assert admin_status(attacked.web, "root", PASSWORDS["root"]) == 200
    assert connect(attacked.address, "root", PASSWORDS["root"], HTTP_ATTACKER).type == T.ERROR  # every port
    assert wait_until(lambda: admin_status(attacked.web, "alice", PASSWORDS["alice"], HTTP_ATTACKER) == 200,
                      timeout_s=BLOCK_S + 10, interval_s=0.2)
