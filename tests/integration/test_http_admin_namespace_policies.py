"""The namespace policies of their own shape over real HTTP (backlog quotas, auto topic creation, the schema
compatibility strategy), what the broker does with them to official Pulsar clients, and topic truncation."""
from __future__ import annotations

import uuid

import pytest

from tests.integration.test_http_admin_server import admin_http
from tests.waiting import wait_until

pulsar = pytest.importorskip("pulsar")
from pulsar.schema import JsonSchema, Record, String, StringSchema  # noqa: E402

PER_SEGMENT = 4  # entries per segment: truncation and eviction have segments to work on


@pytest.fixture(scope="module")
def http(tmp_path_factory):
    with admin_http(tmp_path_factory.mktemp("ns-policies"), managedLedgerMaxEntriesPerLedger=PER_SEGMENT) as served:
        yield served


@pytest.fixture
def ns(http):
    name = f"public/nsp-{uuid.uuid4().hex[:8]}"
    assert http.put(f"/admin/v2/namespaces/{name}").status == 204
    return name


@pytest.fixture
def official(http):
    client = pulsar.Client(http.broker.service_url, operation_timeout_seconds=10,
                           logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    yield client
    client.close()


def backlog_of(http, topic: str, subscription: str) -> int:
    stats = http.get(f"/admin/v2/persistent/{topic.removeprefix('persistent://')}/stats").body
    return stats["subscriptions"][subscription]["msgBacklog"]


def fill(official, topic: str, n: int, subscription: str = "s") -> None:
    official.subscribe(topic, subscription).close()  # a durable subscription holds the backlog
    producer = official.create_producer(topic, batching_enabled=False)
    for i in range(n):
        producer.send(b"m%d" % i)
    producer.close()


# ------------------------------------------------------------------ backlog quotas
def test_a_backlog_quota_is_set_read_per_type_and_removed(http, ns):
    base = f"/admin/v2/namespaces/{ns}"
    assert http.get(f"{base}/backlogQuotaMap").body == {}
    assert http.post(f"{base}/backlogQuota", {"limitSize": 1024, "limitTime": -1,
                                              "policy": "producer_exception"}).status == 204
    assert http.post(f"{base}/backlogQuota?backlogQuotaType=message_age",
                     {"limitTime": 60, "policy": "consumer_backlog_eviction"}).status == 204
    assert http.get(f"{base}/backlogQuotaMap").body == {
        "destination_storage": {"limit": 1024, "limitSize": 1024, "limitTime": -1, "policy": "producer_exception"},
        "message_age": {"limit": -1, "limitSize": -1, "limitTime": 60, "policy": "consumer_backlog_eviction"}}
    assert http.get(f"{base}/backlogQuota?backlogQuotaType=message_age").body["limitTime"] == 60
    assert http.delete(f"{base}/backlogQuota").status == 204
    assert list(http.get(f"{base}/backlogQuotaMap").body) == ["message_age"]
    assert http.delete(f"{base}/backlogQuota?backlogQuotaType=message_age").status == 204
    assert http.get(f"{base}/backlogQuotaMap").body == {}


@pytest.mark.parametrize("query, body, status, words", [
    ("", {"limitSize": "1k", "policy": "producer_exception"}, 400, "BacklogQuota.limitSize"),
    ("", {"limitSize": 10, "policy": "drop_everything"}, 412, "BacklogQuota.policy"),
    ("", {"limitSize": -5, "policy": "producer_exception"}, 412, "limitSize"),
    ("", [1, 2], 400, "BacklogQuota: expected a JSON object"),
    ("?backlogQuotaType=disk", {"limitSize": 10, "policy": "producer_exception"}, 412, "backlogQuotaType"),
])
def test_a_bad_backlog_quota_is_refused_naming_what_is_wrong(http, ns, query, body, status, words):
    answer = http.post(f"/admin/v2/namespaces/{ns}/backlogQuota{query}", body)
    assert answer.status == status and words in answer.reason
    assert http.get(f"/admin/v2/namespaces/{ns}/backlogQuotaMap").body == {}


def test_a_backlog_quota_of_a_missing_namespace_is_404(http):
    answer = http.post("/admin/v2/namespaces/public/no-such-ns/backlogQuota",
                       {"limitSize": 10, "policy": "producer_exception"})
    assert answer.status == 404


def test_producer_exception_closes_producers_and_refuses_new_ones_until_the_backlog_is_consumed(http, ns, official):
    topic = f"persistent://{ns}/quota"
    fill(official, topic, 10)
    producer = official.create_producer(topic, batching_enabled=False, send_timeout_millis=3000)
    assert http.post(f"/admin/v2/namespaces/{ns}/backlogQuota",
                     {"limitSize": 10, "policy": "producer_exception"}).status == 204
    with pytest.raises(pulsar.ProducerBlockedQuotaExceededException):
        producer.send(b"over the quota")
    with pytest.raises(pulsar.ProducerBlockedQuotaExceededException):
        official.create_producer(topic)
    assert http.post(f"/admin/v2/persistent/{ns}/quota/subscription/s/skip_all").status == 204
    official.create_producer(topic).send(b"the backlog was consumed")


def test_consumer_backlog_eviction_moves_every_subscription_past_the_oldest_backlog(http, ns, official):
    topic = f"persistent://{ns}/evicted"
    fill(official, topic, 12, "slow")
    official.subscribe(topic, "fast").close()
    size = http.get(f"/admin/v2/persistent/{ns}/evicted/stats").body["backlogSize"]
    assert http.post(f"/admin/v2/namespaces/{ns}/backlogQuota",
                     {"limitSize": size // 2, "policy": "consumer_backlog_eviction"}).status == 204
    left = backlog_of(http, topic, "slow")
    assert 0 < left < 12 and backlog_of(http, topic, "fast") == 0
    consumer = official.subscribe(topic, "slow")
    first = consumer.receive(timeout_millis=5000).data()
    assert first == b"m%d" % (12 - left)  # the newest stayed, the oldest went
    consumer.close()


def test_an_eviction_by_age_acknowledges_what_is_older_than_the_limit(http, ns, official):
    topic = f"persistent://{ns}/aged"
    fill(official, topic, 5)
    assert http.post(f"/admin/v2/namespaces/{ns}/backlogQuota?backlogQuotaType=message_age",
                     {"limitTime": 0, "policy": "consumer_backlog_eviction"}).status == 204
    assert backlog_of(http, topic, "s") == 0


# ------------------------------------------------------------------ auto topic creation
def test_auto_topic_creation_is_overridden_per_namespace(http, ns, official):
    path = f"/admin/v2/namespaces/{ns}/autoTopicCreation"
    assert http.get(path).status == 204
    assert http.post(path, {"allowAutoTopicCreation": False, "topicType": "non-partitioned"}).status == 204
    assert http.get(path).body == {"allowAutoTopicCreation": False, "topicType": "non-partitioned"}
    with pytest.raises(pulsar.TopicNotFound):
        official.create_producer(f"persistent://{ns}/not-created")
    assert f"persistent://{ns}/not-created" not in http.get(f"/admin/v2/persistent/{ns}").body

    assert http.post(path, {"allowAutoTopicCreation": True, "topicType": "partitioned",
                            "defaultNumPartitions": 3}).status == 204
    official.create_producer(f"persistent://{ns}/made-partitioned").send(b"x")
    assert http.get(f"/admin/v2/persistent/{ns}/made-partitioned/partitions").body == {"partitions": 3}

    assert http.delete(path).status == 204
    official.create_producer(f"persistent://{ns}/broker-default").send(b"x")  # the broker's: non-partitioned
    assert http.get(f"/admin/v2/persistent/{ns}/broker-default/partitions").body == {"partitions": 0}


@pytest.mark.parametrize("body", [
    {"allowAutoTopicCreation": True, "topicType": "partitioned"},
    {"allowAutoTopicCreation": True, "topicType": "partitioned", "defaultNumPartitions": 0},
    {"allowAutoTopicCreation": True, "topicType": "both"},
    {"allowAutoTopicCreation": "yes", "topicType": "non-partitioned"},
    {"topicType": "non-partitioned"},
])
def test_a_bad_auto_topic_creation_override_is_412(http, ns, body):
    answer = http.post(f"/admin/v2/namespaces/{ns}/autoTopicCreation", body)
    assert answer.status == 412 and "autoTopicCreation" in answer.reason
    assert http.get(f"/admin/v2/namespaces/{ns}/autoTopicCreation").status == 204


# ------------------------------------------------------------------ schema compatibility strategy
class V1(Record):
    a = String()


class V2(Record):
    a = String()
    b = String()


def test_the_schema_compatibility_strategy_is_stored_and_honoured(http, ns, official):
    path = f"/admin/v2/namespaces/{ns}/schemaCompatibilityStrategy"
    assert http.get(path).body == "UNDEFINED"
    assert http.put(path, "ALWAYS_INCOMPATIBLE").status == 204
    assert http.get(path).body == "ALWAYS_INCOMPATIBLE"
    topic = f"persistent://{ns}/schemas"
    official.create_producer(topic, schema=JsonSchema(V1)).close()
    with pytest.raises(pulsar.IncompatibleSchema):
        official.create_producer(topic, schema=JsonSchema(V2))
    assert http.put(path, "ALWAYS_COMPATIBLE").status == 204
    official.create_producer(topic, schema=StringSchema()).close()  # even another type
    assert http.delete(path).status == 204 and http.get(path).body == "UNDEFINED"


def test_an_unknown_strategy_is_412_and_a_non_string_400(http, ns):
    path = f"/admin/v2/namespaces/{ns}/schemaCompatibilityStrategy"
    assert http.put(path, "LENIENT").status == 412
    assert http.put(path, 3).status == 400
    assert http.get(path).body == "UNDEFINED"


# ------------------------------------------------------------------ truncate
def test_truncate_acknowledges_everything_and_removes_every_closed_segment(http, ns, official):
    topic = f"persistent://{ns}/truncated"
    fill(official, topic, 3 * PER_SEGMENT + 1)
    assert len(http.get(f"/admin/v2/persistent/{ns}/truncated/internalStats").body["ledgers"]) > 1
    assert http.delete(f"/admin/v2/persistent/{ns}/truncated/truncate").status == 204
    assert backlog_of(http, topic, "s") == 0
    assert len(http.get(f"/admin/v2/persistent/{ns}/truncated/internalStats").body["ledgers"]) == 1
    producer = official.create_producer(topic, batching_enabled=False)
    producer.send(b"after")
    consumer = official.subscribe(topic, "s")
    assert consumer.receive(timeout_millis=5000).data() == b"after"
    consumer.close()


def test_truncating_a_partitioned_topic_truncates_each_partition(http, ns, official):
    assert http.put(f"/admin/v2/persistent/{ns}/parts/partitions", 2).status == 204
    topic = f"persistent://{ns}/parts"
    fill(official, topic, 2 * PER_SEGMENT + 2)
    assert http.delete(f"/admin/v2/persistent/{ns}/parts/truncate").status == 204
    for i in range(2):
        assert wait_until(lambda: backlog_of(http, f"{topic}-partition-{i}", "s") == 0)


def test_truncating_a_missing_topic_is_404(http, ns):
    assert http.delete(f"/admin/v2/persistent/{ns}/missing/truncate").status == 404


def test_a_namespace_may_allow_auto_creation_where_the_broker_does_not(tmp_path):
    with admin_http(tmp_path, allowAutoTopicCreation=False) as strict:
        client = pulsar.Client(strict.broker.service_url, operation_timeout_seconds=10,
                               logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
        try:
            with pytest.raises(pulsar.TopicNotFound):
                client.create_producer("persistent://public/default/refused")
            assert strict.post("/admin/v2/namespaces/public/default/autoTopicCreation",
                               {"allowAutoTopicCreation": True, "topicType": "non-partitioned"}).status == 204
            client.create_producer("persistent://public/default/allowed").send(b"x")
        finally:
            client.close()


def test_the_namespace_policies_answer_carries_the_quota_auto_creation_and_schema_strategy(http, ns):
    base = f"/admin/v2/namespaces/{ns}"
    policies = http.get(base).body
    assert (policies["backlog_quota_map"], policies["autoTopicCreationOverride"],
            policies["schema_compatibility_strategy"]) == ({}, None, "UNDEFINED")
    http.post(f"{base}/backlogQuota", {"limitSize": 2048, "limitTime": -1, "policy": "producer_exception"})
    http.post(f"{base}/autoTopicCreation", {"allowAutoTopicCreation": True, "topicType": "non-partitioned"})
    http.put(f"{base}/schemaCompatibilityStrategy", "FULL")
    policies = http.get(base).body
    assert policies["backlog_quota_map"] == {"destination_storage": {
        "limit": 2048, "limitSize": 2048, "limitTime": -1, "policy": "producer_exception"}}
    assert policies["autoTopicCreationOverride"] == {"allowAutoTopicCreation": True, "topicType": "non-partitioned"}
    assert policies["schema_compatibility_strategy"] == "FULL"
