"""The sink's writers called as Spark calls them on an executor (``write_partition`` with the task's
partition and batch id), against a real broker: replays, partial retries, routing, counts.

No SparkSession: these pin what one task does; test_sink_spark.py runs the same through Spark."""
from __future__ import annotations

import pyarrow as pa
import pytest

from connector.client.producer.routing import java_string_hash
from connector.spark.writer import PulsarLikeBatchWriter, PulsarLikeStreamWriter

from tests.spark.sink_helpers import PROPERTIES, TIMESTAMP, batch, payloads, read_all, spark_schema, values

pytestmark = pytest.mark.spark

VALUE_ONLY = spark_schema(value="binary")


def stream_writer(broker, schema=VALUE_ONLY, **options):
    return PulsarLikeStreamWriter({"service.url": broker.service_url, **options}, schema, False)


def test_replayed_micro_batch_adds_nothing_twice(broker, client, topic):
    writer = stream_writer(broker, topic=topic)
    first = writer.write_partition(iter([batch(value=values(1000))]), 0, 3, "q1")
    again = writer.write_partition(iter([batch(value=values(1000))]), 0, 3, "q1")
    assert (first.rows, first.written, first.duplicates) == (1000, 1000, 0)
    assert (again.rows, again.written, again.duplicates) == (1000, 0, 1000)
    assert payloads(client, topic) == values(1000)


def test_retry_after_a_partial_attempt_stores_only_the_rest(broker, client, topic):
    writer = stream_writer(broker, topic=topic)
    writer.write_partition(iter([batch(value=values(700))]), 1, 0, "q1")  # the attempt that died at row 700
    retry = writer.write_partition(iter([batch(value=values(1000, 0)), batch(value=values(500, 1000))]),
                                   1, 0, "q1")
    assert (retry.rows, retry.written, retry.duplicates) == (1500, 800, 700)
    assert payloads(client, topic) == values(1500)


def test_each_spark_partition_and_batch_is_its_own_sequence(broker, client, topic):
    writer = stream_writer(broker, topic=topic)
    for batch_id in (0, 1):
        for partition in (0, 1):
            rows = values(300, prefix=f"b{batch_id}p{partition}-")
            message = writer.write_partition(iter([batch(value=rows)]), partition, batch_id, "q1")
            assert message.written == 300 and message.producer_name == f"pulsarlike-sink-q1-{partition}"
    # batch 0 replayed after batch 1 was written: nothing is added
    assert writer.write_partition(iter([batch(value=values(300, prefix="b0p0-"))]), 0, 0, "q1").written == 0
    stored = read_all(client, topic)
    assert len(stored) == 1200
    ids = {(m.producer_name(), m.sequence_id()) for m in stored}
    assert ("pulsarlike-sink-q1-1", (1 << 32) + 299) in ids and ("pulsarlike-sink-q1-0", 0) in ids


def test_another_query_is_another_producer_and_is_not_deduplicated_against(broker, client, topic):
    writer = stream_writer(broker, topic=topic)
    writer.write_partition(iter([batch(value=values(100))]), 0, 0, "query-a")
    assert writer.write_partition(iter([batch(value=values(100))]), 0, 0, "query-b").written == 100
    assert len(payloads(client, topic)) == 200


def test_partitioned_topic_routes_keys_like_the_client_and_replays_cleanly(broker, admin, client, topic):
    admin.create_partitioned_topic(topic, 3)
    schema = spark_schema(value="binary", __key="string")
    writer = stream_writer(broker, schema, topic=topic)
    keys = [f"key-{i % 17}" if i % 4 else None for i in range(3000)]
    rows = [batch(value=values(3000), __key=pa.array(keys, pa.string()))]
    assert writer.write_partition(iter(rows), 0, 7, "q1").written == 3000
    assert writer.write_partition(iter(rows), 0, 7, "q1").duplicates == 3000
    stored = read_all(client, topic)
    assert sorted(m.data() for m in stored) == sorted(values(3000))
    for m in stored:
        partition = int(m.topic_name().rsplit("-", 1)[1])
        if m.partition_key():
            assert partition == java_string_hash(m.partition_key()) % 3
    keyless = {int(m.topic_name().rsplit("-", 1)[1]) for m in stored if not m.partition_key()}
    assert keyless == {0, 1, 2}  # blocks of batchingMaxMessages rows, one partition after the other


def test_explicit_partition_wins_over_the_key(broker, admin, client, topic):
    admin.create_partitioned_topic(topic, 4)
    schema = spark_schema(value="binary", __key="string", __partition="int")
    writer = stream_writer(broker, schema, topic=topic)
    rows = batch(value=values(40), __key=["k"] * 40, __partition=pa.array([i % 4 for i in range(40)], pa.int32()))
    writer.write_partition(iter([rows]), 0, 0, "q1")
    writer.write_partition(iter([rows]), 0, 0, "q1")
    for part in range(4):
        got = payloads(client, f"{topic}-partition-{part}")
        assert got == [v for i, v in enumerate(values(40)) if i % 4 == part]


def test_rows_go_to_their_own_topics_and_replay_per_topic(broker, client, topic):
    other = topic + "-other"
    schema = spark_schema(value="binary", __topic="string")
    writer = stream_writer(broker, schema)
    names = [topic if i % 3 else other for i in range(900)]
    rows = batch(value=values(900), __topic=names)
    first = writer.write_partition(iter([rows]), 0, 2, "q1")
    again = writer.write_partition(iter([rows]), 0, 2, "q1")
    assert first.topics == {topic: 600, other: 300} and again.written == 0
    assert payloads(client, topic) == [v for i, v in enumerate(values(900)) if i % 3]
    assert payloads(client, other) == [v for i, v in enumerate(values(900)) if i % 3 == 0]


def test_option_topic_overrides_the_topic_column(broker, client, topic):
    schema = spark_schema(value="binary", __topic="string")
    writer = stream_writer(broker, schema, topic=topic)
    writer.write_partition(iter([batch(value=values(5), __topic=["elsewhere"] * 5)]), 0, 0, "q1")
    assert payloads(client, topic) == values(5)


def test_every_optional_column_round_trips(broker, client, topic):
    schema = spark_schema(value="string", __key="string", __eventTime="timestamp",
                          __messageProperties="map<string,string>", __partition="int")
    writer = stream_writer(broker, schema, topic=topic)
    rows = batch(value=["a", "b", "c"], __key=pa.array(["k1", None, "k3"], pa.string()),
                 __eventTime=pa.array([1_700_000_000_123_000, None, 5_000], TIMESTAMP),
                 __messageProperties=pa.array([[("p", "1"), ("q", "x")], None, [("n", None)]], PROPERTIES),
                 __partition=pa.array([None, -1, None], pa.int32()))
    writer.write_partition(iter([rows]), 0, 0, "q1")
    stored = read_all(client, topic)
    assert [m.data() for m in stored] == [b"a", b"b", b"c"]
    assert [m.partition_key() for m in stored] == ["k1", "", "k3"]
    assert [m.event_timestamp() for m in stored] == [1_700_000_000_123, 0, 5]
    assert [m.properties() for m in stored] == [{"p": "1", "q": "x"}, {}, {}]


def test_event_time_as_long_milliseconds(broker, client, topic):
    writer = stream_writer(broker, spark_schema(value="binary", __eventTime="bigint"), topic=topic)
    writer.write_partition(iter([batch(value=values(2), __eventTime=[42, 43])]), 0, 0, "q1")
    assert [m.event_timestamp() for m in read_all(client, topic)] == [42, 43]


def test_at_least_once_mode_writes_a_replay_again(broker, client, topic):
    writer = stream_writer(broker, topic=topic, effectivelyOnce="false")
    first = writer.write_partition(iter([batch(value=values(10))]), 0, 0, "q1")
    writer.write_partition(iter([batch(value=values(10))]), 0, 0, "q1")
    assert first.producer_name is None
    assert len(payloads(client, topic)) == 20


def test_batch_write_with_a_write_id_is_not_repeated_by_a_rerun(broker, client, topic):
    def run(**extra):
        writer = PulsarLikeBatchWriter({"service.url": broker.service_url, "topic": topic, **extra},
                                       VALUE_ONLY, False)
        return [writer.write_partition(iter([batch(value=values(50, p * 50))]), p, 0, writer.sink)
                for p in (0, 1)]
    assert sum(m.written for m in run(writeId="backfill-1")) == 100
    assert sum(m.duplicates for m in run(writeId="backfill-1")) == 100
    assert len(payloads(client, topic)) == 100
    assert sum(m.written for m in run()) == 100  # no writeId: a fresh identity each write
    assert len(payloads(client, topic)) == 200


# --- rows the sink refuses ------------------------------------------------------------------------------
def test_null_value_fails_the_task_naming_the_row(broker, topic):
    writer = stream_writer(broker, topic=topic)
    with pytest.raises(ValueError, match=r"column value is null in row 1 .*IS NOT NULL"):
        writer.write_partition(iter([batch(value=pa.array([b"a", None], pa.binary()))]), 0, 0, "q1")


def test_partition_beyond_the_topic_fails_the_task(broker, admin, topic):
    admin.create_partitioned_topic(topic, 2)
    writer = stream_writer(broker, spark_schema(value="binary", __partition="int"), topic=topic)
    with pytest.raises(ValueError, match=r"partition 5 of .* has partitions 0\.\.1"):
        writer.write_partition(iter([batch(value=values(1), __partition=pa.array([5], pa.int32()))]),
                               0, 0, "q1")


def test_partition_of_an_unpartitioned_topic_fails_the_task(broker, client, topic):
    writer = stream_writer(broker, spark_schema(value="binary", __partition="int"), topic=topic)
    with pytest.raises(ValueError, match="which is not partitioned"):
        writer.write_partition(iter([batch(value=values(2), __partition=pa.array([None, 1], pa.int32()))]),
                               0, 0, "q1")
    assert payloads(client, topic) == []


def test_row_without_any_topic_fails_the_task(broker):
    writer = stream_writer(broker, spark_schema(value="binary", __topic="string"))
    with pytest.raises(ValueError, match="null __topic and option topic is not set"):
        writer.write_partition(iter([batch(value=values(1), __topic=pa.array([None], pa.string()))]),
                               0, 0, "q1")


def test_topic_with_deduplication_turned_off_is_refused(broker, admin, client, topic):
    admin.create_topic(topic)
    admin.set_topic_deduplication(topic, False)
    with pytest.raises(ValueError, match="deduplication is turned off on topic .*effectivelyOnce=false"):
        stream_writer(broker, topic=topic).write_partition(iter([batch(value=values(1))]), 0, 0, "q1")
    assert payloads(client, topic) == []


def test_non_persistent_topic_needs_at_least_once(broker, topic):
    name = topic.replace("persistent://", "non-persistent://")
    with pytest.raises(ValueError, match="non-persistent.*effectivelyOnce=false"):
        stream_writer(broker, topic=name).write_partition(iter([batch(value=values(1))]), 0, 0, "q1")
    message = stream_writer(broker, topic=name, effectivelyOnce="false").write_partition(
        iter([batch(value=values(3))]), 0, 0, "q1")
    assert message.written == 3


def test_the_writer_pickles_without_a_connection(broker, topic):
    import pickle

    writer = stream_writer(broker, topic=topic)
    copy = pickle.loads(pickle.dumps(writer))
    assert copy.options == writer.options and copy.columns == writer.columns


@pytest.mark.parametrize("options", [{}, {"batchingMaxMessages": "3", "maxPendingMessages": "3"},
                                     {"batchingMaxBytes": "4096"}])
def test_counts_are_exact_with_payloads_of_every_size(broker, client, topic, options):
    """Payload-only rows carry a callback on only some messages: entries cut by count, by size and by the
    final flush are all counted (sink_receipts)."""
    sizes = [1, 5000, 40, 40, 3000, 2, 100_000] + [64] * 400 + [9000] + [10] * 50
    rows = [bytes([65 + i % 26]) * size for i, size in enumerate(sizes)]
    writer = stream_writer(broker, topic=topic, **options)
    half = len(rows) // 2
    message = writer.write_partition(iter([batch(value=rows[:half]), batch(value=rows[half:])]), 0, 1, "q1")
    assert (message.rows, message.written, message.duplicates) == (len(rows), len(rows), 0)
    again = writer.write_partition(iter([batch(value=rows)]), 0, 1, "q1")
    assert (again.written, again.duplicates) == (0, len(rows))
    assert payloads(client, topic) == rows


def test_unreachable_broker_fails_the_task_within_the_operation_timeout():
    import socket
    import time

    from broker_core.errors import ConnectError

    with socket.socket() as unused:  # a port nothing listens on
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    writer = PulsarLikeStreamWriter({"service.url": f"pulsar://127.0.0.1:{port}", "topic": "t",
                                     "operationTimeoutMs": "1000"}, VALUE_ONLY, False)
    started = time.monotonic()
    with pytest.raises(ConnectError, match=f"cannot connect to the broker at 127.0.0.1:{port}"):
        writer.write_partition(iter([batch(value=values(1))]), 0, 0, "q1")
    assert time.monotonic() - started < 10


def test_partition_of_an_unpartitioned_row_topic_fails_the_task(broker, client, topic):
    writer = stream_writer(broker, spark_schema(value="binary", __topic="string", __partition="int"))
    with pytest.raises(ValueError, match="asks for partition 0 of .* which is not partitioned"):
        writer.write_partition(iter([batch(value=values(1), __topic=[topic],
                                           __partition=pa.array([0], pa.int32()))]), 0, 0, "q1")
