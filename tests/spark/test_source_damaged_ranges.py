"""Spark reads of a topic whose stored data was damaged while its broker was stopped (issue 29): a real broker
process restarted on 300 unbatched messages in segments of 50, with a flipped byte in a sealed segment's frame
(offset 10 lost) and the segment of offsets 150..199 deleted. ``failOnDataLoss=true`` fails the read naming
the offsets and the fixes; ``false`` returns every intact row exactly once, in order, batch and stream, and a
replayed micro-batch returns the same rows. A broker with ``autoSkipNonRecoverableData=true`` skips the
ranges itself, and the read goes on whatever ``failOnDataLoss`` says."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from broker_core.storage.format import HEADER_SIZE, decode_header
from connector import Admin, Client, MessageId
from tests.brokers import BrokerProcess

pytestmark = pytest.mark.spark

TOPIC = "persistent://public/default/damaged"
MESSAGES, PER_SEGMENT = 300, 50
FLIPPED, DELETED = range(10, 11), range(150, 200)
INTACT = [o for o in range(MESSAGES) if o not in FLIPPED and o not in DELETED]
CONFIG = ("--set", f"managedLedgerMaxEntriesPerLedger={PER_SEGMENT}", "--log-level", "WARNING")


def topic_folder(data_dir: Path) -> Path:
    return data_dir / "topics" / "persistent" / "public" / "default" / "damaged"


def frame_positions(path: Path) -> list[int]:
    raw, positions, pos = path.read_bytes(), [], 0
    while pos < len(raw):
        positions.append(pos)
        pos += decode_header(raw[pos:pos + HEADER_SIZE]).frame_size
    return positions


@pytest.fixture(scope="module")
def damaged(tmp_path_factory) -> Path:
    """A data dir: the topic's 300 unbatched messages (a subscription holds them from retention), written by
    a broker stopped cleanly, then damaged: a byte flipped inside offset 10's frame in the first (sealed)
    segment, and the sealed segment of offsets 150..199 deleted with its index."""
    data_dir = tmp_path_factory.mktemp("damaged")
    broker = BrokerProcess(data_dir, *CONFIG).start()
    try:
        admin = Admin(broker.service_url)
        admin.create_topic(TOPIC)
        admin.create_subscription(TOPIC, "hold", MessageId.earliest)
        admin.close()
        client = Client(broker.service_url)
        producer = client.create_producer(TOPIC, batching_enabled=False)
        for i in range(MESSAGES):
            producer.send_async(f"m-{i}".encode(), None)
        producer.flush()
        client.close()
        assert broker.terminate() == 0
    finally:
        broker.stop()
    folder = topic_folder(data_dir)
    first = folder / f"{0:020d}.log"
    raw = bytearray(first.read_bytes())
    raw[frame_positions(first)[FLIPPED[0]] + HEADER_SIZE + 5] ^= 0x20  # found when a read gets there
    first.write_bytes(bytes(raw))
    for suffix in (".log", ".index"):
        (folder / f"{DELETED[0]:020d}{suffix}").unlink()
    return data_dir


def restarted(damaged: Path, copy: Path, *more: str) -> BrokerProcess:
    shutil.copytree(damaged, copy)
    return BrokerProcess(copy, *CONFIG, *more).start()


@pytest.fixture(scope="module")
def broker(damaged, tmp_path_factory):
    """The broker restarted on the damaged data dir (reads change nothing there: one for the module)."""
    running = restarted(damaged, tmp_path_factory.mktemp("restarted") / "data")
    yield running
    running.stop()


def read(spark, broker: BrokerProcess, stream: bool = False, **options: str):
    reader = (spark.readStream if stream else spark.read).format("pulsarlike")
    for key, value in {"service.url": broker.service_url, "topic": TOPIC, **options}.items():
        reader = reader.option(key, value)
    return reader.load()


def assert_names_the_loss_and_the_fixes(text: str, first: int, last: int) -> None:
    assert f"messages {first}..{last} of {TOPIC} partition -1 are not readable: the broker's stored copy of " \
           "them is damaged" in text, text
    for fix in ("failOnDataLoss=false", "autoSkipNonRecoverableData=true on the broker",
                "restore the segment from a backup"):
        assert fix in text


def test_a_batch_read_meeting_a_damaged_range_fails_naming_its_offsets_why_and_the_fixes(spark, broker):
    with pytest.raises(Exception) as excinfo:
        read(spark, broker).collect()
    text = str(excinfo.value)
    assert_names_the_loss_and_the_fixes(text, 10, 10)
    assert "CRC mismatch" in text


@pytest.mark.parametrize("transport", ["binary", "grpc"])
def test_without_fail_on_data_loss_a_batch_read_returns_every_intact_row_once_in_order(spark, broker, transport):
    # Spark partitions [0, 175) and [175, 300): the deleted segment's range is split between them, and the
    # second one starts inside it.
    rows = read(spark, broker, failOnDataLoss="false", maxMessagesPerPartition="175", transport=transport).collect()
    assert [r["__offset"] for r in rows] == INTACT
    assert [bytes(r["value"]) for r in rows] == [f"m-{o}".encode() for o in INTACT]


def test_a_stream_meeting_a_damaged_range_fails_naming_its_offsets(spark, broker, tmp_path):
    query = (read(spark, broker, stream=True, startingOffsets="earliest", maxMessagesPerTrigger="100")
             .writeStream.format("noop").option("checkpointLocation", str(tmp_path))
             .trigger(availableNow=True).start())
    with pytest.raises(Exception) as excinfo:
        query.awaitTermination(120)
    assert_names_the_loss_and_the_fixes(str(excinfo.value), 10, 10)


def test_without_fail_on_data_loss_a_stream_skips_damaged_ranges_and_a_replayed_batch_is_identical(
        spark, broker, tmp_path):
    checkpoint = tmp_path / "checkpoint"

    def run() -> dict[int, list[int]]:
        batches: dict[int, list[int]] = {}
        query = (read(spark, broker, stream=True, startingOffsets="earliest", failOnDataLoss="false",
                      maxMessagesPerTrigger="150")
                 .writeStream.option("checkpointLocation", str(checkpoint)).trigger(availableNow=True)
                 .foreachBatch(lambda df, batch_id: batches.__setitem__(
                     batch_id, [r["__offset"] for r in df.select("__offset").collect()]))
                 .start())
        assert query.awaitTermination(120)
        assert query.exception() is None
        return batches

    first = run()
    assert first == {0: [o for o in INTACT if o < 150], 1: [o for o in INTACT if o >= 150]}
    for name in ("1", ".1.crc"):  # as if the query stopped before batch 1 was committed
        (checkpoint / "commits" / name).unlink()
    assert run() == {1: first[1]}  # Spark replays batch 1: the same range, the same damage, the same rows


def test_a_broker_skipping_damaged_ranges_itself_lets_a_read_failing_on_data_loss_go_on(
        spark, damaged, tmp_path):
    skipping = restarted(damaged, tmp_path / "data", "--set", "autoSkipNonRecoverableData=true")
    try:
        rows = read(spark, skipping).collect()  # failOnDataLoss=true
    finally:
        skipping.stop()
    assert [r["__offset"] for r in rows] == INTACT
