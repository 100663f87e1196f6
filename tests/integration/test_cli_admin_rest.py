"""``pulsarlike admin --admin-url http://HOST:PORT`` against a real ``pulsarlike broker`` process's web service
port: the CLI over Pulsar's admin REST API, as pulsar-admin is used -- tenants, namespaces, topics, clusters,
brokers, schemas, peeked messages -- with pulsar-admin's output and exit codes (1 and ``Code: reason`` for a refusal)."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from connector import Client
from connector.cli.admin import main
from tests.brokers import BrokerProcess, restartable_port

USER = {"type": "record", "name": "User", "fields": [{"name": "name", "type": "string"}]}


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    web_port = restartable_port()
    process = BrokerProcess(tmp_path_factory.mktemp("cli-rest") / "data", "--set", f"webServicePort={web_port}")
    process.start()
    process.admin_url = f"http://127.0.0.1:{web_port}"
    yield process
    process.stop()


def cli(capsys, broker, *args: str, code: int = 0) -> str:
    """``pulsarlike admin --admin-url http://... ARGS`` in this process; its stdout (stderr when it fails)."""
    done = main(["admin", "--admin-url", broker.admin_url, *args])
    captured = capsys.readouterr()
    assert done == code, (args, done, captured.out, captured.err)
    return captured.out if code == 0 else captured.err


def test_tenants_namespaces_and_topics_round_trip_over_http(capsys, broker):
    cli(capsys, broker, "tenants", "create", "acme", "--admin-roles", "ops")
    assert json.loads(cli(capsys, broker, "tenants", "get", "acme")) == {"adminRoles": ["ops"],
                                                                         "allowedClusters": ["standalone"]}
    cli(capsys, broker, "namespaces", "create", "acme/orders")
    assert cli(capsys, broker, "namespaces", "list", "acme").split() == ["acme/orders"]
    cli(capsys, broker, "namespaces", "set-retention", "acme/orders", "-t", "2h", "-s", "1G")
    assert json.loads(cli(capsys, broker, "namespaces", "get-retention", "acme/orders")) == {
        "retentionTimeInMinutes": 120, "retentionSizeInMB": 1024}
    cli(capsys, broker, "topics", "create-partitioned-topic", "persistent://acme/orders/p", "-p", "2")
    cli(capsys, broker, "topics", "create", "persistent://acme/orders/t")
    assert set(cli(capsys, broker, "topics", "list", "acme/orders").split()) == {
        "persistent://acme/orders/t", "persistent://acme/orders/p-partition-0", "persistent://acme/orders/p-partition-1"}
    assert json.loads(cli(capsys, broker, "topics", "get-partitioned-topic-metadata",
                          "persistent://acme/orders/p")) == {"partitions": 2}
    with Client(broker.service_url) as client:
        producer = client.create_producer("persistent://acme/orders/t")
        for i in range(3):
            producer.send(b"m%d" % i)
        producer.close()
    stats = json.loads(cli(capsys, broker, "topics", "stats", "persistent://acme/orders/t"))
    assert stats["msgInCounter"] == 3
    cli(capsys, broker, "topics", "create-subscription", "persistent://acme/orders/t", "-s", "s", "-m", "earliest")
    cli(capsys, broker, "topics", "skip", "persistent://acme/orders/t", "-s", "s", "-n", "1")
    stats = json.loads(cli(capsys, broker, "topics", "stats", "persistent://acme/orders/t"))
    assert stats["subscriptions"]["s"]["msgBacklog"] == 2
    cli(capsys, broker, "namespaces", "grant-permission", "acme/orders", "-r", "shop", "-a", "produce")
    assert json.loads(cli(capsys, broker, "namespaces", "permissions", "acme/orders")) == {"shop": ["produce"]}
    cli(capsys, broker, "tenants", "delete", "acme", "--force")
    assert "acme" not in cli(capsys, broker, "tenants", "list").split()


def test_refusals_exit_1_with_the_typed_code_and_pulsars_reason(capsys, broker):
    assert "TenantNotFound" in cli(capsys, broker, "namespaces", "list", "nobody", code=1)
    cli(capsys, broker, "topics", "create", "persistent://public/default/dup")
    assert "TopicAlreadyExists" in cli(capsys, broker, "topics", "create", "persistent://public/default/dup", code=1)
    assert "TopicNotFound" in cli(capsys, broker, "topics", "stats", "persistent://public/default/none", code=1)


def test_clusters_and_brokers(capsys, broker):
    web = broker.admin_url.removeprefix("http://")
    assert cli(capsys, broker, "clusters", "list").split() == ["standalone"]
    assert json.loads(cli(capsys, broker, "clusters", "get", "standalone"))["brokerServiceUrl"].startswith("pulsar://")
    assert "cluster elsewhere does not exist" in cli(capsys, broker, "clusters", "get", "elsewhere", code=1)
    assert cli(capsys, broker, "brokers", "list").split()[0].endswith(web.rsplit(":", 1)[1])
    assert cli(capsys, broker, "brokers", "healthcheck").strip() == "ok"
    assert cli(capsys, broker, "brokers", "version").strip()
    assert json.loads(cli(capsys, broker, "brokers", "leader-broker"))["serviceUrl"].startswith("http://")


def test_schemas_upload_get_check_and_delete(capsys, broker, tmp_path):
    topic = "persistent://public/default/with-schema"
    v1 = tmp_path / "v1.json"
    v1.write_text(json.dumps({"type": "AVRO", "schema": json.dumps(USER), "properties": {"by": "cli"}}))
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"type": "AVRO", "schema": json.dumps(
        {**USER, "fields": USER["fields"] + [{"name": "age", "type": "int"}]})}))
    cli(capsys, broker, "schemas", "upload", topic, "-f", str(v1))
    shown = json.loads(cli(capsys, broker, "schemas", "get", topic))
    assert (shown["version"], shown["type"], json.loads(shown["data"])) == (0, "AVRO", USER)
    assert json.loads(cli(capsys, broker, "schemas", "compatibility", topic, "-f", str(bad)))["compatibility"] is False
    assert "IncompatibleSchema" in cli(capsys, broker, "schemas", "upload", topic, "-f", str(bad), code=1)
    assert len(json.loads(cli(capsys, broker, "schemas", "get", topic, "--all-version"))) == 1
    cli(capsys, broker, "schemas", "delete", topic)
    assert "TopicNotFound" in cli(capsys, broker, "schemas", "get", topic, code=1)


def test_a_schema_file_that_is_not_json_is_a_usage_error(capsys, broker, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{nope")
    assert "is not JSON" in cli(capsys, broker, "schemas", "upload", "t", "-f", str(bad), code=2)


def test_peek_and_examine_messages_over_http(capsys, broker):
    topic = "persistent://public/default/peeked"
    cli(capsys, broker, "topics", "create", topic)
    cli(capsys, broker, "topics", "create-subscription", topic, "-s", "s", "-m", "earliest")
    with Client(broker.service_url) as client:
        producer = client.create_producer(topic, batching_enabled=False)
        for i in range(2):
            producer.send(b"hello-%d" % i, properties={"n": str(i)})
        producer.close()
    peeked = json.loads(cli(capsys, broker, "topics", "peek-messages", topic, "-s", "s", "-n", "2", "--json"))
    assert [m["properties"] for m in peeked] == [{"n": "0"}, {"n": "1"}]
    assert "hello-1" in cli(capsys, broker, "topics", "examine-messages", topic, "-i", "latest", "-m", "1")


def test_the_cli_process_speaks_http_with_pulsar_admins_url_flag(broker):
    done = subprocess.run([sys.executable, "-m", "broker_core.cli", "admin", "--admin-url", broker.admin_url,
                           "tenants", "list"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "public" in done.stdout.split()
