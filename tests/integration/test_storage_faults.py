"""The broker under storage faults: a lost tail, a damaged sealed segment, a full disk, topics unloaded
and loaded again. Acknowledged data is never silently lost, offsets are never reused, one damaged topic
never stalls its producers, and a producer survives a full disk."""
from __future__ import annotations

import logging
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from broker_core import Broker
from broker_core.errors import CorruptLog, DataLost, PersistenceError, Timeout
from broker_core.storage.format import HEADER_SIZE, decode_header
from broker_core.storage.recovery import CLEAN_CLOSE_FILE
from connector import Admin, Client, ConsumerType, InitialPosition, MessageId
from tests.waiting import wait_until

TOPIC = "persistent://public/default/faults"


def topic_folder(data_dir: Path, local: str = "faults") -> Path:
    return data_dir / "topics" / "persistent" / "public" / "default" / local


def frame_positions(path: Path) -> list[int]:
    raw, positions, pos = path.read_bytes(), [], 0
    while pos < len(raw):
        positions.append(pos)
        pos += decode_header(raw[pos:pos + HEADER_SIZE]).frame_size
    return positions


def cut_last_frames(folder: Path, frames: int) -> None:
    """What a power loss (or a damaged disk) does to the newest entries: they are gone."""
    last = sorted(folder.glob("*.log"))[-1]
    positions = frame_positions(last)
    with open(last, "r+b") as f:
        f.truncate(positions[-frames])


def received(consumer, n: int, timeout_ms: int = 5000) -> list:
    out = []
    for _ in range(n):
        msg = consumer.receive(timeout_millis=timeout_ms)
        consumer.acknowledge(msg)
        out.append(msg)
    return out


@pytest.mark.parametrize("sync_mode", ["group", "never"])
@pytest.mark.parametrize("closed", ["crash", "clean"])
def test_offsets_are_not_reused_after_the_log_lost_its_tail(tmp_path, caplog, sync_mode, closed):
    """A crash (no clean-close record) that lost fsynced frames: the log recovers short, the subscription had
    acknowledged beyond it, so the log's end moves past its position. After a clean close the record proves
    the end: the missing frames are a damaged range and keep their offsets."""
    with Broker(data_dir=tmp_path, port=0, journalSyncMode=sync_mode) as broker:
        client = Client(broker.service_url)
        consumer = client.subscribe(TOPIC, "sub", consumer_type=ConsumerType.Exclusive)
        producer = client.create_producer(TOPIC)
        for i in range(60):
            producer.send(f"old-{i}".encode())
        old = received(consumer, 60)
        consumer.close()  # its acks are flushed when it closes and when the broker stops
        client.close()
    cut_last_frames(topic_folder(tmp_path), 50)  # 50 acknowledged, delivered messages are gone
    if closed == "crash":
        (topic_folder(tmp_path) / CLEAN_CLOSE_FILE).unlink()

    caplog.set_level(logging.ERROR)
    with Broker(data_dir=tmp_path, port=0, journalSyncMode=sync_mode) as broker:
        client = Client(broker.service_url)
        consumer = client.subscribe(TOPIC, "sub", consumer_type=ConsumerType.Exclusive)
        producer = client.create_producer(TOPIC)
        for i in range(60):
            producer.send(f"new-{i}".encode())
        new = received(consumer, 60)
        client.close()
    assert [m.data() for m in new] == [f"new-{i}".encode() for i in range(60)]
    assert min(m.message_id() for m in new) > max(m.message_id() for m in old)
    event, counted = (("acknowledged_messages_lost", "lost=50") if closed == "crash"
                      else ("log_range_damaged", "lost_messages=50"))
    lost = [r.getMessage() for r in caplog.records if f"event={event}" in r.getMessage()]
    assert lost and counted in lost[0], [r.getMessage() for r in caplog.records]


@pytest.mark.parametrize("transport", ["grpc", "binary"])
def test_a_damaged_entry_fails_its_readers_once_and_never_stalls_producers(tmp_path, transport):
    config = dict(managedLedgerMaxEntriesPerLedger=10, journalSyncMode="always")
    with Broker(data_dir=tmp_path, port=0, **config) as broker:
        admin = Admin(broker.service_url)
        admin.create_topic(TOPIC)
        admin.create_subscription(TOPIC, "sub", MessageId.earliest)
        client = Client(broker.service_url)
        producer = client.create_producer(TOPIC)
        for i in range(50):
            producer.send(f"m-{i}".encode())
        client.close()
        admin.close()
    first = sorted(topic_folder(tmp_path).glob("*.log"))[0]
    raw = bytearray(first.read_bytes())
    raw[frame_positions(first)[3] + HEADER_SIZE + 5] ^= 0x20  # inside the 4th entry: found when read
    first.write_bytes(bytes(raw))

    with Broker(data_dir=tmp_path, port=0, **config) as broker:
        client = Client(broker.service_url, operation_timeout_seconds=10, transport=transport)
        admin = Admin(broker.service_url)
        producer = client.create_producer(TOPIC)
        for attempt in range(2):  # the subscription is not left busy by a consumer that met the damage
            consumer = client.subscribe(TOPIC, "sub", consumer_type=ConsumerType.Exclusive)
            assert [consumer.receive(timeout_millis=5000).data() for _ in range(3)] == [b"m-0", b"m-1", b"m-2"]
            with pytest.raises(DataLost) as err:  # in the next message's place, once
                consumer.receive(timeout_millis=5000)
            assert (err.value.start_offset, err.value.end_offset) == (3, 4)
            assert err.value.position == frame_positions(first)[3] and str(tmp_path) not in str(err.value)
            with pytest.raises(Timeout):  # then nothing: the consumer waits at the range, still subscribed
                consumer.receive(timeout_millis=200)
            started = time.monotonic()
            producer.send(f"during-{attempt}".encode())  # writers are never stalled by a damaged range
            assert time.monotonic() - started < 2
            consumer.close()
        admin.reset_cursor(TOPIC, "sub", MessageId(-1, 0, 4))  # past the damaged entry
        consumer = client.subscribe(TOPIC, "sub", consumer_type=ConsumerType.Exclusive)
        got = [m.data() for m in received(consumer, 48)]
        client.close()
        admin.close()
    assert got == [f"m-{i}".encode() for i in range(4, 50)] + [b"during-0", b"during-1"]


def fill(path: Path) -> None:
    """Write zeros to ``path`` until the disk holding it is full."""
    with open(path, "wb") as f:
        try:
            while True:
                f.write(b"\0" * 65536)
                f.flush()
        except OSError:
            pass


@pytest.fixture
def small_disk(tmp_path):
    """A 4 MiB tmpfs (root only: CI runs as root); the test fills it and frees it again."""
    mount = tmp_path / "disk"
    mount.mkdir()
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a small tmpfs needs root")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=False)


def test_a_full_disk_fails_the_send_and_the_same_producer_works_once_space_is_freed(small_disk):
    with Broker(data_dir=small_disk / "data", port=0) as broker:
        # gRPC fails the send in band; over the binary protocol the broker closes the producer and the client
        # re-sends until send_timeout_millis, as Pulsar's clients do (docs/pulsar-compatibility.md)
        client = Client(broker.service_url, transport="grpc")
        producer = client.create_producer(TOPIC)
        producer.send(b"before")
        filler = small_disk / "filler"
        fill(filler)
        with pytest.raises(PersistenceError) as err:
            producer.send(b"x" * 200_000)
        assert "No space left" in str(err.value) and str(small_disk) not in str(err.value)
        filler.unlink()
        producer.send(b"after")  # the same producer: its stream was never ended
        consumer = client.subscribe(TOPIC, "sub", initial_position=InitialPosition.Earliest)
        assert [m.data() for m in received(consumer, 2)] == [b"before", b"after"]
        client.close()


def test_idle_topics_are_unloaded_and_load_again_with_cursors_dedup_and_delayed_messages(tmp_path):
    with Broker(data_dir=tmp_path, port=0, brokerTopicIdleUnloadSeconds=1, brokerDeduplicationEnabled=True,
                delayedDeliveryTickTimeMillis=100) as broker:
        registry = broker._service.registry  # what the broker holds in memory
        client = Client(broker.service_url)
        producer = client.create_producer(TOPIC, producer_name="p1")
        consumer = client.subscribe(TOPIC, "sub", consumer_type=ConsumerType.Shared)
        for i in range(5):
            producer.send(f"m-{i}".encode(), sequence_id=i)
        producer.send(b"delayed", sequence_id=5, deliver_after=timedelta_ms(3000))
        received(consumer, 3)
        consumer.close()
        producer.close()
        assert wait_until(lambda: TOPIC not in registry.loaded_topics(), timeout_s=10)

        producer = client.create_producer(TOPIC, producer_name="p1")
        assert producer.last_sequence_id() == 5  # deduplication state came back from disk
        producer.send(b"resent", sequence_id=4)  # a duplicate: dropped
        consumer = client.subscribe(TOPIC, "sub", consumer_type=ConsumerType.Shared)
        got = [m.data() for m in received(consumer, 3, timeout_ms=10000)]
        client.close()
    assert got == [b"m-3", b"m-4", b"delayed"]


def timedelta_ms(ms: int):
    from datetime import timedelta
    return timedelta(milliseconds=ms)


@pytest.mark.slow
def test_four_thousand_topics_touched_once_keep_the_broker_under_500_fds(broker_process):
    # 4,000 topics: eight times the bound and four times a default 1,024-descriptor ulimit, so a descriptor held
    # per topic (or per segment) shows, in a quarter of the time 20,000 took
    proc = broker_process("--set", "brokerTopicIdleUnloadSeconds=5", "--log-level", "WARNING")  # stderr is a pipe
    pid = proc.proc.pid
    admin = Admin(proc.service_url)
    peak = 0
    for i in range(4_000):
        admin.create_topic(f"persistent://public/default/touched-{i}")
        if i % 500 == 499:
            peak = max(peak, len(os.listdir(f"/proc/{pid}/fd")))
    admin.close()
    client = Client(proc.service_url)  # the broker still serves
    producer = client.create_producer("persistent://public/default/touched-7")
    producer.send(b"still here")
    client.close()
    assert peak < 500, f"the broker held {peak} file descriptors"
