"""The stream reader's driver-side decisions against a real broker, called the way Spark calls them but
without a SparkSession: minMessagesPerTrigger with maxTriggerDelay (on a fake clock), maxBytesPerTrigger,
availableNow's target, ReadAllAvailable, the query's own subscription and its acknowledgements, lost data."""
from __future__ import annotations

import time

import pytest
from connector.spark.spark_versions import ReadAllAvailable, ReadMaxRows, ReadMinRows

from broker_core import Broker
from connector import Admin, Client
from connector.spark.source_admin import SourceAdmin
from connector.spark.offsets import TopicPartition, decode_source_offset
from connector.spark.options import TopicSpec, legacy_subscription_name, parse_source_options
from connector.spark.stream_reader import KEEPALIVE_S, PulsarLikeStreamReader
from tests.waiting import wait_until


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def reader_for(broker, topic, clock=None, calls=None, **options):
    opts = parse_source_options({"service.url": broker.service_url, "topic": topic,
                                 "startingOffsets": "earliest", **{k: str(v) for k, v in options.items()}},
                                streaming=True)
    return PulsarLikeStreamReader(opts, clock or FakeClock(), calls)


def count(start, end):
    begin = decode_source_offset(start).offsets
    return sum(offset - begin[tp] for tp, offset in decode_source_offset(end).offsets.items())


def subscriptions(admin, topic):
    return admin.topic_stats(topic)["subscriptions"]


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
    assert decode_source_offset(reader.reportLatestOffset()).offsets == {TopicPartition(topic, -1): 20}


def test_a_fresh_query_creates_its_own_subscription_and_names_it_in_its_offsets(broker, produce, topic, admin):
    produce(topic, 10)
    one, two = reader_for(broker, topic), reader_for(broker, topic)
    first, second = decode_source_offset(one.initialOffset()), decode_source_offset(two.initialOffset())
    assert first.subscription != second.subscription
    assert {first.subscription, second.subscription} <= set(subscriptions(admin, topic))
    assert subscriptions(admin, topic)[first.subscription]["msgBacklog"] == 10


def test_initial_offset_gives_the_same_answer_however_often_spark_asks(broker, produce, topic, admin):
    produce(topic, 3)
    reader = reader_for(broker, topic, startingOffsets="latest")
    first = reader.initialOffset()
    produce(topic, 3, start=3)  # Spark asks again on every trigger until a first batch is planned
    assert reader.initialOffset() == first
    assert len(subscriptions(admin, topic)) == 1


def test_a_restarted_reader_keeps_the_subscription_its_offsets_name(broker, produce, topic, admin):
    produce(topic, 10)
    start = reader_for(broker, topic).initialOffset()
    name = decode_source_offset(start).subscription
    restarted = reader_for(broker, topic)  # no initialOffset: Spark restarts from the checkpoint
    end = restarted.latestOffset(start, ReadAllAvailable())
    restarted.commit(end)
    assert decode_source_offset(end).subscription == restarted.subscription == name
    assert list(subscriptions(admin, topic)) == [name]
    assert subscriptions(admin, topic)[name]["msgBacklog"] == 0


def test_an_explicit_subscription_name_wins_over_the_checkpoints(broker, produce, topic, admin):
    produce(topic, 4)
    start = reader_for(broker, topic).initialOffset()
    renamed = reader_for(broker, topic, subscriptionName="renamed")
    end = renamed.latestOffset(start, ReadAllAvailable())
    assert decode_source_offset(end).subscription == "renamed"
    assert subscriptions(admin, topic)["renamed"]["msgBacklog"] == 4


def test_an_older_checkpoint_without_a_subscription_keeps_the_name_queries_used_to_share(broker, produce, topic,
                                                                                          admin):
    produce(topic, 10)
    reader = reader_for(broker, topic)
    end = reader.latestOffset({topic: {"-1": 4}}, ReadAllAvailable())
    legacy = legacy_subscription_name(TopicSpec(topics=(topic,)))
    assert decode_source_offset(end).subscription == legacy
    assert subscriptions(admin, topic)[legacy]["msgBacklog"] == 6


def test_latest_offset_acknowledges_the_start_spark_has_committed(broker, produce, topic, admin):
    reader = reader_for(broker, topic, subscriptionName="early-acks", maxMessagesPerTrigger=6)
    produce(topic, 10)
    first = reader.latestOffset(reader.initialOffset(), ReadMaxRows(6))
    assert subscriptions(admin, topic)["early-acks"]["msgBacklog"] == 10
    reader.latestOffset(first, ReadMaxRows(6))  # Spark passes the end of the batch it just committed
    assert subscriptions(admin, topic)["early-acks"]["msgBacklog"] == 4


def test_commit_acknowledges_the_subscription_up_to_the_committed_end(broker, produce, topic, admin):
    reader = reader_for(broker, topic, subscriptionName="commits")
    produce(topic, 10)
    start = reader.initialOffset()
    assert subscriptions(admin, topic)["commits"]["msgBacklog"] == 10
    reader.commit({"offsets": {topic: {"-1": 6}}, "subscription": "commits"})
    assert subscriptions(admin, topic)["commits"]["msgBacklog"] == 4
    reader.commit({"offsets": {topic: {"-1": 3}}, "subscription": "commits"})  # never moves back
    assert subscriptions(admin, topic)["commits"]["markDeleteOffset"] == 5
    assert start == {"offsets": {topic: {"-1": 0}}, "subscription": "commits"}


class RecordingCalls(SourceAdmin):
    """The real calls, with every acknowledgement recorded."""

    def __init__(self, service_url: str) -> None:
        super().__init__(service_url, 10_000)
        self.acks: list[int] = []

    def acknowledge_up_to(self, tp, subscription, end_offset):
        self.acks.append(end_offset)
        return super().acknowledge_up_to(tp, subscription, end_offset)


def test_an_unchanged_position_is_acknowledged_again_only_after_the_keepalive(broker, produce, topic):
    clock, calls = FakeClock(), RecordingCalls(broker.service_url)
    reader = reader_for(broker, topic, clock, calls, subscriptionName="idle")
    produce(topic, 3)
    start = reader.latestOffset(reader.initialOffset(), ReadAllAvailable())
    for _ in range(5):
        reader.latestOffset(start, ReadAllAvailable())  # an idle query asks many times a second
    assert calls.acks == [0, 3]
    clock.now += KEEPALIVE_S
    reader.latestOffset(start, ReadAllAvailable())
    assert calls.acks == [0, 3, 3]


def test_stop_acknowledges_the_last_committed_end(broker, produce, topic, admin):
    calls = RecordingCalls(broker.service_url)
    reader = reader_for(broker, topic, calls=calls, subscriptionName="stopped")
    produce(topic, 5)
    reader.latestOffset(reader.initialOffset(), ReadAllAvailable())
    reader.stop()
    assert calls.acks == [0, 0]  # nothing was committed past the start; the end of a batch in flight is not


def test_partitions_are_planned_per_topic_partition_and_split(broker, topic):
    reader = reader_for(broker, topic, maxMessagesPerPartition=4)
    parts = reader.partitions({topic: {"-1": 2}}, {topic: {"-1": 11}, topic + "-new": {"-1": 0}})
    assert [(p.start, p.end) for p in parts] == [(2, 6), (6, 10), (10, 11)]
    assert {p.topic_partition for p in parts} == {TopicPartition(topic, -1)}


@pytest.fixture(scope="module")
def trimming_broker(tmp_path_factory):
    """Segments roll every 5 entries and retention runs every second: what no subscription holds goes."""
    with Broker(data_dir=tmp_path_factory.mktemp("trim"), port=0, managedLedgerMaxEntriesPerLedger=5,
                retentionCheckIntervalInSeconds=1) as running:
        yield running


def trimmed(broker, topic: str, n: int = 24) -> int:
    """``n`` unbatched messages on a topic without subscription; the first offset retention left."""
    with Client(broker.service_url) as client:
        producer = client.create_producer(topic, batching_enabled=False)
        for i in range(n):
            producer.send(f"m{i}".encode())
    with Admin(broker.service_url) as admin:
        first = wait_until(lambda: admin.topic_stats(topic)["firstOffset"], timeout_s=20)
    assert first > 0
    return first


def test_without_fail_on_data_loss_a_lost_range_is_reported_once_and_admission_starts_after_it(
        trimming_broker, caplog):
    topic = f"persistent://public/default/lost-{time.monotonic_ns()}"
    first = trimmed(trimming_broker, topic)
    reader = reader_for(trimming_broker, topic, failOnDataLoss="false", maxMessagesPerTrigger=1,
                        startingOffsets=f'{{"{topic}": {{"-1": 0}}}}')
    start = reader.initialOffset()
    with caplog.at_level("WARNING", logger="connector.spark.stream_reader"):
        one = reader.latestOffset(start, ReadMaxRows(1))
        two = reader.latestOffset(one, ReadMaxRows(1))
    tp = TopicPartition(topic, -1)
    assert decode_source_offset(one).offsets[tp] == first + 1  # the limit is spent on stored messages
    assert decode_source_offset(two).offsets[tp] == first + 2
    assert reader.lost_messages == first
    assert len([r for r in caplog.records if "event=data_lost" in r.getMessage()]) == 1
    assert [(p.start, p.end) for p in reader.partitions(start, one)] == [(first, first + 1)]
