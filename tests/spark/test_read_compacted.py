"""``option("readCompacted", "true")``: a batch read is a snapshot of a keyed topic (the latest value per key,
tombstones deleting keys), before and after compaction, with messages after the horizon, over partitions;
a planned snapshot replays identically after another compaction; a stream reads the compacted view and then
every new message."""
from __future__ import annotations

import uuid

import pytest

from connector.spark.batch_reader import PulsarLikeBatchReader
from connector.spark.options import parse_source_options
from connector.spark.partition_reader import RangeReader
from tests.waiting import wait_until

pytestmark = pytest.mark.spark

HISTORY = [("a", "a1"), ("b", "b1"), ("a", "a2"), ("c", "c1"), ("b", None), (None, "keyless"), ("d", "d1"),
           ("c", "c2")]
"""a updated, b deleted by a tombstone, a keyless message, c updated last: {a: a2, c: c2, d: d1}."""
TABLE = {"a": "a2", "c": "c2", "d": "d1"}


def publish(client, topic, messages):
    producer = client.create_producer(topic, batching_enabled=False)
    for key, value in messages:
        payload = b"" if value is None else value.encode()
        producer.send(payload, **({"partition_key": key} if key is not None else {}))
    producer.close()


def compact(admin, topic):
    admin.trigger_compaction(topic)
    assert wait_until(lambda: admin.compaction_status(topic)["status"] == "SUCCESS", timeout_s=30), \
        admin.compaction_status(topic)


def snapshot(source, topic, **options):
    rows = source(stream=False, topic=topic, readCompacted="true", **options).load().collect()
    return {r["__key"].decode(): r["value"].decode() for r in rows}, rows


def test_a_snapshot_of_a_topic_never_compacted_is_the_latest_value_per_key(source, client, topic):
    publish(client, topic, HISTORY)
    table, rows = snapshot(source, topic)
    assert table == TABLE
    assert len(rows) == 3
    assert {r["__key"]: r["__offset"] for r in rows} == {b"a": 2, b"c": 7, b"d": 6}  # each key's last message


def test_a_snapshot_after_compaction_and_with_messages_after_the_horizon(source, client, admin, topic):
    publish(client, topic, HISTORY)
    compact(admin, topic)
    publish(client, topic, [("d", "d2"), ("a", None), ("e", "e1")])  # after the horizon: raw
    table, _ = snapshot(source, topic)
    assert table == {"c": "c2", "d": "d2", "e": "e1"}


def test_a_snapshot_of_a_compacted_topic_ending_in_tombstones_ends_without_waiting(source, client, admin, topic):
    """The compacted view ends before the topic (its last messages were compacted away): the read must not
    wait for offsets that will never be delivered (it would fail at pollTimeoutMs)."""
    publish(client, topic, HISTORY + [("d", None), ("c", None)])
    compact(admin, topic)
    table, _ = snapshot(source, topic, pollTimeoutMs=10_000)
    assert table == {"a": "a2"}


def test_a_snapshot_of_a_partitioned_topic_covers_every_partition(source, client, admin, topic):
    admin.create_partitioned_topic(topic, 3)
    publish(client, topic, [(f"k{i % 30}", f"v{i}") for i in range(150)])
    compact(admin, topic)
    publish(client, topic, [(f"k{i}", None) for i in range(10)])
    table, rows = snapshot(source, topic)
    assert table == {f"k{i}": f"v{120 + i}" for i in range(10, 30)}
    assert len({r["__partition"] for r in rows}) == 3


def test_a_snapshot_up_to_ending_offsets_is_the_table_as_of_that_offset(source, client, topic):
    publish(client, topic, HISTORY)
    table, _ = snapshot(source, topic, endingOffsets=f'{{"{topic}": {{"-1": 4}}}}')
    assert table == {"a": "a2", "b": "b1", "c": "c1"}


def test_a_planned_snapshot_reads_the_same_rows_after_another_compaction(client, admin, broker, topic):
    publish(client, topic, HISTORY)
    compact(admin, topic)
    options = parse_source_options({"service.url": broker.service_url, "topic": topic,
                                    "readCompacted": "true"}, streaming=False)
    (part,) = PulsarLikeBatchReader(options).partitions()

    def read():
        batches = RangeReader(broker.service_url, part, 30_000, True).batches()
        return [row for batch in batches for row in batch.to_pylist()]
    first = read()
    publish(client, topic, [("a", "a3"), ("c", None), ("d", "d2")])  # after the planned end
    compact(admin, topic)  # the view now lacks a2, c2 and d1
    assert read() == first
    assert {r["__key"]: r["value"] for r in first} == {k.encode(): v.encode() for k, v in TABLE.items()}


def test_a_stream_reads_the_compacted_view_then_every_new_message(spark, source, client, admin, topic, tmp_path):
    publish(client, topic, HISTORY)
    compact(admin, topic)
    publish(client, topic, [("a", "a3"), ("a", None)])  # raw after the horizon: both are delivered
    name = f"compacted_{uuid.uuid4().hex[:8]}"
    query = (source(topic=topic, readCompacted="true", startingOffsets="earliest").load()
             .writeStream.format("memory").queryName(name).option("checkpointLocation", str(tmp_path))
             .trigger(availableNow=True).start())
    query.awaitTermination(120)
    rows = spark.sql(f"SELECT CAST(__key AS STRING) AS __key, value, __offset FROM {name} ORDER BY __offset").collect()
    assert [(r["__key"], r["value"].decode()) for r in rows] == [
        ("a", "a2"), ("d", "d1"), ("c", "c2"), ("a", "a3"), ("a", "")]
    assert [r["__offset"] for r in rows] == [2, 6, 7, 8, 9]


def test_the_snapshot_reduction_keeps_each_keys_last_message_unless_it_is_a_tombstone():
    import pyarrow as pa

    from connector.spark.compacted import latest_per_key
    from connector.spark.schema import ARROW_SCHEMA

    rows = [(b"a", b"1"), (None, b"x"), (b"b", b"1"), (b"a", b"2"), (b"b", None), (b"c", b"1"), (b"c", b"")]
    batch = pa.RecordBatch.from_pylist(
        [{"__key": k, "value": v, "__offset": i} for i, (k, v) in enumerate(rows)], schema=ARROW_SCHEMA)
    (out,) = latest_per_key([batch.slice(0, 3), batch.slice(3)], rows_per_batch=100)
    assert out.to_pydict()["__key"] == [b"a"] and out.to_pydict()["__offset"] == [3]
    assert list(latest_per_key([], rows_per_batch=100)) == []


def test_read_compacted_must_be_true_or_false(broker):
    with pytest.raises(ValueError, match="readCompacted"):
        parse_source_options({"service.url": broker.service_url, "topic": "t", "readCompacted": "yes"},
                             streaming=False)
    assert parse_source_options({"service.url": broker.service_url, "topic": "t", "READCOMPACTED": "True"},
                                streaming=True).read_compacted
