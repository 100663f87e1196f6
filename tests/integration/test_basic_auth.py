"""Basic authentication (Pulsar's ``AuthenticationProviderBasic``) against a real ``pulsarlike broker``
process with authorization on: the official pulsar-client with ``pulsar.AuthenticationBasic`` and our client
with ``AuthenticationBasic`` produce and consume, a wrong password is refused, a Basic role is authorized by
grants as a token role is; the admin REST API on the web service port takes ``Authorization: Basic`` (200,
401 without or with wrong credentials, 403 without rights) and, on HTTPS, a client certificate's CN."""
from __future__ import annotations

import base64
import json
import ssl
import subprocess
import urllib.error
import urllib.request
import uuid

import pulsar
import pytest

from connector import (Admin, AuthenticationBasic, AuthenticationError, AuthorizationError, Client,
                       InitialPosition)
from broker_core.protocol import pulsar_commands_pb2 as cmd
from tests.brokers import BrokerProcess
from tests.pulsar_wire import RawPulsar, frame
from tests.security_certs import as_args, make_tls

PASSWORDS = {"root": "r00t-secret", "alice": "alice:with:colons", "mallory": "mallory-pw"}
"""root: super-user; alice: granted produce+consume on acme/orders; mallory: nothing."""
NAMESPACE = "acme/orders"
BASIC_PROVIDER = "org.apache.pulsar.broker.authentication.AuthenticationProviderBasic"
QUIET = pulsar.ConsoleLogger(pulsar.LoggerLevel.Error)
T = cmd.BaseCommand


def htpasswd_line(user: str, password: str, scheme: str) -> str:
    hashed = subprocess.run(["openssl", "passwd", scheme, password], capture_output=True, text=True,
                            check=True).stdout.strip()
    return f"{user}:{hashed}"


class Secured:
    def __init__(self, process: BrokerProcess, tls, web: str, web_tls: str) -> None:
        self.process = process
        self.url = process.service_url
        self.tls = tls
        self.web = web
        self.web_tls = web_tls

    def http(self, method: str, path: str, user: str | None = None, password: str | None = None,
             tls_role: str | None = None, body=None) -> int:
        """The status of ``method path`` on the web service port (HTTPS when ``tls_role`` is given; a client
        certificate with that CN unless it is ``""``)."""
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request((self.web_tls if tls_role is not None else self.web) + path, data=data,
                                         method=method)
        if data is not None:
            request.add_header("Content-Type", "application/json")
        if user is not None:
            secret = PASSWORDS[user] if password is None else password
            request.add_header("Authorization", "Basic " + base64.b64encode(f"{user}:{secret}".encode()).decode())
        context = None
        if tls_role is not None:
            context = ssl.create_default_context(cafile=self.tls.ca)
            if tls_role:
                context.load_cert_chain(*self.tls.client(tls_role))
        try:
            with urllib.request.urlopen(request, timeout=30, context=context) as reply:
                return reply.status
        except urllib.error.HTTPError as err:
            return err.code


@pytest.fixture(scope="module")
def secured(tmp_path_factory):
    folder = tmp_path_factory.mktemp("basic")
    users = folder / ".htpasswd"
    users.write_text("# htpasswd -m and openssl passwd -6\n" + "\n".join([
        htpasswd_line("root", PASSWORDS["root"], "-apr1"), htpasswd_line("alice", PASSWORDS["alice"], "-6"),
        htpasswd_line("mallory", PASSWORDS["mallory"], "-apr1")]) + "\n")
    tls = make_tls(folder / "tls")
    settings = {**tls.broker_settings(), "webServicePort": "0", "webServicePortTls": "0",
                "authenticationEnabled": "true", "authenticationProviders": f"{BASIC_PROVIDER},tls",
                "authorizationEnabled": "true", "superUserRoles": "root", "basicAuthConf": f"file://{users}",
                # the C++ client retries a refused CONNECT until its timeout: its failures would block this
                # address for the tests after it (the limit's own tests: test_basic_auth_under_attack.py)
                "basicAuthMaxFailuresPerAddress": "0"}
    process = BrokerProcess(folder / "data", *as_args(settings)).start()
    try:
        web = web_tls = ""
        while not (web and web_tls):
            line = process.proc.stdout.readline().strip()
            assert line, "the broker printed no web service ports"
            if line.startswith("pulsarlike metrics on http://"):
                web = line.rsplit(" ", 1)[1].removesuffix("/metrics")
            elif line.startswith("pulsarlike metrics on https://"):
                web_tls = line.rsplit(" ", 1)[1].removesuffix("/metrics").replace("127.0.0.1", "localhost")
        admin = Admin(process.service_url, authentication=AuthenticationBasic("root", PASSWORDS["root"]))
        try:
            admin.create_tenant("acme", admin_roles=["acme-admin"])
            admin.create_namespace(NAMESPACE)
            admin.grant_namespace_permission(NAMESPACE, "alice", ["produce", "consume"])
        finally:
            admin.close()
        yield Secured(process, tls, web, web_tls)
    finally:
        process.stop()


def topic() -> str:
    return f"persistent://{NAMESPACE}/t-{uuid.uuid4().hex[:8]}"


def test_the_official_client_produces_and_consumes_with_basic_credentials(secured):
    client = pulsar.Client(secured.url, authentication=pulsar.AuthenticationBasic("alice", PASSWORDS["alice"]),
                           operation_timeout_seconds=10, logger=QUIET)
    try:
        name = topic()
        consumer = client.subscribe(name, "s", initial_position=pulsar.InitialPosition.Earliest)
        client.create_producer(name).send(b"over basic")
        assert consumer.receive(timeout_millis=10_000).data() == b"over basic"
    finally:
        client.close()


@pytest.mark.parametrize("user, password", [("alice", "wrong"), ("nobody", "x")])
def test_the_official_client_is_refused_a_wrong_password_and_an_unknown_user(secured, user, password):
    client = pulsar.Client(secured.url, authentication=pulsar.AuthenticationBasic(user, password),
                           operation_timeout_seconds=2, logger=QUIET)
    try:
        # the C++ client retries a connection the broker closed after ERROR(AuthenticationError) until its
        # operation timeout, then reports the timeout (as against Pulsar)
        with pytest.raises((pulsar.AuthenticationError, pulsar.Timeout)):
            client.create_producer(topic())
    finally:
        client.close()
    with RawPulsar(secured.process.address) as raw:  # what the broker answered that CONNECT
        raw.send(frame(T(type=T.CONNECT, connect=cmd.CommandConnect(
            client_version="raw-test", protocol_version=20, auth_method_name="basic",
            auth_data=f"{user}:{password}".encode()))))
        refusal = raw.expect(T.ERROR).error
        assert refusal.error == cmd.AuthenticationError and "unknown user or wrong password" in refusal.message
        assert raw.closed_by_broker()


def test_the_official_client_with_a_basic_role_without_grants_is_refused_by_authorization(secured):
    client = pulsar.Client(secured.url, authentication=pulsar.AuthenticationBasic("mallory", PASSWORDS["mallory"]),
                           operation_timeout_seconds=5, logger=QUIET)
    try:
        with pytest.raises(pulsar.AuthorizationError):
            client.create_producer(topic())
    finally:
        client.close()


def test_our_client_produces_and_consumes_with_authentication_basic(secured):
    client = Client(secured.url, authentication=AuthenticationBasic("alice", PASSWORDS["alice"]),
                    operation_timeout_seconds=10)
    try:
        name = topic()
        consumer = client.subscribe(name, "s", initial_position=InitialPosition.Earliest)
        client.create_producer(name).send(b"ours over basic")
        assert consumer.receive(timeout_millis=10_000).data() == b"ours over basic"
    finally:
        client.close()


@pytest.mark.parametrize("user, password, refusal", [("alice", "wrong", AuthenticationError),
                                                     ("mallory", PASSWORDS["mallory"], AuthorizationError)])
def test_our_client_is_refused_a_wrong_password_and_a_role_without_grants(secured, user, password, refusal):
    client = Client(secured.url, authentication=AuthenticationBasic(user, password), operation_timeout_seconds=5)
    try:
        with pytest.raises(refusal):
            client.create_producer(topic())
    finally:
        client.close()


def test_the_admin_api_takes_basic_credentials(secured):
    assert secured.http("GET", "/admin/v2/tenants", "root") == 200
    assert secured.http("GET", f"/admin/v2/persistent/{NAMESPACE}", "alice") == 200  # granted on the namespace
    assert secured.http("GET", "/admin/v2/tenants") == 401
    assert secured.http("GET", "/admin/v2/tenants", "root", password="wrong") == 401
    assert secured.http("GET", "/admin/v2/tenants", "nobody", password="x") == 401
    assert secured.http("GET", "/admin/v2/tenants", "mallory") == 403
    assert secured.http("PUT", "/admin/v2/tenants/mallorys", "alice", body={"adminRoles": []}) == 403
    assert secured.http("GET", f"/admin/v2/persistent/{NAMESPACE}", "mallory") == 403


def test_the_admin_api_on_https_takes_the_client_certificates_role(secured):
    assert secured.http("GET", "/admin/v2/tenants", tls_role="root") == 200
    assert secured.http("GET", f"/admin/v2/persistent/{NAMESPACE}", tls_role="alice") == 200
    assert secured.http("GET", "/admin/v2/tenants", tls_role="mallory") == 403
    assert secured.http("GET", "/admin/v2/tenants", tls_role="") == 401
    assert secured.http("GET", "/admin/v2/tenants", "root", tls_role="") == 200  # Basic over HTTPS too


def test_a_broker_whose_users_file_has_an_unknown_hash_format_does_not_start(tmp_path):
    users = tmp_path / ".htpasswd"
    users.write_text("bob:{SHA}W6ph5Mm5Pz8GgiULbPgzG37mj9g=\n")
    settings = {"authenticationEnabled": "true", "authenticationProviders": BASIC_PROVIDER,
                "basicAuthConf": str(users)}
    with pytest.raises(RuntimeError, match=r"basicAuthConf line 1 \(user 'bob'\).*htpasswd -m"):
        BrokerProcess(tmp_path / "data", *as_args(settings)).start()
