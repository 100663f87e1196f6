"""The export job (jobs/export.py) in-process against a real broker: a topic's range to Parquet partitioned
by publish date, a manifest of the exported offsets, and a second run exporting only what is new.

The topics get a durable subscription before anything is published: without one (or a retention policy) a
topic keeps nothing beyond its active segment, and older data would be gone before it is exported."""
from __future__ import annotations

import json
import os
import time
import types

import pytest

from connector import MessageId
from connector.client.producer import partition as partition_producer
from jobs import export

pytestmark = pytest.mark.spark

DAY1_MS = 1_714_564_800_000  # 2024-05-01T12:00:00Z
DAY2_MS = DAY1_MS + 86_400_000  # 2024-05-02T12:00:00Z


@pytest.fixture
def published_at(monkeypatch):
    """``published_at(ms)``: messages produced afterwards carry this publish time."""
    def set_time(ms: int) -> None:
        fake = types.SimpleNamespace(time=lambda: ms / 1000, monotonic=time.monotonic)
        monkeypatch.setattr(partition_producer, "time", fake)
    return set_time


def keep(admin, topic: str) -> None:
    """A durable subscription at the start of ``topic``: it holds the data for the export."""
    admin.create_topic(topic)
    admin.create_subscription(topic, "keep", MessageId.earliest)


def run(spark, broker, *args: str) -> int:
    return export.main([*args, "--service-url", broker.service_url, "--no-progress"], spark)


def manifest(folder) -> dict:
    return json.loads((folder / export.MANIFEST).read_text())


def exported(spark, folder) -> list[tuple[str, str, int]]:
    rows = spark.read.parquet(str(folder)).selectExpr("CAST(value AS STRING) v", "CAST(publish_date AS STRING) d",
                                                      "__offset").collect()
    return sorted(((r["v"], r["d"], r["__offset"]) for r in rows), key=lambda row: (row[2], row[0]))


def test_export_twice_exports_only_the_new_range(spark, broker, admin, produce, topic, tmp_path, published_at):
    keep(admin, topic)
    out = tmp_path / "out"
    published_at(DAY1_MS)
    produce(topic, 5)
    published_at(DAY2_MS)
    produce(topic, 5, start=5)

    assert run(spark, broker, topic, "--output", str(out)) == 0
    first_files = {p for p in out.rglob("*.parquet")}
    produce(topic, 3, start=10)
    assert run(spark, broker, topic, "--output", str(out)) == 0

    assert exported(spark, out) == ([(f"m{i}", "2024-05-01", i) for i in range(5)]
                                    + [(f"m{i}", "2024-05-02", i) for i in range(5, 13)])
    assert sorted(os.listdir(out)) == ["_pulsarlike_manifest.json", "publish_date=2024-05-01",
                                       "publish_date=2024-05-02"]
    runs = manifest(out)["runs"]
    assert manifest(out)["endOffsets"] == {topic: {"-1": 13}}
    assert [(r["startOffsets"], r["endOffsets"], r["rows"]) for r in runs] == [
        ({topic: {"-1": 0}}, {topic: {"-1": 10}}, 10), ({topic: {"-1": 10}}, {topic: {"-1": 13}}, 3)]
    assert runs[0]["dates"] == ["2024-05-01", "2024-05-02"] and runs[1]["dates"] == ["2024-05-02"]
    assert {str(p.relative_to(out)) for p in first_files} == set(runs[0]["files"])
    assert all((out / f).exists() for r in runs for f in r["files"])


def test_export_with_nothing_new_writes_nothing(spark, broker, admin, produce, topic, tmp_path, capsys):
    keep(admin, topic)
    produce(topic, 4)
    out = tmp_path / "out"
    assert run(spark, broker, topic, "--output", str(out)) == 0
    before = manifest(out)

    assert run(spark, broker, topic, "--output", str(out)) == 0

    assert "nothing new" in capsys.readouterr().out
    assert manifest(out) == before


def test_export_of_a_partitioned_topic_by_offsets_and_time(spark, broker, admin, client, topic, tmp_path,
                                                            published_at):
    admin.create_partitioned_topic(topic, 2)
    admin.create_subscription(topic, "keep", MessageId.earliest)
    for day, ms in enumerate((DAY1_MS, DAY2_MS)):
        published_at(ms)
        producer = client.create_producer(topic, batching_enabled=False)
        for i in range(4):
            producer.send(f"d{day}-{i}".encode(), partition_key=f"k{i}")
        producer.close()

    by_time = tmp_path / "by-time"
    assert run(spark, broker, topic, "--output", str(by_time), "--starting-time", "2024-05-02") == 0
    by_offsets = tmp_path / "by-offsets"
    assert run(spark, broker, topic, "--output", str(by_offsets), "--ending-offsets",
               json.dumps({topic: {"0": 1, "1": 1}})) == 0

    assert {v for v, d, _ in exported(spark, by_time)} == {f"d1-{i}" for i in range(4)}
    assert {d for _, d, _ in exported(spark, by_time)} == {"2024-05-02"}
    assert len(exported(spark, by_offsets)) == 2
    assert manifest(by_offsets)["endOffsets"] == {topic: {"0": 1, "1": 1}}
    # keys as stored (keyType=string): one schema for every run's files, and a backfill sends them again
    keys = spark.read.parquet(str(by_time)).select("__key")
    assert keys.schema["__key"].dataType.simpleString() == "string"
    assert {r["__key"] for r in keys.collect()} == {f"k{i}" for i in range(4)}


def test_export_removes_the_files_of_a_run_that_crashed_before_its_manifest(spark, broker, admin, produce,
                                                                          topic, tmp_path):
    keep(admin, topic)
    produce(topic, 3)
    out = tmp_path / "out"
    assert run(spark, broker, topic, "--output", str(out)) == 0
    folder = next(out.glob("publish_date=*"))
    orphan = folder / "run-19700101T000000Z-dead0000-part-00000.snappy.parquet"
    orphan.write_bytes(b"half a file")
    produce(topic, 2, start=3)

    assert run(spark, broker, topic, "--output", str(out)) == 0

    assert not orphan.exists()
    assert [v for v, _, _ in exported(spark, out)] == [f"m{i}" for i in range(5)]


def test_export_of_a_missing_topic_or_to_another_topics_folder_fails(spark, broker, admin, produce, topic,
                                                                     tmp_path, capsys):
    assert run(spark, broker, topic + "-missing", "--output", str(tmp_path / "a")) == 2
    assert "does not exist" in capsys.readouterr().err
    keep(admin, topic)
    produce(topic, 1)
    assert run(spark, broker, topic, "--output", str(tmp_path / "b")) == 0

    assert run(spark, broker, topic + "-other", "--output", str(tmp_path / "b")) == 2
    assert "holds an export of" in capsys.readouterr().err


def test_export_acknowledges_its_subscription_up_to_what_it_exported(spark, broker, admin, produce, topic,
                                                                     tmp_path, capsys):
    admin.create_topic(topic)
    admin.create_subscription(topic, "exports", MessageId.earliest)
    produce(topic, 5)
    out = tmp_path / "out"

    assert run(spark, broker, topic, "--output", str(out), "--subscription", "exports") == 0

    assert admin.topic_stats(topic)["subscriptions"]["exports"]["msgBacklog"] == 0
    assert "on subscription exports up to the exported end; backlog now 0" in capsys.readouterr().out
    produce(topic, 3, start=5)
    assert admin.topic_stats(topic)["subscriptions"]["exports"]["msgBacklog"] == 3  # held for the next run
    assert run(spark, broker, topic, "--output", str(out), "--subscription", "exports") == 0
    assert admin.topic_stats(topic)["subscriptions"]["exports"]["msgBacklog"] == 0


def test_export_creates_a_missing_subscription_where_the_next_run_starts(spark, broker, admin, produce, topic,
                                                                         tmp_path):
    keep(admin, topic)
    produce(topic, 4)

    assert run(spark, broker, topic, "--output", str(tmp_path / "out"), "--subscription", "exports") == 0
    produce(topic, 2, start=4)

    assert admin.topic_stats(topic)["subscriptions"]["exports"]["msgBacklog"] == 2
