"""The stream reader's driver-side decisions against a real broker, called the way Spark calls them but
without a SparkSession: minMessagesPerTrigger with maxTriggerDelay (on a fake clock), maxBytesPerTrigger,
availableNow's target, ReadAllAvailable, commits."""
from __future__ import annotations

from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows, ReadMinRows

from connector.spark.offsets import TopicPartition
from connector.spark.options import parse_source_options
from connector.spark.stream_reader import PulsarLikeStreamReader


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def reader_for(broker, topic, clock=None, **options):
    opts = parse_source_options({"service.url": broker.service_url, "topic": topic,
                                 "startingOffsets": "earliest", **{k: str(v) for k, v in options.items()}},
                                streaming=True)
    return PulsarLikeStreamReader(opts, clock or FakeClock())


def count(start, end):
    return sum(p - start[t][k] for t, parts in end.items() for k, p in parts.items())


def test_fewer_than_min_messages_wait_until_max_trigger_delay_passes(broker, produce, topic):
    clock = FakeClock()
    reader = reader_for(broker, topic, clock, minMessagesPerTrigger=50, maxTriggerDelay="30s")
    assert reader.getDefaultReadLimit() == ReadMinRows(50)
    produce(topic, 20)
    start = reader.initialOffset()
    assert reader.latestOffset(start, ReadMinRows(50)) == start
    clock.now += 29
    assert reader.latestOffset(start, ReadMinRows(50)) == start
    produce(topic, 30, start=20)
    end = reader.latestOffset(start, ReadMinRows(50))
    assert count(start, end) == 50
    produce(topic, 10, start=50)
    assert reader.latestOffset(end, ReadMinRows(50)) == end
    clock.now += 31
    assert count(end, reader.latestOffset(end, ReadMinRows(50))) == 10


def test_read_all_available_ignores_the_options_limits(broker, produce, topic):
    reader = reader_for(broker, topic, maxMessagesPerTrigger=5)
    produce(topic, 12)
    start = reader.initialOffset()
    assert count(start, reader.latestOffset(start, ReadMaxRows(5))) == 5
    assert count(start, reader.latestOffset(start, ReadAllAvailable())) == 12


def test_max_bytes_per_trigger_admits_about_that_many_stored_bytes(broker, client, topic):
    producer = client.create_producer(topic, batching_enabled=False)
    for _ in range(40):
        producer.send(b"x" * 1000)
    reader = reader_for(broker, topic, maxBytesPerTrigger=10_000)
    start = reader.initialOffset()
    admitted = count(start, reader.latestOffset(start, reader.getDefaultReadLimit()))
    assert 5 <= admitted <= 10  # 1000-byte payloads plus their metadata


def test_available_now_never_reads_past_the_ends_found_when_it_was_prepared(broker, produce, topic):
    reader = reader_for(broker, topic, maxMessagesPerTrigger=8)
    produce(topic, 10)
    start = reader.initialOffset()
    reader.prepareForTriggerAvailableNow()
    produce(topic, 10, start=10)
    first = reader.latestOffset(start, ReadMaxRows(8))
    second = reader.latestOffset(first, ReadMaxRows(8))
    assert count(start, first) == 8 and count(first, second) == 2
    assert reader.latestOffset(second, ReadMaxRows(8)) == second
    assert reader.reportLatestOffset() == {topic: {"-1": 20}}


def test_commit_acknowledges_the_subscription_up_to_the_committed_end(broker, produce, topic, admin):
    reader = reader_for(broker, topic, subscriptionName="commits")
    produce(topic, 10)
    start = reader.initialOffset()
    assert admin.topic_stats(topic)["subscriptions"]["commits"]["msgBacklog"] == 10
    reader.commit({topic: {"-1": 6}})
    assert admin.topic_stats(topic)["subscriptions"]["commits"]["msgBacklog"] == 4
    reader.commit({topic: {"-1": 3}})  # never moves back
    assert admin.topic_stats(topic)["subscriptions"]["commits"]["markDeleteOffset"] == 5
    assert start == {topic: {"-1": 0}}


def test_partitions_are_planned_per_topic_partition_and_split(broker, topic):
    reader = reader_for(broker, topic, maxMessagesPerPartition=4)
    parts = reader.partitions({topic: {"-1": 2}}, {topic: {"-1": 11}, topic + "-new": {"-1": 0}})
    assert [(p.start, p.end) for p in parts] == [(2, 6), (6, 10), (10, 11)]
    assert {p.topic_partition for p in parts} == {TopicPartition(topic, -1)}
