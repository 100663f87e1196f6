"""``/admin/v2/persistent|non-persistent`` topics over real HTTP: create (plain and partitioned), partitions
get/update, lists, delete (force), stats, partitioned-stats, internalStats, lastMessageId, terminate,
unload, with Pulsar's JSON shapes and statuses."""
from __future__ import annotations

import uuid

import pytest

from broker_core.types import TopicName
from connector import Client
from tests.integration.test_http_admin_server import admin_http

NS = "/admin/v2/persistent/public/default"


@pytest.fixture(scope="module")
def http(tmp_path_factory):
    with admin_http(tmp_path_factory.mktemp("topics")) as served:
        yield served


@pytest.fixture(scope="module")
def client(http):
    with Client(http.broker.service_url) as c:
        yield c


@pytest.fixture
def name():
    return f"t-{uuid.uuid4().hex[:10]}"


def send(client, topic, n):
    producer = client.create_producer(topic, batching_enabled=False)
    ids = [producer.send(b"m%d" % i) for i in range(n)]
    producer.close()
    return ids


def test_a_created_topic_is_listed_and_creating_it_again_is_409(http, name):
    assert http.put(f"{NS}/{name}").status == 204
    assert f"persistent://public/default/{name}" in http.get(NS).body
    answer = http.put(f"{NS}/{name}")
    assert answer.status == 409 and "already exists" in answer.reason


def test_the_lists_hold_only_the_domain_asked_for(http, name):
    http.put(f"/admin/v2/non-persistent/public/default/{name}")
    assert f"non-persistent://public/default/{name}" in http.get("/admin/v2/non-persistent/public/default").body
    assert not [t for t in http.get(NS).body if t.startswith("non-persistent://")]


def test_a_partitioned_topic_has_its_count_and_grows(http, name):
    assert http.put(f"{NS}/{name}/partitions", 3).status == 204
    assert http.get(f"{NS}/{name}/partitions").body == {"partitions": 3}
    assert f"persistent://public/default/{name}" in http.get(f"{NS}/partitioned").body
    assert f"persistent://public/default/{name}-partition-2" in http.get(NS).body
    assert http.post(f"{NS}/{name}/partitions", 5).status == 204
    assert http.get(f"{NS}/{name}/partitions").body == {"partitions": 5}
    answer = http.post(f"{NS}/{name}/partitions", 2)
    assert answer.status == 412 and "can only be added" in answer.reason
    assert http.put(f"{NS}/{name}/partitions", 3).status == 409


def test_a_topic_that_is_not_partitioned_has_zero_partitions(http, name):
    http.put(f"{NS}/{name}")
    assert http.get(f"{NS}/{name}/partitions").body == {"partitions": 0}


def test_a_topic_with_a_producer_is_deleted_only_with_force(http, client, name):
    http.put(f"{NS}/{name}")
    producer = client.create_producer(f"persistent://public/default/{name}")
    answer = http.delete(f"{NS}/{name}")
    assert answer.status == 412 and "connected producers or consumers" in answer.reason
    assert http.delete(f"{NS}/{name}?force=true").status == 204
    assert f"persistent://public/default/{name}" not in http.get(NS).body
    assert http.delete(f"{NS}/{name}").status == 404
    producer.close()


def test_a_partitioned_topic_is_deleted_with_its_partitions(http, name):
    http.put(f"{NS}/{name}/partitions", 2)
    assert http.delete(f"{NS}/{name}/partitions").status == 204
    assert not [t for t in http.get(NS).body if name in t]
    assert http.delete(f"{NS}/{name}/partitions").status == 404


def test_stats_count_what_was_published_and_what_subscriptions_have_left(http, client, name):
    topic = f"persistent://public/default/{name}"
    http.put(f"{NS}/{name}")
    http.put(f"{NS}/{name}/subscription/sub", {"ledgerId": -1, "entryId": -1})
    send(client, topic, 4)
    stats = http.get(f"{NS}/{name}/stats").body
    assert stats["msgInCounter"] == 4
    assert stats["subscriptions"]["sub"]["msgBacklog"] == 4
    internal = http.get(f"{NS}/{name}/internalStats").body
    assert internal["numberOfEntries"] == 4 and internal["lastConfirmedOffset"] == 3
    assert internal["cursors"]["sub"]["markDeletePosition"] == "0:-1"


def test_partitioned_stats_merge_the_partitions(http, client, name):
    http.put(f"{NS}/{name}/partitions", 2)
    topic = f"persistent://public/default/{name}"
    send(client, f"{topic}-partition-0", 2)
    send(client, f"{topic}-partition-1", 3)
    stats = http.get(f"{NS}/{name}/partitioned-stats?perPartition=true").body
    assert stats["msgInCounter"] == 5 and stats["metadata"] == {"partitions": 2}
    assert stats["partitions"][f"{topic}-partition-1"]["msgInCounter"] == 3
    assert "partitions" not in http.get(f"{NS}/{name}/partitioned-stats?perPartition=false").body
    assert http.get(f"{NS}/{name}-x/partitioned-stats").status == 404


def test_stats_of_a_missing_topic_are_404(http, name):
    answer = http.get(f"{NS}/{name}/stats")
    assert answer.status == 404 and name in answer.reason


def test_last_message_id_and_terminate_answer_pulsars_message_id(http, client, name):
    topic = f"persistent://public/default/{name}"
    http.put(f"{NS}/{name}")
    assert http.get(f"{NS}/{name}/lastMessageId").body == {"ledgerId": -1, "entryId": -1, "partitionIndex": -1}
    ids = send(client, topic, 3)
    last = {"ledgerId": ids[-1].ledger_id(), "entryId": ids[-1].entry_id(), "partitionIndex": -1}
    assert http.get(f"{NS}/{name}/lastMessageId").body == last
    answer = http.post(f"{NS}/{name}/terminate")
    assert (answer.status, answer.body) == (200, last)
    with pytest.raises(Exception, match="TopicTerminated|terminated"):
        send(client, topic, 1)


def test_unload_closes_the_topic_which_loads_again_on_use(http, client, name):
    topic = f"persistent://public/default/{name}"
    http.put(f"{NS}/{name}")
    send(client, topic, 2)
    assert http.put(f"{NS}/{name}/unload").status == 204
    assert http.on_loop(lambda: http.registry.loaded(TopicName.parse(topic))) is None
    assert http.get(f"{NS}/{name}/internalStats").body["numberOfEntries"] == 2  # loaded again, messages kept
    assert http.on_loop(lambda: http.registry.loaded(TopicName.parse(topic))) is not None


def test_terminating_a_partitioned_topic_terminates_every_partition(http, client, name):
    http.put(f"{NS}/{name}/partitions", 2)
    ids = send(client, f"persistent://public/default/{name}-partition-1", 2)
    answer = http.post(f"{NS}/{name}/terminate/partitions")
    assert answer.status == 200
    assert answer.body == {"0": {"ledgerId": -1, "entryId": -1, "partitionIndex": 0},
                           "1": {"ledgerId": ids[-1].ledger_id(), "entryId": ids[-1].entry_id(), "partitionIndex": 1}}
    with pytest.raises(Exception, match="TopicTerminated|terminated"):
        send(client, f"persistent://public/default/{name}-partition-0", 1)


@pytest.mark.parametrize("segment, value, key", [
    ("retention", {"retentionTimeInMinutes": 5, "retentionSizeInMB": 1}, "retention"),
    ("deduplicationEnabled", True, "deduplicationEnabled"),
    ("maxProducers", 1, "maxProducersPerTopic"),
    ("maxConsumers", 2, "maxConsumersPerTopic"),
])
def test_a_topic_policy_is_set_read_and_removed(http, name, segment, value, key):
    http.put(f"{NS}/{name}")
    path = f"{NS}/{name}/{segment}"
    assert http.get(path).status == 204
    assert http.post(path, value).status == 204
    assert http.get(path).body == value
    assert http.on_loop(lambda: http.registry.get_policies("topics", f"persistent://public/default/{name}"))[key] == value
    assert http.delete(path).status == 204
    assert http.get(path).status == 204


def test_a_topics_message_ttl_is_set_as_pulsar_admin_sends_it_in_the_query(http, name):
    http.put(f"{NS}/{name}")
    assert http.post(f"{NS}/{name}/messageTTL?messageTTL=120").status == 204
    assert http.get(f"{NS}/{name}/messageTTL").body == 120
    assert http.post(f"{NS}/{name}/messageTTL?messageTTL=soon").status == 400
    assert http.delete(f"{NS}/{name}/messageTTL?messageTTL=0").status == 204
    assert http.get(f"{NS}/{name}/messageTTL").status == 204


def test_a_policy_of_a_missing_topic_is_404_and_the_applied_value_is_the_one_in_force(http, name):
    assert http.get(f"{NS}/{name}/retention").status == 404
    assert http.get(f"{NS}/{name}/retention?applied=true").status == 404
    assert http.post(f"{NS}/{name}/maxProducers", 1).status == 404
    http.put(f"{NS}/{name}")
    assert set(http.get(f"{NS}/{name}/retention?applied=true").body) == {"retentionTimeInMinutes",
                                                                        "retentionSizeInMB"}
    assert http.get(f"{NS}/{name}/messageTTL?applied=true").body == 0  # the broker's ttlDurationDefaultInSeconds
    namespace = NS.split("/admin/v2/persistent/")[1]
    assert http.post(f"/admin/v2/namespaces/{namespace}/messageTTL", 300).status == 204
    assert http.get(f"{NS}/{name}/messageTTL?applied=true").body == 300
    assert http.post(f"{NS}/{name}/messageTTL?messageTTL=60").status == 204
    assert http.get(f"{NS}/{name}/messageTTL?applied=true").body == 60
    assert http.delete(f"/admin/v2/namespaces/{namespace}/messageTTL").status == 204
    assert http.get(f"{NS}/{name}/schemaCompatibilityStrategy?applied=true").status == 501
