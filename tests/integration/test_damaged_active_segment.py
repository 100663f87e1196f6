"""A broker process whose topic's active segment is damaged while the topic is closed cleanly (SIGTERM, or
unloaded when idle): the topic loads again, takes produce and subscribe, its intact messages are
readable, the damaged range is reported (CorruptLog to its readers, one ERROR line with counts), and no
offset is handed out twice (recovery step 4c in broker_core.storage.recovery)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from broker_core.errors import CorruptLog
from broker_core.storage.format import HEADER_SIZE, decode_header
from broker_core.storage.recovery import CLEAN_CLOSE_FILE
from connector import Admin, Client, ConsumerType, MessageId
from tests.waiting import wait_until

TOPIC = "persistent://public/default/fenced"
SEALED, ACTIVE = 900, 100  # three sealed segments of 300 entries, and 100 entries in the active one
CONFIG = ("--set", "managedLedgerMaxEntriesPerLedger=300", "--log-level", "WARNING")


def topic_folder(data_dir: Path) -> Path:
    return data_dir / "topics" / "persistent" / "public" / "default" / "fenced"


def active_segment(data_dir: Path) -> Path:
    return sorted(topic_folder(data_dir).glob("*.log"))[-1]


def publish(url: str, count: int) -> None:
    """``count`` messages ``m-<i>``, one entry each, with a durable subscription ``sub`` at the earliest."""
    admin = Admin(url)
    admin.create_topic(TOPIC)
    admin.create_subscription(TOPIC, "sub", MessageId.earliest)
    admin.close()
    client = Client(url)
    producer = client.create_producer(TOPIC)
    for i in range(count):
        producer.send(f"m-{i}".encode())  # one at a time: entries roll segments at 300 exactly
    client.close()


def flip_a_byte_in_the_last_frame(segment: Path) -> int:
    """Damage the newest entry in place (the file keeps its size); returns the frame's byte position."""
    raw = bytearray(segment.read_bytes())
    position = 0
    while position + decode_header(raw[position:position + HEADER_SIZE]).frame_size < len(raw):
        position += decode_header(raw[position:position + HEADER_SIZE]).frame_size
    raw[-2] ^= 0x40
    segment.write_bytes(bytes(raw))
    return position


def zero_the_first_block(segment: Path) -> int:
    raw = bytearray(segment.read_bytes())
    raw[:4096] = bytes(min(4096, len(raw)))
    segment.write_bytes(bytes(raw))
    return 0


def topic_still_serves(url: str, damaged_at: int, damaged_name: str, *, fenced_at_load: bool = True) -> None:
    """Produce and subscribe work; the 900 sealed messages are read; the damaged range is refused with its
    place; a subscription moved past it gets the new message, at an offset after the damaged ones.
    ``fenced_at_load``: the damage lies where loading reads (after the index's last entry); else it is found
    before the first append."""
    # gRPC: a consumer reading into the damaged range gets CorruptLog in band there; Pulsar's binary protocol
    # has no error for a consumer, so the binary front end closes it (docs/pulsar-compatibility.md)
    client = Client(url, operation_timeout_seconds=10, transport="grpc")
    admin = Admin(url)
    stats = admin.topic_internal_stats(TOPIC)  # the operator's view answers, and shows the damage
    assert stats["lastConfirmedEntry"] == f"{SEALED}:{SEALED + ACTIVE - 1}"
    assert [ledger["ledgerId"] for ledger in stats["ledgers"] if "damaged" in ledger] == [SEALED] * fenced_at_load
    producer = client.create_producer(TOPIC)
    after = producer.send(b"after")
    assert after.entry_id() == SEALED + ACTIVE  # the damaged segment's offsets are never handed out again
    consumer = client.subscribe(TOPIC, "sub", consumer_type=ConsumerType.Exclusive)
    got = []
    for _ in range(SEALED):
        msg = consumer.receive(timeout_millis=10_000)
        consumer.acknowledge(msg)
        got.append(msg.data())
    assert got == [f"m-{i}".encode() for i in range(SEALED)]
    with pytest.raises(CorruptLog) as err:
        consumer.receive(timeout_millis=10_000)
    assert (err.value.path, err.value.position) == (damaged_name, damaged_at)
    consumer.close()
    admin.reset_cursor(TOPIC, "sub", after)
    consumer = client.subscribe(TOPIC, "sub", consumer_type=ConsumerType.Exclusive)
    assert consumer.receive(timeout_millis=10_000).data() == b"after"
    client.close()
    admin.close()


def fenced_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if "event=log_segment_fenced" in line]
    assert lines and "ERROR" in lines[0], stderr[-3000:]
    return lines[0]


@pytest.mark.parametrize("damage, fenced_at_load", [(flip_a_byte_in_the_last_frame, True),
                                                    (zero_the_first_block, False)],
                         ids=["flipped-byte", "zeroed-block"])
def test_a_topic_whose_active_segment_was_damaged_after_sigterm_loads_and_serves(broker_process, tmp_path, damage,
                                                                                 fenced_at_load):
    data_dir = tmp_path / "data"
    first = broker_process(*CONFIG, data_dir=data_dir)
    publish(first.service_url, SEALED + ACTIVE)
    assert first.terminate() == 0  # a clean close: the active segment is recorded, not scanned on load
    first.stop()
    segment = active_segment(data_dir)
    assert segment.name == f"{SEALED:020d}.log" and (topic_folder(data_dir) / CLEAN_CLOSE_FILE).exists()
    damaged_at = damage(segment)

    second = broker_process(*CONFIG, data_dir=data_dir)
    topic_still_serves(second.service_url, damaged_at, segment.name, fenced_at_load=fenced_at_load)
    second.terminate()
    line = fenced_line(second.proc.stderr.read())
    assert re.search(rf"first_offset={SEALED} end_offset={SEALED + ACTIVE} fenced_messages={ACTIVE}\b", line)


def test_a_topic_whose_active_segment_was_damaged_while_idle_unloaded_loads_and_serves(broker_process, tmp_path):
    data_dir = tmp_path / "data"
    proc = broker_process(*CONFIG, "--set", "brokerTopicIdleUnloadSeconds=1", data_dir=data_dir)
    publish(proc.service_url, SEALED + ACTIVE)
    record = topic_folder(data_dir) / CLEAN_CLOSE_FILE
    assert wait_until(record.exists, timeout_s=20), "the idle topic was not unloaded"
    segment = active_segment(data_dir)
    damaged_at = flip_a_byte_in_the_last_frame(segment)

    topic_still_serves(proc.service_url, damaged_at, segment.name)  # the next use loads it again
    proc.terminate()
    line = fenced_line(proc.proc.stderr.read())
    assert re.search(rf"first_offset={SEALED} end_offset={SEALED + ACTIVE} fenced_messages={ACTIVE}\b", line)
