"""The sink's options and columns are checked on the driver, in the writer's constructor, before any task
runs: each mistake names the option or column and the fix. (No broker, no SparkSession.)"""
from __future__ import annotations

import pytest

from connector import CompressionType
from connector.spark.sink_options import SinkSchemaError, parse_sink_options, plan_columns
from connector.spark.writer import PulsarLikeBatchWriter, PulsarLikeStreamWriter

from tests.spark.sink_helpers import spark_schema

pytestmark = pytest.mark.spark

URL = "pulsar://127.0.0.1:6650"
VALUE_ONLY = spark_schema(value="binary")


def stream(options, schema=VALUE_ONLY):
    return PulsarLikeStreamWriter({"service.url": URL, **options}, schema, False)


def test_options_are_matched_without_regard_to_case():
    parsed = parse_sink_options({"SERVICE.URL": URL, "topic": "t", "batchingmaxmessages": "500",
                                 "compressiontype": "lz4", "effectivelyonce": "FALSE"}, streaming=True)
    assert parsed.topic == "persistent://public/default/t"
    assert parsed.batching_max_messages == 500 and parsed.compression_type == CompressionType.LZ4
    assert parsed.effectively_once is False


def test_spark_checkpoint_location_is_accepted():
    assert parse_sink_options({"service.url": URL, "checkpointlocation": "/tmp/x"}, streaming=True).topic is None


def test_unknown_option_names_the_closest_one():
    with pytest.raises(ValueError, match=r"unknown option 'batchingMaxMessage'.*did you mean batchingMaxMessages"):
        stream({"topic": "t", "batchingMaxMessage": "10"})


def test_source_option_on_the_sink_says_so():
    with pytest.raises(ValueError, match="option startingOffsets is a source option"):
        stream({"topic": "t", "startingOffsets": "earliest"})


def test_service_url_is_required_and_checked():
    with pytest.raises(ValueError, match="option service.url is required"):
        PulsarLikeStreamWriter({"topic": "t"}, VALUE_ONLY, False)
    with pytest.raises(ValueError, match="option service.url: .*pulsar://host:port"):
        PulsarLikeStreamWriter({"service.url": "http://x", "topic": "t"}, VALUE_ONLY, False)


@pytest.mark.parametrize("name, value, accepted", [
    ("batchingMaxMessages", "0", "integer >= 1"), ("maxPendingMessages", "lots", "integer >= 1"),
    ("compressionType", "brotli", "NONE, LZ4, ZLIB, ZSTD, SNAPPY"), ("effectivelyOnce", "yes", "true or false"),
])
def test_bad_option_values_name_the_accepted_ones(name, value, accepted):
    with pytest.raises(ValueError, match=f"option {name}={value!r} is not valid; use .*{accepted}"):
        stream({"topic": "t", name: value})


def test_bad_topic_name_is_named():
    with pytest.raises(ValueError, match="option topic: invalid topic name"):
        stream({"topic": "a/b"})


def test_write_id_is_for_batch_writes_only():
    with pytest.raises(ValueError, match="option writeId applies to batch writes"):
        stream({"topic": "t", "writeId": "x"})
    assert PulsarLikeBatchWriter({"service.url": URL, "topic": "t", "writeId": "x"}, VALUE_ONLY, False).write_id == "x"


def test_a_path_is_refused():
    with pytest.raises(ValueError, match="takes no path"):
        stream({"path": "t"})


def test_overwrite_is_refused():
    with pytest.raises(ValueError, match=r"only appends.*mode\('append'\)"):
        PulsarLikeBatchWriter({"service.url": URL, "topic": "t"}, VALUE_ONLY, True)


def test_missing_value_column_says_how_to_make_one():
    with pytest.raises(SinkSchemaError, match=r"needs a 'value' column .*the input has id, name.*to_json") as caught:
        stream({"topic": "t"}, spark_schema(id="bigint", name="string"))
    assert caught.value.column == "value"


@pytest.mark.parametrize("column, kind, needed", [
    ("value", "int", "binary or string"), ("__key", "int", "binary or string"), ("__topic", "binary", "string"),
    ("__eventTime", "double", "timestamp or long"), ("__messageProperties", "map<string,int>",
                                                      "map<string,string>"),
    ("__messageProperties", "array<string>", "map<string,string>"), ("__partition", "string", "an integer"),
])
def test_wrong_column_type_names_the_column_and_the_type_needed(column, kind, needed):
    columns = {"value": "binary", column: kind}
    with pytest.raises(SinkSchemaError, match=f"column {column} has type .*needs {needed}") as caught:
        stream({"topic": "t"}, spark_schema(**columns))
    assert caught.value.column == column


def test_no_topic_anywhere_is_refused():
    with pytest.raises(ValueError, match=r"no topic to write to: set .option\('topic'"):
        PulsarLikeStreamWriter({"service.url": URL}, VALUE_ONLY, False)


def test_unknown_double_underscore_column_is_a_likely_typo():
    with pytest.raises(SinkSchemaError, match="column '__keys' .*did you mean __key"):
        stream({"topic": "t"}, spark_schema(value="binary", __keys="string"))


def test_source_columns_and_other_columns_are_ignored():
    schema = spark_schema(value="binary", __offset="bigint", __publishTime="timestamp", payload_size="int",
                          __key="string")
    columns = plan_columns(schema, parse_sink_options({"service.url": URL, "topic": "t"}, True))
    assert (columns.value, columns.key, columns.topic, columns.partition) == (0, 4, -1, -1)


def test_string_value_and_long_event_time_are_noted():
    columns = stream({"topic": "t"}, spark_schema(value="string", __eventTime="bigint")).columns
    assert columns.value_is_string and not columns.event_time_is_timestamp


def test_pending_limit_below_a_batch_is_refused():
    with pytest.raises(ValueError, match="maxPendingMessages=10 is below batchingMaxMessages=1000"):
        stream({"topic": "t", "maxPendingMessages": "10"})


def test_complete_output_mode_is_refused_with_the_streaming_fix():
    with pytest.raises(ValueError, match=r"only appends.*outputMode\('append'\).*watermark"):
        PulsarLikeStreamWriter({"service.url": URL, "topic": "t"}, VALUE_ONLY, True)
