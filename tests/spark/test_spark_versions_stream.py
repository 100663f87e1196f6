"""The stream source on a Spark without admission control (before 4.2, connector.spark.spark_versions): Spark
calls ``latestOffset()`` with neither a start nor a read limit, hands a restarted query its checkpoint through
``partitions(end, end)``, and wraps the source for Trigger.AvailableNow. The driver-side tests call the reader
the way Spark 4.0 does on any pyspark; the query tests hold on every version, each with its own expectation."""
from __future__ import annotations

import pytest

from connector.spark.offsets import decode_source_offset
from connector.spark.options import parse_source_options
from connector.spark.spark_versions import ADMISSION_CONTROL, TRIGGER_AVAILABLE_NOW
from connector.spark.stream_reader import PulsarLikeStreamReader

pytestmark = [pytest.mark.spark, pytest.mark.spark_core]


def reader_for(broker, topic, **options):
    opts = parse_source_options({"service.url": broker.service_url, "topic": topic,
                                 "startingOffsets": "earliest", **{k: str(v) for k, v in options.items()}},
                                streaming=True)
    return PulsarLikeStreamReader(opts)


def count(start, end):
    begin = decode_source_offset(start).offsets
    return sum(offset - begin[tp] for tp, offset in decode_source_offset(end).offsets.items())


def test_without_a_start_latest_offset_goes_on_from_where_spark_last_got(broker, produce, topic):
    produce(topic, 12)
    reader = reader_for(broker, topic, maxMessagesPerTrigger=5)
    try:
        first = reader.latestOffset()  # Spark 4.0 asks before initialOffset() on a fresh query
        start = reader.initialOffset()
        assert count(start, first) == 5
        reader.partitions(start, first)
        second = reader.latestOffset()
        assert count(first, second) == 5
        third = reader.latestOffset()
        assert count(second, third) == 2
        assert reader.latestOffset() == third  # nothing new: the same answer, so no batch
    finally:
        reader.stop()


def test_a_restart_without_a_start_goes_on_from_the_checkpoint_spark_hands_back(broker, produce, topic, admin):
    produce(topic, 12)
    reader = reader_for(broker, topic, maxMessagesPerTrigger=5)
    start = reader.initialOffset()
    planned = reader.latestOffset(start, reader.getDefaultReadLimit())
    reader.stop()
    restarted = reader_for(broker, topic, maxMessagesPerTrigger=5)
    try:
        restarted.partitions(planned, planned)  # Spark 4.0's setLatestSeenOffset on a restart
        after = restarted.latestOffset()
        assert count(planned, after) == 5
        assert decode_source_offset(after).subscription == decode_source_offset(planned).subscription
        subscriptions = admin.topic_stats(topic)["subscriptions"]
        assert list(subscriptions) == [decode_source_offset(planned).subscription]  # no second one made
        assert subscriptions[decode_source_offset(planned).subscription]["msgBacklog"] == 7  # acked up to 5
    finally:
        restarted.stop()


def batch_sizes(query):
    return [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]


def test_max_messages_per_trigger_caps_every_micro_batch_of_a_running_query(spark, source, produce, topic,
                                                                            tmp_path):
    produce(topic, 100)
    query = (source(topic=topic, startingOffsets="earliest", maxMessagesPerTrigger=30).load().writeStream
             .format("memory").queryName("capped_running").option("checkpointLocation", str(tmp_path)).start())
    try:
        query.processAllAvailable()
    finally:
        query.stop()
    assert batch_sizes(query) == [30, 30, 30, 10]
    rows = spark.sql("SELECT __offset FROM capped_running ORDER BY __offset").collect()
    assert [r["__offset"] for r in rows] == list(range(100))


def test_available_now_with_a_cap_reads_capped_batches_or_one_per_run_before_spark_4_2(spark, source, produce,
                                                                                       topic, tmp_path):
    produce(topic, 50)
    df = source(topic=topic, startingOffsets="earliest", maxMessagesPerTrigger=30).load().select("__offset")

    def run():
        query = (df.writeStream.format("parquet").option("path", str(tmp_path / "out"))
                 .option("checkpointLocation", str(tmp_path / "ck")).trigger(availableNow=True).start())
        query.awaitTermination(120)
        return batch_sizes(query)

    if ADMISSION_CONTROL:
        assert run() == [30, 20]
    else:  # Spark reads up to the source's first answer, in one micro-batch: a run is one capped batch
        assert [run(), run()] == [[30], [20]]
    offsets = sorted(r["__offset"] for r in spark.read.parquet(str(tmp_path / "out")).collect())
    assert offsets == list(range(50))


@pytest.mark.skipif(ADMISSION_CONTROL, reason="this Spark has admission control: minMessagesPerTrigger is served")
def test_min_messages_per_trigger_is_refused_when_the_query_starts(source, topic, tmp_path):
    with pytest.raises(Exception, match=r"minMessagesPerTrigger \(and maxTriggerDelay\) needs Spark 4\.2\.0"):
        query = (source(topic=topic, minMessagesPerTrigger=10).load().writeStream.format("noop")
                 .option("checkpointLocation", str(tmp_path)).start())
        query.awaitTermination(60)


@pytest.mark.skipif(TRIGGER_AVAILABLE_NOW, reason="this Spark runs Trigger.AvailableNow through the source")
def test_the_demo_refuses_a_spark_before_4_2_saying_why(tmp_path):
    from jobs import stream_demo

    with pytest.raises(RuntimeError, match=r"the demo needs Spark 4\.2 or newer .* this is Spark 4\.[01]\.\d+"):
        stream_demo.run(10, str(tmp_path))
