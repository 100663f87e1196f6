"""``df.writeStream.format("pulsarlike")`` and ``df.write.format("pulsarlike")`` through Spark, against a
real broker: end to end, a micro-batch replayed by Spark itself, batch writes, and bad input refused
before anything is written."""
from __future__ import annotations

import json
import os

import pytest

from tests.spark.sink_helpers import payloads, read_all

pytestmark = pytest.mark.spark


def json_files(folder, rows_per_file, files):
    """``files`` JSON-lines files of ``{"id": i, "user": "u<i % 3>"}``: a replayable streaming input."""
    folder.mkdir(parents=True, exist_ok=True)
    for f in range(files):
        with open(folder / f"part-{f}.json", "w") as out:
            for i in range(f * rows_per_file, (f + 1) * rows_per_file):
                out.write(json.dumps({"id": i, "user": f"u{i % 3}"}) + "\n")


def sink(df, broker, checkpoint, **options):
    writer = (df.writeStream.format("pulsarlike").option("service.url", broker.service_url)
              .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True))
    for key, value in options.items():
        writer = writer.option(key, str(value))
    return writer


def as_messages(spark, folder):
    return (spark.readStream.schema("id BIGINT, user STRING").option("maxFilesPerTrigger", 1).json(str(folder))
            .selectExpr("CAST(id AS STRING) AS value", "user AS __key",
                        "map('source', 'files', 'parity', CAST(id % 2 AS STRING)) AS __messageProperties"))


@pytest.mark.spark_core
def test_stream_sink_writes_every_row_once_with_key_and_properties(spark, broker, client, topic, tmp_path):
    json_files(tmp_path / "in", 50, 3)
    query = sink(as_messages(spark, tmp_path / "in"), broker, tmp_path / "ckpt", topic=topic).start()
    query.awaitTermination(120)
    assert query.exception() is None
    stored = read_all(client, topic)
    assert sorted(int(m.data()) for m in stored) == list(range(150))
    assert all(m.partition_key() == f"u{int(m.data()) % 3}" for m in stored)
    assert all(m.properties() == {"source": "files", "parity": str(int(m.data()) % 2)} for m in stored)
    assert {m.producer_name().rsplit("-", 1)[0] for m in stored} == {stored[0].producer_name().rsplit("-", 1)[0]}
    assert {m.sequence_id() >> 32 for m in stored} == {0, 1, 2}  # one micro-batch per file


@pytest.mark.spark_core
def test_micro_batch_replayed_by_spark_after_a_lost_commit_adds_nothing(spark, broker, client, topic, tmp_path):
    json_files(tmp_path / "in", 40, 2)
    checkpoint = tmp_path / "ckpt"
    sink(as_messages(spark, tmp_path / "in"), broker, checkpoint, topic=topic).start().awaitTermination(120)
    assert len(payloads(client, topic)) == 80
    # The sink wrote batch 1 but the query died before committing it: Spark runs batch 1 again.
    for name in ("1", ".1.crc"):
        os.remove(checkpoint / "commits" / name)
    query = sink(as_messages(spark, tmp_path / "in"), broker, checkpoint, topic=topic).start()
    query.awaitTermination(120)
    assert query.exception() is None
    assert [p["batchId"] for p in query.recentProgress if p["numInputRows"]] == [1]  # batch 1 ran again
    assert sorted(int(v) for v in payloads(client, topic)) == list(range(80))


def test_topic_to_topic_copy_keeps_keys_properties_and_event_times(spark, broker, client, produce, topic,
                                                                   tmp_path):
    produce(topic, 30, partition_key="k", properties={"a": "b"}, event_timestamp=1_000)
    target = topic + "-copy"
    # keyType=string: __key as stored (the default binary __key would copy these UTF-8 keys as the same text)
    rows = (spark.readStream.format("pulsarlike").option("service.url", broker.service_url)
            .option("topic", topic).option("startingOffsets", "earliest").option("keyType", "string").load())
    query = sink(rows, broker, tmp_path / "ckpt", topic=target).start()  # source columns as they are
    query.awaitTermination(120)
    assert query.exception() is None
    copied = read_all(client, target)
    assert sorted(m.data() for m in copied) == sorted(f"m{i}".encode() for i in range(30))
    assert {(m.partition_key(), m.event_timestamp(), tuple(m.properties().items())) for m in copied} \
        == {("k", 1_000, (("a", "b"),))}


@pytest.mark.spark_core
def test_batch_write_appends_and_a_rerun_with_the_same_write_id_adds_nothing(spark, broker, client, topic):
    df = spark.range(0, 200, numPartitions=2).selectExpr("CAST(id AS STRING) AS value")

    def save(**options):
        writer = df.write.format("pulsarlike").mode("append").option("service.url", broker.service_url) \
            .option("topic", topic)
        for key, value in options.items():
            writer = writer.option(key, value)
        writer.save()
    save(writeId="load-1")
    save(writeId="load-1")
    assert sorted(int(v) for v in payloads(client, topic)) == list(range(200))
    save()  # no writeId: a new write each time
    assert len(payloads(client, topic)) == 400


def test_batch_overwrite_is_refused(spark, broker, admin, topic):
    df = spark.range(3).selectExpr("CAST(id AS STRING) AS value")
    with pytest.raises(Exception, match="only appends"):
        df.write.format("pulsarlike").mode("overwrite").option("service.url", broker.service_url) \
            .option("topic", topic).save()
    assert topic not in admin.list_topics()


@pytest.mark.parametrize("select, options, message", [
    ("CAST(id AS STRING) AS payload", {}, "needs a 'value' column"),
    ("id AS value", {}, "column value has type bigint; the sink needs binary or string"),
    ("CAST(id AS STRING) AS value", {"topic": None}, "no topic to write to"),
    ("CAST(id AS STRING) AS value", {"batchingMaxMesages": "5"}, "did you mean batchingMaxMessages"),
])
def test_bad_batch_input_fails_before_anything_is_written(spark, broker, admin, topic, select, options, message):
    writer = spark.range(5).selectExpr(select).write.format("pulsarlike").mode("append") \
        .option("service.url", broker.service_url)
    for key, value in {"topic": topic, **options}.items():
        if value is not None:
            writer = writer.option(key, value)
    with pytest.raises(Exception, match=message):
        writer.save()
    assert topic not in admin.list_topics()


def test_bad_stream_input_stops_the_query_before_anything_is_written(spark, broker, admin, topic, tmp_path):
    json_files(tmp_path / "in", 5, 1)
    rows = spark.readStream.schema("id BIGINT, user STRING").json(str(tmp_path / "in")) \
        .selectExpr("user AS __key", "id AS __partition")
    with pytest.raises(Exception, match="needs a 'value' column"):
        query = sink(rows, broker, tmp_path / "ckpt", topic=topic).start()
        query.awaitTermination(120)
        raise AssertionError(f"the query ended without an error: {query.exception()}")
    assert topic not in admin.list_topics()
