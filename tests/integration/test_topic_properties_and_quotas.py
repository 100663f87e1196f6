"""A topic's properties, its backlog quotas and a schema's version (issue 31), through ``pulsarlike admin`` over
gRPC and over ``--admin-url`` REST, and through Pulsar's REST routes: properties merged and removed as Pulsar's,
kept across a restart, a partitioned topic's shown with its partitions; a topic's quota enforced type by type
over its namespace's."""
from __future__ import annotations

import json
import uuid

import pytest

from broker_core import Broker
from broker_core.errors import ProducerBlockedQuotaExceededException, TopicNotFound
from connector import Client
from connector.cli.admin import main
from connector.client.admin import Admin
from tests.integration.test_http_admin_server import admin_http

TRANSPORTS = ("grpc", "rest")


@pytest.fixture(scope="module")
def http(tmp_path_factory):
    with admin_http(tmp_path_factory.mktemp("topic-settings")) as served:
        yield served


def cli(capsys, http, transport: str, *args: str, code: int = 0) -> str:
    where = http.base if transport == "rest" else http.broker.service_url
    done = main(["admin", "--admin-url", where, *args])
    captured = capsys.readouterr()
    assert done == code, (args, done, captured.out, captured.err)
    return captured.out if code == 0 else captured.err


def fresh(kind: str = "persistent") -> str:
    return f"{kind}://public/default/ts-{uuid.uuid4().hex[:10]}"


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_topic_properties_are_merged_read_and_removed(capsys, http, transport):
    topic = fresh()
    with Admin(http.broker.service_url) as admin:
        admin.create_topic(topic)
    assert json.loads(cli(capsys, http, transport, "topics", "get-properties", topic)) == {}
    cli(capsys, http, transport, "topics", "update-properties", topic, "-p", "team=billing", "-p", "tier=1")
    cli(capsys, http, transport, "topics", "update-properties", topic, "--property", "tier=2")
    assert json.loads(cli(capsys, http, transport, "topics", "get-properties", topic)) == {
        "team": "billing", "tier": "2"}
    cli(capsys, http, transport, "topics", "remove-properties", topic, "-k", "team")
    cli(capsys, http, transport, "topics", "remove-properties", topic, "-k", "never-set")
    assert json.loads(cli(capsys, http, transport, "topics", "get-properties", topic)) == {"tier": "2"}
    assert "TopicNotFound" in cli(capsys, http, transport, "topics", "get-properties", fresh(), code=1)


def test_a_partitioned_topics_properties_are_its_metadatas(http):
    topic = fresh()
    with Admin(admin_url=http.base) as admin:
        admin.create_partitioned_topic(topic, 2)
        admin.update_topic_properties(topic, {"owner": "etl"})
    path = topic.replace("persistent://", "/admin/v2/persistent/")
    assert http.get(path + "/partitions").body == {"partitions": 2, "properties": {"owner": "etl"}}
    with Admin(http.broker.service_url) as admin:
        assert admin.get_topic_properties(topic) == {"owner": "etl"}
        assert admin.get_topic_properties(topic + "-partition-0") == {}  # a partition's are its own
        admin.update_partitioned_topic(topic, 3)
        assert admin.get_topic_properties(topic) == {"owner": "etl"}  # kept as the topic grows


def test_properties_over_rest_answer_pulsars_codes(http):
    topic = fresh()
    path = topic.replace("persistent://", "/admin/v2/persistent/")
    assert http.put(path).status == 204
    assert http.put(path + "/properties", {"a": "b"}).status == 204
    assert http.put(path + "/properties").status == 204  # nothing given: nothing changed, as Pulsar
    assert http.get(path + "/properties").body == {"a": "b"}
    assert http.put(path + "/properties", {"a": 1}).status == 400
    assert http.delete(path + "/properties?key=a").status == 204
    assert http.get(path + "/properties").body == {}
    assert http.get(path.replace("/ts-", "/missing-") + "/properties").status == 404
    non_persistent = fresh("non-persistent").replace("non-persistent://", "/admin/v2/non-persistent/")
    assert http.put(non_persistent).status == 204
    assert http.get(non_persistent + "/properties").status == 412  # it stores nothing


def test_properties_survive_a_restart_and_go_with_the_topic(tmp_path):
    plain, partitioned = fresh(), fresh()
    with Broker(data_dir=tmp_path, port=0) as broker, Admin(broker.service_url) as admin:
        admin.create_topic(plain)
        admin.create_partitioned_topic(partitioned, 2)
        admin.update_topic_properties(plain, {"k": "v"})
        admin.update_topic_properties(partitioned, {"p": "q"})
    with Broker(data_dir=tmp_path, port=0) as broker, Admin(broker.service_url) as admin:
        assert admin.get_topic_properties(plain) == {"k": "v"}
        assert admin.get_topic_properties(partitioned) == {"p": "q"}
        admin.delete_topic(plain)
        with pytest.raises(TopicNotFound):
            admin.get_topic_properties(plain)
        admin.create_topic(plain)
        assert admin.get_topic_properties(plain) == {}


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_topic_backlog_quotas_are_set_read_and_removed(capsys, http, transport):
    topic = fresh()
    with Admin(http.broker.service_url) as admin:
        admin.create_topic(topic)
    assert json.loads(cli(capsys, http, transport, "topics", "get-backlog-quotas", topic)) == {}
    cli(capsys, http, transport, "topics", "set-backlog-quota", topic, "-l", "10M", "-p", "producer_exception")
    cli(capsys, http, transport, "topics", "set-backlog-quota", topic, "-lt", "1h", "-p",
        "consumer_backlog_eviction", "-t", "message_age")
    assert json.loads(cli(capsys, http, transport, "topics", "get-backlog-quotas", topic)) == {
        "destination_storage": {"limit": 10 << 20, "limitSize": 10 << 20, "limitTime": -1,
                                "policy": "producer_exception"},
        "message_age": {"limit": -1, "limitSize": -1, "limitTime": 3600, "policy": "consumer_backlog_eviction"}}
    cli(capsys, http, transport, "topics", "remove-backlog-quota", topic)
    assert set(json.loads(cli(capsys, http, transport, "topics", "get-backlog-quotas", topic))) == {"message_age"}
    cli(capsys, http, transport, "topics", "remove-backlog-quota", topic, "-t", "message_age")
    assert json.loads(cli(capsys, http, transport, "topics", "get-backlog-quotas", topic, "-ap")) == {}
    assert cli(capsys, http, transport, "topics", "set-backlog-quota", topic, "-p", "nonsense", code=2)
    assert "TopicNotFound" in cli(capsys, http, transport, "topics", "get-backlog-quotas", fresh(), code=1)


def test_a_topics_quota_is_enforced_in_place_of_its_namespaces_of_that_type(tmp_path):
    namespace = "public/quota-" + uuid.uuid4().hex[:6]
    topic, other = f"persistent://{namespace}/t", f"persistent://{namespace}/other"
    with Broker(data_dir=tmp_path, port=0, journalSyncMode="never") as broker, \
            Admin(broker.service_url) as admin, Client(broker.service_url) as client:
        admin.create_namespace(namespace)
        for name in (topic, other):
            admin.create_topic(name)
            admin.create_subscription(name, "slow")
            producer = client.create_producer(name)
            for _ in range(20):
                producer.send(b"x" * 1000)
            producer.close()
        # the namespace allows a large backlog; the topic's own size quota is far smaller
        admin.set_namespace_backlog_quota(namespace, "producer_exception", limit_size=1 << 30)
        admin.set_topic_backlog_quota(topic, "producer_exception", limit_size=1000)
        with pytest.raises(ProducerBlockedQuotaExceededException):
            client.create_producer(topic)
        client.create_producer(other).close()  # only the namespace's quota binds there
        assert admin.get_topic_backlog_quotas(topic, applied=True)["destination_storage"]["limitSize"] == 1000
        # a message_age quota set on the topic leaves the namespace's size quota in force for that type
        admin.remove_topic_backlog_quota(topic)
        admin.set_topic_backlog_quota(topic, "producer_exception", limit_time=3600, quota_type="message_age")
        client.create_producer(topic).close()
        admin.set_namespace_backlog_quota(namespace, "producer_exception", limit_size=1000)
        with pytest.raises(ProducerBlockedQuotaExceededException):
            client.create_producer(topic)


RECORD = {"type": "record", "name": "R", "fields": []}
GROWN = {"type": "record", "name": "R", "fields": [{"name": "a", "type": ["null", "string"], "default": None}]}


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_schemas_version_is_found_by_its_definition(capsys, http, tmp_path, transport):
    topic = fresh()
    with Admin(http.broker.service_url) as admin:
        admin.create_topic(topic)
        first = admin.upload_schema(topic, "AVRO", RECORD)
        second = admin.upload_schema(topic, "AVRO", GROWN)
        assert admin.get_schema_version(topic, "AVRO", RECORD) == first
    assert (first, second) == (0, 1)
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps({"type": "AVRO", "schema": json.dumps(GROWN), "properties": {}}))
    assert cli(capsys, http, transport, "schemas", "get-version", topic, "-f", str(schema)).strip() == "1"
    schema.write_text(json.dumps({"type": "AVRO", "schema": json.dumps({**RECORD, "name": "Other"})}))
    assert cli(capsys, http, transport, "schemas", "get-version", topic, "-f", str(schema)).strip() == "-1"
