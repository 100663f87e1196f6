"""A topic's subscriptions over real HTTP: list, create at a position (Pulsar's MessageId body), delete,
skip, skip_all, reset the cursor by time and by message id, expire messages (one subscription or all)."""
from __future__ import annotations

import uuid

import pytest

from connector import Client
from tests.integration.test_http_admin_server import admin_http

NS = "/admin/v2/persistent/public/default"
EARLIEST = {"ledgerId": -1, "entryId": -1}
LATEST = (1 << 63) - 1


@pytest.fixture(scope="module")
def http(tmp_path_factory):
    with admin_http(tmp_path_factory.mktemp("subscriptions")) as served:
        yield served


@pytest.fixture(scope="module")
def client(http):
    with Client(http.broker.service_url) as c:
        yield c


@pytest.fixture
def name(http):
    local = f"t-{uuid.uuid4().hex[:10]}"
    assert http.put(f"{NS}/{local}").status == 204
    return local


def send(client, name, n):
    producer = client.create_producer(f"persistent://public/default/{name}", batching_enabled=False)
    ids = [producer.send(b"m%d" % i) for i in range(n)]
    producer.close()
    return ids


def backlog(http, name, sub):
    return http.get(f"{NS}/{name}/stats").body["subscriptions"][sub]["msgBacklog"]


def test_a_subscription_created_without_a_position_starts_at_the_end(http, client, name):
    send(client, name, 2)
    assert http.put(f"{NS}/{name}/subscription/late").status == 204
    assert http.get(f"{NS}/{name}/subscriptions").body == ["late"]
    assert backlog(http, name, "late") == 0


def test_a_subscription_created_at_earliest_or_at_a_message_id_starts_there(http, client, name):
    ids = send(client, name, 4)
    assert http.put(f"{NS}/{name}/subscription/all", EARLIEST).status == 204
    third = {"ledgerId": ids[2].ledger_id(), "entryId": ids[2].entry_id()}
    assert http.put(f"{NS}/{name}/subscription/from-third", third).status == 204
    assert http.put(f"{NS}/{name}/subscription/after-third", {**third, "isExcluded": True}).status == 204
    assert [backlog(http, name, s) for s in ("all", "from-third", "after-third")] == [4, 2, 1]


def test_creating_a_subscription_twice_is_409_and_deleting_a_missing_one_404(http, name):
    http.put(f"{NS}/{name}/subscription/s")
    answer = http.put(f"{NS}/{name}/subscription/s")
    assert answer.status == 409 and "already exists" in answer.reason
    assert http.delete(f"{NS}/{name}/subscription/s").status == 204
    assert http.delete(f"{NS}/{name}/subscription/s").status == 404


def test_a_subscription_with_a_consumer_is_deleted_only_with_force(http, client, name):
    consumer = client.subscribe(f"persistent://public/default/{name}", "busy")
    answer = http.delete(f"{NS}/{name}/subscription/busy")
    assert answer.status == 412
    assert http.delete(f"{NS}/{name}/subscription/busy?force=true").status == 204
    assert http.get(f"{NS}/{name}/subscriptions").body == []
    consumer.close()


def test_skip_and_skip_all_acknowledge_messages(http, client, name):
    http.put(f"{NS}/{name}/subscription/s", EARLIEST)
    send(client, name, 5)
    assert http.post(f"{NS}/{name}/subscription/s/skip/2").status == 204
    assert backlog(http, name, "s") == 3
    assert http.post(f"{NS}/{name}/subscription/s/skip_all").status == 204
    assert backlog(http, name, "s") == 0
    assert http.post(f"{NS}/{name}/subscription/s/skip/two").status == 400
    assert http.post(f"{NS}/{name}/subscription/nobody/skip/1").status == 404


def test_reset_cursor_by_message_id_and_by_time_moves_the_subscription(http, client, name):
    http.put(f"{NS}/{name}/subscription/s")
    ids = send(client, name, 4)
    assert backlog(http, name, "s") == 4
    http.post(f"{NS}/{name}/subscription/s/skip_all")
    second = {"ledgerId": ids[1].ledger_id(), "entryId": ids[1].entry_id()}
    assert http.post(f"{NS}/{name}/subscription/s/resetcursor", second).status == 204
    assert backlog(http, name, "s") == 3
    assert http.post(f"{NS}/{name}/subscription/s/resetcursor/0").status == 204  # before every message
    assert backlog(http, name, "s") == 4
    answer = http.post(f"{NS}/{name}/subscription/s/resetcursor", {"ledgerId": "x", "entryId": 0})
    assert (answer.status, answer.reason) == (400, 'messageId.ledgerId: expected an integer, got "x"')


def test_expire_messages_through_a_message_id_and_by_age(http, client, name):
    for sub in ("a", "b"):
        http.put(f"{NS}/{name}/subscription/{sub}", EARLIEST)
    ids = send(client, name, 4)
    second = {"ledgerId": ids[1].ledger_id(), "entryId": ids[1].entry_id()}
    assert http.post(f"{NS}/{name}/subscription/a/expireMessages", {**second, "isExcluded": True}).status == 204
    assert backlog(http, name, "a") == 3  # the first message only
    assert http.post(f"{NS}/{name}/subscription/a/expireMessages", second).status == 204
    assert backlog(http, name, "a") == 2  # through the second
    assert http.post(f"{NS}/{name}/subscription/b/expireMessages/3600").status == 204  # none that old
    assert backlog(http, name, "b") == 4
    assert http.post(f"{NS}/{name}/all_subscription/expireMessages/0").status == 204
    assert [backlog(http, name, "a"), backlog(http, name, "b")] == [0, 0]


def test_a_reset_to_a_message_excluded_starts_after_it_and_to_latest_at_the_end(http, client, name):
    http.put(f"{NS}/{name}/subscription/s", EARLIEST)
    ids = send(client, name, 4)
    second = {"ledgerId": ids[1].ledger_id(), "entryId": ids[1].entry_id()}
    http.post(f"{NS}/{name}/subscription/s/resetcursor", {**second, "isExcluded": True})
    assert backlog(http, name, "s") == 2
    http.post(f"{NS}/{name}/subscription/s/resetcursor", {"ledgerId": LATEST, "entryId": LATEST})
    assert backlog(http, name, "s") == 0


def test_a_partitioned_topics_subscription_is_not_created_at_one_partitions_message_id(http, client):
    local = f"p-{uuid.uuid4().hex[:10]}"
    http.put(f"{NS}/{local}/partitions", 2)
    answer = http.put(f"{NS}/{local}/subscription/s", {"ledgerId": 0, "entryId": 0})
    assert answer.status == 412 and "partitioned" in answer.reason
    assert http.get(f"{NS}/{local}/subscriptions").body == []


def test_subscriptions_of_a_partitioned_topic_are_made_on_every_partition(http, client):
    local = f"p-{uuid.uuid4().hex[:10]}"
    http.put(f"{NS}/{local}/partitions", 2)
    assert http.put(f"{NS}/{local}/subscription/s", EARLIEST).status == 204
    for i in range(2):
        assert http.get(f"{NS}/{local}-partition-{i}/subscriptions").body == ["s"]
    assert http.delete(f"{NS}/{local}/subscription/s").status == 204
    assert http.get(f"{NS}/{local}/subscriptions").body == []
