"""The sink on a Pulsar broker that is not ours, and on ours through Pulsar's binary protocol only
(connector/spark/sink_broker.py: no gRPC admin there; partitions from the client's lookup; effectively-once by
producer names and sequence ids, which hold when the broker deduplicates).

pulsar-lite has no deduplication and no admin API: there the sink writes every row once when nothing is
retried, and says effectively-once is unchecked. Retries are tested on our broker with ``transport=binary``,
whose deduplication the sink turns on through ``admin.url`` (the REST API), as it would on Apache Pulsar.
"""
from __future__ import annotations

import logging
import uuid

import pyarrow as pa
import pytest

from connector.spark.writer import PulsarLikeStreamWriter
from tests.pulsar_lite import pulsar_lite_broker  # noqa: F401
from tests.spark.sink_helpers import batch, payloads, read_all, spark_schema, values

pytestmark = pytest.mark.spark
pulsar = pytest.importorskip("pulsar")

VALUE_ONLY = spark_schema(value="binary")


def _topic() -> str:
    return f"persistent://public/default/sink-any-{uuid.uuid4().hex[:10]}"


def _official_values(lite, topic: str) -> list[bytes]:
    """Every message of ``topic`` as the official client reads it (counts stay below its receiver queue:
    pulsar-lite re-sends entries to a consumer whose backlog exceeds it)."""
    client = pulsar.Client(lite.service_url)
    try:
        reader = client.create_reader(topic, pulsar.MessageId.earliest)
        out = []
        while reader.has_message_available():
            out.append(reader.read_next(5000).data())
        return out
    finally:
        client.close()


def test_a_batch_write_to_pulsar_lite_stores_every_row_once(spark, pulsar_lite_broker):
    topic = _topic()
    rows = [(f"k{i % 7}", f"row-{i}") for i in range(600)]
    (spark.createDataFrame(rows, "__key string, value string").repartition(2)
     .write.format("pulsarlike").mode("append").option("service.url", pulsar_lite_broker.service_url)
     .option("topic", topic).save())
    assert sorted(_official_values(pulsar_lite_broker, topic)) == sorted(v.encode() for _, v in rows)


def test_a_streaming_copy_between_pulsar_lite_topics_stores_every_row_once(spark, pulsar_lite_broker, tmp_path):
    source, target = _topic(), _topic()
    client = pulsar.Client(pulsar_lite_broker.service_url)
    producer = client.create_producer(source, batching_enabled=True, batching_max_publish_delay_ms=1000)
    for i in range(300):
        producer.send_async(f"s{i}".encode(), None)
    producer.flush()
    client.close()
    query = (spark.readStream.format("pulsarlike").option("service.url", pulsar_lite_broker.service_url)
             .option("topic", source).option("startingOffsets", "earliest").option("maxMessagesPerTrigger", 120)
             .load().select("value")
             .writeStream.format("pulsarlike").option("service.url", pulsar_lite_broker.service_url)
             .option("topic", target).option("checkpointLocation", str(tmp_path / "ck")).start())
    try:
        query.processAllAvailable()
    finally:
        query.stop()
    assert sorted(_official_values(pulsar_lite_broker, target)) == sorted(f"s{i}".encode() for i in range(300))


def test_without_admin_url_a_broker_that_is_not_pulsarlike_gets_a_clear_unchecked_line(pulsar_lite_broker, caplog):
    from connector.spark import sink_broker

    sink_broker._UNCHECKED_LOGGED.discard(pulsar_lite_broker.service_url)
    writer = PulsarLikeStreamWriter({"service.url": pulsar_lite_broker.service_url, "topic": _topic()},
                                    VALUE_ONLY, False)
    with caplog.at_level(logging.WARNING, logger="connector.spark.sink_broker"):
        written = writer.write_partition(iter([batch(value=values(50))]), 0, 0, "q1")
    assert (written.rows, written.written) == (50, 50)
    assert any("event=sink_deduplication_unchecked" in r.getMessage() and "brokerDeduplicationEnabled" in r.getMessage()
               for r in caplog.records)


def _binary_writer(broker, topic: str, schema=VALUE_ONLY) -> PulsarLikeStreamWriter:
    return PulsarLikeStreamWriter({"service.url": broker.service_url, "topic": topic, "transport": "binary",
                                   "admin.url": broker.web_url}, schema, False)


def test_over_the_binary_protocol_a_retried_task_stores_only_the_rest(broker, client, admin, topic):
    writer = _binary_writer(broker, topic)
    writer.write_partition(iter([batch(value=values(700))]), 1, 0, "q1")  # the attempt that died at row 700
    retry = writer.write_partition(iter([batch(value=values(1000, 0)), batch(value=values(500, 1000))]), 1, 0, "q1")
    assert (retry.rows, retry.written, retry.duplicates) == (1500, 800, 700)
    assert payloads(client, topic) == values(1500)
    assert admin.get_topic_deduplication(topic) is True  # turned on through admin.url


def test_over_the_binary_protocol_a_partitioned_topic_is_routed_and_replayed_cleanly(broker, client, admin, topic):
    admin.create_partitioned_topic(topic, 3)
    writer = _binary_writer(broker, topic, spark_schema(value="binary", __key="string"))
    keys = [f"key-{i % 11}" for i in range(900)]
    rows = [batch(value=values(900), __key=pa.array(keys, pa.string()))]
    assert writer.write_partition(iter(rows), 0, 2, "q1").written == 900
    assert writer.write_partition(iter(rows), 0, 2, "q1").duplicates == 900
    stored = read_all(client, topic)
    assert sorted(m.data() for m in stored) == sorted(values(900))
    assert {m.topic_name().rsplit("-", 1)[1] for m in stored} == {"0", "1", "2"}


def test_a_wrong_transport_or_admin_url_is_named_on_the_driver():
    with pytest.raises(ValueError, match="transport='rest' is not valid; use auto"):
        PulsarLikeStreamWriter({"service.url": "pulsar://127.0.0.1:6650", "topic": "t", "transport": "rest"},
                               VALUE_ONLY, False)
    with pytest.raises(ValueError, match="admin.url='pulsar://x:6650' is not valid"):
        PulsarLikeStreamWriter({"service.url": "pulsar://127.0.0.1:6650", "topic": "t", "admin.url": "pulsar://x:6650"},
                               VALUE_ONLY, False)


def test_a_write_with_a_derived_avro_schema_to_pulsar_lite_stores_avro_records(pulsar_lite_broker):
    import io
    import json

    import fastavro
    from pyspark.sql import types as T

    from connector.spark.sink_schema import derived_topic_schema
    from connector.spark.writer import PulsarLikeBatchWriter

    topic = _topic()
    schema = T.StructType([T.StructField("id", T.LongType(), False), T.StructField("name", T.StringType())])
    writer = PulsarLikeBatchWriter({"service.url": pulsar_lite_broker.service_url, "topic": topic,
                                    "topicSchema": "avro"}, schema, False)  # no driver check there: no registry
    assert writer.write_partition(iter([batch(id=[1, 2], name=["ann", None])]), 0, 0, "w1").written == 2
    writer_schema = fastavro.parse_schema(json.loads(derived_topic_schema(schema, "AVRO").definition))
    records = [fastavro.schemaless_reader(io.BytesIO(v), writer_schema)
               for v in _official_values(pulsar_lite_broker, topic)]
    assert sorted(records, key=lambda r: r["id"]) == [{"id": 1, "name": "ann"}, {"id": 2, "name": None}]
