"""``__key`` as pulsar-spark's type: binary (the key's bytes, as Java's ``getKeyBytes()``) by default; option
``keyType=string`` keeps pulsarlike 0.1's string column; the sink takes either type."""
from __future__ import annotations

import base64

import pyarrow as pa
import pytest

from broker_core.protocol import codec, pulsar_api_pb2
from connector.client.entries import decode as split
from connector.client.key_bytes import B64Key, b64_key_header, key_bytes, message_key_bytes
from connector.spark.arrow_batches import BatchBuilder
from connector.spark.options import parse_source_options
from connector.spark.schema import ARROW_SCHEMA, ARROW_SCHEMA_STRING_KEY, spark_schema
from connector.spark.sink_options import parse_sink_options, plan_columns
from connector.spark.sink_rows import rows_of
from tests.spark.sink_helpers import batch, read_all, spark_schema as sink_schema

pulsar = pytest.importorskip("pulsar")

URL = "pulsar://127.0.0.1:6650"
TOPIC = "persistent://public/default/keys"
RAW = b"\xff\x00k"
"""Key bytes that are not UTF-8: only a base64-flagged key can carry them."""


def single_entry(key: str, b64: bool) -> tuple:
    metadata = pulsar_api_pb2.MessageMetadata(producer_name="p", sequence_id=1, publish_time=5, partition_key=key)
    if b64:
        metadata.partition_key_b64_encoded = True
    return codec.decode_entry(codec.encode_entry(metadata, b"v"))


def batch_with_b64_key() -> tuple:
    """A batch of three: a plain key, a base64-flagged key, no key."""
    payload = (codec.single_message_header(1, "plain") + b"a"
               + b64_key_header(1, B64Key.of(RAW), None, None, 0, None) + b"b" + codec.single_message_header(1) + b"c")
    metadata = pulsar_api_pb2.MessageMetadata(producer_name="p", sequence_id=1, publish_time=5,
                                              num_messages_in_batch=3)
    return codec.decode_entry(codec.encode_entry(metadata, payload))


def built(entry: tuple, count: int, key_type: str = "binary") -> pa.RecordBatch:
    builder = BatchBuilder(TOPIC, -1, key_type)
    builder.add(split(*entry, 3, 0), 0, count)
    return builder.build()


# --- units -------------------------------------------------------------------------------------------------
def test_keys_are_their_bytes_and_a_base64_flagged_key_is_decoded():
    assert built(single_entry("k1", False), 1).column("__key").to_pylist() == [b"k1"]
    assert built(single_entry(base64.b64encode(RAW).decode(), True), 1).column("__key").to_pylist() == [RAW]
    rows = built(batch_with_b64_key(), 3)
    assert rows.schema.equals(ARROW_SCHEMA) and rows.schema.field("__key").type == pa.binary()
    assert rows.column("__key").to_pylist() == [b"plain", RAW, None]


def test_key_type_string_gives_the_keys_as_stored_as_pulsarlike_0_1_did():
    rows = built(batch_with_b64_key(), 3, "string")
    assert rows.schema.equals(ARROW_SCHEMA_STRING_KEY)
    assert rows.column("__key").to_pylist() == ["plain", base64.b64encode(RAW).decode(), None]


def test_a_flagged_key_that_is_not_base64_reads_as_its_utf8_bytes():
    assert key_bytes("not base64!", True) == b"not base64!"


def test_key_type_option_defaults_to_binary_and_takes_string_in_any_case():
    base = {"service.url": URL, "topic": "t"}
    assert parse_source_options(base, streaming=False).key_type == "binary"
    assert parse_source_options({**base, "keytype": " STRING "}, streaming=True).key_type == "string"


def test_a_bad_key_type_is_refused_naming_the_valid_values():
    with pytest.raises(ValueError, match=r"option keyType='text' is not valid; use 'binary' .* or 'string'"):
        parse_source_options({"service.url": URL, "topic": "t", "keyType": "text"}, streaming=False)


def test_the_string_key_arrow_schema_is_sparks_string_key_schema():
    from pyspark.sql.pandas.types import to_arrow_schema

    assert to_arrow_schema(spark_schema("string"), timezone="UTC").equals(ARROW_SCHEMA_STRING_KEY)
    assert spark_schema().simpleString().startswith("struct<value:binary,__key:binary,")


def test_the_sink_sends_binary_keys_as_their_text_when_utf8_else_as_key_bytes_and_string_keys_as_they_are():
    options = parse_sink_options({"service.url": URL, "topic": "t"}, True)
    binary = rows_of(batch(value=[b"a", b"b", b"c"], __key=pa.array([RAW, None, "kè".encode()], pa.binary())),
                     plan_columns(sink_schema(value="binary", __key="binary"), options), 0, 0)
    assert binary.keys == [base64.b64encode(RAW).decode(), None, "kè"]
    assert type(binary.keys[0]) is B64Key and type(binary.keys[2]) is str
    text = rows_of(batch(value=[b"a"], __key=["k"]), plan_columns(sink_schema(value="binary", __key="string"),
                                                                  options), 0, 0)
    assert text.keys == ["k"] and type(text.keys[0]) is str


# --- through Spark and a broker ----------------------------------------------------------------------------
@pytest.mark.parametrize("batched", [False, True])
def test_our_client_reads_the_key_as_stored_and_its_bytes_as_java_would(client, topic, batched):
    producer = client.create_producer(topic, batching_enabled=batched)
    for key in (B64Key.of(RAW), "k1", None):
        producer.send_async(b"v", None, partition_key=key)
    producer.flush()
    consumer = client.subscribe(topic, "keys", initial_position=pulsar.InitialPosition.Earliest)
    got = [consumer.receive(10_000) for _ in range(3)]
    consumer.close()
    producer.close()
    assert [m.partition_key() for m in got] == [base64.b64encode(RAW).decode(), "k1", ""]  # as pulsar-client
    assert [message_key_bytes(m) for m in got] == [RAW, b"k1", None]


@pytest.fixture
def official(broker):
    client = pulsar.Client(broker.service_url, operation_timeout_seconds=10,
                           logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    yield client
    client.close()


def keys_by_offset(df) -> list:
    return [r["__key"] for r in sorted(df.select("__key", "__offset").collect(), key=lambda r: r["__offset"])]


@pytest.mark.spark
@pytest.mark.parametrize("batched", [False, True])
def test_the_source_reads_keys_as_bytes_and_with_key_type_string_as_text(source, client, official, topic, batched):
    theirs = official.create_producer(topic, batching_enabled=False)
    theirs.send(b"a", partition_key="k1")
    theirs.send(b"b")
    theirs.close()
    ours = client.create_producer(topic, batching_enabled=batched)
    for value in (b"c", b"d"):
        ours.send_async(value, None, partition_key=B64Key.of(RAW))  # Java's keyBytes; pulsar-client has none
    ours.flush()
    ours.close()
    assert keys_by_offset(source(stream=False, topic=topic).load()) == [b"k1", None, RAW, RAW]
    stored = base64.b64encode(RAW).decode()
    as_text = source(stream=False, topic=topic, keyType="string").load()
    assert as_text.schema["__key"].dataType.simpleString() == "string"
    assert keys_by_offset(as_text) == ["k1", None, stored, stored]


@pytest.mark.spark
def test_a_typed_topic_keeps_the_key_type_asked_for(source, official, topic):
    producer = official.create_producer(topic, schema=pulsar.schema.StringSchema())
    producer.send("hello", partition_key="k")
    producer.close()
    assert source(stream=False, topic=topic).load().collect()[0]["__key"] == b"k"
    row = source(stream=False, topic=topic, keyType="string").load().collect()[0]
    assert (row["value"], row["__key"]) == ("hello", "k")


@pytest.mark.spark
def test_the_sink_writes_binary_and_string_keys_that_clients_read_back(spark, broker, client, official, source,
                                                                       topic):
    from pyspark.sql import functions as F

    df = spark.createDataFrame([("a", RAW), ("b", b"k2")], "value STRING, __key BINARY")
    df.write.format("pulsarlike").option("service.url", broker.service_url).option("topic", topic) \
        .option("writeId", "binary-keys").mode("append").save()
    df.select("value", F.lit("k3").alias("__key")).write.format("pulsarlike") \
        .option("service.url", broker.service_url).option("topic", topic).option("writeId", "string-keys") \
        .mode("append").save()
    consumer = official.subscribe(topic, "keys", initial_position=pulsar.InitialPosition.Earliest)
    seen = [consumer.receive(10_000) for _ in range(4)]
    consumer.close()
    assert sorted(m.partition_key() for m in seen) == sorted([base64.b64encode(RAW).decode(), "k2", "k3", "k3"])
    assert sorted(m.partition_key() for m in read_all(client, topic)) == sorted(m.partition_key() for m in seen)
    assert sorted(keys_by_offset(source(stream=False, topic=topic).load())) == sorted([RAW, b"k2", b"k3", b"k3"])


@pytest.mark.spark
def test_a_stream_gives_the_key_type_asked_for(spark, source, client, topic, tmp_path):
    producer = client.create_producer(topic)
    producer.send(b"a", partition_key="k1")
    producer.close()
    name = f"keys_{topic.rsplit('-', 1)[-1]}"
    query = (source(topic=topic, startingOffsets="earliest", keyType="string").load()
             .writeStream.format("memory").queryName(name).option("checkpointLocation", str(tmp_path))
             .trigger(availableNow=True).start())
    query.awaitTermination(120)
    rows = spark.sql(f"SELECT __key FROM {name}")
    assert rows.schema["__key"].dataType.simpleString() == "string"
    assert [r["__key"] for r in rows.collect()] == ["k1"]
