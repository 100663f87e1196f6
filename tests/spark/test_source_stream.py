"""Streaming reads with ``spark.readStream.format("pulsarlike")`` against a real broker: starting modes,
admission control, availableNow, restarts from the checkpoint, each query's own subscription and its
backlog, new partitions."""
from __future__ import annotations

import ast
import json
import time

import pytest

from connector.spark.metrics import messages_behind_latest
from connector.spark.offsets import decode_source_offset
from connector.spark.spark_versions import ADMISSION_CONTROL
from tests.waiting import wait_until

pytestmark = pytest.mark.spark

needs_admission_control = pytest.mark.skipif(
    not ADMISSION_CONTROL, reason="before Spark 4.2 an AvailableNow run reads one capped micro-batch, never tells the "
    "source its last one was committed, and progress has no latestOffset of the source's (docs/spark.md, Spark "
    "versions; tests/spark/test_spark_versions_stream.py)")


def run_available_now(df, checkpoint, name):
    """Run ``df`` to a memory table with Trigger.AvailableNow; returns (rows sorted by offset, query)."""
    query = (df.writeStream.format("memory").queryName(name).option("checkpointLocation", str(checkpoint))
             .trigger(availableNow=True).start())
    query.awaitTermination(120)
    return query


def offsets_of(spark, name):
    return [r["__offset"] for r in spark.sql(f"SELECT __offset FROM {name} ORDER BY __partition, __offset")
            .collect()]


def values_of(spark, name):
    return sorted(r["value"].decode() for r in spark.sql(f"SELECT value FROM {name}").collect())


def subscription_of(query) -> str:
    """The query's own subscription, as its offsets name it."""
    progress = [p for p in query.recentProgress if p["sources"][0]["endOffset"]][-1]
    return decode_source_offset(progress_offset(progress["sources"][0]["endOffset"])).subscription


def progress_offset(text: str) -> dict:
    """An offset of a progress: JSON, or (pyspark 4.1's progress objects) the str() of the parsed dict."""
    try:
        return json.loads(text)
    except ValueError:
        return ast.literal_eval(text)


@pytest.mark.spark_core
def test_earliest_reads_everything_already_in_the_topic(spark, source, produce, topic, tmp_path):
    produce(topic, 20)
    run_available_now(source(topic=topic, startingOffsets="earliest").load(), tmp_path, "earliest_all")
    assert offsets_of(spark, "earliest_all") == list(range(20))
    assert values_of(spark, "earliest_all") == sorted(f"m{i}" for i in range(20))


def test_latest_is_the_default_and_reads_only_what_comes_after_the_start(spark, source, produce, topic,
                                                                           tmp_path):
    produce(topic, 10)
    query = (source(topic=topic).load().writeStream.format("memory").queryName("latest_only")
             .option("checkpointLocation", str(tmp_path)).start())
    try:
        query.processAllAvailable()
        assert offsets_of(spark, "latest_only") == []
        produce(topic, 5, start=10)
        query.processAllAvailable()
        assert offsets_of(spark, "latest_only") == list(range(10, 15))
    finally:
        query.stop()


def test_json_starting_offsets_start_at_the_given_offset(spark, source, produce, topic, tmp_path):
    produce(topic, 20)
    start = json.dumps({topic: {"-1": 7}})
    run_available_now(source(topic=topic, startingOffsets=start).load(), tmp_path, "json_start")
    assert offsets_of(spark, "json_start") == list(range(7, 20))


def test_subscription_start_continues_from_the_subscription_position(spark, source, produce, topic, admin,
                                                                      tmp_path):
    produce(topic, 20)
    admin.acknowledge_up_to(topic, "resume-here", 12)
    run_available_now(source(topic=topic, startingOffsets="subscription", subscriptionName="resume-here")
                      .load(), tmp_path, "sub_start")
    assert offsets_of(spark, "sub_start") == list(range(12, 20))


def test_starting_time_starts_at_the_first_message_published_at_or_after_it(spark, source, produce, topic,
                                                                              tmp_path):
    produce(topic, 10)
    starting_time = int(time.time() * 1000) + 1
    while time.time() * 1000 < starting_time:  # publish times have millisecond resolution
        pass
    produce(topic, 6, start=10)
    run_available_now(source(topic=topic, startingTime=starting_time).load(), tmp_path, "time_start")
    assert offsets_of(spark, "time_start") == list(range(10, 16))


@needs_admission_control
def test_max_messages_per_trigger_admits_exactly_n_messages_per_batch(spark, source, produce, topic,
                                                                       tmp_path):
    produce(topic, 100)
    query = run_available_now(source(topic=topic, startingOffsets="earliest", maxMessagesPerTrigger=30)
                              .load(), tmp_path, "admission")
    sizes = [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]
    assert sizes == [30, 30, 30, 10]
    assert offsets_of(spark, "admission") == list(range(100))


@needs_admission_control
def test_max_messages_per_trigger_is_shared_across_partitions(spark, source, produce, topic, admin, tmp_path):
    admin.create_partitioned_topic(topic, 3)
    produce(topic, 90)
    query = run_available_now(source(topic=topic, startingOffsets="earliest", maxMessagesPerTrigger=20)
                              .load(), tmp_path, "admission_parts")
    sizes = [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]
    assert sizes == [20, 20, 20, 20, 10]
    assert values_of(spark, "admission_parts") == sorted(f"m{i}" for i in range(90))


@pytest.mark.spark_core
def test_available_now_stops_at_what_was_there_and_resumes_from_the_checkpoint(spark, source, produce, topic,
                                                                                tmp_path):
    produce(topic, 50)
    df = source(topic=topic, startingOffsets="earliest").load().select("__offset")

    def run_to_parquet():
        query = (df.writeStream.format("parquet").option("path", str(tmp_path / "out"))
                 .option("checkpointLocation", str(tmp_path / "ck")).trigger(availableNow=True).start())
        query.awaitTermination(120)
        return sorted(r["__offset"] for r in spark.read.parquet(str(tmp_path / "out")).collect())

    assert run_to_parquet() == list(range(50))
    produce(topic, 7, start=50)
    assert run_to_parquet() == list(range(57))


@needs_admission_control
def test_a_query_stopped_mid_stream_restarts_from_its_checkpoint_without_loss_or_duplicates(
        spark, source, produce, topic, tmp_path):
    produce(topic, 300)
    out, checkpoint = tmp_path / "out", tmp_path / "ck"
    df = source(topic=topic, startingOffsets="earliest", maxMessagesPerTrigger=20).load() \
        .select("__offset", "value")
    query = (df.writeStream.format("parquet").option("path", str(out))
             .option("checkpointLocation", str(checkpoint)).start())
    deadline = time.monotonic() + 60
    while not [p for p in query.recentProgress if p["numInputRows"]] and time.monotonic() < deadline:
        time.sleep(0.05)  # waiting for the first batch, then stopping wherever the query is
    query.stop()
    produce(topic, 20, start=300)
    query = (df.writeStream.format("parquet").option("path", str(out))
             .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start())
    query.awaitTermination(120)
    offsets = [r["__offset"] for r in spark.read.parquet(str(out)).collect()]
    assert sorted(offsets) == list(range(320))


@pytest.mark.spark_core
def test_commits_acknowledge_the_subscription_so_the_backlog_drains(spark, source, produce, topic, admin,
                                                                     tmp_path):
    produce(topic, 400)
    query = (source(topic=topic, startingOffsets="earliest", maxMessagesPerTrigger=100).load()
             .writeStream.format("noop").option("checkpointLocation", str(tmp_path)).start())
    try:
        query.processAllAvailable()
        subscription = subscription_of(query)
        # processAllAvailable returns once a trigger found nothing new: that trigger acknowledged it all
        assert admin.topic_stats(topic)["subscriptions"][subscription]["msgBacklog"] == 0
        produce(topic, 400, start=400)
        query.processAllAvailable()
        assert admin.topic_stats(topic)["subscriptions"][subscription]["msgBacklog"] == 0
    finally:
        query.stop()


@needs_admission_control
def test_after_available_now_finishes_its_subscription_has_no_backlog(spark, source, produce, topic, admin,
                                                                      tmp_path):
    produce(topic, 50)
    query = run_available_now(source(topic=topic, startingOffsets="earliest", maxMessagesPerTrigger=20).load(),
                              tmp_path, "drained")
    assert offsets_of(spark, "drained") == list(range(50))
    assert admin.topic_stats(topic)["subscriptions"][subscription_of(query)]["msgBacklog"] == 0


def run_to_parquet(df, folder):
    """Run ``df``'s offsets to parquet with Trigger.AvailableNow (a sink that resumes from a checkpoint)."""
    query = (df.select("__offset").writeStream.format("parquet").option("path", str(folder / "out"))
             .option("checkpointLocation", str(folder / "ck")).trigger(availableNow=True).start())
    query.awaitTermination(120)
    return query


def parquet_offsets(spark, folder):
    return sorted(r["__offset"] for r in spark.read.parquet(str(folder / "out")).collect())


def test_a_restarted_query_keeps_its_own_subscription(spark, source, produce, topic, admin, tmp_path):
    produce(topic, 10)
    df = source(topic=topic, startingOffsets="earliest").load()
    first = subscription_of(run_to_parquet(df, tmp_path))
    produce(topic, 5, start=10)
    second = subscription_of(run_to_parquet(df, tmp_path))
    assert first == second and first.startswith("spark-pulsarlike-")
    assert list(admin.topic_stats(topic)["subscriptions"]) == [first]
    assert parquet_offsets(spark, tmp_path) == list(range(15))


@pytest.fixture(scope="module")
def trimming_broker(tmp_path_factory):
    """Segments roll every 5 entries and retention runs every second: what no subscription holds goes."""
    from broker_core import Broker

    with Broker(data_dir=tmp_path_factory.mktemp("trim"), port=0, managedLedgerMaxEntriesPerLedger=5,
                retentionCheckIntervalInSeconds=1) as running:
        yield running


@needs_admission_control
def test_two_default_queries_on_one_topic_at_different_speeds_both_read_everything(spark, trimming_broker,
                                                                                     tmp_path):
    from connector import Admin, Client, MessageId

    url = trimming_broker.service_url
    topic = f"persistent://public/default/two-queries-{time.monotonic_ns()}"
    admin = Admin(url)
    admin.create_topic(topic)
    admin.create_subscription(topic, "holder", MessageId.earliest)  # keeps it all until the queries hold it
    with Client(url) as client:
        producer = client.create_producer(topic, batching_enabled=False)  # one entry each: segments roll
        for i in range(60):
            producer.send(f"m{i}".encode())

    def start(folder, **trigger):
        reader = (spark.readStream.format("pulsarlike").option("service.url", url).option("topic", topic)
                  .option("startingOffsets", "earliest"))
        if folder.name == "slow":
            reader = reader.option("maxMessagesPerTrigger", "10")
        return (reader.load().select("__offset").writeStream.format("parquet")
                .option("path", str(folder / "out")).option("checkpointLocation", str(folder / "ck"))
                .trigger(**trigger).start())

    slow = start(tmp_path / "slow", processingTime="1 hour")  # one batch of 10, then it waits
    wait_until(lambda: any(p["numInputRows"] for p in slow.recentProgress), timeout_s=60)
    fast = start(tmp_path / "fast", availableNow=True)
    wait_until(lambda: len(admin.topic_stats(topic)["subscriptions"]) == 3, timeout_s=60)
    admin.delete_subscription(topic, "holder")  # from here on only the queries' acknowledgements count
    fast.awaitTermination(120)
    slow.stop()  # resumed from its checkpoint after the fast one has acknowledged everything
    slow = start(tmp_path / "slow", availableNow=True)
    slow.awaitTermination(120)
    assert parquet_offsets(spark, tmp_path / "fast") == list(range(60))
    assert parquet_offsets(spark, tmp_path / "slow") == list(range(60))
    assert len(admin.topic_stats(topic)["subscriptions"]) == 2
    admin.close()


def test_a_fresh_query_starts_with_its_durable_subscription_at_the_starting_offsets(
        spark, source, produce, topic, admin, tmp_path):
    produce(topic, 30)
    run_available_now(source(topic=topic, startingOffsets=json.dumps({topic: {"-1": 10}}),
                             subscriptionName="kept-from-10").load(), tmp_path, "sub_created")
    sub = admin.topic_stats(topic)["subscriptions"]["kept-from-10"]
    assert sub["isDurable"] and sub["markDeleteOffset"] >= 9


def test_partitions_added_while_the_query_runs_are_read_from_their_start(spark, source, produce, admin,
                                                                          tmp_path):
    prefix = f"persistent://public/default/grow-{time.monotonic_ns()}"
    produce(f"{prefix}-a", 5)
    query = (source(topicsPattern=f"{prefix}-.*", startingOffsets="latest").load().writeStream
             .format("memory").queryName("growing").option("checkpointLocation", str(tmp_path)).start())
    try:
        query.processAllAvailable()
        produce(f"{prefix}-b", 4)  # a new topic matching the pattern, created after the start
        admin.create_partitioned_topic(f"{prefix}-c", 2)
        produce(f"{prefix}-c", 6)
        produce(f"{prefix}-a", 2, start=5)
        query.processAllAvailable()
        query.processAllAvailable()
        rows = spark.sql("SELECT __topic, __partition, value FROM growing").collect()
    finally:
        query.stop()
    # __topic is the message's topic, as in pulsar-spark: a partition's name for the partitioned c
    got = sorted((r["__topic"].split("grow-", 1)[1].split("-")[1], r["value"].decode()) for r in rows)
    assert all(r["__topic"] == f"{prefix}-c-partition-{r['__partition']}" for r in rows if r["__partition"] >= 0)
    assert got == sorted([("a", "m5"), ("a", "m6")] + [("b", f"m{i}") for i in range(4)]
                         + [("c", f"m{i}") for i in range(6)])


def test_partitions_added_to_a_running_querys_topic_are_read_from_their_first_offset(spark, source, produce,
                                                                                      topic, admin, tmp_path):
    admin.create_partitioned_topic(topic, 1)
    produce(topic, 5)
    query = (source(topic=topic, startingOffsets="earliest").load().writeStream.format("memory")
             .queryName("grown").option("checkpointLocation", str(tmp_path)).start())
    try:
        query.processAllAvailable()
        admin.update_partitioned_topic(topic, 3)
        produce(f"{topic}-partition-2", 4, start=5)  # before the query has seen the new partitions
        produce(topic, 12, start=9)
        query.processAllAvailable()
        query.processAllAvailable()
        rows = spark.sql("SELECT __partition, __offset, value FROM grown").collect()
    finally:
        query.stop()
    assert sorted(int(r["value"][1:]) for r in rows) == list(range(21))
    assert sorted(r["__offset"] for r in rows if r["__partition"] == 2)[:4] == [0, 1, 2, 3]


@needs_admission_control
def test_progress_reports_the_latest_offset_and_messages_behind_it(spark, source, produce, topic, admin,
                                                                    tmp_path):
    admin.create_partitioned_topic(topic, 2)
    produce(topic, 40)
    query = run_available_now(source(topic=topic, startingOffsets="earliest", maxMessagesPerTrigger=10)
                              .load(), tmp_path, "lagging")
    first = [p for p in query.recentProgress if p["numInputRows"]][0]
    latest = decode_source_offset(json.loads(first["sources"][0]["latestOffset"])).offsets
    assert sum(latest.values()) == 40
    lag = messages_behind_latest(first)
    assert lag["maxOffsetsBehindLatest"] >= lag["avgOffsetsBehindLatest"] >= lag["minOffsetsBehindLatest"]
    assert lag["avgOffsetsBehindLatest"] * 2 == 30
