"""Our client given the web service's ``http://`` URL, as pulsar-client takes it: the topic's broker is looked up
over HTTP (``/lookup/v2/topic/...``) with the client's credentials, then produced to and consumed from over the
binary protocol; a refused lookup is ``ConnectError``. ``listener_name`` asks lookups for that listener (HTTP and
binary); one the broker has not fails the producer. In-process brokers on port 0 (web service port 0 too)."""
from __future__ import annotations

import uuid

import pytest

from broker_core import Broker
from broker_core.security.tokens import create_token, generate_secret_key
from connector import (AuthenticationBasic, AuthenticationToken, Client, ConnectError, PulsarException)
from connector.client.transport.http_lookup import check_http_url, lookup_url

ADMIN_LINE = "admin:$apr1$FG4AO6aX$KGYPuMoLUou3i6vUkPUUf."
"""``admin`` / ``123456`` in Apache's htpasswd MD5 form."""
PROVIDERS = ("org.apache.pulsar.broker.authentication.AuthenticationProviderToken,"
             "org.apache.pulsar.broker.authentication.AuthenticationProviderBasic")


@pytest.fixture(scope="module")
def open_broker(tmp_path_factory):
    with Broker(data_dir=tmp_path_factory.mktemp("open"), port=0, webServicePort=0,
                journalSyncMode="never") as broker:
        yield broker


@pytest.fixture(scope="module")
def secured(tmp_path_factory):
    folder = tmp_path_factory.mktemp("secured")
    secret = generate_secret_key()
    key = folder / "secret.key"
    key.write_bytes(secret)
    users = folder / ".htpasswd"
    users.write_text(ADMIN_LINE + "\n")
    with Broker(data_dir=folder / "data", port=0, webServicePort=0, journalSyncMode="never",
                authenticationEnabled=True, authorizationEnabled=True, authenticationProviders=PROVIDERS,
                tokenSecretKey=f"file://{key}", superUserRoles="admin,superUser",
                basicAuthConf=f"file://{users}", basicAuthMaxFailuresPerAddress=0) as broker:
        broker.token = create_token(secret, "superUser")
        yield broker


def _round_trip(client: Client, topic: str) -> bytes:
    consumer = client.subscribe(topic, "sub")
    producer = client.create_producer(topic)
    producer.send(b"over http lookup")
    return consumer.receive(10_000).data()


def test_an_http_service_url_looks_the_broker_up_and_produces_and_consumes(open_broker):
    client = Client(open_broker.web_url)
    try:
        assert _round_trip(client, f"http-url-{uuid.uuid4().hex[:8]}") == b"over http lookup"
    finally:
        client.close()


def test_an_http_service_url_with_a_token_authenticates_the_lookup_and_the_connection(secured):
    client = Client(secured.web_url, authentication=AuthenticationToken(secured.token))
    try:
        assert _round_trip(client, f"persistent://public/default/token-{uuid.uuid4().hex[:8]}") == \
            b"over http lookup"
    finally:
        client.close()


def test_an_http_service_url_with_basic_credentials_authenticates_the_lookup_and_the_connection(secured):
    client = Client(secured.web_url, authentication=AuthenticationBasic("admin", "123456"))
    try:
        assert _round_trip(client, f"basic-{uuid.uuid4().hex[:8]}") == b"over http lookup"
    finally:
        client.close()


def test_a_lookup_refused_for_wrong_credentials_is_a_connect_error(secured):
    client = Client(secured.web_url, authentication=AuthenticationBasic("admin", "wrong"))
    try:
        with pytest.raises(ConnectError, match="401"):
            client.subscribe(f"refused-{uuid.uuid4().hex[:8]}", "sub")
    finally:
        client.close()


def test_an_unreachable_web_service_is_a_connect_error():
    client = Client("http://127.0.0.1:1", connection_timeout_ms=2000)
    try:
        with pytest.raises(ConnectError):
            client.create_producer("nowhere")
    finally:
        client.close()


@pytest.mark.parametrize("url", ["http://", "http://host:99999", "http://:8080"])
def test_an_http_service_url_without_a_host_or_with_a_bad_port_is_a_value_error(url):
    with pytest.raises(ValueError):
        Client(url)


def test_the_lookup_url_names_the_topic_as_pulsar_client_does():
    web = check_http_url("http://localhost:8080/")
    assert web == "http://localhost:8080"
    assert lookup_url(web, "t-1") == "http://localhost:8080/lookup/v2/topic/persistent/public/default/t-1"
    assert lookup_url(web, "non-persistent://t/n/x", "internal") == \
        "http://localhost:8080/lookup/v2/topic/non-persistent/t/n/x?listenerName=internal"


@pytest.mark.parametrize("via", ["service_url", "web_url"])
def test_a_listener_name_the_broker_has_not_fails_the_producer(open_broker, via):
    client = Client(getattr(open_broker, via), listener_name="no-such-listener", operation_timeout_seconds=3)
    try:
        with pytest.raises(PulsarException, match="no-such-listener"):
            client.create_producer(f"listener-{uuid.uuid4().hex[:8]}")
    finally:
        client.close()


def test_a_listener_name_must_be_a_str():
    with pytest.raises(ValueError):
        Client("pulsar://127.0.0.1:6650", listener_name=7)
