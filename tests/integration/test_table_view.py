"""TableView against a broker process: ours (gRPC) and pulsar-client's (the binary protocol) see the latest
value per key, tombstones removing keys, over every partition, read to the end before creation returns and
updated afterwards."""
from __future__ import annotations

import time
import uuid
from typing import Any

import pytest

from connector import Admin, Client, NotAllowedError, TableView
from tests.brokers import BrokerProcess
from tests.waiting import wait_until


@pytest.fixture(scope="module")
def broker_proc(tmp_path_factory):
    proc = BrokerProcess(tmp_path_factory.mktemp("table-view-broker")).start()
    yield proc
    proc.stop()


@pytest.fixture
def topic():
    return f"persistent://public/default/tv-{uuid.uuid4().hex[:12]}"


def _publish(client: Client, topic: str, messages: list[tuple[str | None, bytes]]) -> None:
    producer = client.create_producer(topic)
    for key, value in messages:
        if key is None:
            producer.send(value)
        else:
            producer.send(value, partition_key=key)
    producer.close()


HISTORY = [("a", b"a1"), ("b", b"b1"), ("a", b"a2"), ("c", b"c1"), ("b", b""), (None, b"keyless"), ("d", b"d1")]
"""a updated, b removed by a tombstone, a keyless message: the table is {a: a2, c: c1, d: d1}."""


def test_our_table_view_holds_the_latest_value_per_key_once_created(ours, topic):
    _publish(ours, topic, HISTORY)
    view = ours.create_table_view(topic)
    assert isinstance(view, TableView)
    assert dict(view.items()) == {"a": b"a2", "c": b"c1", "d": b"d1"}
    assert len(view) == 3 and view.get("b") is None
    view.close()


def test_our_table_view_follows_new_messages_and_tells_its_listeners(ours, topic):
    _publish(ours, topic, [("a", b"a1")])
    view = ours.create_table_view(topic, subscription_name="table-reader")
    heard: list[tuple[str, bytes]] = []
    view.for_each_and_listen(lambda k, v: heard.append((k, v)))
    _publish(ours, topic, [("a", b"a2"), ("b", b"b1"), ("a", b"")])
    assert wait_until(lambda: len(heard) == 4), heard
    assert heard == [("a", b"a1"), ("a", b"a2"), ("b", b"b1"), ("a", b"")]
    assert view.items() == [("b", b"b1")]
    assert str(view) == f"TableView(topic={topic}, subscription=table-reader)"
    view.close()


@pytest.mark.parametrize("which", ["ours", "official"])
def test_a_table_view_reads_every_partition_of_a_compacted_partitioned_topic(which, ours, broker_proc, topic):
    with Admin(broker_proc.service_url) as admin:
        admin.create_partitioned_topic(topic, 3)
        _publish(ours, topic, [(f"k{i % 20}", f"v{i}".encode()) for i in range(100)])
        _compact(admin, topic)
    _publish(ours, topic, [("k0", b"v100")])  # after the horizon
    client = _client(which, broker_proc)
    try:
        view = client.create_table_view(topic)
        assert len(view) == 20
        assert {k: view.get(k) for k in ("k0", "k1", "k19")} == {"k0": b"v100", "k1": b"v81", "k19": b"v99"}
        _publish(ours, topic, [(f"k{i}", b"") for i in range(10)])
        assert wait_until(lambda: len(view) == 10), len(view)
        view.close()
    finally:
        client.close()


def _client(which: str, broker_proc: BrokerProcess) -> Any:
    if which == "ours":
        return Client(broker_proc.service_url, operation_timeout_seconds=10)
    pulsar = pytest.importorskip("pulsar")
    return pulsar.Client(broker_proc.service_url, operation_timeout_seconds=10,
                         logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))


def _compact(admin: Admin, topic: str) -> None:
    admin.trigger_compaction(topic)
    assert wait_until(lambda: admin.compaction_status(topic)["status"] == "SUCCESS", timeout_s=30), \
        admin.compaction_status(topic)


@pytest.mark.parametrize("which", ["ours", "official"])
def test_a_table_view_of_a_compacted_topic_ending_in_a_tombstone_is_created_at_once(which, ours, broker_proc,
                                                                                     topic):
    """The compacted view's last message is before the topic's (the tombstone is compacted away): creating
    the view must not wait for a message that will never come."""
    _publish(ours, topic, HISTORY + [("d", b"")])
    with Admin(broker_proc.service_url) as admin:
        _compact(admin, topic)
    _publish(ours, topic, [("e", b"e1"), ("e", b"")])  # and a raw tail ending in a tombstone too
    client = _client(which, broker_proc)
    try:
        started = time.monotonic()
        view = client.create_table_view(topic)
        assert time.monotonic() - started < 5
        table: dict[str, bytes] = {}
        view.for_each(lambda k, v: table.__setitem__(k, v))
        assert table == {"a": b"a2", "c": b"c1"}
        view.close()
    finally:
        client.close()


def test_a_table_view_of_a_non_persistent_topic_is_refused(ours):
    with pytest.raises(NotAllowedError):
        ours.create_table_view(f"non-persistent://public/default/tv-{uuid.uuid4().hex[:8]}")


def test_the_official_clients_table_view_works_against_our_broker(ours, broker_proc, topic):
    pulsar = pytest.importorskip("pulsar")
    _publish(ours, topic, HISTORY)
    official = pulsar.Client(broker_proc.service_url, operation_timeout_seconds=10,
                             logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        view = official.create_table_view(topic)
        table: dict[str, bytes] = {}
        view.for_each(lambda k, v: table.__setitem__(k, v))
        assert table == {"a": b"a2", "c": b"c1", "d": b"d1"}
        assert len(view) == 3 and view.get("b") is None
        _publish(ours, topic, [("c", b"c2"), ("d", b"")])
        assert wait_until(lambda: view.get("c") == b"c2" and view.get("d") is None)
        view.close()
    finally:
        official.close()
