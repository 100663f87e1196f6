"""A topic unloaded when idle whose active segment is damaged meanwhile, the broker still running: its next use
loads it again, the damaged range costs only its own messages (DataLost to its readers, one ERROR line with
counts), the intact messages before it are read and no offset is handed out twice (recovery step 4c in
broker_core.storage.recovery). The same damage across a restart is in tests/integration/test_damaged_storage.py."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from broker_core.errors import DataLost
from broker_core.storage.format import HEADER_SIZE, decode_header
from broker_core.storage.recovery import CLEAN_CLOSE_FILE
from connector import Admin, Client, ConsumerType, MessageId
from tests.waiting import wait_until

TOPIC = "persistent://public/default/fenced"
SEALED, ACTIVE = 900, 100  # three sealed segments of 300 entries, and 100 entries in the active one
CONFIG = ("--set", "managedLedgerMaxEntriesPerLedger=300", "--set", "brokerTopicIdleUnloadSeconds=1",
          "--log-level", "WARNING")


def topic_folder(data_dir: Path) -> Path:
    return data_dir / "topics" / "persistent" / "public" / "default" / "fenced"


def flip_a_byte_in_the_last_frame(segment: Path) -> int:
    """Damage the newest entry in place (the file keeps its size); returns the frame's byte position."""
    raw = bytearray(segment.read_bytes())
    position = 0
    while position + decode_header(raw[position:position + HEADER_SIZE]).frame_size < len(raw):
        position += decode_header(raw[position:position + HEADER_SIZE]).frame_size
    raw[-2] ^= 0x40
    segment.write_bytes(bytes(raw))
    return position


def test_a_topic_whose_active_segment_was_damaged_while_idle_unloaded_loads_and_serves(broker_process, tmp_path):
    data_dir = tmp_path / "data"
    proc = broker_process(*CONFIG, data_dir=data_dir)
    admin = Admin(proc.service_url)
    admin.create_topic(TOPIC)
    admin.create_subscription(TOPIC, "sub", MessageId.earliest)
    client = Client(proc.service_url)
    producer = client.create_producer(TOPIC)
    for i in range(SEALED + ACTIVE):
        producer.send(f"m-{i}".encode())  # one at a time: entries roll segments at 300 exactly
    client.close()
    record = topic_folder(data_dir) / CLEAN_CLOSE_FILE
    assert wait_until(record.exists, timeout_s=20), "the idle topic was not unloaded"
    segment = sorted(topic_folder(data_dir).glob("*.log"))[-1]
    damaged_at = flip_a_byte_in_the_last_frame(segment)
    last = SEALED + ACTIVE - 1

    client = Client(proc.service_url, operation_timeout_seconds=10)  # the next use loads it again
    consumer = client.subscribe(TOPIC, "sub", consumer_type=ConsumerType.Exclusive)
    got = []
    for _ in range(last):
        msg = consumer.receive(timeout_millis=10_000)
        consumer.acknowledge(msg)
        got.append(msg.data())
    assert got == [f"m-{i}".encode() for i in range(last)]
    with pytest.raises(DataLost) as err:
        consumer.receive(timeout_millis=10_000)
    assert (err.value.path, err.value.position) == (segment.name, damaged_at)
    assert (err.value.start_offset, err.value.end_offset) == (last, last + 1)
    after = client.create_producer(TOPIC).send(b"after")
    assert after.entry_id() == SEALED + ACTIVE  # the damaged offset is never handed out again
    admin.reset_cursor(TOPIC, "sub", after)
    consumer.close()
    consumer = client.subscribe(TOPIC, "sub", consumer_type=ConsumerType.Exclusive)
    assert consumer.receive(timeout_millis=10_000).data() == b"after"
    stats = admin.topic_internal_stats(TOPIC)
    assert [r for s in stats["ledgers"] for r in s.get("damaged", ())] == [
        {"firstOffset": last, "lastOffset": last, "messages": 1, "position": damaged_at,
         "resumePosition": segment.stat().st_size, "reason": "CRC mismatch"}]
    client.close()
    admin.close()
    proc.terminate()
    lines = [line for line in proc.proc.stderr.read().splitlines() if "event=log_range_damaged" in line]
    assert len(lines) == 1 and "ERROR" in lines[0]
    assert re.search(rf"first_offset={last} end_offset={last + 1} lost_messages=1\b", lines[0])
