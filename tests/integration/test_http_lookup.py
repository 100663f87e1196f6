"""HTTP lookup: the official ``pulsar-client`` given the web service's ``http://`` (and ``https://``) URL as
its service URL looks topics up, reads partition counts and lists namespaces over HTTP, then produces and
consumes on the binary port the lookup answered -- and what the lookup answers: Pulsar's LookupData with
every field, a listener's URLs, 404/412/503 with a reason, 401/403 with authorization on.

The admin app is served on 127.0.0.1 port 0 over an in-process broker's core, as the web service port
serves it (the ``admin_http`` harness's way, here with the app's own URL advertised and TLS when asked)."""
from __future__ import annotations

import asyncio
import json
import re
import socket
import ssl
import urllib.request
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import pytest
from aiohttp import web

from broker_core.broker import Broker
from broker_core.frontends.http.admin import Advertised, admin_app
from broker_core.security import Authorizer, Security
from broker_core.security.tokens import create_token, generate_secret_key
from tests.integration.test_http_admin_server import AdminHttp
from tests.security_certs import TlsFiles, make_tls, secret_setting

pulsar = pytest.importorskip("pulsar")
import _pulsar  # noqa: E402  (the wrapper's own extension: pattern_auto_discovery_period needs it)

QUIET = pulsar.ConsoleLogger(pulsar.LoggerLevel.Error)
FIELDS = {"brokerUrl", "brokerUrlTls", "httpUrl", "httpUrlTls", "nativeUrl", "brokerUrlSsl"}
SECRET = generate_secret_key()


class LookupHttp(AdminHttp):
    """The admin app over ``broker``'s core, advertising its own URL (``web_url``) and the broker's."""

    def __init__(self, broker: Broker, port: int, web_url: str) -> None:
        super().__init__(broker, port, 1 << 20)
        self.web_url = web_url


@contextmanager
def lookup_http(data_dir: Path, tls: TlsFiles | None = None, **config: Any) -> Iterator[LookupHttp]:
    """An in-process broker on port 0 and the admin app on a port of its own, over HTTPS with ``tls``."""
    if tls is not None:
        config = {**tls.broker_settings(), "brokerServicePortTls": 0, **config}
    broker = Broker(data_dir=data_dir, port=0, journalSyncMode="never", **config).start()
    try:
        registry = broker._service.registry
        listening = socket.socket()
        listening.bind(("127.0.0.1", 0))
        port = listening.getsockname()[1]
        web_url = f"{'https' if tls else 'http'}://127.0.0.1:{port}"
        context = None
        if tls is not None:
            context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            context.load_cert_chain(tls.server_cert, tls.server_key)

        async def serve() -> web.AppRunner:
            security = Security(broker.config, Authorizer(broker.config.super_user_roles(), registry.namespaces,
                                                          registry.policies))
            advertised = Advertised(f"http://127.0.0.1:{port}" if tls is None else "", broker.service_url,
                                    web_url_tls=web_url if tls else None, broker_url_tls=broker.service_url_tls)
            runner = web.AppRunner(admin_app(registry, security, broker.config, advertised), access_log=None)
            await runner.setup()
            await web.SockSite(runner, listening, ssl_context=context).start()
            return runner

        runner = asyncio.run_coroutine_threadsafe(serve(), broker._loop).result(timeout=30)
        try:
            yield LookupHttp(broker, port, web_url)
        finally:
            asyncio.run_coroutine_threadsafe(runner.cleanup(), broker._loop).result(timeout=30)
    finally:
        broker.stop()


@pytest.fixture(scope="module")
def http(tmp_path_factory):
    listeners = "internal:pulsar://10.1.2.3:6650,internal:pulsar+ssl://10.1.2.3:6651,external:pulsar://ext.example:6650"
    with lookup_http(tmp_path_factory.mktemp("lookup"), advertisedListeners=listeners) as served:
        yield served


@pytest.fixture
def client(http):
    c = pulsar.Client(http.web_url, operation_timeout_seconds=10, logger=QUIET)
    yield c
    c.close()


def new_topic(prefix: str = "hl") -> str:
    return f"persistent://public/default/{prefix}-{uuid.uuid4().hex[:10]}"


def lookup_path(topic: str) -> str:
    domain, rest = topic.split("://", 1)
    return f"/lookup/v2/topic/{domain}/{rest}"


# ------------------------------------------------------------------ the official client over HTTP
def test_the_official_client_with_an_http_service_url_produces_and_consumes(client):
    topic = new_topic()
    consumer = client.subscribe(topic, "s", initial_position=pulsar.InitialPosition.Earliest)
    producer = client.create_producer(topic)
    for i in range(3):
        producer.send(f"m{i}".encode())
    received = []
    for _ in range(3):
        msg = consumer.receive(10_000)
        received.append(msg.data())
        consumer.acknowledge(msg)
    assert received == [b"m0", b"m1", b"m2"]


def test_the_official_client_over_http_uses_every_partition_of_a_partitioned_topic(http, client):
    topic = new_topic("hl-part")
    assert http.put(f"/admin/v2/{topic.replace('://', '/')}/partitions", 3).status == 204
    consumer = client.subscribe(topic, "s", initial_position=pulsar.InitialPosition.Earliest)
    producer = client.create_producer(topic, message_routing_mode=pulsar.PartitionsRoutingMode.RoundRobinDistribution,
                                      batching_enabled=False)
    for i in range(6):
        producer.send(f"p{i}".encode())
    received = set()
    for _ in range(6):
        msg = consumer.receive(10_000)
        received.add((msg.data(), msg.topic_name()))
        consumer.acknowledge(msg)
    assert {data for data, _ in received} == {f"p{i}".encode() for i in range(6)}
    assert {name for _, name in received} == {f"{topic}-partition-{i}" for i in range(3)}
    assert http.get(f"/admin/v2/{topic.replace('://', '/')}/partitions?checkAllowAutoCreation=true").body \
        == {"partitions": 3}


def test_a_regex_subscription_over_http_finds_the_namespace_topics(client):
    prefix = f"hl-rx-{uuid.uuid4().hex[:8]}"
    client.create_producer(f"persistent://public/default/{prefix}-a").send(b"from a")
    conf = _pulsar.ConsumerConfiguration()  # the wrapper ignores pattern_auto_discovery_period (60 s)
    conf.pattern_auto_discovery_period(1)
    conf.subscription_initial_position(pulsar.InitialPosition.Earliest)
    consumer = client._client.subscribe_pattern(f"persistent://public/default/{prefix}-.*", "s", conf)
    assert consumer.receive(10_000).data() == b"from a"
    client.create_producer(f"persistent://public/default/{prefix}-b").send(b"from b")
    assert consumer.receive(10_000).data() == b"from b"
    consumer.close()


def test_the_namespace_topic_list_reads_the_mode_as_pulsar(http, client):
    prefix = f"hl-mode-{uuid.uuid4().hex[:8]}"
    client.create_producer(f"persistent://public/default/{prefix}").send(b"x")
    client.create_producer(f"non-persistent://public/default/{prefix}")
    persistent = http.get("/admin/v2/namespaces/public/default/topics").body
    assert f"persistent://public/default/{prefix}" in persistent
    assert f"non-persistent://public/default/{prefix}" not in persistent
    assert f"non-persistent://public/default/{prefix}" in http.get(
        "/admin/v2/namespaces/public/default/topics?mode=NON_PERSISTENT").body
    assert {f"persistent://public/default/{prefix}", f"non-persistent://public/default/{prefix}"} <= set(
        http.get("/admin/v2/namespaces/public/default/topics?mode=ALL").body)
    answer = http.get("/admin/v2/namespaces/public/default/topics?mode=SOME")
    assert answer.status == 400 and answer.reason.startswith("mode: expected one of PERSISTENT, NON_PERSISTENT, ALL")


# ------------------------------------------------------------------ what the lookup answers
def test_a_lookup_answers_every_field_of_pulsars_lookup_data(http):
    answer = http.get(lookup_path(new_topic()) + "?authoritative=false")
    assert answer.status == 200
    assert answer.body == {"brokerUrl": http.broker.service_url, "brokerUrlTls": "", "httpUrl": http.web_url,
                           "httpUrlTls": "", "nativeUrl": http.broker.service_url, "brokerUrlSsl": ""}


def test_a_lookup_naming_a_listener_answers_its_urls_by_query_or_header(http):
    path = lookup_path(new_topic())
    internal = http.get(path + "?listenerName=internal").body
    assert (internal["brokerUrl"], internal["brokerUrlTls"], internal["nativeUrl"]) == \
        ("pulsar://10.1.2.3:6650", "pulsar+ssl://10.1.2.3:6651", "pulsar://10.1.2.3:6650")
    assert internal["httpUrl"] == http.web_url and set(internal) == FIELDS
    external = http.get(path, headers={"X-Pulsar-ListenerName": "external"}).body
    assert (external["brokerUrl"], external["brokerUrlTls"]) == ("pulsar://ext.example:6650", "")
    # the query wins over the header, as Pulsar reads them
    both = http.get(path + "?listenerName=internal", headers={"X-Pulsar-ListenerName": "external"}).body
    assert both["brokerUrl"] == "pulsar://10.1.2.3:6650"


def test_a_lookup_naming_a_listener_the_broker_does_not_have_is_refused_with_a_reason(http):
    answer = http.get(lookup_path(new_topic()) + "?listenerName=nowhere")
    assert answer.status == 503
    assert "the broker does not have listener 'nowhere'" in answer.reason
    assert http.get(lookup_path(new_topic()), headers={"X-Pulsar-ListenerName": "nowhere"}).status == 503


@pytest.mark.parametrize("path, status, reason", [
    ("/lookup/v2/topic/persistentx/public/default/t", 412, "persistentx"),
    ("/lookup/v2/topic/persistent/public/default/%2e%2e", 412, "topic"),
    ("/lookup/v2/topic/persistent/public/no-such-ns/t", 404, "public/no-such-ns"),
    ("/lookup/v2/topic/persistent/public/default/t?authoritative=maybe", 400, "authoritative"),
])
def test_a_lookup_of_a_bad_name_or_domain_is_4xx_with_a_reason(http, path, status, reason):
    answer = http.get(path)
    assert answer.status == status
    assert reason in answer.reason


def test_a_lookup_of_a_missing_topic_is_404_without_auto_creation(tmp_path):
    with lookup_http(tmp_path, allowAutoTopicCreation="false") as served:
        topic = new_topic()
        answer = served.get(lookup_path(topic))
        assert answer.status == 404 and topic in answer.reason
        assert served.put(f"/admin/v2/{topic.replace('://', '/')}/partitions", 2).status == 204
        assert served.get(lookup_path(topic)).status == 200  # the partitioned topic
        assert served.get(lookup_path(topic + "-partition-1")).status == 200  # and its partitions


# ------------------------------------------------------------------ authorization
@pytest.fixture(scope="module")
def secured(tmp_path_factory):
    settings = {"authenticationEnabled": "true", "authenticationProviders": "token", "authorizationEnabled": "true",
                "superUserRoles": "root", "tokenSecretKey": secret_setting(SECRET)}
    with lookup_http(tmp_path_factory.mktemp("lookup-secured"), **settings) as served:
        assert served.post("/admin/v2/namespaces/public/default/permissions/billing", ["consume"],
                           token=create_token(SECRET, "root")).status == 204
        yield served


def test_a_lookup_needs_credentials_and_the_lookup_right(secured):
    path = lookup_path(new_topic())
    assert secured.get(path).status == 401
    assert secured.get(path, token="not.a.token").status == 401
    refused = secured.get(path, token=create_token(SECRET, "nobody"))
    assert refused.status == 403 and refused.reason
    assert secured.get(path, token=create_token(SECRET, "billing")).status == 200  # consume implies lookup
    assert set(secured.get(path, token=create_token(SECRET, "root")).body) == FIELDS


def test_the_official_client_over_http_authenticates_with_its_token(secured):
    topic = new_topic()
    root = pulsar.Client(secured.web_url, authentication=pulsar.AuthenticationToken(create_token(SECRET, "root")),
                         operation_timeout_seconds=10, logger=QUIET)
    nobody = pulsar.Client(secured.web_url, authentication=pulsar.AuthenticationToken(create_token(SECRET, "nobody")),
                           operation_timeout_seconds=3, logger=QUIET)
    try:
        consumer = root.subscribe(topic, "s", initial_position=pulsar.InitialPosition.Earliest)
        root.create_producer(topic).send(b"authorized")
        assert consumer.receive(10_000).data() == b"authorized"
        with pytest.raises(pulsar.PulsarException):
            nobody.create_producer(topic)
    finally:
        root.close()
        nobody.close()


# ------------------------------------------------------------------ https
@pytest.fixture(scope="module")
def tls(tmp_path_factory) -> TlsFiles:
    return make_tls(tmp_path_factory.mktemp("lookup-tls"))


def test_the_official_client_with_an_https_service_url_connects_to_the_tls_port(tmp_path, tls):
    with lookup_http(tmp_path, tls=tls) as served:
        context = ssl.create_default_context(cafile=tls.ca)
        with urllib.request.urlopen(served.web_url + lookup_path(new_topic()), context=context, timeout=30) as reply:
            found = json.loads(reply.read())
        assert found["brokerUrlTls"] == served.broker.service_url_tls and found["httpUrlTls"] == served.web_url
        assert re.fullmatch(r"pulsar\+ssl://127\.0\.0\.1:\d+", found["brokerUrlTls"])
        client = pulsar.Client(served.web_url, tls_trust_certs_file_path=tls.ca, operation_timeout_seconds=10,
                               logger=QUIET)
        try:
            topic = new_topic("hl-tls")
            consumer = client.subscribe(topic, "s", initial_position=pulsar.InitialPosition.Earliest)
            client.create_producer(topic).send(b"over tls")
            assert consumer.receive(10_000).data() == b"over tls"
        finally:
            client.close()
