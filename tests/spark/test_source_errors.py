"""Bad input to the ``pulsarlike`` source: each error names the option and the fix, and arrives quickly."""
from __future__ import annotations

import json
import socket
import time

import pytest
from pyspark.errors.exceptions.base import PySparkException

from broker_core import Broker

pytestmark = pytest.mark.spark


def failure_text(excinfo) -> str:
    return str(excinfo.value)


def stream_failure(reader, checkpoint) -> str:
    """Loads and starts ``reader`` (a stream: options no read takes are refused at load(), the others when
    the query starts) and returns why it failed."""
    with pytest.raises(Exception) as excinfo:
        query = (reader.load().writeStream.format("noop").option("checkpointLocation", str(checkpoint))
                 .trigger(availableNow=True).start())
        query.awaitTermination(60)
    return failure_text(excinfo)


def test_a_misspelled_option_of_a_stream_is_refused_at_load_not_at_start(source, topic):
    with pytest.raises(Exception) as excinfo:
        source(topic=topic, startingOffset="earliest").load()
    assert "unknown option 'startingoffset'" in failure_text(excinfo)
    assert "did you mean 'startingOffsets'" in failure_text(excinfo)
    assert "UnboundLocalError" not in failure_text(excinfo)


def test_an_unknown_option_names_the_closest_known_one(source, topic):
    with pytest.raises(Exception) as excinfo:
        source(stream=False, topic=topic, startingOffset="earliest").load().collect()
    assert "unknown option 'startingoffset'" in failure_text(excinfo)
    assert "did you mean 'startingOffsets'" in failure_text(excinfo)


def test_two_topic_options_conflict(source, topic, tmp_path):
    text = stream_failure(source(topic=topic, topics=f"{topic},other"), tmp_path)
    assert "set exactly one of the options topic, topics, topicsPattern" in text
    assert "topic and topics were given" in text


def test_a_missing_topic_option_is_refused(source):
    with pytest.raises(Exception) as excinfo:
        source(stream=False).load().collect()
    assert "set exactly one of the options topic, topics, topicsPattern (none was given)" in failure_text(excinfo)


def test_malformed_starting_offsets_json_is_refused_with_the_expected_shape(source, topic, tmp_path):
    text = stream_failure(source(topic=topic, startingOffsets='{"t": {"0": 1}'), tmp_path)
    assert "option startingOffsets" in text and "is not valid JSON" in text
    assert '"persistent://public/default/my-topic": {"0": 42' in text


def test_starting_offsets_naming_another_topic_are_refused(source, topic, tmp_path):
    text = stream_failure(source(topic=topic, startingOffsets=json.dumps({"other-topic": {"-1": 0}})), tmp_path)
    assert "names persistent://public/default/other-topic, which the query does not read" in text


def test_ending_offsets_are_refused_in_a_stream_when_it_starts_not_at_load(source, topic, tmp_path):
    reader = source(topic=topic, endingOffsets="latest")  # spark.read takes it: load() cannot tell
    reader.load()
    assert "option endingOffsets applies to batch reads" in stream_failure(reader, tmp_path)


def test_starting_offsets_and_starting_time_conflict(source, topic):
    with pytest.raises(Exception) as excinfo:
        source(stream=False, topic=topic, startingOffsets="earliest", startingTime=0).load().collect()
    assert "options startingOffsets and startingTime conflict" in failure_text(excinfo)


def test_offsets_beyond_the_end_are_refused(source, produce, topic):
    produce(topic, 10)
    df = source(stream=False, topic=topic, endingOffsets=json.dumps({topic: {"-1": 500}})).load()
    with pytest.raises(Exception) as excinfo:
        df.collect()
    text = failure_text(excinfo)
    assert "option endingOffsets: offset 500" in text and "is beyond its end (10" in text


def test_starting_offsets_beyond_the_end_fail_the_stream(spark, source, produce, topic, tmp_path):
    produce(topic, 10)
    query = (source(topic=topic, startingOffsets=json.dumps({topic: {"-1": 11}})).load().writeStream
             .format("noop").option("checkpointLocation", str(tmp_path)).trigger(availableNow=True).start())
    with pytest.raises(Exception) as excinfo:
        query.awaitTermination(60)
    assert "option startingOffsets: offset 11" in failure_text(excinfo)


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_unreachable_broker_fails_a_batch_read_at_load_within_poll_timeout(spark):
    url = f"pulsar://127.0.0.1:{closed_port()}"
    started = time.monotonic()
    with pytest.raises(Exception) as excinfo:
        (spark.read.format("pulsarlike").option("service.url", url).option("topic", "t")
         .option("pollTimeoutMs", "1500").load())
    assert time.monotonic() - started < 15
    text = failure_text(excinfo)
    assert "within 1.5s" in text and f"option service.url={url}, when the read was loaded" in text
    assert "start the broker" in text


def test_an_unreachable_broker_fails_a_stream_at_load_within_poll_timeout(spark, tmp_path):
    url = f"pulsar://127.0.0.1:{closed_port()}"
    started = time.monotonic()
    with pytest.raises(Exception) as excinfo:
        (spark.readStream.format("pulsarlike").option("service.url", url).option("topic", "t")
         .option("pollTimeoutMs", "1500").load())
    assert time.monotonic() - started < 15
    assert f"service.url={url}" in failure_text(excinfo) and "SourceConnectError" in failure_text(excinfo)


def test_a_stream_given_its_schema_fails_at_start_when_the_broker_is_unreachable(spark, tmp_path):
    # .schema(...) skips the lookup load() makes: the query's first call finds the broker missing
    from connector.spark.schema import SCHEMA_DDL

    url = f"pulsar://127.0.0.1:{closed_port()}"
    query = (spark.readStream.format("pulsarlike").schema(SCHEMA_DDL).option("service.url", url)
             .option("topic", "t").option("pollTimeoutMs", "1500").load().writeStream.format("noop")
             .option("checkpointLocation", str(tmp_path)).start())
    started = time.monotonic()
    with pytest.raises(Exception) as excinfo:
        query.awaitTermination(60)
    assert time.monotonic() - started < 15
    assert f"option service.url={url}, pollTimeoutMs=1500" in failure_text(excinfo)


def test_a_broker_gone_while_an_executor_reads_fails_the_task_with_a_connect_error(spark, tmp_path):
    from connector import Client
    from connector.spark.source_admin import SourceConnectError
    from connector.spark.partition_reader import RangePartition, RangeReader, RangeReadTimeout

    with Broker(data_dir=tmp_path / "b", port=0) as broker:
        url = broker.service_url
        client = Client(url)
        producer = client.create_producer("gone")
        for i in range(5):
            producer.send(b"x")
        client.close()
    reader = RangeReader(url, RangePartition("persistent://public/default/gone", -1, 0, 5), 1000, True)
    started = time.monotonic()
    with pytest.raises(SourceConnectError) as excinfo:
        list(reader.batches())
    assert time.monotonic() - started < 10
    assert not isinstance(excinfo.value, RangeReadTimeout)  # nothing timed out: nobody was listening
    assert f"option service.url={url}" in str(excinfo.value) and "start the broker" in str(excinfo.value)


def test_a_batch_read_of_a_topic_that_does_not_exist_is_refused(source, topic):
    with pytest.raises(Exception) as excinfo:
        source(stream=False, topic=topic).load().collect()
    assert f"topic {topic} does not exist" in failure_text(excinfo)
    assert "TopicNotFound" in failure_text(excinfo)


def test_a_batch_read_of_a_pattern_that_matches_nothing_is_empty(source, topic):
    assert source(stream=False, topicsPattern=topic + "-nothing-.*").load().count() == 0


def test_a_kafka_option_name_is_accepted_as_an_alias(source, produce, topic):
    produce(topic, 3)
    assert source(stream=False, subscribe=topic).load().count() == 3


@pytest.fixture(scope="module")
def small_segments(tmp_path_factory):
    """A broker whose segments roll every 5 entries: a topic without a durable subscription keeps only its
    active segment."""
    with Broker(data_dir=tmp_path_factory.mktemp("small"), port=0, managedLedgerMaxEntriesPerLedger=5,
                retentionCheckIntervalInSeconds=1) as running:
        yield running


def trimmed_topic(broker, name) -> int:
    """Sends 23 unbatched messages to a topic without subscription; the first offset left after trimming."""
    from connector import Admin, Client

    client = Client(broker.service_url)
    producer = client.create_producer(name, batching_enabled=False)
    for i in range(23):
        producer.send(f"m{i}".encode())
    client.close()
    admin = Admin(broker.service_url)
    deadline = time.monotonic() + 20
    while admin.topic_stats(name)["firstOffset"] == 0 and time.monotonic() < deadline:
        time.sleep(0.1)  # retention runs on the broker's own schedule
    first = admin.topic_stats(name)["firstOffset"]
    admin.close()
    assert first > 0
    return first


def test_data_deleted_by_retention_fails_a_read_naming_topic_partition_and_offsets(spark, small_segments):
    topic = "persistent://public/default/trimmed-a"
    first = trimmed_topic(small_segments, topic)
    df = (spark.read.format("pulsarlike").option("service.url", small_segments.service_url)
          .option("topic", topic).option("startingOffsets", json.dumps({topic: {"-1": 0}})).load())
    with pytest.raises(Exception) as excinfo:
        df.collect()
    text = failure_text(excinfo)
    assert f"messages 0..{first - 1} of {topic} partition -1 were deleted by retention" in text
    assert "no subscription held them" in text and "failOnDataLoss=false" in text


def test_without_fail_on_data_loss_the_deleted_messages_are_skipped(spark, small_segments):
    topic = "persistent://public/default/trimmed-b"
    first = trimmed_topic(small_segments, topic)
    df = (spark.read.format("pulsarlike").option("service.url", small_segments.service_url)
          .option("topic", topic).option("startingOffsets", json.dumps({topic: {"-1": 0}}))
          .option("failOnDataLoss", "false").load())
    assert sorted(r["__offset"] for r in df.collect()) == list(range(first, 23))


def test_a_stream_starting_before_deleted_data_fails_naming_the_offsets(spark, small_segments, tmp_path):
    topic = "persistent://public/default/trimmed-c"
    first = trimmed_topic(small_segments, topic)
    query = (spark.readStream.format("pulsarlike").option("service.url", small_segments.service_url)
             .option("topic", topic).option("startingOffsets", json.dumps({topic: {"-1": 0}})).load()
             .writeStream.format("noop").option("checkpointLocation", str(tmp_path))
             .trigger(availableNow=True).start())
    with pytest.raises(Exception) as excinfo:
        query.awaitTermination(60)
    assert f"messages 0..{first - 1} of {topic} partition -1 were deleted by retention" in failure_text(excinfo)


def test_a_stream_without_fail_on_data_loss_skips_the_deleted_range_without_empty_batches(
        spark, small_segments, tmp_path):
    topic = "persistent://public/default/trimmed-d"
    first = trimmed_topic(small_segments, topic)
    query = (spark.readStream.format("pulsarlike").option("service.url", small_segments.service_url)
             .option("topic", topic).option("startingOffsets", json.dumps({topic: {"-1": 0}}))
             .option("failOnDataLoss", "false").option("maxMessagesPerTrigger", "1").load()
             .writeStream.format("memory").queryName("skipped_gap").option("checkpointLocation", str(tmp_path))
             .trigger(availableNow=True).start())
    query.awaitTermination(60)
    assert sorted(r["__offset"] for r in spark.sql("SELECT __offset FROM skipped_gap").collect()) == \
        list(range(first, 23))
    assert [p["numInputRows"] for p in query.recentProgress] == [1] * (23 - first)  # no batch spent on the gap
