"""Spark's Kafka source options and pulsar-spark's remaining options against a real broker (issue 34):
``minPartitions`` slices (exact, across a restart), starts and ends by publish time per partition with both
strategies, ``includeHeaders``, ``__topic`` with the partition suffix, the sink's ``pulsar.producer.*``."""
from __future__ import annotations

import json
import time

import pytest

pytestmark = pytest.mark.spark


def rows_of(df):
    return sorted(df.collect(), key=lambda r: (r["__partition"], r["__offset"]))


def tick() -> int:
    """A publish-time mark strictly after every message sent so far (times have ms resolution)."""
    mark = int(time.time() * 1000) + 1
    while time.time() * 1000 < mark:
        pass
    return mark


def test_min_partitions_cuts_a_small_range_into_that_many_exact_slices(source, produce, topic):
    produce(topic, 100)
    df = source(stream=False, topic=topic, minPartitions=4).load()
    assert df.rdd.getNumPartitions() == 4
    assert [r["__offset"] for r in rows_of(df)] == list(range(100))
    both = source(stream=False, topic=topic, minPartitions=5, maxMessagesPerPartition=30).load()
    assert both.rdd.getNumPartitions() == 5  # 30+30+30+10, then the largest cut once more
    assert [r["__offset"] for r in rows_of(both)] == list(range(100))


def test_min_partitions_slices_lose_and_repeat_nothing_across_a_restart(spark, source, produce, topic, tmp_path):
    def run() -> None:
        query = (source(topic=topic, startingOffsets="earliest", minPartitions=3, maxMessagesPerTrigger=25).load()
                 .writeStream.format("parquet").option("path", str(tmp_path / "out"))
                 .option("checkpointLocation", str(tmp_path / "cp")).trigger(availableNow=True).start())
        query.awaitTermination(120)

    produce(topic, 60)
    run()
    produce(topic, 41, start=60)
    run()  # restarted from the checkpoint: the next batches begin where the committed slices ended
    offsets = sorted(r["__offset"] for r in spark.read.parquet(str(tmp_path / "out")).collect())
    assert offsets == list(range(101))


def test_each_partition_starts_and_ends_at_its_own_publish_time(source, produce, topic, admin):
    admin.create_partitioned_topic(topic, 2)
    produce(f"{topic}-partition-0", 5)
    start0 = tick()
    produce(f"{topic}-partition-0", 5, start=5)
    produce(f"{topic}-partition-1", 3)
    start1 = tick()
    produce(f"{topic}-partition-1", 3, start=3)
    end0 = tick()
    produce(f"{topic}-partition-0", 2, start=10)
    rows = rows_of(source(stream=False, topic=topic,
                          startingOffsetsByTimestamp=json.dumps({topic: {"0": start0, "1": start1}}),
                          endingOffsetsByTimestamp=json.dumps({topic: {"0": end0, "1": end0}})).load())
    # partition 1 has nothing at or after end0, so it ends at its latest (Kafka's rule)
    assert [(r["__partition"], r["__offset"]) for r in rows] == [(0, o) for o in range(5, 10)] + \
        [(1, o) for o in range(3, 6)]


def test_a_start_time_after_every_message_fails_or_starts_at_the_latest(spark, source, produce, topic, tmp_path):
    produce(topic, 4)
    future = tick() + 60_000
    with pytest.raises(Exception, match="has no message published at or after"):
        source(stream=False, topic=topic, startingTimestamp=future).load().collect()
    assert source(stream=False, topic=topic, startingTimestamp=future,
                  startingOffsetsByTimestampStrategy="latest").load().count() == 0
    query = (source(topic=topic, startingTimestamp=future, startingOffsetsByTimestampStrategy="latest").load()
             .writeStream.format("memory").queryName("by_time_latest")
             .option("checkpointLocation", str(tmp_path)).start())
    try:
        query.processAllAvailable()
        produce(topic, 3, start=4)
        query.processAllAvailable()
        got = [r["__offset"] for r in spark.sql("SELECT __offset FROM by_time_latest ORDER BY __offset").collect()]
    finally:
        query.stop()
    assert got == [4, 5, 6]


def test_include_headers_gives_kafkas_headers_column_from_the_properties(source, client, topic):
    producer = client.create_producer(topic, batching_enabled=False)
    producer.send(b"a", properties={"trace": "t1", "n": "1"})
    producer.send(b"b")
    producer.close()
    df = source(stream=False, topic=topic, includeHeaders="true").load()
    assert df.schema["headers"].dataType.simpleString() == "array<struct<key:string,value:binary>>"
    rows = rows_of(df)
    assert sorted((h["key"], bytes(h["value"])) for h in rows[0]["headers"]) == [("n", b"1"), ("trace", b"t1")]
    assert rows[1]["headers"] is None and rows[0]["__messageProperties"] == {"trace": "t1", "n": "1"}


def test_topic_column_keeps_the_partition_suffix_as_pulsar_spark_unless_asked(source, produce, topic, admin):
    admin.create_partitioned_topic(topic, 2)
    produce(f"{topic}-partition-1", 2)
    assert {r["__topic"] for r in source(stream=False, topic=topic).load().collect()} == {f"{topic}-partition-1"}
    assert {r["__topic"] for r in source(stream=False, topic=topic, topicColumn="topic").load().collect()} == {topic}


def test_the_sink_takes_pulsar_spark_producer_and_client_options(spark, broker, source, topic):
    df = spark.createDataFrame([(f"v{i}",) for i in range(20)], "value STRING")
    (df.write.format("pulsarlike").option("service.url", broker.service_url).option("topic", topic)
     .option("pulsar.producer.batchingMaxMessages", "5").option("pulsar.producer.compressionType", "LZ4")
     .option("pulsar.client.operationTimeoutMs", "20000").option("pulsar.producer.blockIfQueueFull", "true")
     .mode("append").save())
    assert sorted(r["value"].decode() for r in source(stream=False, topic=topic).load().collect()) == \
        sorted(f"v{i}" for i in range(20))
