"""Stored messages over real HTTP, as Pulsar answers them: ``.../subscription/{sub}/position/{n}`` (peek) and
``.../examinemessage`` -- the entry's payload, its metadata in ``X-Pulsar-*`` headers."""
from __future__ import annotations

import json
import urllib.error
import urllib.request
import uuid

import pytest

from connector import Client
from connector.client.admin import Admin
from connector.client.message_id import MessageId
from tests.integration.test_http_admin_server import admin_http


@pytest.fixture(scope="module")
def http(tmp_path_factory):
    with admin_http(tmp_path_factory.mktemp("messages")) as served:
        yield served


@pytest.fixture
def topic(http):
    name = f"persistent://public/default/m-{uuid.uuid4().hex[:10]}"
    with Admin(admin_url=http.base) as admin:
        admin.create_topic(name)
        admin.create_subscription(name, "s", MessageId.earliest)
    return name


def produce(http, topic: str, n: int, **kw) -> None:
    with Client(http.broker.service_url) as client:
        producer = client.create_producer(topic, batching_enabled=False)
        for i in range(n):
            producer.send(f"m{i}".encode(), partition_key=f"k{i}", properties={"i": str(i)}, **kw)
        producer.close()


def fetch(http, path: str) -> tuple[int, bytes, dict[str, str]]:
    try:
        with urllib.request.urlopen(http.base + path, timeout=30) as reply:
            return reply.status, reply.read(), dict(reply.headers)
    except urllib.error.HTTPError as err:
        return err.code, err.read(), dict(err.headers)


def rest(topic: str) -> str:
    return "/admin/v2/" + topic.replace("://", "/")


def test_peek_answers_the_nth_unacknowledged_entry_with_its_metadata_in_headers(http, topic):
    produce(http, topic, 3)
    status, body, headers = fetch(http, rest(topic) + "/subscription/s/position/2")
    assert (status, body) == (200, b"m1")
    assert headers["X-Pulsar-Message-ID"].endswith(":1")
    assert json.loads(headers["X-Pulsar-PROPERTY"]) == {"i": "1"}
    assert headers["X-Pulsar-partition-key"] == "k1" and headers["X-Pulsar-sequence-id"] == "1"
    assert headers["X-Pulsar-publish-time"].endswith("+00:00")


def test_peek_past_the_last_entry_is_404_message_not_found(http, topic):
    produce(http, topic, 1)
    status, body, _ = fetch(http, rest(topic) + "/subscription/s/position/2")
    assert status == 404 and json.loads(body)["reason"].startswith("Message not found")
    assert fetch(http, rest(topic) + "/subscription/s/position/0")[0] == 400


def test_examine_counts_from_the_newest_or_the_oldest(http, topic):
    produce(http, topic, 3)
    assert fetch(http, rest(topic) + "/examinemessage?initialPosition=latest&messagePosition=1")[1] == b"m2"
    assert fetch(http, rest(topic) + "/examinemessage?initialPosition=earliest&messagePosition=1")[1] == b"m0"
    assert fetch(http, rest(topic) + "/examinemessage?initialPosition=middle")[0] == 400


def test_the_rest_admin_peeks_and_examines_like_the_grpc_one(http, topic):
    produce(http, topic, 3)
    with Admin(admin_url=http.base) as over_rest, Admin(http.broker.service_url) as over_grpc:
        peeked = over_rest.peek_messages(topic, "s", 2)
        assert [(m.data, m.key, m.properties) for m in peeked] == [(b"m0", "k0", {"i": "0"}), (b"m1", "k1", {"i": "1"})]
        expected = over_grpc.peek_messages(topic, "s", 2)
        assert [m.message_id for m in peeked] == [m.message_id for m in expected]
        assert [m.publish_time for m in peeked] == [m.publish_time for m in expected]
        assert over_rest.examine_message(topic, "earliest", 3).data == b"m2"
        assert len(over_rest.peek_messages(topic, "s", 10)) == 3
