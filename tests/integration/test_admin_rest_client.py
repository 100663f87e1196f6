"""``Admin(admin_url="http://...")``: the client's Admin over Pulsar's admin REST API (the broker's admin app on
a port of its own), with the same methods and the same typed errors as over gRPC; the calls REST cannot
serve say so by name."""
from __future__ import annotations

import subprocess
import uuid

import pytest

from broker_core import errors
from broker_core.security.tokens import create_token, generate_secret_key
from connector import AuthenticationBasic, AuthenticationTLS, AuthenticationToken, Client
from connector.client.admin import Admin, NotSupported
from connector.client.message_id import MessageId
from tests.integration.test_http_admin_server import admin_http
from tests.brokers import BrokerProcess
from tests.security_certs import as_args, make_tls, secret_setting


@pytest.fixture(scope="module")
def http(tmp_path_factory):
    with admin_http(tmp_path_factory.mktemp("rest-admin")) as served:
        yield served


@pytest.fixture
def admin(http):
    with Admin(admin_url=http.base) as rest:
        yield rest


@pytest.fixture
def name():
    return f"r{uuid.uuid4().hex[:10]}"


def produce(http, topic: str, n: int) -> None:
    with Client(http.broker.service_url) as client:
        producer = client.create_producer(topic, batching_enabled=False)
        for i in range(n):
            producer.send(f"m{i}".encode())
        producer.close()


# ------------------------------------------------------------------ tenants and namespaces
def test_tenants_are_created_read_updated_and_deleted(admin, name):
    admin.create_tenant(name, admin_roles=["ops"])
    assert name in admin.list_tenants()
    assert admin.get_tenant(name) == {"adminRoles": ["ops"], "allowedClusters": ["standalone"]}
    admin.update_tenant(name, admin_roles=["ops", "dev"])
    assert admin.get_tenant(name)["adminRoles"] == ["ops", "dev"]
    with pytest.raises(errors.TenantAlreadyExists):
        admin.create_tenant(name)
    admin.create_namespace(f"{name}/ns")
    with pytest.raises(errors.TenantNotEmpty):
        admin.delete_tenant(name)
    admin.delete_tenant(name, force=True)
    assert name not in admin.list_tenants()
    with pytest.raises(errors.TenantNotFound):
        admin.get_tenant(name)


def test_namespaces_and_their_errors(admin, name):
    admin.create_tenant(name)
    admin.create_namespace(f"{name}/a")
    assert admin.list_namespaces(name) == [f"{name}/a"]
    with pytest.raises(errors.NamespaceAlreadyExists):
        admin.create_namespace(f"{name}/a")
    with pytest.raises(errors.TenantNotFound):
        admin.list_namespaces(name + "-none")
    admin.create_topic(f"persistent://{name}/a/t")
    with pytest.raises(errors.NamespaceNotEmpty):
        admin.delete_namespace(f"{name}/a")
    admin.delete_namespace(f"{name}/a", force=True)
    with pytest.raises(errors.NamespaceNotFound):
        admin.list_topics(f"{name}/a")


# ------------------------------------------------------------------ topics
def test_topics_partitions_stats_and_deletion(admin, name):
    plain, parted = f"persistent://public/default/{name}", f"persistent://public/default/{name}-p"
    admin.create_topic(plain)
    admin.create_partitioned_topic(parted, 2)
    with pytest.raises(errors.TopicAlreadyExists):
        admin.create_topic(plain)
    assert plain in admin.list_topics("public/default")
    assert parted in admin.list_partitioned_topics("public/default")
    assert admin.get_partitioned_topic_metadata(parted) == {"partitions": 2}
    admin.update_partitioned_topic(parted, 3)
    assert admin.get_partitioned_topic_metadata(parted) == {"partitions": 3}
    with pytest.raises(errors.NotAllowedError):
        admin.update_partitioned_topic(parted, 1)
    assert admin.topic_stats(plain)["msgInCounter"] == 0
    assert admin.partitioned_topic_stats(parted)["metadata"]["partitions"] == 3
    assert "ledgers" in admin.topic_internal_stats(plain)
    admin.delete_topic(parted)
    admin.delete_topic(plain)
    with pytest.raises(errors.TopicNotFound):
        admin.topic_stats(plain)


def test_namespace_topics_lists_a_modes_domains_from_one_route(admin, name):
    admin.create_tenant(name)
    admin.create_namespace(f"{name}/ns")
    admin.create_topic(f"persistent://{name}/ns/p")
    admin.create_topic(f"non-persistent://{name}/ns/np")
    assert admin.list_namespace_topics(f"{name}/ns") == [f"persistent://{name}/ns/p"]
    assert admin.list_namespace_topics(f"{name}/ns", "NON_PERSISTENT") == [f"non-persistent://{name}/ns/np"]
    assert sorted(admin.list_namespace_topics(f"{name}/ns", "ALL")) == sorted(admin.list_topics(f"{name}/ns"))
    with pytest.raises(ValueError):
        admin.list_namespace_topics(f"{name}/ns", "SOME")
    with pytest.raises(errors.NamespaceNotFound):
        admin.list_namespace_topics(f"{name}/none")


def test_a_partitioned_topics_subscription_calls_reach_every_partition_in_one_request(admin, http, name):
    topic = f"persistent://public/default/{name}"
    admin.create_partitioned_topic(topic, 2)
    admin.create_subscription(topic, "s", MessageId.earliest)
    produce(http, topic, 6)
    assert admin.clear_backlog(topic, "s") == 6
    admin.reset_cursor(topic, "s", timestamp_ms=0)
    assert admin.expire_messages(topic, "s", expire_time_seconds=0) == 6
    with pytest.raises(errors.NotAllowedError):
        admin.skip_messages(topic, "s", 1)
    admin.delete_subscription(topic, "s")
    assert admin.list_subscriptions(topic) == []


def test_subscriptions_skip_clear_reset_and_expire_count_what_they_acknowledged(admin, http, name):
    topic = f"persistent://public/default/{name}"
    admin.create_topic(topic)
    admin.create_subscription(topic, "s", MessageId.earliest)
    produce(http, topic, 5)
    assert admin.list_subscriptions(topic) == ["s"]
    assert admin.skip_messages(topic, "s", 2) == 2
    assert admin.clear_backlog(topic, "s") == 3
    admin.reset_cursor(topic, "s", message_id=MessageId.earliest)
    assert admin.topic_stats(topic)["subscriptions"]["s"]["msgBacklog"] == 5
    assert admin.expire_messages(topic, "s", expire_time_seconds=0) == 5
    with pytest.raises(errors.SubscriptionNotFound):
        admin.skip_messages(topic, "nope", 1)
    admin.delete_subscription(topic, "s")
    assert admin.list_subscriptions(topic) == []


def test_last_message_id_terminate_unload_and_lookup(admin, http, name):
    topic = f"persistent://public/default/{name}"
    admin.create_topic(topic)
    assert admin.get_last_message_id(topic).entry_id() == -1
    produce(http, topic, 3)
    last = admin.get_last_message_id(topic)
    assert last.entry_id() == 2
    admin.unload_topic(topic)
    assert admin.terminate_topic(topic) == last
    assert admin.lookup_topic(topic) == http.broker.service_url


def test_namespace_backlog_and_unsubscribe(admin, http, name):
    admin.create_tenant(name)
    admin.create_namespace(f"{name}/ns")
    topic = f"persistent://{name}/ns/t"
    admin.create_topic(topic)
    admin.create_subscription(topic, "s", MessageId.earliest)
    produce(http, topic, 4)
    assert admin.clear_namespace_backlog(f"{name}/ns") == 4
    assert admin.unsubscribe_namespace(f"{name}/ns", "s") == [topic]
    with pytest.raises(errors.SubscriptionNotFound):
        admin.unsubscribe_namespace(f"{name}/ns", "s")


# ------------------------------------------------------------------ policies and permissions
def test_namespace_and_topic_policies_round_trip(admin, name):
    admin.create_tenant(name)
    ns = f"{name}/ns"
    admin.create_namespace(ns)
    admin.set_namespace_retention(ns, 60, 100)
    admin.set_namespace_message_ttl(ns, 30)
    admin.set_namespace_deduplication(ns, True)
    admin.set_namespace_max_producers_per_topic(ns, 4)
    assert admin.get_namespace_retention(ns) == {"retentionTimeInMinutes": 60, "retentionSizeInMB": 100}
    assert admin.namespace_policies(ns) == {
        "retention": {"retentionTimeInMinutes": 60, "retentionSizeInMB": 100}, "messageTTLInSeconds": 30,
        "deduplicationEnabled": True, "maxProducersPerTopic": 4}
    admin.remove_namespace_message_ttl(ns)
    assert admin.get_namespace_message_ttl(ns) is None
    with pytest.raises(errors.InvalidConfiguration):
        admin.set_namespace_retention(ns, 0, 5)
    topic = f"persistent://{ns}/t"
    admin.create_topic(topic)
    admin.set_topic_message_ttl(topic, 12)
    admin.set_topic_max_consumers(topic, 2)
    assert admin.topic_policies(topic) == {"messageTTLInSeconds": 12, "maxConsumersPerTopic": 2}
    admin.remove_topic_max_consumers(topic)
    assert admin.get_topic_max_consumers(topic) is None


def test_permissions_round_trip(admin, name):
    admin.create_tenant(name)
    ns = f"{name}/ns"
    admin.create_namespace(ns)
    admin.grant_namespace_permission(ns, "billing", ["produce", "consume"])
    assert sorted(admin.get_namespace_permissions(ns)["billing"]) == ["consume", "produce"]
    admin.revoke_namespace_permission(ns, "billing")
    assert admin.get_namespace_permissions(ns) == {}
    topic = f"persistent://{ns}/t"
    admin.create_topic(topic)
    admin.grant_topic_permission(topic, "shop", "produce")
    assert admin.get_topic_permissions(topic) == {"shop": ["produce"]}


# ------------------------------------------------------------------ REST only, and not over REST
def test_clusters_brokers_and_schemas_are_served(admin, name):
    assert admin.list_clusters() == ["standalone"]
    assert admin.get_cluster("standalone")["serviceUrl"] == "http://127.0.0.1:8080"
    assert admin.list_brokers() == ["127.0.0.1:8080"]
    assert admin.broker_healthcheck() == "ok"
    assert admin.get_broker_version()
    assert admin.get_leader_broker()["brokerId"] == "127.0.0.1:8080"
    topic = f"persistent://public/default/{name}"
    v1 = {"type": "record", "name": "U", "fields": [{"name": "a", "type": "int"}]}
    assert admin.upload_schema(topic, "AVRO", v1) == 0
    assert admin.get_schema(topic)["type"] == "AVRO"
    bad = {"type": "record", "name": "U", "fields": [{"name": "a", "type": "string"}]}
    assert admin.test_schema_compatibility(topic, "AVRO", bad)["compatibility"] is False
    with pytest.raises(errors.IncompatibleSchema):
        admin.upload_schema(topic, "AVRO", bad)
    assert admin.delete_schema(topic) == 0
    with pytest.raises(errors.TopicNotFound):
        admin.get_schema(topic)


def test_a_call_with_no_rest_equivalent_raises_not_supported_naming_it(admin, name):
    topic = f"persistent://public/default/{name}"
    for call in (lambda: admin.acknowledge_up_to(topic, "s", 1), lambda: admin.get_offset_bounds(topic),
                 lambda: admin.offset_for_timestamp(topic, 0)):
        with pytest.raises(NotSupported) as raised:
            call()
        assert raised.value.method in str(raised.value) and "REST" in str(raised.value)


def test_rest_only_calls_over_grpc_raise_not_supported_naming_them(http):
    with Admin(http.broker.service_url) as grpc_admin:
        with pytest.raises(NotSupported, match="list_clusters is served over Pulsar's admin REST API only"):
            grpc_admin.list_clusters()


def test_an_unreachable_admin_url_is_connect_error_and_a_bad_one_is_refused():
    with Admin(admin_url="http://127.0.0.1:1", operation_timeout_seconds=2) as unreachable:
        with pytest.raises(errors.ConnectError):
            unreachable.list_tenants()
    with pytest.raises(errors.InvalidConfiguration):
        Admin(admin_url="pulsar://127.0.0.1:6650")
    with pytest.raises(ValueError):
        Admin()


def test_tokens_travel_as_bearer_and_refusals_are_typed(tmp_path):
    secret = generate_secret_key()
    config = {"authenticationEnabled": "true", "authenticationProviders": "token", "authorizationEnabled": "true",
              "superUserRoles": "root", "tokenSecretKey": secret_setting(secret)}
    with admin_http(tmp_path / "data", **config) as secured:
        with Admin(admin_url=secured.base) as anonymous:
            with pytest.raises(errors.AuthenticationError):
                anonymous.list_tenants()
        with Admin(admin_url=secured.base, authentication=AuthenticationToken(create_token(secret, "eve"))) as eve:
            with pytest.raises(errors.AuthorizationError):
                eve.list_tenants()
        with Admin(admin_url=secured.base, authentication=AuthenticationToken(create_token(secret, "root"))) as root:
            assert "public" in root.list_tenants()


def test_basic_credentials_travel_as_basic(tmp_path):
    hashed = subprocess.run(["openssl", "passwd", "-apr1", "r00t"], capture_output=True, text=True,
                            check=True).stdout.strip()
    users = tmp_path / ".htpasswd"
    users.write_text(f"root:{hashed}\n")
    config = {"authenticationEnabled": "true", "authenticationProviders": "basic", "authorizationEnabled": "true",
              "superUserRoles": "root", "basicAuthConf": f"file://{users}"}
    with admin_http(tmp_path / "data", **config) as secured:
        with Admin(admin_url=secured.base, authentication=AuthenticationBasic("root", "wrong")) as wrong:
            with pytest.raises(errors.AuthenticationError):
                wrong.list_tenants()
        with Admin(admin_url=secured.base, authentication=AuthenticationBasic("root", "r00t")) as root:
            assert "public" in root.list_tenants()


def test_https_with_a_client_certificate(tmp_path):
    tls = make_tls(tmp_path / "tls")
    settings = {**tls.broker_settings(), "webServicePort": "0", "webServicePortTls": "0",
                "authenticationEnabled": "true", "authenticationProviders": "tls", "authorizationEnabled": "true",
                "superUserRoles": "root"}
    process = BrokerProcess(tmp_path / "data", *as_args(settings)).start()
    try:
        web_tls = ""
        while not web_tls:
            line = process.proc.stdout.readline().strip()
            assert line, "the broker printed no web service ports"
            if line.startswith("pulsarlike metrics on https://"):
                web_tls = line.rsplit(" ", 1)[1].removesuffix("/metrics").replace("127.0.0.1", "localhost")
        certificate = AuthenticationTLS(*tls.client("root"))
        with Admin(admin_url=web_tls, authentication=certificate, tls_trust_certs_file_path=tls.ca,
                   tls_validate_hostname=True) as root:
            assert "public" in root.list_tenants()
        with Admin(admin_url=web_tls, authentication=AuthenticationTLS(*tls.client("eve")),
                   tls_trust_certs_file_path=tls.ca) as eve:
            with pytest.raises(errors.AuthorizationError):
                eve.list_tenants()
        with Admin(admin_url=web_tls, operation_timeout_seconds=5) as untrusting:  # no CA given: refused
            with pytest.raises(errors.ConnectError):
                untrusting.list_tenants()
    finally:
        process.stop()
