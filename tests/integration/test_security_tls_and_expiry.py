"""TLS on the broker's ports and credentials that expire, against an in-process broker whose clock the test
moves: plain and TLS clients on the wrong port, mTLS, HTTPS metrics, a token that expires during a long
consume stream (gRPC: the stream ends with AuthenticationError, or reconnects when the token source has a new
token; binary protocol: AUTH_CHALLENGE), and the official pulsar-client with token and certificate
authentication."""
from __future__ import annotations

import logging
import ssl
import time
import urllib.request

import pulsar
import pytest

from broker_core import Broker
from broker_core.clock import FakeClock
from broker_core.security.tokens import create_token, generate_secret_key
from connector import (Admin, AuthenticationError, AuthenticationTLS, AuthenticationToken, AuthorizationError,
                       Client, ConnectError, InitialPosition, Timeout)
from tests.security_certs import make_tls, secret_setting
from tests.waiting import wait_until

SECRET = generate_secret_key()
QUIET = pulsar.ConsoleLogger(pulsar.LoggerLevel.Error)
FAST = {"operation_timeout_seconds": 5, "connection_timeout_ms": 2000}


@pytest.fixture(scope="module")
def tls(tmp_path_factory):
    return make_tls(tmp_path_factory.mktemp("tls"))


@pytest.fixture(scope="module")
def clock():
    return FakeClock(time.time_ns() // 1_000_000)


@pytest.fixture(scope="module")
def secure_broker(tmp_path_factory, tls, clock):
    settings = {**tls.broker_settings(), "brokerServicePortTls": 0, "webServicePortTls": 0,
                "authenticationEnabled": True, "authenticationProviders": "token,tls", "authorizationEnabled": True,
                "superUserRoles": "root", "tokenSecretKey": secret_setting(SECRET),
                "authenticationRefreshCheckSeconds": 1}
    with Broker(data_dir=tmp_path_factory.mktemp("data"), port=0, clock=clock, **settings) as broker:
        with Admin(broker.service_url, authentication=AuthenticationToken(create_token(SECRET, "root"))) as root:
            root.grant_namespace_permission("public/default", "bob", ["produce", "consume"])
        yield broker


def token(role: str, clock: FakeClock, valid_s: float | None = None) -> str:
    expires = clock.now_ms() / 1000 + valid_s if valid_s is not None else None
    return create_token(SECRET, role, expires_at_s=expires)


def test_a_plain_client_on_the_tls_port_is_refused_with_a_log_line(secure_broker, clock, caplog):
    with caplog.at_level(logging.WARNING), \
            Admin(f"pulsar://127.0.0.1:{secure_broker.tls_port}", **FAST,
                  authentication=AuthenticationToken(token("root", clock))) as admin, pytest.raises(ConnectError):
        admin.list_tenants()
    assert wait_until(lambda: "not a TLS handshake on the TLS port" in caplog.text)


def test_a_tls_client_on_the_plain_port_is_refused(secure_broker, tls, caplog):
    with caplog.at_level(logging.WARNING), \
            Admin(f"pulsar+ssl://127.0.0.1:{secure_broker.port}", tls_trust_certs_file_path=tls.ca, **FAST) as admin, \
            pytest.raises(ConnectError):
        admin.list_tenants()
    assert wait_until(lambda: "a TLS handshake on the plain port" in caplog.text)


def test_a_client_that_does_not_trust_the_broker_certificate_is_refused(secure_broker, tls):
    with Admin(secure_broker.service_url_tls, tls_trust_certs_file_path=tls.other_ca.cert_file, **FAST) as admin, \
            pytest.raises(ConnectError, match="not trusted"):
        admin.list_tenants()


def test_hostname_verification_checks_the_url_host_against_the_certificate(secure_broker, tls, clock):
    good = f"pulsar+ssl://localhost:{secure_broker.tls_port}"
    with Admin(good, tls_trust_certs_file_path=tls.ca, tls_validate_hostname=True,
               authentication=AuthenticationToken(token("root", clock)), **FAST) as admin:
        assert "public" in admin.list_tenants()


def test_insecure_connections_trust_whatever_certificate_the_broker_presents(secure_broker, clock):
    with Admin(secure_broker.service_url_tls, tls_allow_insecure_connection=True,
               authentication=AuthenticationToken(token("root", clock)), **FAST) as admin:
        assert "public" in admin.list_tenants()


def test_metrics_are_served_over_https_on_web_service_port_tls(secure_broker, tls):
    context = ssl.create_default_context(cafile=tls.ca)
    with urllib.request.urlopen(f"https://localhost:{secure_broker.metrics_tls_port}/metrics", context=context,
                                timeout=10) as reply:
        assert reply.status == 200 and b"pulsar_" in reply.read()


def test_mtls_refuses_a_client_without_a_certificate_and_admits_one_with(tmp_path, tls):
    cert, key = tls.client("alice")
    settings = {**tls.broker_settings(require_client_cert=True), "brokerServicePortTls": 0,
                "authenticationEnabled": True, "authenticationProviders": "tls"}
    with Broker(data_dir=tmp_path, port=0, **settings) as broker:
        with Admin(broker.service_url_tls, tls_trust_certs_file_path=tls.ca, **FAST) as anonymous, \
                pytest.raises(ConnectError):
            anonymous.list_tenants()
        with Admin(broker.service_url_tls, tls_trust_certs_file_path=tls.ca,
                   authentication=AuthenticationTLS(cert, key), **FAST) as alice:
            assert "public" in alice.list_tenants()


def _receive_until_failed(consumer) -> BaseException | None:
    try:
        consumer.receive(200)
    except Timeout:
        return None
    except Exception as exc:  # noqa: BLE001 - the failure is what the test looks for
        return exc
    return None


def test_a_consume_stream_whose_token_expires_ends_with_authentication_error(secure_broker, clock):
    topic = f"expiring-{time.time_ns()}"
    # the gRPC streams' token expiry (the binary connection's: the tests at the end of the module)
    with Client(secure_broker.service_url, authentication=AuthenticationToken(token("bob", clock, 60)),
                transport="grpc") as client:
        consumer = client.subscribe(topic, "s")
        clock.advance(61_000)
        failure = wait_until(lambda: _receive_until_failed(consumer), timeout_s=10)
    assert isinstance(failure, AuthenticationError) and "expired" in failure.message


def test_a_stream_reconnects_when_its_token_source_gives_a_new_token(secure_broker, clock):
    topic = f"renewed-{time.time_ns()}"
    source = lambda: token("bob", clock, 60)  # noqa: E731 - a new expiry, hence a new token, as time moves
    with Client(secure_broker.service_url, authentication=AuthenticationToken(source), transport="grpc") as client:
        consumer = client.subscribe(topic, "s", initial_position=InitialPosition.Earliest)
        producer = client.create_producer(topic)
        clock.advance(61_000)
        producer.send(b"after the token expired")
        assert consumer.receive(15_000).data() == b"after the token expired"


def test_a_refused_reconnection_does_not_spin(secure_broker, clock, caplog):
    topic = f"final-{time.time_ns()}"
    with caplog.at_level(logging.WARNING), \
            Client(secure_broker.service_url, authentication=AuthenticationToken(token("bob", clock, 60)),
                   transport="grpc") as client:
        consumer = client.subscribe(topic, "s")
        clock.advance(61_000)
        wait_until(lambda: _receive_until_failed(consumer), timeout_s=10)
        refusals = caplog.text.count("event=authentication_refused")
        time.sleep(0.5)  # not for correctness: a spinning client would have been refused again meanwhile
        assert caplog.text.count("event=authentication_refused") == refusals


# ------------------------------------------------------------------ the binary protocol (pulsar-client)
def test_pulsar_client_with_a_token_produces_and_consumes(secure_broker, clock):
    client = pulsar.Client(secure_broker.service_url, authentication=pulsar.AuthenticationToken(token("bob", clock)),
                           operation_timeout_seconds=10, logger=QUIET)
    try:
        topic = f"binary-{time.time_ns()}"
        consumer = client.subscribe(topic, "s")
        client.create_producer(topic).send(b"over the binary protocol")
        assert consumer.receive(10_000).data() == b"over the binary protocol"
    finally:
        client.close()


@pytest.mark.parametrize("credentials,reason", [("garbage", "not a JWT"), ("expired", "expired"),
                                                ("unknown-secret", "signature does not verify")])
def test_pulsar_client_with_bad_credentials_is_refused(secure_broker, clock, caplog, credentials, reason):
    bad = {"garbage": "not-a-token", "expired": token("bob", clock, -10),
           "unknown-secret": create_token(generate_secret_key(), "root")}[credentials]
    client = pulsar.Client(secure_broker.service_url, authentication=pulsar.AuthenticationToken(bad),
                           operation_timeout_seconds=2, logger=QUIET)
    try:
        # the C++ client retries a connection the broker closed after ERROR(AuthenticationError) until its
        # operation timeout, then reports the timeout
        with caplog.at_level(logging.WARNING), pytest.raises((pulsar.AuthenticationError, pulsar.Timeout)):
            client.create_producer(f"binary-refused-{time.time_ns()}")
    finally:
        client.close()
    assert "event=authentication_refused" in caplog.text and reason in caplog.text
    assert bad not in caplog.text


def test_pulsar_client_without_a_grant_is_refused_by_authorization(secure_broker, clock):
    client = pulsar.Client(secure_broker.service_url, authentication=pulsar.AuthenticationToken(
        token("mallory", clock)), operation_timeout_seconds=5, logger=QUIET)
    try:
        with pytest.raises(pulsar.AuthorizationError):
            client.create_producer(f"binary-denied-{time.time_ns()}")
    finally:
        client.close()


def test_pulsar_client_over_tls_with_a_certificate_authenticates_as_its_cn(secure_broker, tls):
    cert, key = tls.client("bob")
    client = pulsar.Client(secure_broker.service_url_tls, tls_trust_certs_file_path=tls.ca,
                           authentication=pulsar.AuthenticationTLS(cert, key), operation_timeout_seconds=10,
                           logger=QUIET)
    try:
        topic = f"binary-tls-{time.time_ns()}"
        consumer = client.subscribe(topic, "s")
        client.create_producer(topic).send(b"encrypted")
        assert consumer.receive(10_000).data() == b"encrypted"
    finally:
        client.close()


def test_pulsar_client_answers_auth_challenge_with_a_fresh_token(secure_broker, clock, caplog):
    client = pulsar.Client(secure_broker.service_url, authentication=pulsar.AuthenticationToken(
        lambda: token("bob", clock, 60)), operation_timeout_seconds=10, logger=QUIET)
    try:
        topic = f"binary-refresh-{time.time_ns()}"
        producer = client.create_producer(topic)
        with caplog.at_level(logging.INFO):
            clock.advance(61_000)
            assert wait_until(lambda: "event=auth_refreshed" in caplog.text, timeout_s=10)
        producer.send(b"still connected")
        assert "connection_closed" not in caplog.text
    finally:
        client.close()


def test_a_binary_connection_whose_token_expires_without_refresh_is_closed(secure_broker, clock, caplog):
    client = pulsar.Client(secure_broker.service_url, authentication=pulsar.AuthenticationToken(
        token("bob", clock, 60)), operation_timeout_seconds=10, logger=QUIET)
    try:
        client.create_producer(f"binary-expire-{time.time_ns()}")
        with caplog.at_level(logging.INFO):
            clock.advance(61_000)
            # challenged, the client answers with the same token: refused, and the connection closed
            assert wait_until(lambda: "reason=token expired" in caplog.text, timeout_s=10)
        assert "event=auth_challenge" in caplog.text
    finally:
        client.close()
