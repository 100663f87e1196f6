"""``pulsarlike admin topics get-message-by-id|get-message-id|get-message-id-by-index|get-backlog-size|
analyze-backlog|trim-topic|create-missed-partitions|info-internal|truncate|get-subscription-properties|
update-subscription-properties`` over gRPC and over ``--admin-url`` REST, checked against what a producer wrote:
both transports print the same, with pulsar-admin's flags; ``Admin`` answers the same over both."""
from __future__ import annotations

import datetime
import json
import uuid

import pytest

from connector import Client
from connector.cli.admin import main
from connector.client.admin import Admin
from connector.client.message_id import MessageId
from tests.integration.test_http_admin_server import admin_http

TRANSPORTS = ("grpc", "rest")


@pytest.fixture(scope="module")
def http(tmp_path_factory):
    with admin_http(tmp_path_factory.mktemp("cli-topics")) as served:
        yield served


def url(http, transport: str) -> str:
    return http.base if transport == "rest" else http.broker.service_url


def cli(capsys, http, transport: str, *args: str, code: int = 0) -> str:
    done = main(["admin", "--admin-url", url(http, transport), *args])
    captured = capsys.readouterr()
    assert done == code, (args, done, captured.out, captured.err)
    return captured.out if code == 0 else captured.err


@pytest.fixture
def topic(http):
    name = f"persistent://public/default/ct-{uuid.uuid4().hex[:10]}"
    with Admin(http.broker.service_url) as admin:
        admin.create_topic(name)
        admin.create_subscription(name, "s", MessageId.earliest)
    return name


def produce(http, topic: str, n: int) -> list:
    with Client(http.broker.service_url) as client:
        producer = client.create_producer(topic)
        ids = [producer.send(f"m{i}".encode()) for i in range(n)]
        producer.close()
    return ids


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_messages_are_found_by_id_time_and_index(capsys, http, topic, transport):
    ids = produce(http, topic, 3)
    second = ids[1]
    shown = cli(capsys, http, transport, "topics", "get-message-by-id", topic, "-l", str(second.ledger_id()),
                "--entryId", str(second.entry_id()))
    assert shown.startswith(f"Message ID: {second.ledger_id()}:{second.entry_id()}\n") and "|m1" in shown
    assert "MessageNotFound" in cli(capsys, http, transport, "topics", "get-message-by-id", topic, "-l", "0",
                                    "-e", "99", code=1)
    with Admin(admin_url=http.base) if transport == "rest" else Admin(http.broker.service_url) as admin:
        published = admin.get_message_by_id(topic, second.ledger_id(), second.entry_id())[0].publish_time
        stamp = datetime.datetime.fromtimestamp(published / 1000, datetime.timezone.utc).isoformat()
        found = json.loads(cli(capsys, http, transport, "topics", "get-message-id", topic, "-d", stamp))
        assert found["entryId"] <= second.entry_id()  # ms precision: an earlier message may share the time
        assert admin.get_message_id_by_timestamp(topic, published + 60_000) is None
        assert json.loads(cli(capsys, http, transport, "topics", "get-message-id-by-index", topic, "-i", "2")) == {
            "ledgerId": ids[2].ledger_id(), "entryId": ids[2].entry_id(), "partitionIndex": -1}
        assert admin.get_message_id_by_index(topic, 0).entry_id() == ids[0].entry_id()
    assert "Cannot find any messages" in cli(capsys, http, transport, "topics", "get-message-id", topic, "-d",
                                             "2999-01-01T00:00:00Z")
    assert cli(capsys, http, transport, "topics", "get-message-id", topic, "-d", "yesterday", code=2)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_backlog_size_and_analysis(capsys, http, topic, transport):
    ids = produce(http, topic, 4)
    everything = int(cli(capsys, http, transport, "topics", "get-backlog-size", topic))
    assert everything == json.loads(cli(capsys, http, transport, "topics", "stats", topic))["storageSize"]
    tail = int(cli(capsys, http, transport, "topics", "get-backlog-size", topic, "-m",
                   f"{ids[3].ledger_id()}:{ids[3].entry_id()}"))
    assert 0 < tail < everything
    found = json.loads(cli(capsys, http, transport, "topics", "analyze-backlog", topic, "-s", "s"))
    assert (found["entries"], found["messages"], found["aborted"]) == (4, 4, False)
    found = json.loads(cli(capsys, http, transport, "topics", "analyze-backlog", topic, "-s", "s", "-p",
                           f"{ids[2].ledger_id()}:{ids[2].entry_id()}"))
    assert found["messages"] == 2


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_trim_truncate_missed_partitions_and_internal_info(capsys, http, topic, transport):
    produce(http, topic, 3)
    assert cli(capsys, http, transport, "topics", "trim-topic", topic) == ""
    info = json.loads(cli(capsys, http, transport, "topics", "info-internal", topic))
    assert sum(ledger["entries"] for ledger in info["ledgers"]) == 3 and "s" in info["cursors"]
    assert cli(capsys, http, transport, "topics", "truncate", topic) == ""
    assert json.loads(cli(capsys, http, transport, "topics", "stats", topic))["subscriptions"]["s"]["msgBacklog"] == 0
    partitioned = f"{topic}-p"
    cli(capsys, http, transport, "topics", "create-partitioned-topic", partitioned, "-p", "2")
    assert cli(capsys, http, transport, "topics", "create-missed-partitions", partitioned) == ""
    assert set(json.loads(cli(capsys, http, transport, "topics", "info-internal", partitioned))["partitions"]) == {
        f"{partitioned}-partition-0", f"{partitioned}-partition-1"}


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_subscription_properties_round_trip(capsys, http, topic, transport):
    args = ("topics", "update-subscription-properties", topic, "-s", "s")
    assert cli(capsys, http, transport, *args, "-p", "team=billing", "--property", "tier=1") == ""
    shown = cli(capsys, http, transport, "topics", "get-subscription-properties", topic, "-s", "s")
    assert shown.strip() == '{"team":"billing","tier":"1"}' or json.loads(shown) == {"team": "billing", "tier": "1"}
    assert "--clear" in cli(capsys, http, transport, *args, code=2)
    assert "should not pass" in cli(capsys, http, transport, *args, "-c", "-p", "a=b", code=2)
    cli(capsys, http, transport, *args, "--clear")
    assert json.loads(cli(capsys, http, transport, "topics", "get-subscription-properties", topic, "-s", "s")) == {}
    assert "SubscriptionNotFound" in cli(capsys, http, transport, "topics", "get-subscription-properties", topic,
                                         "-s", "nope", code=1)
