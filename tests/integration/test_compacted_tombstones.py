"""A compacted reader or TableView that falls behind a compaction still reads the deletions (issue 30, item 5)
on a broker process: k1=v1 read, a tombstone for k1 produced while the reader is behind (its receiver queue
full), the topic compacted, the reader reads on -- the tombstone arrives, for our client's compacted reader,
the official client's, and our TableView with a slow listener (which then equals a fresh one). The kept
tombstones are dropped once no compacted reader can be behind them (the broker's hold is 5 s here)."""
from __future__ import annotations

import threading
import uuid

import pulsar
import pytest

from connector import Admin, Client, MessageId, Timeout
from tests.brokers import BrokerProcess
from tests.waiting import wait_until

HOLD_S = 5
POLL_S = 0.5
"""Between two compactions while waiting for tombstones to go (each run logs; the broker's stderr is a pipe)."""
FILLERS = 60
"""Messages of another key produced between k1=v1 and k1's tombstone: more than a reader's queue holds."""


@pytest.fixture(scope="module")
def broker_proc(tmp_path_factory):
    proc = BrokerProcess(tmp_path_factory.mktemp("compacted-tombstones-broker"), "--set",
                         f"compactionTombstoneRetentionSeconds={HOLD_S}").start()
    yield proc
    proc.stop()


@pytest.fixture
def topic():
    return f"persistent://public/default/tombstones-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def admin(broker_proc):
    with Admin(broker_proc.service_url) as running:
        yield running


def publish(client, topic: str, messages: list[tuple[str, bytes]]) -> None:
    producer = client.create_producer(topic, batching_enabled=False, block_if_queue_full=True)
    for key, value in messages:
        producer.send_async(value, None, partition_key=key)
    producer.flush()
    producer.close()


def compact(admin: Admin, topic: str) -> dict:
    """Compact ``topic``, wait for the run; the ``compaction`` section of its stats."""
    admin.trigger_compaction(topic)
    assert wait_until(lambda: admin.compaction_status(topic)["status"] in ("SUCCESS", "ERROR"), timeout_s=30)
    assert admin.compaction_status(topic)["status"] == "SUCCESS", admin.compaction_status(topic)
    return admin.topic_stats(topic)["compaction"]


def read_on(read, timeout_ms: int = 1000) -> list[tuple[str, bytes]]:
    out = []
    while True:
        try:
            msg = read(timeout_ms)
        except (pulsar.Timeout, Timeout):
            return out
        out.append((msg.partition_key(), msg.data()))


def table(messages: list[tuple[str, bytes]]) -> dict[str, bytes]:
    """What a raw read of ``messages`` makes of them: the latest value per key, tombstones removing keys."""
    out: dict[str, bytes] = {}
    for key, value in messages:
        if value:
            out[key] = value
        else:
            out.pop(key, None)
    return out


HISTORY = [("k1", b"v1")] + [("f", b"f%d" % i) for i in range(FILLERS)] + [("k1", b""), ("k2", b"v2")]
"""k1=v1, then fillers, then k1's tombstone: the raw table is {f: f59, k2: v2}."""


def fall_behind(publisher, topic: str, reader_read) -> list[tuple[str, bytes]]:
    """The reader reads k1=v1, then the rest of HISTORY is produced: the reader's queue (10 messages) holds
    only fillers, k1's tombstone is not sent to it yet."""
    publish(publisher, topic, HISTORY[:1])
    first = reader_read(5000)
    assert (first.partition_key(), first.data()) == ("k1", b"v1")
    publish(publisher, topic, HISTORY[1:])
    return [("k1", b"v1")]


# ------------------------------------------------------------------ readers
@pytest.mark.transports
def test_our_compacted_reader_behind_a_compaction_reads_the_tombstone(ours, official, broker_proc, admin, topic):
    reader = ours.create_reader(topic, MessageId.earliest, is_read_compacted=True, receiver_queue_size=10)
    seen = fall_behind(official, topic, reader.read_next)
    stats = compact(admin, topic)
    assert stats["compactedTombstonesCount"] == 1  # k1's: the reader is before it
    seen += read_on(reader.read_next)
    assert ("k1", b"") in seen
    assert table(seen) == table(HISTORY) == {"f": b"f%d" % (FILLERS - 1), "k2": b"v2"}
    reader.close()


def test_the_official_compacted_reader_behind_a_compaction_reads_the_tombstone(official, broker_proc, admin, topic):
    reader = official.create_reader(topic, pulsar.MessageId.earliest, is_read_compacted=True,
                                    receiver_queue_size=10)
    seen = fall_behind(official, topic, reader.read_next)
    compact(admin, topic)
    seen += read_on(reader.read_next)
    assert ("k1", b"") in seen
    assert table(seen) == table(HISTORY)
    reader.close()


def test_a_fresh_compacted_reader_gets_pulsars_view_without_tombstones(official, broker_proc, admin, topic):
    publish(official, topic, HISTORY)
    stats = compact(admin, topic)  # no compacted reader: nothing kept, as Pulsar
    assert stats["compactedTombstonesCount"] == 0 and stats["compactedEntriesCount"] == 2
    reader = official.create_reader(topic, pulsar.MessageId.earliest, is_read_compacted=True)
    assert read_on(reader.read_next) == [("f", b"f%d" % (FILLERS - 1)), ("k2", b"v2")]
    reader.close()


# ------------------------------------------------------------------ dropping them
def dropped_once_read_past(reader, official, admin: Admin, topic: str) -> None:
    fall_behind(official, topic, reader.read_next)
    kept = compact(admin, topic)
    assert (kept["compactedTombstonesCount"], kept["compactedEntriesCount"]) == (1, 3)
    assert ("k1", b"") in read_on(reader.read_next)  # a compacted reader acknowledges what it has read
    publish(official, topic, [("k2", b"v3")])
    # the reader stays connected, positioned past the tombstone: the next run removes it
    assert wait_until(lambda: compact(admin, topic)["compactedTombstonesCount"] == 0, timeout_s=20,
                      interval_s=POLL_S)
    dropped = admin.topic_stats(topic)["compaction"]
    assert dropped["compactedEntriesCount"] == 2 and dropped["compactedEntriesSize"] < kept["compactedEntriesSize"]
    reader.close()


@pytest.mark.transports
def test_kept_tombstones_are_dropped_once_our_reader_has_read_past_them(ours, official, broker_proc, admin, topic):
    reader = ours.create_reader(topic, MessageId.earliest, is_read_compacted=True, receiver_queue_size=10)
    dropped_once_read_past(reader, official, admin, topic)


def test_kept_tombstones_are_dropped_once_the_official_reader_has_read_past_them(official, broker_proc, admin,
                                                                                 topic):
    reader = official.create_reader(topic, pulsar.MessageId.earliest, is_read_compacted=True,
                                    receiver_queue_size=10)
    dropped_once_read_past(reader, official, admin, topic)


def test_a_table_view_that_reads_on_lets_the_tombstones_go(ours, official, broker_proc, admin, topic):
    publish(official, topic, [("k1", b"v1"), ("k2", b"v2")])
    view = ours.create_table_view(topic)
    publish(official, topic, [("k1", b"")])
    assert wait_until(lambda: view.get("k1") is None)
    assert wait_until(lambda: compact(admin, topic)["compactedTombstonesCount"] == 0, timeout_s=20,
                      interval_s=POLL_S)
    assert dict(view.items()) == {"k2": b"v2"}
    view.close()


def test_kept_tombstones_are_dropped_once_a_reader_behind_them_has_been_gone_for_the_hold(ours, official,
                                                                                         broker_proc, admin, topic):
    reader = ours.create_reader(topic, MessageId.earliest, is_read_compacted=True, receiver_queue_size=10)
    fall_behind(official, topic, reader.read_next)
    reader.close()  # gone before reading the tombstone: it may come back there within the hold
    assert compact(admin, topic)["compactedTombstonesCount"] == 1
    assert wait_until(lambda: compact(admin, topic)["compactedTombstonesCount"] == 0,
                      timeout_s=HOLD_S + 20, interval_s=POLL_S)
    assert admin.topic_stats(topic)["compaction"]["compactedEntriesCount"] == 2


# ------------------------------------------------------------------ TableView
def test_a_table_view_with_a_slow_listener_loses_the_key_deleted_while_it_was_behind(ours, official, broker_proc,
                                                                                    admin, topic):
    publish(official, topic, [("k1", b"v1")])
    view = ours.create_table_view(topic)
    heard: list[tuple[str, bytes]] = []
    slow = threading.Event()

    def listener(key: str, value: bytes) -> None:
        heard.append((key, value))
        if key == "f":
            slow.wait(30)  # the view falls behind: its reader's queue fills, the broker holds the rest

    view.for_each_and_listen(listener)
    many = [("f", b"f%d" % i) for i in range(1500)]  # more than the view's receiver queue (1000)
    publish(official, topic, many + [("k1", b""), ("k2", b"v2")])
    assert wait_until(lambda: len(heard) == 2)  # (k1, v1) from the table, then the first filler: stuck
    compact(admin, topic)
    slow.set()
    assert wait_until(lambda: view.get("k1") is None and view.get("k2") == b"v2", timeout_s=30), view.items()
    assert ("k1", b"") in heard  # the listener heard the deletion, as for any update
    fresh = ours.create_table_view(topic)
    assert dict(fresh.items()) == dict(view.items()) == {"f": b"f1499", "k2": b"v2"}
    fresh.close()
    view.close()


def test_the_official_table_view_behind_a_compaction_loses_the_deleted_key(ours, official, broker_proc, admin,
                                                                          topic):
    publish(official, topic, [("k1", b"v1")])
    view = official.create_table_view(topic)
    assert view.get("k1") == b"v1"
    slow = threading.Event()
    view.for_each_and_listen(lambda key, value: key == "f" and slow.wait(30))
    publish(official, topic, [("f", b"f%d" % i) for i in range(1500)] + [("k1", b""), ("k2", b"v2")])
    compact(admin, topic)
    slow.set()
    assert wait_until(lambda: view.get("k1") is None and view.get("k2") == b"v2", timeout_s=30)
    view.close()
