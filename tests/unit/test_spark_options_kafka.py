"""Spark's Kafka source options and pulsar-spark's remaining ones on pulsarlike's source and sink (issue 34):
parsed once, with their meaning, and refused with the reason where they cannot have it."""
from __future__ import annotations

import json
import logging

import pytest

from connector.spark.kafka_options import cut, slice_counts
from connector.spark.options import parse_source_options
from connector.spark.offsets import TopicPartition
from connector.spark.sink_options import parse_sink_options

URL = {"service.url": "pulsar://127.0.0.1:6650"}
T = "persistent://public/default/t"


def parse(streaming: bool = False, **extra: str):
    return parse_source_options({**URL, "topic": "t", **extra}, streaming)


def test_kafkas_timestamp_names_are_startingtime_and_endingtime():
    opts = parse(startingTimestamp="1000", endingTimestamp="2000")
    assert (opts.starting, opts.starting_time_ms, opts.ending, opts.ending_time_ms) == ("time", 1000, "time", 2000)
    with pytest.raises(ValueError, match="name the same option"):
        parse(startingTimestamp="1", startingTime="1")


def test_a_start_by_time_fails_on_no_match_with_kafkas_names_and_goes_latest_with_ours():
    assert parse(startingTimestamp="5").timestamp_strategy == "error"
    assert parse(startingOffsetsByTimestamp=json.dumps({"t": {"0": 5}})).timestamp_strategy == "error"
    assert parse(startingTime="5").timestamp_strategy == "latest"
    assert parse(startingTime="5", startingOffsetsByTimestampStrategy="ERROR").timestamp_strategy == "error"
    assert parse(startingTimestamp="5", startingOffsetsByTimestampStrategy="latest").timestamp_strategy == "latest"
    with pytest.raises(ValueError, match="startingOffsetsByTimestampStrategy='never' is not valid; use 'error'"):
        parse(startingTimestamp="5", startingOffsetsByTimestampStrategy="never")


def test_per_partition_times_take_kafkas_json_and_qualify_topic_names():
    opts = parse(startingOffsetsByTimestamp=json.dumps({"t": {"0": 10, "1": 20}}),
                 endingOffsetsByTimestamp=json.dumps({T: {"0": 30, "1": 40}}))
    assert opts.starting == "time" and opts.starting_time_ms is None
    assert dict(opts.starting_times) == {TopicPartition(T, 0): 10, TopicPartition(T, 1): 20}
    assert opts.ending == "time" and dict(opts.ending_times) == {TopicPartition(T, 0): 30, TopicPartition(T, 1): 40}


@pytest.mark.parametrize("value, reason", [
    ("{}", "non-empty JSON object"),
    ('{"t": {"x": 1}}', "is not an integer"),
    ('{"t": {"0": -5}}', "is not a whole number of ms"),
    ('{"t-partition-0": {"0": 1}}', "is a partition's name"),
    ('{"other": {"0": 1}}', "which the query does not read"),
])
def test_bad_per_partition_times_are_refused_naming_the_option(value, reason):
    with pytest.raises(ValueError, match="startingOffsetsByTimestamp") as excinfo:
        parse(startingOffsetsByTimestamp=value)
    assert reason in str(excinfo.value)


def test_starts_and_ends_given_twice_conflict():
    with pytest.raises(ValueError, match="options startingOffsets and startingOffsetsByTimestamp conflict"):
        parse(startingOffsets="earliest", startingOffsetsByTimestamp='{"t": {"-1": 1}}')
    with pytest.raises(ValueError, match="endingTime and endingOffsetsByTimestamp conflict"):
        parse(endingTimestamp="1", endingOffsetsByTimestamp='{"t": {"-1": 1}}')


def test_an_end_by_time_is_a_batch_option():
    with pytest.raises(ValueError, match="endingOffsetsByTimestamp applies to batch reads"):
        parse(streaming=True, endingOffsetsByTimestamp='{"t": {"-1": 1}}')


def test_min_partitions_and_include_headers_are_parsed():
    opts = parse(minPartitions="8", includeHeaders="true")
    assert (opts.min_partitions, opts.include_headers) == (8, True)
    assert (parse().min_partitions, parse().include_headers) == (None, False)
    with pytest.raises(ValueError, match="minPartitions='0' is not valid"):
        parse(minPartitions="0")
    with pytest.raises(ValueError, match="includeHeaders='yes' is not valid"):
        parse(includeHeaders="yes")


def test_kafkas_group_options_name_the_querys_subscription():
    opts = parse(streaming=True, **{"kafka.group.id": "orders-app", "groupIdPrefix": "etl"})
    assert (opts.subscription_name, opts.pulsar_spark.subscription_prefix) == ("orders-app", "etl")


def test_assign_is_refused_saying_why():
    with pytest.raises(ValueError, match="reads every partition of the topics it names"):
        parse(assign='{"t": [0]}')


def test_slices_go_to_the_largest_ranges_and_never_outnumber_messages():
    assert slice_counts([90, 10], 4) == [3, 1]
    assert slice_counts([1, 1], 4) == [1, 1]
    assert slice_counts([5, 5, 5], 7) == [3, 2, 2]
    assert slice_counts([7], 1) == [1]
    assert cut(10, 20, 3) == [(10, 14), (14, 17), (17, 20)]


def test_pulsar_spark_source_options_are_served():
    opts = parse(waitingForNonExistedTopic="true", allowDifferentTopicSchemas="true")
    assert (opts.wait_for_topics, opts.allow_different_schemas) == (True, True)
    assert parse().topic_column == "partition" and parse(topicColumn="topic").topic_column == "topic"
    with pytest.raises(ValueError, match="topicColumn='x' is not valid"):
        parse(topicColumn="x")


def test_pulsar_admin_keys_are_accepted_with_no_effect_and_typos_refused(caplog):
    with caplog.at_level(logging.INFO, logger="connector.spark.pulsar_spark_options"):
        parse(**{"pulsar.admin.authPluginClassName": "token", "pulsar.admin.requestTimeoutMs": "100"})
    assert "pulsar.admin.requestTimeoutMs" in caplog.text
    with pytest.raises(ValueError, match="did you mean 'pulsar.admin.authParams'"):
        parse(**{"pulsar.admin.authParam": "x"})


def test_topic_schema_class_is_refused_as_jvm_only():
    with pytest.raises(ValueError, match="names a Java class"):
        parse(**{"topic.schema.class": "com.acme.Order"})
    with pytest.raises(ValueError, match="topicSchema=avro"):
        parse_sink_options({**URL, "topic": "t", "topic.schema.class": "com.acme.Order"}, False)


def test_the_schema_request_does_not_warn_about_stream_options(caplog):
    with caplog.at_level(logging.WARNING, logger="connector.spark.options"):
        parse_source_options({**URL, "topic": "t", "maxMessagesPerTrigger": "5"}, False, warn=False)
    assert "ignores it" not in caplog.text


def test_the_sink_takes_pulsar_spark_producer_and_client_keys():
    opts = parse_sink_options({**URL, "topic": "t", "pulsar.producer.batchingMaxMessages": "50",
                               "pulsar.producer.maxPendingMessages": "500", "pulsar.producer.sendTimeoutMs": "0",
                               "pulsar.producer.compressionType": "ZSTD", "pulsar.producer.blockIfQueueFull": "true",
                               "pulsar.client.operationTimeoutMs": "5000",
                               "pulsar.client.connectionTimeoutMs": "100"}, streaming=True)
    assert (opts.batching_max_messages, opts.max_pending_messages, opts.send_timeout_ms,
            opts.operation_timeout_ms, opts.compression_type.name) == (50, 500, 0, 5000, "ZSTD")
    assert parse_sink_options({**URL, "topic": "t", "pulsar.producer.batchingEnabled": "false"},
                              False).batching_max_messages == 1


def test_the_sink_refuses_producer_keys_it_decides_itself():
    with pytest.raises(ValueError, match="the sink names its producers itself"):
        parse_sink_options({**URL, "topic": "t", "pulsar.producer.producerName": "p"}, False)
    with pytest.raises(ValueError, match="did you mean 'pulsar.producer.batchingMaxBytes'"):
        parse_sink_options({**URL, "topic": "t", "pulsar.producer.batchingMaxByte": "1"}, False)
    with pytest.raises(ValueError, match="conflict"):
        parse_sink_options({**URL, "topic": "t", "batchingMaxMessages": "5",
                            "pulsar.producer.batchingMaxMessages": "6"}, False)
