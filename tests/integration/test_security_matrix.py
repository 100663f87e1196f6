"""Who may call what, against a real ``pulsarlike broker`` process with TLS, token and TLS-certificate
authentication and authorization on: every kind of call, by an anonymous client, a role with no grant on
the resource (another tenant's admin), a role granted produce+consume on the namespace, the tenant's admin
and a super-user, over the plain port and the TLS port. A refused call is typed (AuthenticationError for the
anonymous client, AuthorizationError for the others) and has no effect.
"""
from __future__ import annotations

import uuid
from typing import Any, Callable

import pytest

from broker_core.security.tokens import create_token, generate_secret_key
from connector import (Admin, AuthenticationError, AuthenticationTLS, AuthenticationToken, AuthorizationError,
                       Client, ConnectError, InitialPosition)
from tests.brokers import BrokerProcess
from tests.security_certs import as_args, make_tls, secret_setting

SECRET = generate_secret_key()
NAMESPACE = "acme/orders"
TOPIC = f"persistent://{NAMESPACE}/events"
ROLES = ["anonymous", "mallory", "bob", "alice", "root"]
"""In order of what they may do: no credentials; admin of another tenant only; granted produce+consume on
the namespace; admin of tenant acme; super-user."""
LEVEL = {role: i for i, role in enumerate(ROLES)}


class Secured:
    def __init__(self, process: BrokerProcess, tls_url: str, tls) -> None:
        self.process = process
        self.url = process.service_url
        self.tls_url = tls_url
        self.tls = tls
        self._clients: dict[tuple[str, str], tuple[Client, Admin]] = {}

    def connect(self, transport: str, role: str) -> tuple[Client, Admin]:
        key = (transport, role)
        if key not in self._clients:
            kwargs: dict[str, Any] = {}
            if role != "anonymous":
                kwargs["authentication"] = AuthenticationToken(create_token(SECRET, role))
            url = self.url
            if transport == "tls":
                url = self.tls_url
                kwargs["tls_trust_certs_file_path"] = self.tls.ca
            self._clients[key] = (Client(url, operation_timeout_seconds=10, **kwargs),
                                  Admin(url, operation_timeout_seconds=10, **kwargs))
        return self._clients[key]

    def close(self) -> None:
        for client, admin in self._clients.values():
            client.close()
            admin.close()


@pytest.fixture(scope="module")
def secured(tmp_path_factory):
    folder = tmp_path_factory.mktemp("secured")
    tls = make_tls(folder / "tls")
    settings = {**tls.broker_settings(), "brokerServicePortTls": "0", "authenticationEnabled": "true",
                "authenticationProviders": "token,tls", "authorizationEnabled": "true", "superUserRoles": "root",
                "tokenSecretKey": secret_setting(SECRET)}
    process = BrokerProcess(folder / "data", *as_args(settings)).start()
    try:
        line = process.proc.stdout.readline().strip()
        assert line.startswith("pulsarlike broker TLS on pulsar+ssl://"), line
        broker = Secured(process, line.rsplit(" ", 1)[1], tls)
        _, root = broker.connect("plain", "root")
        root.create_tenant("acme", admin_roles=["alice"])
        root.create_namespace(NAMESPACE)
        root.create_tenant("other", admin_roles=["mallory"])
        root.grant_namespace_permission(NAMESPACE, "bob", ["produce", "consume"])
        root.create_topic(TOPIC)
        yield broker
        broker.close()
    finally:
        process.stop()


def _unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _produce(client: Client, admin: Admin) -> None:
    producer = client.create_producer(TOPIC)
    try:
        producer.send(b"matrix")
    finally:
        producer.close()


def _consume(client: Client, admin: Admin) -> None:
    consumer = client.subscribe(TOPIC, _unique("sub"), initial_position=InitialPosition.Earliest)
    consumer.close()


CALLS: dict[str, tuple[str, Callable[[Client, Admin], Any]]] = {
    # name: (least role allowed, the call)
    "produce": ("bob", _produce),
    "consume": ("bob", _consume),
    "topic-stats": ("bob", lambda c, a: a.topic_stats(TOPIC)),
    "list-topics": ("bob", lambda c, a: a.list_topics(NAMESPACE)),
    "create-subscription": ("bob", lambda c, a: a.create_subscription(TOPIC, _unique("sub"))),
    "create-topic": ("alice", lambda c, a: a.create_topic(f"persistent://{NAMESPACE}/{_unique('t')}")),
    "set-namespace-policy": ("alice", lambda c, a: a.set_namespace_message_ttl(NAMESPACE, 0)),
    "grant-permission": ("alice", lambda c, a: a.grant_topic_permission(TOPIC, _unique("role"), ["consume"])),
    "get-permissions": ("alice", lambda c, a: a.get_namespace_permissions(NAMESPACE)),
    "create-namespace": ("alice", lambda c, a: a.create_namespace(f"acme/{_unique('ns')}")),
    "create-tenant": ("root", lambda c, a: a.create_tenant(_unique("tenant"))),
    "list-tenants": ("root", lambda c, a: a.list_tenants()),
}


@pytest.mark.parametrize("call", list(CALLS))
@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("transport", ["plain", "tls"])
def test_each_call_is_allowed_from_its_least_role_up_and_refused_below(secured, transport, role, call):
    least, run = CALLS[call]
    client, admin = secured.connect(transport, role)
    if LEVEL[role] >= LEVEL[least]:
        run(client, admin)
    else:
        expected = AuthenticationError if role == "anonymous" else AuthorizationError
        with pytest.raises(expected):
            run(client, admin)


def test_a_refused_call_has_no_effect(secured):
    _, alice = secured.connect("plain", "alice")
    _, root = secured.connect("plain", "root")
    name = f"persistent://{NAMESPACE}/{_unique('kept-out')}"
    with pytest.raises(AuthorizationError):
        secured.connect("plain", "mallory")[1].create_topic(name)
    with pytest.raises(AuthorizationError):
        alice.delete_tenant("other")
    assert name not in root.list_topics(NAMESPACE)
    assert "other" in root.list_tenants()


def test_a_refused_producer_stores_nothing(secured):
    _, root = secured.connect("plain", "root")
    before = root.topic_stats(TOPIC)["msgInCounter"]
    with pytest.raises(AuthorizationError):
        _produce(*secured.connect("tls", "mallory"))
    assert root.topic_stats(TOPIC)["msgInCounter"] == before


def test_a_client_certificate_authenticates_as_its_common_name(secured):
    cert, key = secured.tls.client("bob")
    with Client(secured.tls_url, tls_trust_certs_file_path=secured.tls.ca,
                authentication=AuthenticationTLS(cert, key)) as client:
        _produce(client, None)  # type: ignore[arg-type]
    cert, key = secured.tls.client("mallory")
    with Admin(secured.tls_url, tls_trust_certs_file_path=secured.tls.ca,
               authentication=AuthenticationTLS(cert, key)) as admin, pytest.raises(AuthorizationError):
        admin.topic_stats(TOPIC)


def test_a_certificate_from_another_ca_is_refused(secured):
    cert, key = secured.tls.other_ca.issue("root")
    with Admin(secured.tls_url, tls_trust_certs_file_path=secured.tls.ca, operation_timeout_seconds=5,
               connection_timeout_ms=3000, authentication=AuthenticationTLS(cert, key)) as admin:
        with pytest.raises(ConnectError):  # the handshake fails: unknown CA
            admin.list_tenants()


def test_a_stream_refused_before_it_starts_reaches_the_client_as_the_typed_error(secured):
    import grpc

    from broker_core.protocol import broker_pb2, broker_pb2_grpc
    from broker_core.protocol.status import CODE_KEY

    with grpc.insecure_channel(secured.url.split("://", 1)[1]) as channel:
        call = broker_pb2_grpc.PulsarLikeStub(channel).Produce(iter([broker_pb2.ProduceRequest(
            open=broker_pb2.ProducerOpen(topic=TOPIC))]), timeout=10)
        with pytest.raises(grpc.RpcError) as refused:
            list(call)
    assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
    assert dict(refused.value.trailing_metadata())[CODE_KEY] == "AuthenticationError"


def _cli(*argv: str) -> tuple[int, str, str]:
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "broker_core.cli", *argv], capture_output=True, text=True,
                          timeout=60)
    return done.returncode, done.stdout, done.stderr


def test_the_cli_authenticates_with_pulsar_admins_flags_and_refuses_without(secured, tmp_path):
    token_file = tmp_path / "root.token"
    token_file.write_text(create_token(SECRET, "root"))
    flags = ["--auth-plugin", "org.apache.pulsar.client.impl.auth.AuthenticationToken",
             "--auth-params", f"file://{token_file}"]
    code, out, _ = _cli("admin", "--admin-url", secured.tls_url, "--tls-trust-cert-path", secured.tls.ca, *flags,
                        "tenants", "list")
    assert code == 0 and "acme" in out.split()
    code, _, err = _cli("admin", "tenants", "list", "--url", secured.url)
    assert code == 1 and "AuthenticationError" in err
    bob = ["--auth-plugin", "token", "--auth-params", "token:" + create_token(SECRET, "bob")]
    code, out, err = _cli("produce", TOPIC, "-m", "from the cli", "--url", secured.tls_url, "--tls-trust-cert-path",
                          secured.tls.ca, *bob)
    assert code == 0, err
    code, _, err = _cli("admin", "namespaces", "grant-permission", NAMESPACE, "--role", "eve", "--actions",
                        "produce", "--url", secured.url, *bob)
    assert code == 1 and "AuthorizationError" in err
    assert create_token(SECRET, "bob") not in err


def test_grants_through_the_cli_open_a_topic_to_a_role(secured, tmp_path):
    root = ["--auth-plugin", "token", "--auth-params", "token:" + create_token(SECRET, "root")]
    topic = f"persistent://{NAMESPACE}/{_unique('granted')}"
    carol = Client(secured.url, authentication=AuthenticationToken(create_token(SECRET, "carol")))
    try:
        with pytest.raises(AuthorizationError):
            carol.create_producer(topic)
        assert _cli("admin", "topics", "grant-permission", topic, "--role", "carol", "--actions", "produce",
                    "--url", secured.url, *root)[0] == 0
        code, out, _ = _cli("admin", "topics", "permissions", topic, "--url", secured.url, *root)
        assert code == 0 and '"carol"' in out
        carol.create_producer(topic).send(b"granted")
        assert _cli("admin", "topics", "revoke-permission", topic, "--role", "carol", "--url", secured.url,
                    *root)[0] == 0
        with pytest.raises(AuthorizationError):
            carol.create_producer(topic)
    finally:
        carol.close()
