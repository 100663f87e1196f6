"""Compaction started by the admin (gRPC ``Compact``, REST ``PUT .../compaction``) and by the
``compactionThreshold`` policy, on a real broker process: Pulsar's status answers, the topic stats'
``compaction`` section, each partition of a partitioned topic, Pulsar's compaction metrics."""
from __future__ import annotations

import json
import urllib.error
import urllib.request
import uuid

import pytest

from connector import Admin, Client
from tests.brokers import BrokerProcess, restartable_port
from tests.waiting import wait_until


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    web_port = restartable_port()
    process = BrokerProcess(tmp_path_factory.mktemp("compaction") / "data", "--set", f"webServicePort={web_port}",
                            "--set", "brokerServiceCompactionMonitorIntervalInSeconds=1").start()
    process.http = f"http://127.0.0.1:{web_port}"
    try:
        wait_until(lambda: rest(process, "GET", "/admin/v2/clusters")[0] == 200, timeout_s=30)
        yield process
    finally:
        process.stop()


def rest(broker, method: str, path: str, body=None) -> tuple[int, object]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(broker.http + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            raw = answer.read()
            return answer.status, json.loads(raw) if raw and answer.headers.get_content_type() == "application/json" \
                else raw.decode()
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"null")
    except urllib.error.URLError:
        return 0, None


@pytest.fixture(scope="module")
def client(broker):
    with Client(broker.service_url) as c:
        yield c


@pytest.fixture(scope="module")
def admin(broker):
    a = Admin(broker.service_url)
    yield a
    a.close()


@pytest.fixture
def name():
    return f"c-{uuid.uuid4().hex[:10]}"


def send_updates(client, topic: str, keys: int = 5, rounds: int = 4) -> None:
    producer = client.create_producer(topic, batching_enabled=False)
    for r in range(rounds):
        for k in range(keys):
            producer.send(b"value-%d" % r, partition_key=f"k{k}")
    producer.close()


def test_grpc_compact_runs_and_the_status_and_stats_say_what_it_removed(admin, client, name):
    topic = f"persistent://public/default/{name}"
    send_updates(client, topic)
    assert admin.compaction_status(topic) == {"status": "NOT_RUN", "lastError": ""}
    admin.trigger_compaction(topic)
    wait_until(lambda: admin.compaction_status(topic)["status"] == "SUCCESS")
    section = admin.topic_stats(topic)["compaction"]
    assert section["lastCompactionRemovedEventCount"] == 15  # 20 messages, the latest of 5 keys kept
    assert section["lastCompactionSucceedTimestamp"] > 0 and section["lastCompactionFailedTimestamp"] == 0
    assert section["lastCompactionDurationTimeInMills"] >= 0


def test_rest_put_compaction_is_204_and_get_answers_pulsars_long_running_process_status(broker, client, name):
    path = f"/admin/v2/persistent/public/default/{name}/compaction"
    send_updates(client, f"persistent://public/default/{name}")
    assert rest(broker, "GET", path) == (200, {"status": "NOT_RUN", "lastError": ""})
    assert rest(broker, "PUT", path)[0] == 204
    wait_until(lambda: rest(broker, "GET", path) == (200, {"status": "SUCCESS", "lastError": ""}))


def test_compaction_of_a_missing_or_non_persistent_topic_is_refused(broker, name):
    assert rest(broker, "PUT", f"/admin/v2/persistent/public/default/{name}/compaction")[0] == 404
    status, body = rest(broker, "PUT", f"/admin/v2/non-persistent/public/default/{name}/compaction")
    assert status in (404, 412) and body["reason"]


def test_a_topic_compaction_threshold_compacts_it_automatically(admin, broker, client, name):
    topic = f"persistent://public/default/{name}"
    send_updates(client, topic)
    assert rest(broker, "POST", f"/admin/v2/persistent/public/default/{name}/compactionThreshold", 100)[0] == 204
    wait_until(lambda: admin.compaction_status(topic)["status"] == "SUCCESS", timeout_s=15)
    assert admin.topic_stats(topic)["compaction"]["lastCompactionRemovedEventCount"] == 15


def test_a_namespace_compaction_threshold_compacts_its_topics_above_it_only(admin, broker, client, name):
    namespace = f"public/{name}"
    assert rest(broker, "PUT", f"/admin/v2/namespaces/{namespace}")[0] == 204
    big, small = f"persistent://{namespace}/big", f"persistent://{namespace}/small"
    send_updates(client, big, rounds=20)  # 100 messages: a few kB
    send_updates(client, small, keys=1, rounds=1)  # one message: far below the threshold
    assert rest(broker, "POST", f"/admin/v2/namespaces/{namespace}/compactionThreshold", 2000)[0] == 204
    wait_until(lambda: admin.compaction_status(big)["status"] == "SUCCESS", timeout_s=15)
    assert admin.compaction_status(small)["status"] == "NOT_RUN"


def test_compacting_a_partitioned_topic_compacts_each_partition(admin, broker, client, name):
    base = f"persistent://public/default/{name}"
    admin.create_partitioned_topic(base, 3)
    producer = client.create_producer(base, batching_enabled=False)
    for r in range(3):
        for k in range(12):
            producer.send(b"v%d" % r, partition_key=f"key-{k}")
    producer.close()
    assert rest(broker, "PUT", f"/admin/v2/persistent/public/default/{name}/compaction")[0] == 204
    wait_until(lambda: admin.compaction_status(base)["status"] == "SUCCESS")
    removed = 0
    for i in range(3):
        section = admin.topic_stats(f"{base}-partition-{i}")["compaction"]
        assert section["lastCompactionSucceedTimestamp"] > 0
        removed += section["lastCompactionRemovedEventCount"]
    assert removed == 36 - 12


def test_pulsars_compaction_metrics_are_exported_for_a_compacted_topic(admin, broker, client, name):
    topic = f"persistent://public/default/{name}"
    send_updates(client, topic)
    admin.trigger_compaction(topic)
    wait_until(lambda: admin.compaction_status(topic)["status"] == "SUCCESS")

    def exported() -> dict[str, float]:
        _, text = rest(broker, "GET", "/metrics")
        return {line.split("{")[0]: float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                if line.startswith("pulsar_compaction_") and f'topic="{topic}"' in line}

    metrics = wait_until(lambda: exported() or None, timeout_s=15)
    assert metrics["pulsar_compaction_succeed_count"] == 1
    assert metrics["pulsar_compaction_failed_count"] == 0
    assert metrics["pulsar_compaction_removed_event_count"] == 15
    assert metrics["pulsar_compaction_compacted_entries_count"] == 5
    assert "pulsar_compaction_duration_time_in_mills" in metrics


def test_retention_keeps_what_is_not_compacted_yet_as_pulsars_compaction_cursor_does(broker_process, tmp_path):
    process = broker_process("--set", "managedLedgerMaxEntriesPerLedger=5",
                             "--set", "retentionCheckIntervalInSeconds=1")
    topic = "persistent://public/default/held"
    with Client(process.service_url) as client, Admin(process.service_url) as admin:
        send_updates(client, topic, keys=5, rounds=2)  # offsets 0..9: two full segments
        admin.trigger_compaction(topic)
        wait_until(lambda: admin.compaction_status(topic)["status"] == "SUCCESS")
        horizon = 10
        send_updates(client, topic, keys=5, rounds=4)  # offsets 10..29, not compacted yet
        # no subscription and no retention: whatever compaction covers goes ...
        first = wait_until(lambda: admin.topic_stats(topic)["firstOffset"] or None, timeout_s=15)
        # ... but never what it has not compacted yet
        assert first <= horizon
        assert admin.topic_stats(topic)["lastOffset"] == 29


@pytest.mark.parametrize("over", ["grpc", "rest"])
def test_the_cli_compacts_sets_the_threshold_and_tells_the_status(capsys, broker, client, name, over):
    from connector.cli.admin import main

    url = ["--admin-url", broker.http if over == "rest" else broker.service_url]

    def cli(*args: str) -> str:
        assert main(["admin", *url, *args]) == 0
        return capsys.readouterr().out.strip()

    topic = f"persistent://public/default/{name}"
    send_updates(client, topic)
    assert cli("topics", "compaction-status", topic) == f"Compaction has not been run for {topic} since broker startup"
    assert cli("topics", "compact", topic) == f"Topic compaction requested for {topic}"
    assert cli("topics", "compaction-status", "-w", topic) == "Compaction was a success"
    cli("topics", "set-compaction-threshold", topic, "-t", "10M")
    assert cli("topics", "get-compaction-threshold", topic) == str(10 << 20)
    cli("topics", "remove-compaction-threshold", topic)
    assert cli("topics", "get-compaction-threshold", topic) == "null"
    cli("namespaces", "set-compaction-threshold", "public/default", "-t", "0")
    assert cli("namespaces", "get-compaction-threshold", "public/default") == "0"
    cli("namespaces", "remove-compaction-threshold", "public/default")
