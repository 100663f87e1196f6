"""A topic's stored messages found by id, publish time and index, its backlog measured and its storage trimmed,
over real HTTP, checked against the messages a producer wrote: ``ledger/{l}/entry/{e}``, ``messageid/{t}``,
``getMessageIdByIndex``, ``backlogSize``, ``backlog``, ``analyzeBacklog``, ``trim``, ``createMissedPartitions``,
``internal-info``."""
from __future__ import annotations

import time
import uuid

import pytest

from connector import Client, ConsumerType
from connector.client.admin import Admin
from broker_core.types import TopicName
from connector.client.message_id import MessageId
from tests.integration.test_http_admin_messages import fetch, rest
from tests.integration.test_http_admin_server import admin_http


@pytest.fixture(scope="module")
def http(tmp_path_factory):
    # two entries a segment; cursors saved and retention checked rarely: only a trim asked for removes segments
    with admin_http(tmp_path_factory.mktemp("stored"), managedLedgerMaxEntriesPerLedger=2,
                    managedLedgerCursorFlushIntervalMs=3_600_000, retentionCheckIntervalInSeconds=3600) as served:
        yield served


@pytest.fixture
def topic(http):
    name = f"persistent://public/default/st-{uuid.uuid4().hex[:10]}"
    with Admin(admin_url=http.base) as admin:
        admin.create_topic(name)
        admin.create_subscription(name, "s", MessageId.earliest)
    return name


def produce(http, topic: str, n: int, *, pause_s: float = 0.0, batch: bool = False) -> list:
    """``n`` messages ``m0..``; their ids, and their publish times as the consumer sees them."""
    with Client(http.broker.service_url) as client:
        producer = client.create_producer(topic, batching_enabled=batch, batching_max_messages=n,
                                          batching_max_publish_delay_ms=60_000)
        if batch:
            for i in range(n):
                producer.send_async(f"m{i}".encode(), None)
            producer.flush()
        else:
            for i in range(n):
                producer.send(f"m{i}".encode())
                time.sleep(pause_s)
        producer.close()
        reader = client.create_reader(topic, MessageId.earliest)
        found = []
        while reader.has_message_available():
            found.append(reader.read_next(5000))
        reader.close()
    return found[-n:]


def test_get_message_by_id_answers_the_message_its_producer_was_given_that_id_for(http, topic):
    messages = produce(http, topic, 5)
    for message in messages:
        mid = message.message_id()
        status, body, headers = fetch(http, rest(topic) + f"/ledger/{mid.ledger_id()}/entry/{mid.entry_id()}")
        assert (status, body) == (200, message.data())
        assert headers["X-Pulsar-Message-ID"] == f"{mid.ledger_id()}:{mid.entry_id()}"
    last = messages[-1].message_id()
    assert fetch(http, rest(topic) + f"/ledger/{last.ledger_id()}/entry/{last.entry_id() + 1}")[0] == 404
    assert fetch(http, rest(topic) + f"/ledger/{last.ledger_id() + 7}/entry/{last.entry_id()}")[0] == 404


def test_get_message_by_id_needs_an_entry_id_not_an_offset_inside_a_batch(http, topic):
    messages = produce(http, topic, 3, batch=True)
    first = messages[0].message_id()
    assert {m.message_id().entry_id() for m in messages} == {first.entry_id()}
    status, body, headers = fetch(http, rest(topic) + f"/ledger/{first.ledger_id()}/entry/{first.entry_id()}")
    assert status == 200 and headers["X-Pulsar-num-batch-message"] == "3"
    assert fetch(http, rest(topic) + f"/ledger/{first.ledger_id()}/entry/{first.entry_id() + 1}")[0] == 404


def test_message_id_by_time_is_the_first_message_published_at_or_after_it(http, topic):
    messages = produce(http, topic, 4, pause_s=0.02)
    for message in messages:
        answer = http.get(rest(topic) + f"/messageid/{message.publish_timestamp()}")
        mid = message.message_id()
        assert answer.status == 200
        assert answer.body == {"ledgerId": mid.ledger_id(), "entryId": mid.entry_id(), "partitionIndex": -1}
    between = http.get(rest(topic) + f"/messageid/{messages[1].publish_timestamp() + 1}")
    assert between.body["entryId"] == messages[2].message_id().entry_id()
    assert http.get(rest(topic) + f"/messageid/{messages[-1].publish_timestamp() + 1}").status == 404
    assert http.get(rest(topic) + "/messageid/0").body["entryId"] == messages[0].message_id().entry_id()


def test_message_id_by_index_names_the_entry_holding_the_index(http, topic):
    produce(http, topic, 2)
    batch = produce(http, topic, 3, batch=True)  # messages 2, 3, 4 in one entry
    entry = batch[0].message_id()
    for index in (2, 3, 4):
        assert http.get(rest(topic) + f"/getMessageIdByIndex?index={index}").body == {
            "ledgerId": entry.ledger_id(), "entryId": entry.entry_id(), "partitionIndex": -1}
    assert http.get(rest(topic) + "/getMessageIdByIndex?index=0").body["entryId"] == 0
    assert http.get(rest(topic) + "/getMessageIdByIndex?index=5").status == 404
    assert http.get(rest(topic) + "/getMessageIdByIndex?index=-1").status == 404


def test_backlog_size_counts_the_bytes_from_a_message_on(http, topic):
    messages = produce(http, topic, 6)
    stats = http.get(rest(topic) + "/stats").body
    everything = http.put(rest(topic) + "/backlogSize", {"ledgerId": -1, "entryId": -1})
    assert everything.status == 200 and everything.body == stats["storageSize"]
    last = messages[-1].message_id()
    tail = http.put(rest(topic) + "/backlogSize", {"ledgerId": last.ledger_id(), "entryId": last.entry_id()}).body
    assert 0 < tail < everything.body


def test_the_offline_backlog_is_the_stored_messages_and_each_subscriptions_backlog(http, topic):
    produce(http, topic, 4)
    http.post(rest(topic) + "/subscription/s/skip/1")
    found = http.get(rest(topic) + "/backlog").body
    assert found["totalMessages"] == 4 and found["messageBacklog"] == 3
    assert found["cursorDetails"]["s"] == {"cursorBacklog": 3, "cursorLedgerId": -1}
    assert found["topicName"] == topic and sum(d["entries"] for d in found["dataLedgerDetails"]) == 4
    assert set(found) == {"storageSize", "totalMessages", "messageBacklog", "brokerName", "topicName",
                          "dataLedgerDetails", "cursorDetails", "statGeneratedAt"}


def test_analyze_backlog_counts_what_the_subscription_has_not_acknowledged(http, topic):
    messages = produce(http, topic, 6)
    with Client(http.broker.service_url) as client:
        consumer = client.subscribe(topic, "s", consumer_type=ConsumerType.Shared)
        got = [consumer.receive(5000) for _ in range(6)]
        for message in got[:2] + got[3:4]:  # 0, 1 and 3 acknowledged
            consumer.acknowledge(message)
        consumer.close()
    found = http.post(rest(topic) + "/subscription/s/analyzeBacklog").body
    second, last = messages[2].message_id(), messages[-1].message_id()
    assert (found["entries"], found["messages"], found["aborted"]) == (3, 3, False)
    assert found["firstMessageId"] == f"{second.ledger_id()}:{second.entry_id()}"
    assert found["lastMessageId"] == f"{last.ledger_id()}:{last.entry_id()}"
    fourth = messages[4].message_id()
    tail = http.post(rest(topic) + "/subscription/s/analyzeBacklog",
                     {"ledgerId": fourth.ledger_id(), "entryId": fourth.entry_id()}).body
    assert (tail["entries"], tail["messages"]) == (2, 2)
    assert http.post(rest(topic) + "/subscription/nope/analyzeBacklog").status == 404


def test_trim_removes_at_once_the_segments_retention_no_longer_keeps(http, topic):
    produce(http, topic, 6)  # three segments of two entries, the last one active
    ledgers = lambda: len(http.get(rest(topic) + "/internalStats").body["ledgers"])  # noqa: E731
    http.post(rest(topic) + "/subscription/s/skip_all")
    before = ledgers()
    assert before >= 3
    assert http.post(rest(topic) + "/trim").status == 204
    assert ledgers() == 1
    assert http.get(rest(topic) + "/stats").body["firstOffset"] == 4  # the active segment stays


def test_create_missed_partitions_makes_the_partitions_not_stored_yet(http):
    name = f"persistent://public/default/pt-{uuid.uuid4().hex[:10]}"
    assert http.put(rest(name) + "/partitions", 3).status == 204
    partitions = [TopicName.parse(name).partition(i) for i in range(3)]
    assert not any(http.registry.exists(p) for p in partitions)
    assert http.post(rest(name) + "/createMissedPartitions").status == 204
    assert all(http.registry.exists(p) for p in partitions)
    stats = http.get(rest(name) + "/partitioned-internalStats").body
    assert sorted(stats["partitions"]) == [str(p) for p in partitions]
    assert http.post(rest(name) + "/createMissedPartitions").status == 204  # nothing missed: nothing done


def test_internal_info_is_pulsars_managed_ledger_info(http, topic):
    produce(http, topic, 3)
    http.post(rest(topic) + "/subscription/s/skip/1")
    info = http.get(rest(topic) + "/internal-info").body
    assert set(info) == {"version", "creationDate", "modificationDate", "ledgers", "cursors", "properties"}
    assert sum(ledger["entries"] for ledger in info["ledgers"]) == 3
    assert info["cursors"]["s"]["markDelete"]["entryId"] == 0
    http.post(rest(topic) + "/terminate")
    assert http.get(rest(topic) + "/internal-info").body["terminatedPosition"]["entryId"] == 2


def test_a_partitioned_or_non_persistent_topic_is_refused_where_pulsar_refuses_it(http):
    name = f"persistent://public/default/pr-{uuid.uuid4().hex[:10]}"
    http.put(rest(name) + "/partitions", 2)
    for path in ("/ledger/0/entry/0", "/messageid/0", "/getMessageIdByIndex?index=0", "/backlog"):
        answer = http.get(rest(name) + path)
        assert answer.status == 412 and "partition" in answer.reason
    np = f"non-persistent://public/default/np-{uuid.uuid4().hex[:10]}"
    http.put(rest(np))
    for path in ("/ledger/0/entry/0", "/messageid/0", "/getMessageIdByIndex?index=0", "/backlog"):
        answer = http.get(rest(np) + path)
        assert answer.status == 412 and "non-persistent" in answer.reason
    assert http.post(rest(np) + "/subscription/s/analyzeBacklog").status == 501
