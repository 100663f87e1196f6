"""Typed columns (issue 22): a topic whose registered schema is Avro, JSON or a primitive reads as the
record's fields (or a typed ``value``) beside the metadata columns, as pulsar-spark gives them. The topics
are written with the official ``pulsar-client`` and its ``pulsar.schema`` records."""
from __future__ import annotations

import pytest

pulsar = pytest.importorskip("pulsar")
from pulsar.schema import (  # noqa: E402
    Array, AvroSchema, Double, Integer, JsonSchema, Long, Map, Record, String, StringSchema)

pytestmark = pytest.mark.spark

QUIET = pulsar.ConsoleLogger(pulsar.LoggerLevel.Error)


class Address(Record):
    city = String()
    zip = Integer()


class Order(Record):
    id = Long(required=True)
    customer = String()
    amount = Double()
    tags = Array(String())
    counts = Map(Integer())
    address = Address()


def orders(n: int) -> list[Order]:
    return [Order(id=i, customer=f"c{i}", amount=i * 1.5, tags=[f"t{i}", "x"], counts={"a": i},
                  address=Address(city=f"city{i}", zip=1000 + i)) for i in range(n)]


@pytest.fixture
def official(broker):
    client = pulsar.Client(broker.service_url, operation_timeout_seconds=10, logger=QUIET)
    yield client
    client.close()


def write(official, topic, schema, values, batching=True):
    producer = official.create_producer(topic, schema=schema, batching_enabled=batching)
    for value in values:
        producer.send_async(value, None)
    producer.flush()
    producer.close()


def record_rows(df):
    return [r.asDict(recursive=True) for r in sorted(df.collect(), key=lambda r: r["__offset"])]


@pytest.mark.parametrize("schema_class", [AvroSchema, JsonSchema])
def test_a_record_topic_reads_as_the_records_fields_in_typed_columns(source, official, topic, schema_class):
    write(official, topic, schema_class(Order), orders(5))
    df = source(stream=False, topic=topic).load()
    types = dict(df.dtypes)
    assert df.columns[:6] == ["id", "customer", "amount", "tags", "counts", "address"]
    assert "value" not in df.columns and "__key" in df.columns and "__messageId" in df.columns
    assert (types["id"], types["customer"], types["amount"]) == ("bigint", "string", "double")
    assert (types["tags"], types["counts"]) == ("array<string>", "map<string,int>")
    assert types["address"] == "struct<city:string,zip:int>"
    rows = record_rows(df)
    assert [r["id"] for r in rows] == list(range(5))
    assert rows[3]["customer"] == "c3" and rows[3]["amount"] == 4.5
    assert rows[3]["tags"] == ["t3", "x"] and rows[3]["counts"] == {"a": 3}
    assert rows[3]["address"] == {"city": "city3", "zip": 1003}
    assert df.where("address.zip > 1002").count() == 2  # nested fields are queryable


def test_a_record_topic_read_from_an_offset_inside_a_batch_decodes_from_there(source, official, topic):
    import json

    write(official, topic, AvroSchema(Order), orders(20))
    df = source(stream=False, topic=topic, startingOffsets=json.dumps({topic: {"-1": 7}})).load()
    assert [r["id"] for r in record_rows(df)] == list(range(7, 20))


def test_a_stream_of_an_avro_topic_has_the_typed_columns_too(source, official, topic, tmp_path):
    write(official, topic, AvroSchema(Order), orders(4))
    df = source(stream=True, topic=topic, startingOffsets="earliest").load()
    assert df.columns[:2] == ["id", "customer"]
    query = (df.select("id", "address.city").writeStream.format("memory").queryName("typed_stream")
             .option("checkpointLocation", str(tmp_path / "ck")).trigger(availableNow=True).start())
    query.awaitTermination(120)
    spark = df.sparkSession
    got = sorted(tuple(r) for r in spark.sql("select * from typed_stream").collect())
    assert got == [(i, f"city{i}") for i in range(4)]


def test_a_primitive_schema_reads_as_a_typed_value(source, official, topic):
    write(official, topic, StringSchema(), ["héllo", "world"])
    df = source(stream=False, topic=topic).load()
    assert dict(df.dtypes)["value"] == "string"
    assert sorted(r["value"] for r in df.collect()) == ["héllo", "world"]


def test_a_topic_without_a_schema_still_reads_bytes(source, client, topic):
    producer = client.create_producer(topic)
    producer.send(b"raw")
    producer.close()
    df = source(stream=False, topic=topic).load()
    assert dict(df.dtypes)["value"] == "binary"
    assert [r["value"] for r in df.collect()] == [b"raw"]


class OrderV2(Record):
    id = Long(required=True)
    customer = String()
    amount = Double()
    tags = Array(String())
    counts = Map(Integer())
    address = Address()
    note = String(required_default=True)  # a default: a compatible (FULL) change


OrderV2.__name__ = "Order"  # one record evolving under its name: Avro's rules refuse a record renamed


def test_avro_records_of_an_older_schema_version_are_read_in_the_newer_ones_columns(source, official, topic):
    write(official, topic, AvroSchema(Order), orders(2))
    write(official, topic, AvroSchema(OrderV2), [OrderV2(id=9, customer="new", note="hi")])
    df = source(stream=False, topic=topic).load()
    assert "note" in df.columns
    rows = record_rows(df)
    assert [(r["id"], r["note"]) for r in rows] == [(0, None), (1, None), (9, "hi")]


def test_topics_with_different_schemas_read_together_are_refused_clearly(source, official, topic):
    other = topic + "-other"
    write(official, topic, AvroSchema(Order), orders(1))
    write(official, other, StringSchema(), ["s"])
    with pytest.raises(Exception, match="different schemas"):
        source(stream=False, topics=f"{topic},{other}").load().collect()


# --- the decoding itself, without Spark ------------------------------------------------------------------
def byte_batch(payloads, topic="persistent://public/default/t"):
    import pyarrow as pa

    from connector.spark.schema import ARROW_SCHEMA

    n = len(payloads)
    columns = [pa.array(payloads, pa.binary()), pa.nulls(n, pa.string()), pa.array([topic] * n),
               pa.array([-1] * n, pa.int32()), pa.array(range(40, 40 + n), pa.int64())]
    columns += [pa.nulls(n, f.type) for f in list(ARROW_SCHEMA)[5:]]
    return pa.RecordBatch.from_arrays(columns, schema=ARROW_SCHEMA)


def avro_values():
    from connector.spark.typed_values import TopicSchema, TypedValues

    schema = AvroSchema(Order)
    return schema, TypedValues(TopicSchema("AVRO", schema.schema_info().schema(), 0))


def test_avro_values_decode_into_columns_and_a_null_value_into_a_null_row():
    schema, typed = avro_values()
    out = typed.convert(byte_batch([schema.encode(o) for o in orders(2)] + [None]), [0, 0, 0])
    assert out.column("id").to_pylist() == [0, 1, None]
    assert out.column("address").to_pylist()[1] == {"city": "city1", "zip": 1001}
    assert out.column("__offset").to_pylist() == [40, 41, 42]


@pytest.mark.parametrize("damage", [lambda b: b[:-3], lambda b: b + b"\x00\x00"])
def test_an_avro_value_that_is_not_the_schemas_fails_naming_its_offset(damage):
    from connector.spark.typed_values import TypedValueError

    schema, typed = avro_values()
    good = [schema.encode(o) for o in orders(3)]
    with pytest.raises(TypedValueError, match=r"partition -1 offset 41: an Avro value"):
        typed.convert(byte_batch([good[0], damage(good[1]), good[2]]), [0, 0, 0])


def test_schemas_that_cannot_be_columns_are_refused_clearly():
    import json

    from connector.spark.typed_values import UnsupportedSchema, record_fields

    union = {"type": "record", "name": "R", "fields": [{"name": "x", "type": ["null", "int", "string"]}]}
    with pytest.raises(UnsupportedSchema, match="several non-null types"):
        record_fields(json.dumps(union))
    clash = {"type": "record", "name": "R", "fields": [{"name": "__key", "type": "string"}]}
    with pytest.raises(UnsupportedSchema, match="__key clash"):
        record_fields(json.dumps(clash))


# --- the sink's typed write ------------------------------------------------------------------------------
@pytest.mark.parametrize("schema_class", [AvroSchema, JsonSchema])
def test_a_dataframe_is_written_as_records_of_the_topics_schema(spark, broker, official, topic, schema_class):
    write(official, topic, schema_class(Order), orders(1))  # the topic and its schema, as an app makes them
    consumer = official.subscribe(topic, "check", schema=schema_class(Order),
                                  initial_position=pulsar.InitialPosition.Earliest)
    df = spark.createDataFrame(
        [(10, "ann", 2.5, ["a"], {"x": 1}, ("Paris", 75001), "k10"), (11, None, None, None, None, None, "k11")],
        "id long, customer string, amount double, tags array<string>, counts map<string,int>, "
        "address struct<city:string,zip:int>, __key string")
    (df.write.format("pulsarlike").option("service.url", broker.service_url).option("topic", topic)
     .mode("append").save())
    got = [consumer.receive(10_000) for _ in range(3)]
    assert got[0].value().id == 0
    ann, blank = sorted(got[1:], key=lambda m: m.value().id)
    assert (ann.value().customer, ann.value().amount, ann.value().tags) == ("ann", 2.5, ["a"])
    assert ann.value().counts == {"x": 1} and ann.value().address.city == "Paris"
    assert ann.partition_key() == "k10"
    assert blank.value().id == 11 and blank.value().customer is None
    # and Spark reads them back as the same columns
    back = spark.read.format("pulsarlike").option("service.url", broker.service_url).option("topic", topic).load()
    assert sorted(r["id"] for r in back.collect()) == [0, 10, 11]


def test_a_column_the_record_does_not_have_is_refused_before_anything_is_written(spark, broker, official, topic):
    write(official, topic, AvroSchema(Order), orders(1))
    df = spark.createDataFrame([(1, "x")], "id long, colour string")
    with pytest.raises(Exception, match="colour are not fields of"):
        (df.write.format("pulsarlike").option("service.url", broker.service_url).option("topic", topic)
         .mode("append").save())
