"""A broker process restarted on a data dir whose topic ``T`` was damaged while it was stopped (one file, one
kind of damage each): damage is a range, never a topic state (broker_core.storage.recovery, ARCHITECTURE §5).

``T`` holds 1,000 unbatched messages in 10 segments of 100 entries (the last one active); its durable
subscription ``s`` acknowledged 0..299; topic ``OTHER`` holds 10 messages; the broker stopped with SIGTERM.
For each kind of damage: a reader from the earliest receives exactly the intact messages before the damaged
range and then one typed ``DataLost`` naming it (our client, both transports) -- or, with
``autoSkipNonRecoverableData=true``, every intact message; ``s`` receives its intact unacknowledged
messages the same way; a produce to ``T`` takes the next offset (never one handed out before); ``OTHER`` is
untouched; nothing waits longer than the short timeouts given. The official client receives the same
intact messages and then waits at the range, as Apache Pulsar's clients wait at an unreadable entry (its
protocol has no error for a consumer), while a new reader starting inside the range is refused at once
with ``NotAllowedError``; with ``autoSkipNonRecoverableData`` it receives every intact message."""
from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pulsar
import pytest

from broker_core.storage.format import HEADER_SIZE, decode_header
from connector import Admin, Client, ConsumerType, DataLost, InitialPosition, MessageId, Timeout
from tests.brokers import BrokerProcess
from tests.waiting import wait_until

T = "persistent://public/default/T"
OTHER = "persistent://public/default/other"
MESSAGES, ACKED, PER_SEGMENT = 1000, 300, 100
CONFIG = ("--set", f"managedLedgerMaxEntriesPerLedger={PER_SEGMENT}", "--set", "defaultRetentionTimeInMinutes=-1",
          "--set", "defaultRetentionSizeInMB=-1", "--log-level", "ERROR")
"""Segments of 100 entries; acknowledged messages are kept (a reader from the earliest sees all 1,000)."""
SKIP = ("--set", "autoSkipNonRecoverableData=true")
QUIET_MS = 300
"""How long a reader waits to be sure nothing more comes (the broker answers in milliseconds)."""


def folder(data_dir: Path, topic: str = "T") -> Path:
    return data_dir / "topics" / "persistent" / "public" / "default" / topic


def segment(data_dir: Path, base: int) -> Path:
    return folder(data_dir) / f"{base:020d}.log"


def frames(path: Path) -> list[tuple[int, int]]:
    """``(byte position, offset)`` of every frame of a segment file."""
    raw, position, found = path.read_bytes(), 0, []
    while position < len(raw):
        header = decode_header(raw[position:position + HEADER_SIZE])
        found.append((position, header.offset))
        position += header.frame_size
    return found


def position_of(data_dir: Path, offset: int) -> int:
    base = offset // PER_SEGMENT * PER_SEGMENT
    return dict((o, p) for p, o in frames(segment(data_dir, base)))[offset]


def rewrite(path: Path, change: Callable[[bytearray], object]) -> None:
    raw = bytearray(path.read_bytes())
    change(raw)
    path.write_bytes(bytes(raw))


# -- the kinds of damage: each changes one file and says which offsets it costs -----------------------------
def flip_data_byte(offset: int) -> Callable[[Path], tuple[int, int] | None]:
    def damage(data_dir: Path) -> tuple[int, int]:
        at = position_of(data_dir, offset) + HEADER_SIZE + 1
        rewrite(segment(data_dir, offset // PER_SEGMENT * PER_SEGMENT), lambda raw: raw.__setitem__(at, raw[at] ^ 0x40))
        return offset, offset + 1
    return damage


def huge_length(data_dir: Path) -> tuple[int, int]:
    at = position_of(data_dir, 950) + 4
    rewrite(segment(data_dir, 900), lambda raw: raw.__setitem__(slice(at, at + 4), (1 << 31).to_bytes(4, "big")))
    return 950, 951


def zero_last_300_bytes(data_dir: Path) -> tuple[int, int]:
    path = segment(data_dir, 900)
    cut = path.stat().st_size - 300
    first_hit = next(o for p, o in reversed(frames(path)) if p < cut)  # the frame holding byte `cut`
    rewrite(path, lambda raw: raw.__setitem__(slice(cut, None), bytes(300)))
    return first_hit, MESSAGES


def last_frame_twice(data_dir: Path) -> None:
    path = segment(data_dir, 900)
    raw = path.read_bytes()
    path.write_bytes(raw + raw[frames(path)[-1][0]:])


def truncate_sealed(data_dir: Path) -> tuple[int, int]:
    path = segment(data_dir, 300)
    cut = position_of(data_dir, 350) + 10
    path.write_bytes(path.read_bytes()[:cut])
    return 350, 400


def delete_middle_segment(data_dir: Path) -> tuple[int, int]:
    segment(data_dir, 300).unlink()
    return 300, 400


def truncate_last_mid_frame(data_dir: Path) -> tuple[int, int]:
    path = segment(data_dir, 900)
    path.write_bytes(path.read_bytes()[:-5])
    return 999, 1000


def garbage_after_last_frame(data_dir: Path) -> None:
    with open(segment(data_dir, 900), "ab") as f:
        f.write(os.urandom(200))


def delete_indexes(data_dir: Path) -> None:
    for index in folder(data_dir).glob("*.index"):
        index.unlink()


def garbage_indexes(data_dir: Path) -> None:
    for index in folder(data_dir).glob("*.index"):
        index.write_bytes(os.urandom(index.stat().st_size or 64))


def wrong_indexes(data_dir: Path) -> None:
    """Every entry after the first points between frames, with an offset its frame does not hold."""
    for index in folder(data_dir).glob("*.index"):
        raw = bytearray(index.read_bytes())
        for at in range(16, len(raw), 16):
            raw[at:at + 16] = (int.from_bytes(raw[at:at + 8], "big") + 1).to_bytes(8, "big") + \
                (int.from_bytes(raw[at + 8:at + 16], "big") + 3).to_bytes(8, "big")
        index.write_bytes(bytes(raw))


def stray_files(data_dir: Path) -> None:
    for name in ("00000000000000000042.index", "notes.txt", "00000000000000000100.log.tmp", ".hidden"):
        (folder(data_dir) / name).write_bytes(os.urandom(100))


def delete_first_segment(data_dir: Path) -> None:
    segment(data_dir, 0).unlink()


@dataclass(frozen=True)
class Case:
    damage: Callable[[Path], tuple[int, int] | None]
    first: int = 0
    """the first offset a reader from the earliest gets (the first segment deleted: retention-like)"""


CASES = {
    "active-flipped-byte-middle": Case(flip_data_byte(950)),
    "active-flipped-byte-last-frame": Case(flip_data_byte(999)),
    "active-last-300-bytes-zeroed": Case(zero_last_300_bytes),
    "active-length-set-huge": Case(huge_length),
    "active-last-frame-written-twice": Case(last_frame_twice),
    "sealed-flipped-byte-middle": Case(flip_data_byte(350)),
    "sealed-segment-truncated": Case(truncate_sealed),
    "middle-segment-deleted": Case(delete_middle_segment),
    "last-segment-truncated-mid-frame": Case(truncate_last_mid_frame),
    "garbage-after-the-last-frame": Case(garbage_after_last_frame),
    "indexes-deleted": Case(delete_indexes),
    "indexes-garbage": Case(garbage_indexes),
    "indexes-wrong": Case(wrong_indexes),
    "stray-files": Case(stray_files),
    "first-segment-deleted": Case(delete_first_segment, first=PER_SEGMENT),
}


@pytest.fixture(scope="module")
def pristine(tmp_path_factory) -> Path:
    data_dir = tmp_path_factory.mktemp("pristine")
    broker = BrokerProcess(data_dir, *CONFIG).start()
    try:
        client = Client(broker.service_url)
        consumer = client.subscribe(T, "s", consumer_type=ConsumerType.Exclusive,
                                    initial_position=InitialPosition.Earliest)
        producer = client.create_producer(T)
        for i in range(MESSAGES):  # one at a time: one entry each, segments of exactly 100 entries
            producer.send(f"m-{i}".encode())
        for _ in range(ACKED):
            msg = consumer.receive(timeout_millis=10_000)
        consumer.acknowledge_cumulative(msg)
        other = client.create_producer(OTHER)
        for i in range(10):
            other.send(f"o-{i}".encode())
        client.close()
        admin = Admin(broker.service_url)
        assert admin.topic_internal_stats(T)["cursors"]["s"]["markDeletePosition"].endswith(f":{ACKED - 1}")
        admin.close()
        assert broker.terminate() == 0
    finally:
        broker.stop()
    return data_dir


@pytest.fixture
def damaged(pristine, tmp_path, broker_process):
    """``damaged(name, *config)``: a broker on a copy of the pristine data dir with damage ``name`` done to it;
    returns the broker and the lost range (None: nothing lost)."""
    def start(name: str, *config: str):
        data_dir = tmp_path / "data"
        shutil.copytree(pristine, data_dir)
        lost = CASES[name].damage(data_dir)
        return broker_process(*CONFIG, *config, data_dir=data_dir), lost
    return start


def read_all(next_message: Callable[[], object]) -> tuple[list, Exception]:
    """Messages read until something is raised, and what was."""
    got = []
    while True:
        try:
            got.append(next_message())
        except Exception as exc:  # the typed error, or the timeout once nothing more comes
            return got, exc


def offsets(messages: list) -> list[int]:
    return [m.message_id().entry_id() for m in messages]


def expected(first: int, lost: tuple[int, int] | None, skip: bool, start: int = 0) -> list[int]:
    wanted = range(max(first, start), MESSAGES)
    if lost is None:
        return list(wanted)
    return [o for o in wanted if not lost[0] <= o < lost[1] and (skip or o < lost[0])]


def assert_data_lost(error: Exception, lost: tuple[int, int] | None) -> None:
    if lost is None:
        assert isinstance(error, Timeout), repr(error)
        return
    assert isinstance(error, DataLost), repr(error)
    assert (error.start_offset, error.end_offset) == lost and T in error.message
    assert "autoSkipNonRecoverableData" in error.message  # the fix is named


def wait_ms(lost: tuple[int, int] | None) -> int:
    return QUIET_MS if lost is None else 5000


def produce_and_check_other(client) -> None:
    assert client.create_producer(T).send(b"new").entry_id() == MESSAGES  # never an offset handed out before
    other = client.create_reader(OTHER, MessageId.earliest)
    assert [other.read_next(timeout_millis=5000).data() for _ in range(10)] == [f"o-{i}".encode() for i in range(10)]


GRPC_CASES = ("active-flipped-byte-middle", "active-last-300-bytes-zeroed", "sealed-flipped-byte-middle",
              "middle-segment-deleted", "indexes-wrong")
"""Every case runs over the binary transport (the default against pulsarlike); these over gRPC too."""


@pytest.mark.parametrize("transport, name", [("binary", n) for n in CASES] + [("grpc", n) for n in GRPC_CASES])
def test_our_client_reads_every_intact_message_then_gets_one_typed_error(damaged, name, transport):
    broker, lost = damaged(name)
    first = CASES[name].first
    client = Client(broker.service_url, operation_timeout_seconds=5, transport=transport)
    reader = client.create_reader(T, MessageId.earliest)
    got, error = read_all(lambda: reader.read_next(timeout_millis=wait_ms(lost)))
    assert offsets(got) == expected(first, lost, False)
    assert_data_lost(error, lost)
    with pytest.raises(Timeout):  # once: then the reader waits at the range (a seek moves it on)
        reader.read_next(timeout_millis=QUIET_MS)

    consumer = client.subscribe(T, "s", consumer_type=ConsumerType.Exclusive)
    got, error = read_all(lambda: consumer.receive(timeout_millis=wait_ms(lost)))
    assert offsets(got) == expected(first, lost, False, start=ACKED)
    assert_data_lost(error, lost)
    if got:
        consumer.acknowledge_cumulative(got[-1])  # it stays subscribed: what it received can be acknowledged
    produce_and_check_other(client)
    client.close()


@pytest.mark.parametrize("name", [n for n in CASES if n not in ("indexes-deleted", "indexes-garbage", "stray-files")])
def test_with_auto_skip_every_intact_message_is_read_and_the_range_is_acknowledged(damaged, name):
    broker, lost = damaged(name, *SKIP)
    first = CASES[name].first
    client = Client(broker.service_url, operation_timeout_seconds=5)
    reader = client.create_reader(T, MessageId.earliest)
    got, error = read_all(lambda: reader.read_next(timeout_millis=QUIET_MS))
    assert offsets(got) == expected(first, lost, True) and isinstance(error, Timeout)
    consumer = client.subscribe(T, "s", consumer_type=ConsumerType.Exclusive)
    got, error = read_all(lambda: consumer.receive(timeout_millis=QUIET_MS))
    assert offsets(got) == expected(first, lost, True, start=ACKED) and isinstance(error, Timeout)
    consumer.acknowledge_cumulative(got[-1])
    admin = Admin(broker.service_url)
    stats = admin.topic_stats(T)
    if lost is not None:
        skipped = lost[1] - lost[0]
        assert stats["subscriptions"]["s"]["nonRecoverableMessagesSkipped"] == skipped
        assert stats["damagedMessages"] >= skipped
    produce_and_check_other(client)
    assert admin.topic_stats(T)["subscriptions"]["s"]["msgBacklog"] == 1  # the new message only
    admin.close()
    client.close()


@pytest.mark.parametrize("name", list(CASES))
def test_the_official_client_reads_every_intact_message_and_is_refused_inside_the_range(damaged, name):
    broker, lost = damaged(name)
    first = CASES[name].first
    client = pulsar.Client(broker.service_url, operation_timeout_seconds=5,
                           logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        reader = client.create_reader(T, pulsar.MessageId.earliest)
        got, error = read_all(lambda: reader.read_next(timeout_millis=QUIET_MS if lost is None else 2000))
        assert offsets(got) == expected(first, lost, False)
        assert isinstance(error, pulsar.Timeout), repr(error)  # it waits at the range: no error for a consumer
        if lost is not None:  # a reader starting inside the range is told so at once
            with pytest.raises(pulsar.NotAllowedError):
                client.create_reader(T, got[-1].message_id())
        if lost is not None and lost[0] <= ACKED < lost[1]:  # s's next message is lost: it is told at once
            with pytest.raises(pulsar.NotAllowedError):
                client.subscribe(T, "s", consumer_type=pulsar.ConsumerType.Exclusive)
        else:
            consumer = client.subscribe(T, "s", consumer_type=pulsar.ConsumerType.Exclusive)
            got, error = read_all(lambda: consumer.receive(timeout_millis=QUIET_MS if lost is None else 2000))
            assert offsets(got) == expected(first, lost, False, start=ACKED) and isinstance(error, pulsar.Timeout)
        assert client.create_producer(T).send(b"new").entry_id() == MESSAGES
    finally:
        client.close()


@pytest.mark.parametrize("name", ["sealed-flipped-byte-middle", "middle-segment-deleted", "active-last-300-bytes-zeroed"])
def test_the_official_client_reads_every_intact_message_with_auto_skip(damaged, name):
    broker, lost = damaged(name, *SKIP)
    client = pulsar.Client(broker.service_url, operation_timeout_seconds=5,
                           logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        reader = client.create_reader(T, pulsar.MessageId.earliest)
        got, error = read_all(lambda: reader.read_next(timeout_millis=QUIET_MS))
        assert offsets(got) == expected(0, lost, True) and isinstance(error, pulsar.Timeout)
    finally:
        client.close()


def test_a_listener_consumer_goes_on_after_a_reset_past_the_range(damaged):
    """A message listener is not stopped by the range's DataLost (logged once): moved past it, it goes on."""
    import threading

    broker, lost = damaged("sealed-flipped-byte-middle")
    got: list[int] = []
    done = threading.Event()

    def listener(consumer, msg) -> None:
        got.append(msg.message_id().entry_id())
        consumer.acknowledge(msg)
        if len(got) == MESSAGES - ACKED - 1:
            done.set()

    client = Client(broker.service_url, operation_timeout_seconds=5)
    client.subscribe(T, "s", consumer_type=ConsumerType.Exclusive, message_listener=listener)
    admin = Admin(broker.service_url)
    assert wait_until(lambda: got == list(range(ACKED, lost[0])))
    admin.reset_cursor(T, "s", MessageId(-1, 300, lost[1]))  # past the damaged entry: the consumer is moved
    assert done.wait(10), f"{len(got)} messages"
    assert got == [o for o in range(ACKED, MESSAGES) if o != lost[0]]
    admin.close()
    client.close()
