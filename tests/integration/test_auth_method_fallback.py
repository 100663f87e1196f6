"""An authentication method the broker does not know, on every front end, as Pulsar treats it: with
``anonymousUserRole`` set the client is that role and authorization decides (pulsar-client-python's
``test_basic_auth_method``: ``AuthenticationBasic(user, password, 'unknown')`` fails with
``AuthorizationError``); without it, ``AuthenticationError`` answered at once, never a timeout.

The broker process is configured as pulsar-client-python's test broker (``tests/test-conf/standalone-ssl.conf``
and ``build-support/start-test-service-inside-container.sh``): Basic users from its ``.htpasswd``
(``admin:123456``), authorization on, ``superUserRoles=localhost,superUser,admin``,
``anonymousUserRole=anonymous``; ``public/default`` grants ``anonymous`` produce and consume, ``private/auth``
only ``token-principal``."""
from __future__ import annotations

import time
import urllib.error
import urllib.request
import uuid

import pulsar
import pytest

from broker_core.protocol import pulsar_commands_pb2 as cmd
from connector import Admin, AuthenticationBasic, AuthenticationError, AuthorizationError, Client, InitialPosition
from connector.client.security.authentication import Authentication
from tests.brokers import BrokerProcess
from tests.pulsar_wire import RawPulsar, frame
from tests.security_certs import as_args

ADMIN_LINE = "admin:$apr1$FG4AO6aX$KGYPuMoLUou3i6vUkPUUf."
"""pulsar-client-python's ``tests/test-conf/.htpasswd``: ``admin`` / ``123456``."""
BASIC_PROVIDER = "org.apache.pulsar.broker.authentication.AuthenticationProviderBasic"
QUIET = pulsar.ConsoleLogger(pulsar.LoggerLevel.Error)
T = cmd.BaseCommand
PROMPTLY_S = 5.0
"""A refusal or an authorization error comes back well within this; the clients' timeouts are 30 s."""


class Digest(Authentication):
    """An ``authorization`` scheme no provider of the broker takes."""

    def authorization(self) -> str:
        return 'Digest username="admin", realm="pulsar", response="0"'


class Broker:
    def __init__(self, process: BrokerProcess, web: str) -> None:
        self.process = process
        self.url = process.service_url
        self.web = web

    def http(self, path: str, authorization: str | None) -> int:
        request = urllib.request.Request(self.web + path)
        if authorization:
            request.add_header("Authorization", authorization)
        try:
            with urllib.request.urlopen(request, timeout=30) as reply:
                return reply.status
        except urllib.error.HTTPError as err:
            return err.code


def _start(folder, anonymous_role: str | None) -> Broker:
    users = folder / ".htpasswd"
    users.write_text(ADMIN_LINE + "\n")
    settings = {"webServicePort": "0", "authenticationEnabled": "true", "authenticationProviders": BASIC_PROVIDER,
                "authorizationEnabled": "true", "superUserRoles": "localhost,superUser,admin",
                "basicAuthConf": f"file://{users}", "basicAuthMaxFailuresPerAddress": "0"}
    if anonymous_role is not None:
        settings["anonymousUserRole"] = anonymous_role
    process = BrokerProcess(folder / "data", *as_args(settings)).start()
    web = ""
    while not web:
        line = process.proc.stdout.readline().strip()
        if not line:
            process.stop()
            raise AssertionError("the broker printed no web service port")
        if line.startswith("pulsarlike metrics on http://"):
            web = line.rsplit(" ", 1)[1].removesuffix("/metrics")
    admin = Admin(process.service_url, authentication=AuthenticationBasic("admin", "123456"))
    try:
        admin.grant_namespace_permission("public/default", "anonymous", ["produce", "consume"])
        admin.create_tenant("private", admin_roles=[])
        admin.create_namespace("private/auth")
        admin.grant_namespace_permission("private/auth", "token-principal", ["produce", "consume"])
    finally:
        admin.close()
    return Broker(process, web)


@pytest.fixture(scope="module")
def anonymous(tmp_path_factory):
    broker = _start(tmp_path_factory.mktemp("fallback"), "anonymous")
    yield broker
    broker.process.stop()


@pytest.fixture(scope="module")
def strict(tmp_path_factory):
    broker = _start(tmp_path_factory.mktemp("strict"), None)
    yield broker
    broker.process.stop()


def _basic_auth_round(service_url: str, topic_id: str, auth) -> None:
    """pulsar-client-python's ``_test_basic_auth``: subscribe, produce and receive on ``private/auth``."""
    client = pulsar.Client(service_url, authentication=auth, operation_timeout_seconds=30, logger=QUIET)
    try:
        topic = f"persistent://private/auth/my-python-topic-basic-auth-{topic_id}"
        consumer = client.subscribe(topic, "my-sub", consumer_type=pulsar.ConsumerType.Shared)
        producer = client.create_producer(topic)
        producer.send(b"hello")
        assert consumer.receive(10_000).data() == b"hello"
    finally:
        client.close()


@pytest.mark.parametrize("door", ["web", "url"])
def test_pulsar_client_pythons_basic_auth_method_test_passes(anonymous, door):
    # the original runs against the admin URL (HTTP lookups, Basic in the Authorization header; the
    # binary CONNECT then names the method); the binary service URL too
    service_url = anonymous.web if door == "web" else anonymous.url
    run = uuid.uuid4().hex[:6]
    _basic_auth_round(service_url, f"{run}-2", pulsar.AuthenticationBasic("admin", "123456", "basic"))
    started = time.monotonic()
    with pytest.raises(pulsar.AuthorizationError):
        _basic_auth_round(service_url, f"{run}-3", pulsar.AuthenticationBasic("admin", "123456", "unknown"))
    assert time.monotonic() - started < PROMPTLY_S
    _basic_auth_round(service_url, f"{run}-4", pulsar.AuthenticationBasic(
        auth_params_string='{"username": "admin","password": "123456", "method": "basic"}'))
    with pytest.raises(pulsar.AuthorizationError):
        _basic_auth_round(service_url, f"{run}-5", pulsar.AuthenticationBasic(
            auth_params_string='{"username": "admin","password": "123456", "method": "unknown"}'))


def test_the_official_client_with_an_unknown_method_uses_what_the_anonymous_role_is_granted(anonymous):
    client = pulsar.Client(anonymous.url, authentication=pulsar.AuthenticationBasic("admin", "123456", "unknown"),
                           operation_timeout_seconds=30, logger=QUIET)
    try:
        topic = f"persistent://public/default/fallback-{uuid.uuid4().hex[:8]}"
        consumer = client.subscribe(topic, "s", initial_position=pulsar.InitialPosition.Earliest)
        client.create_producer(topic).send(b"as anonymous")
        assert consumer.receive(10_000).data() == b"as anonymous"
    finally:
        client.close()


@pytest.mark.parametrize("transport, authentication", [
    ("binary", AuthenticationBasic("admin", "123456", method="unknown")), ("grpc", Digest())],
    ids=["binary-connect-method", "grpc-authorization-scheme"])
def test_our_client_with_an_unknown_method_is_the_anonymous_role(anonymous, transport, authentication):
    client = Client(anonymous.url, authentication=authentication, transport=transport, operation_timeout_seconds=30)
    try:
        started = time.monotonic()
        with pytest.raises(AuthorizationError, match="role 'anonymous' may not"):
            client.create_producer(f"persistent://private/auth/t-{uuid.uuid4().hex[:8]}")
        assert time.monotonic() - started < PROMPTLY_S
        topic = f"persistent://public/default/fallback-{uuid.uuid4().hex[:8]}"
        consumer = client.subscribe(topic, "s", initial_position=InitialPosition.Earliest)
        client.create_producer(topic).send(b"as anonymous")
        assert consumer.receive(timeout_millis=10_000).data() == b"as anonymous"
    finally:
        client.close()


def test_the_admin_api_takes_an_unknown_authorization_as_the_anonymous_role(anonymous):
    digest = Digest().authorization()
    assert anonymous.http("/admin/v2/tenants", digest) == 403  # anonymous is no super-user
    assert anonymous.http("/admin/v2/persistent/public/default", digest) == 200  # granted on the namespace
    assert anonymous.http("/admin/v2/persistent/private/auth", digest) == 403
    assert anonymous.http("/admin/v2/tenants", AuthenticationBasic("admin", "123456").authorization()) == 200
    # credentials the basic provider refuses are refused, never taken as the anonymous role
    assert anonymous.http("/admin/v2/tenants", AuthenticationBasic("admin", "wrong").authorization()) == 401


def test_without_anonymous_user_role_connect_with_an_unknown_method_is_refused_at_once(strict):
    with RawPulsar(strict.process.address) as raw:
        started = time.monotonic()
        raw.send(frame(T(type=T.CONNECT, connect=cmd.CommandConnect(
            client_version="raw-test", protocol_version=20, auth_method_name="unknown", auth_data=b"admin:123456"))))
        refusal = raw.expect(T.ERROR).error
        assert time.monotonic() - started < PROMPTLY_S
        assert refusal.error == cmd.AuthenticationError
        assert "'unknown' is not enabled" in refusal.message and "anonymousUserRole is unset" in refusal.message
        assert raw.closed_by_broker()


@pytest.mark.parametrize("transport, authentication", [
    ("binary", AuthenticationBasic("admin", "123456", method="unknown")), ("grpc", Digest())],
    ids=["binary-connect-method", "grpc-authorization-scheme"])
def test_without_anonymous_user_role_our_client_is_refused_at_once(strict, transport, authentication):
    client = Client(strict.url, authentication=authentication, transport=transport, operation_timeout_seconds=30)
    try:
        started = time.monotonic()
        with pytest.raises(AuthenticationError, match="anonymousUserRole is unset"):
            client.create_producer(f"persistent://public/default/t-{uuid.uuid4().hex[:8]}")
        assert time.monotonic() - started < PROMPTLY_S
    finally:
        client.close()


def test_without_anonymous_user_role_the_admin_api_answers_an_unknown_authorization_401(strict):
    assert strict.http("/admin/v2/persistent/public/default", Digest().authorization()) == 401
    assert strict.http("/admin/v2/persistent/public/default", None) == 401


def test_without_anonymous_user_role_the_official_client_is_refused(strict):
    client = pulsar.Client(strict.url, authentication=pulsar.AuthenticationBasic("admin", "123456", "unknown"),
                           operation_timeout_seconds=2, logger=QUIET)
    try:
        # the C++ client retries a connection closed after ERROR(AuthenticationError) until its operation
        # timeout (as against Pulsar, which answers the same): the raw CONNECT above shows the broker's answer
        with pytest.raises((pulsar.AuthenticationError, pulsar.Timeout)):
            client.create_producer(f"persistent://public/default/t-{uuid.uuid4().hex[:8]}")
    finally:
        client.close()
