"""A broker process restarted on a topic whose subscription ``s`` has a damaged cursor: only ``s`` notices.
It is recovered to its last good copy (or the log's start when none is left) with one ERROR line; the
topic loads, a reader from the earliest reads every message, the other subscription resumes where it was,
a produce gets the next offset, and ``s`` receives everything it had not acknowledged (redeliver rather
than lose; broker_core.core.persistent.recovery step 1)."""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from broker_core.storage.cursor_store import SLOT_SUFFIXES, CursorStore, encode_copy, read_copy
from connector import Admin, Client, ConsumerType, MessageId
from tests.brokers import BrokerProcess
from tests.waiting import wait_until

TOPIC = "persistent://public/default/cursors"
MESSAGES, S_ACKED, OTHER_ACKED = 1000, 300, 100
CONFIG = ("--set", "managedLedgerMaxEntriesPerLedger=100", "--set", "defaultRetentionTimeInMinutes=-1",
          "--set", "defaultRetentionSizeInMB=-1", "--log-level", "WARNING")
"""Infinite retention: with Pulsar's default (none), the first segment, which both subscriptions consumed, is
trimmed once their cursors are saved (``managedLedgerCursorFlushIntervalMs`` after the acks), and whether
that happened before the broker stopped depended on the machine's speed."""


def cursor_folder(data_dir: Path) -> Path:
    return data_dir / "topics" / "persistent" / "public" / "default" / "cursors" / "cursors"


def saved_mark_delete(data_dir: Path, subscription: str) -> int | None:
    """The newest saved copy's mark-delete offset (read only: the broker may be saving meanwhile)."""
    folder = cursor_folder(data_dir)
    copies = [read_copy(folder / f"{subscription}{suffix}", slot) for slot, suffix in enumerate(SLOT_SUFFIXES)
              if (folder / f"{subscription}{suffix}").exists()]
    newest = max((c for c in copies if c.cursor is not None), key=lambda c: c.generation, default=None)
    return None if newest is None else newest.cursor.mark_delete_offset


def offset(cursor: dict) -> int:
    """The mark-delete offset of an internal stats cursor (``markDeletePosition`` is ``ledger:offset``)."""
    return int(cursor["markDeletePosition"].rpartition(":")[2])


def acknowledge(client: Client, subscription: str, *counts: int, saved_in: Path | None = None) -> None:
    """Receive and acknowledge (cumulatively) ``counts`` messages after another; with ``saved_in``, wait
    after each but the last until the broker saved the cursor (so its last good copy holds that position,
    unless a later save for the consumer's activity replaced it too)."""
    consumer = client.subscribe(TOPIC, subscription, consumer_type=ConsumerType.Exclusive)
    for i, count in enumerate(counts):
        for _ in range(count):
            msg = consumer.receive(timeout_millis=10_000)
        consumer.acknowledge_cumulative(msg)
        if saved_in is not None and i < len(counts) - 1:
            offset = msg.message_id().entry_id()
            assert wait_until(lambda: saved_mark_delete(saved_in, subscription) == offset)
    consumer.close()


@pytest.fixture(scope="module")
def pristine(tmp_path_factory) -> Path:
    """A data dir: 1,000 unbatched messages in segments of 100 entries, all kept; ``s`` acknowledged 0..299 and
    ``other`` 0..99 (``s`` saved at 149 first, so its last good copy is behind its newest one); the broker
    stopped with SIGTERM (a clean close: the log proves its end)."""
    data_dir = tmp_path_factory.mktemp("pristine")
    broker = BrokerProcess(data_dir, *CONFIG).start()
    try:
        admin = Admin(broker.service_url)
        admin.create_topic(TOPIC)
        for subscription in ("s", "other"):
            admin.create_subscription(TOPIC, subscription, MessageId.earliest)
        client = Client(broker.service_url)
        producer = client.create_producer(TOPIC)
        for i in range(MESSAGES):
            producer.send(f"m-{i}".encode())
        acknowledge(client, "s", S_ACKED // 2, S_ACKED - S_ACKED // 2, saved_in=data_dir)
        acknowledge(client, "other", OTHER_ACKED)
        client.close()
        marks = lambda: {n: offset(c) for n, c in admin.topic_internal_stats(TOPIC)["cursors"].items()}
        assert wait_until(lambda: marks() == {"s": S_ACKED - 1, "other": OTHER_ACKED - 1}), marks()
        admin.close()
        assert broker.terminate() == 0
    finally:
        broker.stop()
    return data_dir


def copies_of_s(data_dir: Path):
    """``s``'s stored copies, newest first."""
    [stored] = [s for s in CursorStore(cursor_folder(data_dir)).load() if s.name == "s"]
    assert len(stored.usable) == 2 and stored.usable[0].cursor.mark_delete_offset == S_ACKED - 1
    return stored.usable


def flip_a_byte(data_dir: Path) -> int:
    newest, last_good = copies_of_s(data_dir)
    path = cursor_folder(data_dir) / newest.file
    raw = bytearray(path.read_bytes())
    raw[-3] ^= 0x20
    path.write_bytes(bytes(raw))
    return last_good.cursor.mark_delete_offset + 1


def empty_it(data_dir: Path) -> int:
    newest, last_good = copies_of_s(data_dir)
    (cursor_folder(data_dir) / newest.file).write_bytes(b"")
    return last_good.cursor.mark_delete_offset + 1


def impossible_values(data_dir: Path) -> int:
    """Valid JSON and CRCs in the newest copy: acknowledged beyond the log's (proven) end."""
    newest, last_good = copies_of_s(data_dir)
    state = json.dumps({"v": 1, "name": "s", "markDelete": 5000, "acked": [[7000, 8000]], "properties": {}})
    (cursor_folder(data_dir) / newest.file).write_bytes(encode_copy(state.encode(), newest.generation))
    return last_good.cursor.mark_delete_offset + 1


def both_copies(data_dir: Path) -> int:
    newest, older = copies_of_s(data_dir)
    (cursor_folder(data_dir) / newest.file).write_bytes(b"\0" * 64)
    (cursor_folder(data_dir) / older.file).write_bytes(b"PLC2")
    return 0


def serves(client, earliest, exclusive, redeliver_from: int) -> None:
    """Every reader and subscription works, with ``client`` (ours or the official one)."""
    reader = client.create_reader(TOPIC, earliest)
    assert [reader.read_next(timeout_millis=10_000).data() for _ in range(MESSAGES)] == [
        f"m-{i}".encode() for i in range(MESSAGES)]
    producer = client.create_producer(TOPIC)
    assert producer.send(b"after").entry_id() == MESSAGES  # the log continues where it ended
    for subscription, first in (("s", redeliver_from), ("other", OTHER_ACKED)):
        consumer = client.subscribe(TOPIC, subscription, consumer_type=exclusive)
        got = [consumer.receive(timeout_millis=10_000) for _ in range(first, MESSAGES + 1)]
        assert [m.data() for m in got] == [f"m-{i}".encode() for i in range(first, MESSAGES)] + [b"after"]
        assert [m.message_id().entry_id() for m in got] == list(range(first, MESSAGES + 1))
        consumer.close()
    assert reader.read_next(timeout_millis=10_000).data() == b"after"


@pytest.mark.parametrize("damage, source, official", [
    (flip_a_byte, "last_good", False),
    (empty_it, "last_good", True),
    (impossible_values, "last_good", False),
    (both_copies, "log_start", True),
], ids=["flipped-byte", "empty", "impossible-values", "both-copies"])
def test_a_damaged_cursor_costs_only_its_subscription_redeliveries(broker_process, pristine, tmp_path, damage, source,
                                                                    official):
    data_dir = tmp_path / "data"
    shutil.copytree(pristine, data_dir)
    redeliver_from = damage(data_dir)
    assert redeliver_from <= S_ACKED

    broker = broker_process(*CONFIG, data_dir=data_dir)
    if official:
        pulsar = pytest.importorskip("pulsar")
        client = pulsar.Client(broker.service_url, operation_timeout_seconds=10,
                               logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
        serves(client, pulsar.MessageId.earliest, pulsar.ConsumerType.Exclusive, redeliver_from)
    else:
        client = Client(broker.service_url, operation_timeout_seconds=10)
        serves(client, MessageId.earliest, ConsumerType.Exclusive, redeliver_from)
    client.close()
    assert broker.terminate() == 0
    lines = [line for line in broker.proc.stderr.read().splitlines() if "event=cursor_recovered" in line]
    assert len(lines) == 1 and "ERROR" in lines[0], lines
    assert re.search(rf"topic={re.escape(TOPIC)} subscription=s from={source} mark_delete_offset={redeliver_from - 1}"
                     rf" redeliver_from={redeliver_from} ", lines[0]), lines[0]
    assert f"may see redeliveries from offset {redeliver_from}" in lines[0]

    again = broker_process(*CONFIG, data_dir=data_dir)  # recovered and saved: the next load is clean
    admin = Admin(again.service_url)
    marks = {n: offset(c) for n, c in admin.topic_internal_stats(TOPIC)["cursors"].items()}
    admin.close()
    assert marks == {"s": redeliver_from - 1, "other": OTHER_ACKED - 1}
    assert again.terminate() == 0
    assert "event=cursor_" not in again.proc.stderr.read()
