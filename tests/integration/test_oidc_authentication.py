"""OAuth2 clients and the broker's OpenID Connect provider against a real issuer in-process
(tests/oidc_issuer.py: discovery, client-credentials token endpoint, JWKS over HTTP): our client through
the issuer on the three front ends (gRPC, Pulsar's binary protocol, the REST admin API), the role its token
carries authorized, a wrong audience and an issuer not allowed refused, tokens that expire (the broker's and
the issuer's clock is the test's) refreshed from the issuer, and the official pulsar-client's
AuthenticationOauth2 with the same issuer."""
from __future__ import annotations

import json
import logging
import time

import pulsar
import pytest

from broker_core import Broker
from broker_core.clock import FakeClock
from connector import (Admin, AuthenticationError, AuthenticationOauth2, AuthorizationError, Client,
                       InitialPosition)
from tests.oidc_issuer import DISCOVERY, JWKS, TOKEN, OidcIssuer
from tests.waiting import wait_until

AUDIENCE = "pulsar"
QUIET = pulsar.ConsoleLogger(pulsar.LoggerLevel.Error)
FAST = {"operation_timeout_seconds": 5, "connection_timeout_ms": 2000}
CLIENTS = {"svc": ("svc-secret", "svc-role"), "root": ("root-secret", "root"), "nobody": ("n-secret", "nobody")}


@pytest.fixture(scope="module")
def clock():
    return FakeClock(time.time_ns() // 1_000_000)


@pytest.fixture(scope="module")
def issuer(clock):
    with OidcIssuer(clients=CLIENTS, lifetime_s=60, now_s=lambda: clock.now_ms() / 1000) as issuer:
        yield issuer


@pytest.fixture(scope="module")
def broker(tmp_path_factory, clock, issuer):
    settings = {"authenticationEnabled": True, "authorizationEnabled": True, "superUserRoles": "root",
                "authenticationProviders": "org.apache.pulsar.broker.authentication.oidc.AuthenticationProviderOpenID",
                "openIDAllowedTokenIssuers": issuer.url, "openIDAllowedAudiences": AUDIENCE,
                "openIDRequireIssuersUseHttps": False, "authenticationRefreshCheckSeconds": 1}
    with Broker(data_dir=tmp_path_factory.mktemp("data"), port=0, clock=clock, **settings) as broker:
        with Admin(broker.service_url, authentication=oauth2(issuer, clock, "root")) as root:
            root.grant_namespace_permission("public/default", "svc-role", ["produce", "consume"])
        yield broker


def oauth2(issuer: OidcIssuer, clock: FakeClock, client_id: str, audience: str = AUDIENCE) -> AuthenticationOauth2:
    return AuthenticationOauth2(issuer.auth_params(client_id, audience=audience), clock=lambda: clock.now_ms() / 1000)


@pytest.mark.parametrize("transport", ["grpc", "binary"])
def test_our_client_produces_and_consumes_with_the_issuers_token(broker, issuer, clock, transport):
    topic = f"oidc-{transport}-{time.time_ns()}"
    with Client(broker.service_url, authentication=oauth2(issuer, clock, "svc"), transport=transport, **FAST) as c:
        consumer = c.subscribe(topic, "s", initial_position=InitialPosition.Earliest)
        c.create_producer(topic).send(b"through the issuer")
        assert consumer.receive(10_000).data() == b"through the issuer"


@pytest.mark.parametrize("transport", ["grpc", "binary"])
def test_the_role_is_the_tokens_sub_and_authorization_applies_to_it(broker, issuer, clock, transport):
    with Client(broker.service_url, authentication=oauth2(issuer, clock, "nobody"), transport=transport,
                **FAST) as c, pytest.raises(AuthorizationError, match="nobody"):
        c.create_producer(f"oidc-nobody-{time.time_ns()}")


def test_the_rest_admin_api_takes_the_issuers_token(broker, issuer, clock):
    with Admin(admin_url=broker.web_url, authentication=oauth2(issuer, clock, "root"), **FAST) as root:
        assert "public" in root.list_tenants()
    with Admin(admin_url=broker.web_url, authentication=oauth2(issuer, clock, "svc"), **FAST) as svc, \
            pytest.raises(AuthorizationError):
        svc.list_tenants()


@pytest.mark.parametrize("front", ["grpc", "binary", "rest"])
def test_a_token_for_another_audience_is_refused_on_every_front_end(broker, issuer, clock, front):
    assert_refused(broker, front, oauth2(issuer, clock, "root", audience="another-service"), "audience")


@pytest.mark.parametrize("front", ["grpc", "binary", "rest"])
def test_a_token_of_an_issuer_not_allowed_is_refused_on_every_front_end(broker, clock, front):
    with OidcIssuer(clients=CLIENTS, now_s=lambda: clock.now_ms() / 1000) as stranger:
        assert_refused(broker, front, oauth2(stranger, clock, "root"), "not allowed")
        assert stranger.requests[JWKS] == 0  # the broker never asked it for keys


def assert_refused(broker, front: str, authentication, reason: str) -> None:
    if front == "rest":
        with Admin(admin_url=broker.web_url, authentication=authentication, **FAST) as admin, \
                pytest.raises(AuthenticationError):
            admin.list_tenants()
        return
    with Client(broker.service_url, authentication=authentication, transport=front, **FAST) as c, \
            pytest.raises(AuthenticationError, match=reason):
        c.create_producer(f"oidc-refused-{time.time_ns()}")


def test_an_expired_token_is_refreshed_from_the_issuer_over_the_binary_protocol(broker, issuer, clock, caplog):
    topic = f"oidc-binary-refresh-{time.time_ns()}"
    with Client(broker.service_url, authentication=oauth2(issuer, clock, "svc"), transport="binary", **FAST) as c:
        consumer = c.subscribe(topic, "s", initial_position=InitialPosition.Earliest)
        producer = c.create_producer(topic)
        fetched = issuer.requests[TOKEN]
        with caplog.at_level(logging.INFO):
            clock.advance(61_000)   # the token expired: the broker challenges, the client asks the issuer again
            assert wait_until(lambda: "event=auth_refreshed" in caplog.text, timeout_s=10)
        assert issuer.requests[TOKEN] > fetched
        producer.send(b"after the refresh")
        assert consumer.receive(10_000).data() == b"after the refresh"


def test_a_grpc_stream_whose_token_expires_goes_on_with_a_fresh_one(broker, issuer, clock):
    topic = f"oidc-grpc-refresh-{time.time_ns()}"
    with Client(broker.service_url, authentication=oauth2(issuer, clock, "svc"), transport="grpc", **FAST) as c:
        consumer = c.subscribe(topic, "s", initial_position=InitialPosition.Earliest)
        producer = c.create_producer(topic)
        fetched = issuer.requests[TOKEN]
        clock.advance(61_000)   # the broker ends the streams whose token expired; they reopen with a new one
        assert wait_until(lambda: issuer.requests[TOKEN] > fetched, timeout_s=10)
        producer.send(b"after the token expired")
        assert consumer.receive(15_000).data() == b"after the token expired"


def test_the_official_clients_oauth2_plugin_works_with_the_same_issuer(broker, issuer):
    discovered = issuer.requests[DISCOVERY]
    client = pulsar.Client(broker.service_url, authentication=pulsar.AuthenticationOauth2(
        issuer.auth_params("svc", audience=AUDIENCE)), operation_timeout_seconds=10, logger=QUIET)
    try:
        topic = f"oidc-official-{time.time_ns()}"
        consumer = client.subscribe(topic, "s", initial_position=pulsar.InitialPosition.Earliest)
        client.create_producer(topic).send(b"from pulsar-client")
        assert consumer.receive(10_000).data() == b"from pulsar-client"
    finally:
        client.close()
    assert issuer.requests[DISCOVERY] > discovered
    assert issuer.token_forms[-1]["client_id"] == "svc" and issuer.token_forms[-1].get("audience") == AUDIENCE


def test_the_official_client_with_a_wrong_audience_is_refused(broker, issuer, caplog):
    client = pulsar.Client(broker.service_url, authentication=pulsar.AuthenticationOauth2(
        json.dumps({**json.loads(issuer.auth_params("svc")), "audience": "elsewhere"})),
        operation_timeout_seconds=3, logger=QUIET)
    try:
        # pulsar-client retries a refused CONNECT until its operation timeout, as against Apache Pulsar
        with caplog.at_level(logging.WARNING), pytest.raises((pulsar.AuthenticationError, pulsar.Timeout)):
            client.create_producer(f"oidc-official-refused-{time.time_ns()}")
    finally:
        client.close()
    assert "event=authentication_refused" in caplog.text and "audience" in caplog.text


def test_the_cli_takes_pulsar_admins_oauth2_plugin_and_params(broker, issuer):
    import subprocess
    import sys

    params = json.dumps({"issuerUrl": issuer.url, "privateKey": issuer.credentials_url("root"), "audience": AUDIENCE})
    done = subprocess.run([sys.executable, "-m", "broker_core.cli", "admin", "--admin-url", broker.web_url,
                           "--auth-plugin", "org.apache.pulsar.client.impl.auth.oauth2.AuthenticationOAuth2",
                           "--auth-params", params, "tenants", "list"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "public" in done.stdout.split()
