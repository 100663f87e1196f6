"""The Spark source and sink against a broker with token authentication and authorization: authPluginClassName
and authParams as pulsar-spark takes them, a token from a file, a role without grants refused, and the token
never in the options' repr."""
from __future__ import annotations

import uuid

import pytest

from broker_core import Broker
from broker_core.security.tokens import create_token, generate_secret_key
from connector import Admin, AuthenticationToken, Client
from connector.spark.options import parse_source_options
from tests.security_certs import secret_setting

pytestmark = pytest.mark.spark

SECRET = generate_secret_key()
TOKEN_PLUGIN = "org.apache.pulsar.client.impl.auth.AuthenticationToken"


@pytest.fixture(scope="module")
def secured(tmp_path_factory):
    with Broker(data_dir=tmp_path_factory.mktemp("secured"), port=0, authenticationEnabled=True,
                authenticationProviders="token", authorizationEnabled=True, superUserRoles="root",
                tokenSecretKey=secret_setting(SECRET)) as broker:
        with Admin(broker.service_url, authentication=AuthenticationToken(create_token(SECRET, "root"))) as root:
            root.grant_namespace_permission("public/default", "spark", ["produce", "consume"])
        yield broker


@pytest.fixture
def token_file(tmp_path):
    path = tmp_path / "spark.token"
    path.write_text(create_token(SECRET, "spark"))
    return path


def _auth(token_file) -> dict[str, str]:
    return {"authPluginClassName": TOKEN_PLUGIN, "authParams": f"file://{token_file}"}


def test_the_source_reads_with_a_token_from_a_file(spark, secured, token_file):
    topic = f"persistent://public/default/spark-auth-{uuid.uuid4().hex[:8]}"
    with Client(secured.service_url, authentication=AuthenticationToken(create_token(SECRET, "spark"))) as client:
        producer = client.create_producer(topic)
        for i in range(5):
            producer.send(f"m{i}".encode())
    rows = (spark.read.format("pulsarlike").option("service.url", secured.service_url).options(**_auth(token_file))
            .option("topic", topic).load().collect())
    assert sorted(bytes(r.value) for r in rows) == [f"m{i}".encode() for i in range(5)]


def test_the_sink_writes_with_a_token_and_a_role_without_grants_is_refused(spark, secured, token_file, tmp_path):
    topic = f"persistent://public/default/spark-sink-{uuid.uuid4().hex[:8]}"
    with Admin(secured.service_url, authentication=AuthenticationToken(create_token(SECRET, "root"))) as root:
        root.create_topic(topic)  # effectively-once needs deduplication, which only an admin may turn on
        root.set_topic_deduplication(topic, True)
    frame = spark.createDataFrame([(b"a",), (b"b",)], "value binary")
    (frame.write.format("pulsarlike").mode("append").option("service.url", secured.service_url)
     .option("pulsar.client.authPluginClassName", TOKEN_PLUGIN).option("pulsar.client.authParams",
                                                                      f"file://{token_file}")
     .option("topic", topic).save())
    with Admin(secured.service_url, authentication=AuthenticationToken(create_token(SECRET, "root"))) as root:
        assert root.topic_stats(topic)["msgInCounter"] == 2
    stranger = tmp_path / "stranger.token"
    stranger.write_text(create_token(SECRET, "stranger"))
    with pytest.raises(Exception, match="AuthorizationError|may not"):
        (spark.read.format("pulsarlike").option("service.url", secured.service_url).options(**_auth(stranger))
         .option("topic", topic).load().collect())


def test_auth_params_never_show_in_the_parsed_options():
    opts = parse_source_options({"service.url": "pulsar://h:6650", "topic": "t", "authPluginClassName": TOKEN_PLUGIN,
                                 "authParams": "token:eyJ.secret.sig"}, streaming=False)
    assert "eyJ.secret.sig" not in repr(opts)


def test_tls_options_on_a_plain_service_url_are_refused():
    with pytest.raises(ValueError, match="tlsTrustCertsFilePath needs a TLS service.url"):
        parse_source_options({"service.url": "pulsar://h:6650", "topic": "t", "tlsTrustCertsFilePath": "ca.pem"},
                             streaming=False)
