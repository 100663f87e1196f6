"""Batch reads with ``spark.read.format("pulsarlike")``: offset and time ranges, what each column holds,
identical rows for a replayed range, ranges split over several Spark partitions."""
from __future__ import annotations

import json
import time

import pytest

from connector import MessageId

pytestmark = pytest.mark.spark


def rows_of(df):
    return sorted(df.collect(), key=lambda r: (r["__partition"], r["__offset"]))


@pytest.mark.spark_core
def test_a_batch_read_returns_every_message_with_its_metadata(source, client, topic):
    producer = client.create_producer(topic, producer_name="p-batch", batching_enabled=False)
    ids = [producer.send(f"v{i}".encode(), partition_key=f"k{i}" if i % 2 else None,
                         properties={"n": str(i)} if i % 3 == 0 else None,
                         event_timestamp=1_700_000_000_000 + i if i == 4 else None) for i in range(6)]
    producer.close()
    rows = rows_of(source(stream=False, topic=topic).load())
    assert [r["value"] for r in rows] == [f"v{i}".encode() for i in range(6)]
    assert [r["__key"] for r in rows] == [None, b"k1", None, b"k3", None, b"k5"]  # the key's bytes
    assert [r["__messageProperties"] for r in rows] == [{"n": "0"}, {}, {}, {"n": "3"}, {}, {}]
    assert [r["__offset"] for r in rows] == list(range(6))
    assert [MessageId.deserialize(r["__messageId"]) for r in rows] == ids
    assert {r["__topic"] for r in rows} == {topic} and {r["__partition"] for r in rows} == {-1}
    assert {r["__producerName"] for r in rows} == {"p-batch"}
    assert [r["__sequenceId"] for r in rows] == list(range(6))
    assert rows[4]["__eventTime"].timestamp() == pytest.approx(1_700_000_000.004)
    assert rows[0]["__eventTime"] is None and rows[0]["__publishTime"] is not None


def test_a_batch_read_of_an_offset_range_equals_what_was_produced_there(source, produce, topic):
    produce(topic, 40)
    df = source(stream=False, topic=topic, startingOffsets=json.dumps({topic: {"-1": 5}}),
                endingOffsets=json.dumps({topic: {"-1": 25}})).load()
    rows = rows_of(df)
    assert [r["__offset"] for r in rows] == list(range(5, 25))
    assert [r["value"] for r in rows] == [f"m{i}".encode() for i in range(5, 25)]


def test_reading_the_same_range_twice_gives_identical_rows(source, produce, topic):
    produce(topic, 30, partition_key="same")
    df = source(stream=False, topic=topic, endingOffsets=json.dumps({topic: {"-1": 30}})).load()
    first = rows_of(df)
    produce(topic, 10, start=30)
    assert rows_of(df) == first


@pytest.mark.spark_core
def test_a_partitioned_topic_is_read_from_every_partition(source, client, topic, admin):
    admin.create_partitioned_topic(topic, 3)
    producer = client.create_producer(topic, batching_enabled=False)
    for i in range(60):
        producer.send_async(f"m{i}".encode(), None, partition_key=f"key-{i}")
    producer.flush()
    rows = rows_of(source(stream=False, topic=topic).load())
    assert sorted(r["value"].decode() for r in rows) == sorted(f"m{i}" for i in range(60))
    assert {r["__partition"] for r in rows} == {0, 1, 2}
    for p in range(3):
        offsets = [r["__offset"] for r in rows if r["__partition"] == p]
        assert offsets == list(range(len(offsets)))


def test_several_topics_are_read_together(source, produce, topic):
    other = topic + "-other"
    produce(topic, 3)
    produce(other, 4)
    rows = source(stream=False, topics=f"{topic},{other}").load().collect()
    assert sorted((r["__topic"], r["value"]) for r in rows) == sorted(
        [(topic, f"m{i}".encode()) for i in range(3)] + [(other, f"m{i}".encode()) for i in range(4)])


def test_starting_and_ending_time_select_by_publish_time(source, produce, topic):
    def now_after_a_tick():
        mark = int(time.time() * 1000) + 1
        while time.time() * 1000 < mark:  # publish times have millisecond resolution
            pass
        return mark

    produce(topic, 5)
    start = now_after_a_tick()
    produce(topic, 6, start=5)
    end = now_after_a_tick()
    produce(topic, 4, start=11)
    rows = rows_of(source(stream=False, topic=topic, startingTime=start, endingTime=end).load())
    assert [r["__offset"] for r in rows] == list(range(5, 11))


def test_a_large_range_is_split_into_several_spark_partitions(source, produce, topic):
    produce(topic, 100)
    df = source(stream=False, topic=topic, maxMessagesPerPartition=30).load()
    assert df.rdd.getNumPartitions() == 4
    assert [r["__offset"] for r in rows_of(df)] == list(range(100))


def test_an_empty_range_reads_no_rows(source, topic, produce):
    produce(topic, 3)
    df = source(stream=False, topic=topic, startingOffsets=json.dumps({topic: {"-1": 3}})).load()
    assert df.count() == 0


@pytest.mark.spark_core
def test_format_pulsarlike_needs_no_registration(spark):
    from pyspark.sql.datasource import DataSource

    import pyspark_pulsarlike

    assert issubclass(pyspark_pulsarlike.DefaultSource, DataSource)
    assert pyspark_pulsarlike.DefaultSource.name() == "pulsarlike"
    # The shared session never calls spark.dataSource.register: every read in these tests relies on
    # Spark finding the top-level pyspark_pulsarlike module by itself.
    assert spark.read.format("pulsarlike").option("service.url", "pulsar://127.0.0.1:1") \
        .option("topic", "x").schema is not None


def test_a_chunked_message_belongs_to_the_range_holding_its_first_chunk(spark, tmp_path):
    from broker_core import Broker
    from connector import Client

    with Broker(data_dir=tmp_path / "chunks", port=0, maxMessageSize=2048) as broker:
        client = Client(broker.service_url)
        producer = client.create_producer("chunked", chunking_enabled=True, batching_enabled=False)
        big = bytes(range(256)) * 20  # 5120 bytes: several chunks
        ids = [producer.send(b"small-0"), producer.send(big), producer.send(b"small-1")]
        client.close()
        topic = "persistent://public/default/chunked"

        def read(**options):
            reader = spark.read.format("pulsarlike").option("service.url", broker.service_url) \
                .option("topic", topic)
            for key, value in options.items():
                reader = reader.option(key, json.dumps({topic: {"-1": value}}))
            return [(r["__offset"], r["value"], r["__messageId"])
                    for r in sorted(reader.load().collect(), key=lambda r: r["__offset"])]

        whole = read()
        assert [v for _, v, _ in whole] == [b"small-0", big, b"small-1"]
        assert whole[1][0] == 1 and MessageId.deserialize(whole[1][2]) == ids[1]
        last = whole[2][0]
        assert read(endingOffsets=2) == whole[:2]  # reads past its end to complete the message
        assert read(startingOffsets=2) == whole[2:]  # a continuation chunk is not a message of its own
        assert last > 3
