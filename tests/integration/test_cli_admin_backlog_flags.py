"""``pulsarlike admin topics stats|partitioned-stats -gpb -sbs -etb`` and ``topics analyze-backlog -b -q --plain``
over gRPC and over ``--admin-url`` REST, checked against what a producer wrote and a consumer acknowledged: a
subscription's ``backlogSize`` (bytes from its mark-delete position on; -1 when not asked) and
``earliestMsgPublishTimeInBacklog`` (the publish time of its first unacknowledged message; -1 when it has none, 0
when not asked), the REST query parameters Pulsar's admin sends, and a backlog scanned in rounds of the broker's
``subscriptionBacklogScanMaxEntries`` (3 here) as pulsar-admin's ``-b`` asks for them."""
from __future__ import annotations

import json
import urllib.error
import urllib.request
import uuid

import pytest

from connector import Client
from connector.cli.admin import main
from connector.client.admin import Admin
from connector.client.message_id import MessageId
from tests.integration.test_http_admin_server import admin_http

TRANSPORTS = ("grpc", "rest")
SCAN_MAX = 3


@pytest.fixture(scope="module")
def http(tmp_path_factory):
    with admin_http(tmp_path_factory.mktemp("cli-backlog"), subscriptionBacklogScanMaxEntries=SCAN_MAX) as served:
        yield served


def url(http, transport: str) -> str:
    return http.base if transport == "rest" else http.broker.service_url


def admin(http, transport: str) -> Admin:
    return Admin(admin_url=http.base) if transport == "rest" else Admin(http.broker.service_url)


def cli(capsys, http, transport: str, *args: str, code: int = 0) -> str:
    done = main(["admin", "--admin-url", url(http, transport), *args])
    captured = capsys.readouterr()
    assert done == code, (args, done, captured.out, captured.err)
    return captured.out if code == 0 else captured.err


def printed_json(out: str) -> list[dict]:
    """The JSON documents printed one after the other (pretty or one a line)."""
    decoder, found, at = json.JSONDecoder(), [], 0
    while out[at:].strip():
        at += len(out[at:]) - len(out[at:].lstrip())
        value, at = decoder.raw_decode(out, at)
        found.append(value)
    return found


@pytest.fixture
def topic(http):
    name = f"persistent://public/default/bf-{uuid.uuid4().hex[:10]}"
    with Admin(http.broker.service_url) as a:
        a.create_topic(name)
        a.create_subscription(name, "s", MessageId.earliest)
    return name


def produce(http, topic: str, n: int, **producer_options) -> list:
    with Client(http.broker.service_url) as client:
        producer = client.create_producer(topic, batching_enabled=False, **producer_options)
        ids = [producer.send(f"m{i}".encode()) for i in range(n)]
        producer.close()
    return ids


def consume_and_ack(http, topic: str, n: int) -> None:
    with Client(http.broker.service_url) as client:
        consumer = client.subscribe(topic, "s")
        for _ in range(n):
            consumer.acknowledge(consumer.receive(timeout_millis=10000))
        consumer.close()


def publish_time(http, topic: str, message_id) -> int:
    with Admin(http.broker.service_url) as a:
        return a.get_message_by_id(topic, message_id.ledger_id(), message_id.entry_id())[0].publish_time


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_stats_fill_backlog_size_and_earliest_time_of_what_is_not_acknowledged(capsys, http, topic, transport):
    ids = produce(http, topic, 4)
    consume_and_ack(http, topic, 1)
    unacked_bytes = int(cli(capsys, http, transport, "topics", "get-backlog-size", topic, "-m",
                            f"{ids[1].ledger_id()}:{ids[1].entry_id()}"))
    plain = json.loads(cli(capsys, http, transport, "topics", "stats", topic))
    sub = plain["subscriptions"]["s"]
    assert (sub["msgBacklog"], sub["backlogSize"], sub["earliestMsgPublishTimeInBacklog"]) == (3, unacked_bytes, 0)
    assert 0 < unacked_bytes < plain["storageSize"]
    asked = json.loads(cli(capsys, http, transport, "topics", "stats", topic, "-gpb", "-sbs", "-etb"))
    first_unacked = publish_time(http, topic, ids[1])
    assert asked["subscriptions"]["s"]["earliestMsgPublishTimeInBacklog"] == first_unacked
    assert asked["earliestMsgPublishTimeInBacklogs"] == first_unacked
    assert json.loads(cli(capsys, http, transport, "topics", "stats", topic, "--get-earliest-time-in-backlog"))[
        "subscriptions"]["s"]["earliestMsgPublishTimeInBacklog"] == first_unacked
    with admin(http, transport) as a:
        unasked = a.topic_stats(topic, subscription_backlog_size=False)["subscriptions"]["s"]
        assert (unasked["backlogSize"], unasked["earliestMsgPublishTimeInBacklog"]) == (-1, 0)
    consume_and_ack(http, topic, 3)
    caught_up = json.loads(cli(capsys, http, transport, "topics", "stats", topic, "-etb"))["subscriptions"]["s"]
    assert (caught_up["msgBacklog"], caught_up["backlogSize"], caught_up["earliestMsgPublishTimeInBacklog"]) == (
        0, 0, -1)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_partitioned_stats_sum_backlog_sizes_and_take_the_earliest_time(capsys, http, transport):
    name = f"persistent://public/default/bfp-{uuid.uuid4().hex[:10]}"
    with Admin(http.broker.service_url) as a:
        a.create_partitioned_topic(name, 2)
        a.create_subscription(name, "s", MessageId.earliest)
    first = produce(http, f"{name}-partition-0", 2)[0]
    produce(http, f"{name}-partition-1", 3)
    merged = json.loads(cli(capsys, http, transport, "topics", "partitioned-stats", name, "--per-partition", "-etb"))
    per = merged["partitions"]
    sizes = [per[f"{name}-partition-{i}"]["subscriptions"]["s"]["backlogSize"] for i in range(2)]
    assert all(size > 0 for size in sizes)
    assert merged["subscriptions"]["s"]["backlogSize"] == sum(sizes)
    assert merged["subscriptions"]["s"]["earliestMsgPublishTimeInBacklog"] == publish_time(
        http, f"{name}-partition-0", first)
    assert merged["earliestMsgPublishTimeInBacklogs"] == publish_time(http, f"{name}-partition-0", first)
    with admin(http, transport) as a:
        unasked = a.partitioned_topic_stats(name, subscription_backlog_size=False)["subscriptions"]["s"]
        assert (unasked["backlogSize"], unasked["earliestMsgPublishTimeInBacklog"]) == (-1, 0)


def test_rest_stats_take_pulsars_query_parameters(http, topic):
    produce(http, topic, 2)
    stats_url = f"{http.base}/admin/v2/persistent/public/default/{topic.rsplit('/', 1)[1]}/stats"

    def get(query: str) -> dict:
        with urllib.request.urlopen(f"{stats_url}?{query}", timeout=10) as answer:
            return json.loads(answer.read())["subscriptions"]["s"]

    assert get("")["backlogSize"] > 0  # Pulsar's default: subscriptionBacklogSize=true
    assert get("subscriptionBacklogSize=false&getPreciseBacklog=true")["backlogSize"] == -1
    assert get("getEarliestTimeInBacklog=true")["earliestMsgPublishTimeInBacklog"] > 0
    with pytest.raises(urllib.error.HTTPError) as refused:
        get("getEarliestTimeInBacklog=soon")
    assert refused.value.code == 400


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_analyze_backlog_scans_in_rounds_up_to_backlog_scan_max_entries(capsys, http, topic, transport):
    ids = produce(http, topic, 8)
    one_round = json.loads(cli(capsys, http, transport, "topics", "analyze-backlog", topic, "-s", "s"))
    assert (one_round["entries"], one_round["aborted"]) == (SCAN_MAX, True)
    shown = printed_json(cli(capsys, http, transport, "topics", "analyze-backlog", topic, "-s", "s", "-b", "5"))
    assert [(r["entries"], r["aborted"]) for r in shown] == [(3, True), (6, True)]  # progress, then the result
    assert shown[-1]["firstMessageId"] == f"{ids[0].ledger_id()}:{ids[0].entry_id()}"
    quiet = cli(capsys, http, transport, "topics", "analyze-backlog", topic, "-s", "s", "-b", "5", "-q", "--plain")
    assert len(quiet.splitlines()) == 1 and json.loads(quiet)["entries"] == 6
    everything = cli(capsys, http, transport, "topics", "analyze-backlog", topic, "-s", "s",
                     "--backlog-scan-max-entries", "100", "--plain")
    rounds = [json.loads(line) for line in everything.splitlines()]
    assert [r["entries"] for r in rounds] == [3, 6, 8]
    assert (rounds[-1]["messages"], rounds[-1]["aborted"]) == (8, False)
    assert rounds[-1]["lastMessageId"] == f"{ids[7].ledger_id()}:{ids[7].entry_id()}"
    assert "must be greater than 0" in cli(capsys, http, transport, "topics", "analyze-backlog", topic, "-s", "s",
                                           "-b", "0", code=2)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_analyze_backlog_rounds_count_each_batch_entry_once(http, topic, transport):
    with Client(http.broker.service_url) as client:
        producer = client.create_producer(topic, batching_enabled=True, batching_max_messages=2,
                                          batching_max_publish_delay_ms=60_000)
        for i in range(8):
            producer.send_async(f"m{i}".encode(), None)
        producer.flush()
        producer.close()
    with admin(http, transport) as a:
        found = a.analyze_backlog(topic, "s", backlog_scan_max_entries=100)
    assert (found["entries"], found["messages"], found["aborted"]) == (4, 8, False)
