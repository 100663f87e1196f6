"""Checkpoints written by the Spark source's two readers before issue 32 (tests/data/spark_checkpoints: dense
offsets from pulsarlike, message ids from pulsar-lite) are resumed: a restarted query reads exactly the
messages after the last committed batch, on the query's subscription named in the checkpoint."""
from __future__ import annotations

import shutil
import uuid
from pathlib import Path

import pytest

from connector.spark.spark_versions import TRIGGER_AVAILABLE_NOW
from tests.pulsar_lite import pulsar_lite_broker  # noqa: F401

pytestmark = [pytest.mark.spark, pytest.mark.spark_core]

LAST_RUN_HELD = 0 if TRIGGER_AVAILABLE_NOW else 3
"""Messages of the run's last micro-batch the checkpoint's subscription still holds after an AvailableNow run:
before Spark 4.2 Spark never tells the source that batch was committed (connector.spark.spark_versions)."""

CHECKPOINTS = Path(__file__).resolve().parents[1] / "data" / "spark_checkpoints"


def restored(kind: str, folder: Path, replacements: dict[str, str]) -> Path:
    """The captured checkpoint ``kind`` copied to ``folder``, its offsets naming this test's topic (ledger)."""
    target = folder / kind
    shutil.copytree(CHECKPOINTS / kind, target)
    for path in (target / "offsets").iterdir():
        text = path.read_text()
        for old, new in replacements.items():
            text = text.replace(old, new)
        path.write_text(text)
    return target


def resume(spark, service_url: str, topic: str, checkpoint: Path) -> list[bytes]:
    """The rows a restarted query reads with ``availableNow``, batch by batch (a replayed batch replaces)."""
    batches: dict[int, list[bytes]] = {}
    query = (spark.readStream.format("pulsarlike").option("service.url", service_url).option("topic", topic)
             .option("startingOffsets", "earliest").load()
             .writeStream.option("checkpointLocation", str(checkpoint)).trigger(availableNow=True)
             .foreachBatch(lambda df, batch_id: batches.__setitem__(
                 batch_id, [bytes(r.value) for r in df.select("value").collect()]))
             .start())
    query.awaitTermination(120)
    assert query.exception() is None
    return [value for _, rows in sorted(batches.items()) for value in rows]


def test_a_checkpoint_of_dense_offsets_goes_on_after_its_last_committed_batch(spark, broker, client, admin,
                                                                             tmp_path):
    topic = f"persistent://public/default/ck-dense-{uuid.uuid4().hex[:8]}"
    producer = client.create_producer(topic, batching_enabled=False)
    for i in range(10):
        producer.send(f"m{i}".encode())
    producer.close()
    checkpoint = restored("dense", tmp_path, {"persistent://public/default/ck-dense": topic})

    assert resume(spark, broker.service_url, topic, checkpoint) == [b"m7", b"m8", b"m9"]
    assert admin.topic_stats(topic)["subscriptions"]["ck-sub"]["msgBacklog"] == LAST_RUN_HELD  # the checkpoint's


def test_a_checkpoint_of_message_ids_goes_on_after_its_last_committed_batch(spark, pulsar_lite_broker, tmp_path):
    pulsar = pytest.importorskip("pulsar")
    topic = f"persistent://public/default/ck-ids-{uuid.uuid4().hex[:8]}"
    official = pulsar.Client(pulsar_lite_broker.service_url)
    try:
        producer = official.create_producer(topic, batching_enabled=False)
        ids = [producer.send(f"m{i}".encode()) for i in range(10)]
        producer.close()
        assert [m.entry_id() for m in ids[:7]] == list(range(7))  # as when the checkpoint was written
        checkpoint = restored("message_id", tmp_path, {"persistent://public/default/ck-ids": topic,
                                                        '"ledger": 0': f'"ledger": {ids[0].ledger_id()}'})

        assert resume(spark, pulsar_lite_broker.service_url, topic, checkpoint) == [b"m7", b"m8", b"m9"]
        producer = official.create_producer(topic, batching_enabled=False)
        producer.send(b"m10")
        producer.close()
        consumer = official.subscribe(topic, "ck-sub", consumer_type=pulsar.ConsumerType.Failover)
        try:  # the checkpoint's subscription, acknowledged up to the query's last commit (before 4.2: the one before)
            assert consumer.receive(5000).data() == (b"m10" if TRIGGER_AVAILABLE_NOW else b"m7")
        finally:
            consumer.close()
    finally:
        official.close()
