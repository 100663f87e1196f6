"""The source's pure parts, without Spark or a broker: options, offsets, admission, Arrow batches."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from broker_core.protocol import codec, pulsar_api_pb2
from connector import MessageId
from connector.client.entries import UniformPayloads, decode as split
from connector.spark.arrow_batches import COLUMNAR_FROM, BatchBuilder
from connector.spark.source_admin import Bounds
from connector.spark.metrics import messages_behind_latest
from connector.spark.offsets import (
    TopicPartition, decode_source_offset, dumps, encode_source_offset, from_json_dict, parse_user_offsets,
    to_json_dict)
from connector.spark.options import legacy_subscription_name, new_subscription_name, parse_source_options
from connector.spark.planning import OffsetOutOfRange, admit, resolve_user_offsets, skip_lost, why_lost
from connector.spark.schema import ARROW_SCHEMA, spark_schema

A = TopicPartition("persistent://public/default/a", -1)
B0 = TopicPartition("persistent://public/default/b", 0)
B1 = TopicPartition("persistent://public/default/b", 1)
URL = {"service.url": "pulsar://127.0.0.1:6650"}


def test_offsets_are_canonical_json_with_sorted_keys_and_int_values():
    offsets = {B1: 7, A: 3, B0: 12}
    text = dumps(offsets)
    assert text == ('{"persistent://public/default/a": {"-1": 3}, '
                    '"persistent://public/default/b": {"0": 12, "1": 7}}')
    assert json.dumps(json.loads(text), sort_keys=True) == text
    assert from_json_dict(to_json_dict(offsets)) == offsets


def test_a_stream_offset_carries_the_subscription_in_canonical_json():
    stored = encode_source_offset({B1: 7, A: 3}, "spark-pulsarlike-0123456789abcdef")
    text = json.dumps(stored)
    assert text == ('{"offsets": {"persistent://public/default/a": {"-1": 3}, "persistent://public/default/b": '
                    '{"1": 7}}, "subscription": "spark-pulsarlike-0123456789abcdef"}')
    assert json.dumps(json.loads(text), sort_keys=True) == text
    assert decode_source_offset(json.loads(text)) == ({A: 3, B1: 7}, "spark-pulsarlike-0123456789abcdef")


def test_an_offset_from_an_older_checkpoint_loads_without_a_subscription():
    old = {"persistent://public/default/a": {"-1": 3}}
    assert decode_source_offset(old) == ({A: 3}, None)


def test_a_partition_topic_name_is_the_brokers_internal_name():
    assert B1.internal_name == "persistent://public/default/b-partition-1"
    assert A.internal_name == "persistent://public/default/a"


def test_user_offsets_accept_short_names_and_earliest_latest_markers():
    assert parse_user_offsets("startingOffsets", '{"a": {"-1": -2}, "b": {"1": 5}}') == {A: -2, B1: 5}


@pytest.mark.parametrize("text, reason", [
    ('{"a": {"-1": 1}', "is not valid JSON"),
    ('[]', "is not a non-empty JSON object"),
    ('{"a": {"x": 1}}', "partition 'x' of 'a' is not an integer"),
    ('{"a": {"-1": -3}}', "is not an integer >= -2"),
    ('{"a-partition-2": {"0": 1}}', "is a partition's name"),
])
def test_malformed_user_offsets_name_the_option_and_the_reason(text, reason):
    with pytest.raises(ValueError, match="option startingOffsets") as excinfo:
        parse_user_offsets("startingOffsets", text)
    assert reason in str(excinfo.value)


def test_options_are_matched_without_regard_to_case_and_parsed_once():
    opts = parse_source_options({**URL, "TOPICS": "b,a", "maxmessagespertrigger": "10",
                                 "failondataloss": "false"}, streaming=True)
    assert opts.spec.topics == ("persistent://public/default/a", "persistent://public/default/b")
    assert opts.max_messages_per_trigger == 10 and not opts.fail_on_data_loss
    assert opts.starting == "latest"
    assert parse_source_options({**URL, "topic": "a"}, streaming=False).starting == "earliest"


def test_without_subscription_name_each_query_gets_a_new_random_subscription():
    opts = parse_source_options({**URL, "topics": "a,b"}, streaming=True)
    assert opts.subscription_name == ""  # named when the query starts, then carried in its offsets
    first, second = new_subscription_name(), new_subscription_name()
    assert first != second and first.startswith("spark-pulsarlike-") and len(first) == len("spark-pulsarlike-") + 16
    named = parse_source_options({**URL, "topic": "a", "subscriptionName": "mine"}, streaming=True)
    assert named.subscription_name == "mine"


def test_the_legacy_subscription_name_depends_only_on_the_topics():
    one = parse_source_options({**URL, "topics": "a,b", "startingOffsets": "earliest"}, streaming=True)
    two = parse_source_options({**URL, "topics": "persistent://public/default/b,a"}, streaming=True)
    assert legacy_subscription_name(one.spec) == legacy_subscription_name(two.spec) == \
        "spark-pulsarlike-" + hashlib.sha256(
            b"topics:persistent://public/default/a,persistent://public/default/b").hexdigest()[:16]


def test_the_kafka_sources_option_names_are_aliases():
    opts = parse_source_options({**URL, "subscribe": "a,b", "maxOffsetsPerTrigger": "10",
                                 "minOffsetsPerTrigger": "5"}, streaming=True)
    assert opts.spec.topics == ("persistent://public/default/a", "persistent://public/default/b")
    assert (opts.max_messages_per_trigger, opts.min_messages_per_trigger) == (10, 5)
    assert parse_source_options({**URL, "subscribePattern": "orders-.*"}, streaming=True).spec.pattern == \
        "persistent://public/default/orders-.*"


def test_an_alias_and_its_option_together_are_refused():
    with pytest.raises(ValueError, match="options maxMessagesPerTrigger and maxOffsetsPerTrigger name the same"):
        parse_source_options({**URL, "topic": "a", "maxMessagesPerTrigger": "1", "maxOffsetsPerTrigger": "2"},
                             streaming=True)


@pytest.mark.parametrize("option, fix", [
    ("kafka.bootstrap.servers", "set service.url"),
    ("assign", "filter on the __partition column"),
])
def test_a_kafka_only_option_names_pulsarlikes_way(option, fix):
    with pytest.raises(ValueError, match=f"option '{option}' is the Kafka source's") as excinfo:
        parse_source_options({**URL, "topic": "a", option: "x"}, streaming=True)
    assert fix in str(excinfo.value)


def test_starting_from_the_subscription_needs_its_name():
    with pytest.raises(ValueError, match="startingOffsets=subscription needs option subscriptionName"):
        parse_source_options({**URL, "topic": "a", "startingOffsets": "subscription"}, streaming=True)


@pytest.mark.parametrize("options, message", [
    ({"topic": "a"}, "option service.url is required"),
    ({**URL, "topic": "a", "maxMessagesPerTrigger": "0"}, "maxMessagesPerTrigger='0' is not valid"),
    ({**URL, "topic": "a", "failOnDataLoss": "maybe"}, "failOnDataLoss='maybe' is not valid; use 'true'"),
    ({**URL, "topic": "a", "maxTriggerDelay": "5m"}, "maxTriggerDelay only applies with minMessagesPerTrigger"),
    ({**URL, "topic": "a", "minMessagesPerTrigger": "5", "maxTriggerDelay": "soon"}, "use a duration"),
    ({**URL, "topic": "non-persistent://public/default/a"}, "non-persistent topics keep no offsets"),
    ({**URL, "topicsPattern": "persistent://public/.*/a"}, "the tenant and namespace must be literal"),
    ({**URL, "topicsPattern": "persistent://public/default/(a"}, "is not a valid regular expression"),
    ({**URL, "topic": "a", "startingOffsets": "first"}, "startingOffsets='first' is not valid"),
    ({**URL, "topic": "a", "path": "x"}, "takes no path"),
    ({"service.url": "http://x", "topic": "a"}, "option service.url"),
])
def test_bad_options_name_the_option_and_the_fix(options, message):
    with pytest.raises(ValueError) as excinfo:
        parse_source_options(options, streaming=True)
    assert message in str(excinfo.value)


def test_a_pattern_without_namespace_applies_to_public_default():
    opts = parse_source_options({**URL, "topicsPattern": "orders-.*"}, streaming=True)
    assert opts.spec.namespace == "public/default"
    assert opts.spec.matches("persistent://public/default/orders-eu")
    assert not opts.spec.matches("persistent://public/default/audit")


def test_admission_shares_the_limit_in_proportion_and_admits_exactly_the_limit():
    start = {A: 0, B0: 0, B1: 5}
    latest = {A: 90, B0: 10, B1: 5}
    end = admit(start, latest, 20)
    assert end == {A: 18, B0: 2, B1: 5}
    assert admit(start, latest, 7) == {A: 7, B0: 0, B1: 5}  # 6 + 0 by share, the remainder to the first
    assert admit(start, latest, None) == latest
    assert admit(start, latest, 1000) == latest


def test_admission_by_bytes_uses_the_average_message_size():
    start, latest = {A: 0}, {A: 1000}
    assert admit(start, latest, None, max_bytes=10_000, average_sizes={A: 100.0}) == {A: 100}
    assert admit(start, latest, 50, max_bytes=10_000, average_sizes={A: 100.0}) == {A: 50}
    assert admit(start, latest, None, max_bytes=10, average_sizes={A: 100.0}) == {A: 1}


def test_skipping_lost_messages_starts_at_the_first_stored_offset():
    bounds = {A: Bounds(30, 50), B0: Bounds(0, 4)}
    assert skip_lost({A: 10, B0: 2, B1: 0}, bounds) == {A: 30, B0: 2, B1: 0}


def test_a_loss_is_explained_by_a_subscription_that_is_gone():
    text = why_lost({"subscriptions": {"other": {}}}, "spark-pulsarlike-1")
    assert "subscription spark-pulsarlike-1 no longer exists" in text
    assert "subscriptionExpirationTimeMinutes" in text and "failOnDataLoss=false" in text


def test_a_loss_is_explained_by_the_message_ttl_when_it_expired_messages():
    text = why_lost({"subscriptions": {"q": {"totalMsgExpired": 12}}}, "q")
    assert "message TTL expired them (12 messages" in text and "messageTTLInSeconds" in text
    assert "keep the query's subscription" not in text
    assert "message TTL" in why_lost({"subscriptions": {"other": {"totalMsgExpired": 3}}}, None)


def test_a_loss_without_ttl_suggests_a_retention_policy():
    text = why_lost({"subscriptions": {"q": {"totalMsgExpired": 0}}}, "q")
    assert "no subscription held them" in text and "set-retention" in text


def test_user_offsets_resolve_against_what_partitions_store():
    bounds = {A: Bounds(3, 10), B0: Bounds(0, 4)}
    assert resolve_user_offsets("startingOffsets", {A: -1}, bounds, True) == {A: 10, B0: 0}
    assert resolve_user_offsets("endingOffsets", {A: 6}, bounds, False) == {A: 6, B0: 4}
    with pytest.raises(OffsetOutOfRange, match="offset 11 of persistent://public/default/a partition -1 is "
                                                "beyond its end"):
        resolve_user_offsets("startingOffsets", {A: 11}, bounds, True)
    with pytest.raises(OffsetOutOfRange, match="b-partition-1, which does not exist"):
        resolve_user_offsets("startingOffsets", {B1: 0}, bounds, True)


def test_the_arrow_schema_is_sparks_with_utc_timestamps():
    from pyspark.sql.pandas.types import to_arrow_schema

    assert to_arrow_schema(spark_schema(), timezone="UTC").equals(ARROW_SCHEMA)


def batch_entry(messages, sequence_id=40):
    metadata = pulsar_api_pb2.MessageMetadata(producer_name="p", sequence_id=sequence_id, publish_time=1234,
                                              num_messages_in_batch=len(messages))
    return codec.decode_entry(codec.encode_entry(metadata, codec.encode_batch(messages)))


def test_a_batch_entry_becomes_rows_with_the_clients_message_ids():
    metadata, payload = batch_entry([codec.BatchMessage(b"a"), codec.BatchMessage(b"b", partition_key="k"),
                                     codec.BatchMessage(b"c", properties={"x": "1"}, event_time=99)])
    builder = BatchBuilder("persistent://public/default/b", 1)
    builder.add(split(metadata, payload, 7, 20), 1, 3)
    rows = builder.build().to_pylist()
    assert [r["value"] for r in rows] == [b"b", b"c"]
    assert [r["__offset"] for r in rows] == [21, 22]
    assert [r["__key"] for r in rows] == [b"k", None]
    assert [r["__messageProperties"] for r in rows] == [[], [("x", "1")]]
    assert [r["__sequenceId"] for r in rows] == [41, 42]
    assert rows[1]["__eventTime"] is not None and rows[0]["__eventTime"] is None
    assert [MessageId.deserialize(r["__messageId"]) for r in rows] == [
        MessageId(1, 7, 20, 1), MessageId(1, 7, 20, 2)]
    assert rows[0]["__messageId"] == MessageId.of(7, 20, 1, 1, 3).serialize()


def test_payload_only_batches_fill_their_columns_without_per_message_metadata():
    metadata, payload = batch_entry([codec.BatchMessage(b"x" * 10)] * 5)
    builder = BatchBuilder("persistent://public/default/a", -1)
    builder.add(split(metadata, payload, 0, 100), 0, 5)
    batch = builder.build()
    assert batch.schema.equals(ARROW_SCHEMA)
    assert batch.column("__offset").to_pylist() == [100, 101, 102, 103, 104]
    assert batch.column("__sequenceId").to_pylist() == [40, 41, 42, 43, 44]
    assert batch.column("__key").null_count == 5
    assert batch.column("__messageProperties").to_pylist() == [[]] * 5
    assert batch.column("__messageId").to_pylist()[4] == MessageId.of(0, 100, -1, 4, 5).serialize()


def _rows_of(entries: list, partition: int = 2) -> list[dict]:
    builder = BatchBuilder("persistent://public/default/c", partition)
    for entry, lo, hi in entries:
        builder.add(entry, lo, hi)
    return builder.build().to_pylist()


def test_a_large_batch_of_one_size_is_left_unsplit_and_read_as_columns():
    count = 300  # batch indexes past 127 take a two-byte varint in the message id
    metadata, payload = batch_entry([codec.BatchMessage(i.to_bytes(2, "big") * 5) for i in range(count)])
    decoded = split(metadata, payload, 9, 1000)
    assert isinstance(decoded.payloads, UniformPayloads) and len(decoded.payloads) == count
    assert decoded.payloads[299] == (299).to_bytes(2, "big") * 5  # still a sequence when asked
    rows = _rows_of([(decoded, 100, 290)])
    assert len(rows) == 190 and COLUMNAR_FROM <= 190
    assert [r["value"] for r in rows] == [i.to_bytes(2, "big") * 5 for i in range(100, 290)]
    assert [r["__offset"] for r in rows] == list(range(1100, 1290))
    assert [r["__messageId"] for r in rows] == [MessageId.of(9, 1000, 2, i, count).serialize()
                                                 for i in range(100, 290)]


def test_columnar_and_per_message_entries_mix_in_one_batch_in_order():
    uniform = split(*batch_entry([codec.BatchMessage(b"u" * 4)] * 100), 3, 0)
    mixed = split(*batch_entry([codec.BatchMessage(b"a"), codec.BatchMessage(b"bb")] * 40), 3, 100)
    small = split(*batch_entry([codec.BatchMessage(b"s" * 4)] * 3), 3, 180)
    rows = _rows_of([(uniform, 0, 100), (mixed, 0, 80), (small, 0, 3), (uniform, 90, 100)])
    assert [r["value"] for r in rows] == [b"u" * 4] * 100 + [b"a", b"bb"] * 40 + [b"s" * 4] * 3 + [b"u" * 4] * 10
    assert [MessageId.deserialize(r["__messageId"]) for r in rows] == (
        [MessageId(2, 3, 0, i) for i in range(100)] + [MessageId(2, 3, 100, i) for i in range(80)]
        + [MessageId(2, 3, 180, i) for i in range(3)] + [MessageId(2, 3, 0, i) for i in range(90, 100)])


def test_a_null_value_in_a_large_batch_stays_null():
    null = pulsar_api_pb2.SingleMessageMetadata(payload_size=0, null_value=True).SerializeToString()
    batch = codec.encode_batch([codec.BatchMessage(b"v")] * 70) + codec.U32.pack(len(null)) + null
    metadata = pulsar_api_pb2.MessageMetadata(producer_name="p", sequence_id=0, publish_time=1,
                                              num_messages_in_batch=71)
    rows = _rows_of([(split(*codec.decode_entry(codec.encode_entry(metadata, batch)), 1, 0), 0, 71)])
    assert [r["value"] for r in rows] == [b"v"] * 70 + [None]


def test_a_range_reads_ahead_about_a_fixed_number_of_bytes_of_messages():
    from types import SimpleNamespace

    from connector.spark.partition_reader import PERMITS_WINDOW_MAX, READ_AHEAD_BYTES, _window_for

    small = [SimpleNamespace(num_messages=1000, data=b"x" * 120_000)]  # batches of 1,000 x ~100 B
    large = [SimpleNamespace(num_messages=0, data=b"x" * (4 << 20))] * 2  # unbatched 4 MB messages
    assert _window_for(small) == min(PERMITS_WINDOW_MAX, READ_AHEAD_BYTES // 120)
    assert _window_for(large) == READ_AHEAD_BYTES // (4 << 20) == 8


def test_messages_behind_latest_are_derived_from_end_and_latest_offsets():
    def stored(parts):
        return json.dumps(encode_source_offset({TopicPartition("t", int(p)): o for p, o in parts.items()}, "s"))

    progress = {"sources": [{"endOffset": stored({"0": 5, "1": 10}), "latestOffset": stored({"0": 15, "1": 10})}]}
    assert messages_behind_latest(progress) == {
        "minOffsetsBehindLatest": 0, "avgOffsetsBehindLatest": 5.0, "maxOffsetsBehindLatest": 10}
    assert messages_behind_latest({"sources": [{"endOffset": None, "latestOffset": None}]}) is None


def test_the_readme_spark_section_says_how_to_avoid_data_source_not_found():
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n## Spark\n", 1)[1].split("\n## ", 1)[0]
    assert "DATA_SOURCE_NOT_FOUND" in section
    assert "PYSPARK_PYTHON=.venv/bin/python .venv/bin/python job.py" in section
