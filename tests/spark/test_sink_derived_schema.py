"""The sink's option topicSchema (avro | json): a record schema derived from the DataFrame's columns
(connector.spark.sink_schema), checked on the driver against the topic's, registered by the tasks'
producers, and written as records that pulsar-client's AvroSchema/JsonSchema of an equivalent Record reads.
The mapping is tested without Spark; two tests run a write on the session's SparkSession."""
from __future__ import annotations

import datetime
import io
import json

import fastavro
import pyarrow as pa
import pytest
from pyspark.sql import types as T

from broker_core.errors import IncompatibleSchema
from connector.spark.sink_options import SinkSchemaError, parse_sink_options
from connector.spark.sink_records import encode_records
from connector.spark.sink_schema import avro_record, derived_topic_schema, plan_derived_columns
from connector.spark.writer import PulsarLikeBatchWriter

pulsar = pytest.importorskip("pulsar")
from pulsar.schema import Array, AvroSchema, Double, Integer, JsonSchema, Long, Map, Record, String  # noqa: E402

URL = "pulsar://127.0.0.1:6650"


def field(name, data_type, nullable=True):
    return T.StructField(name, data_type, nullable)


ADDRESS = T.StructType([field("city", T.StringType()), field("zip", T.IntegerType(), False)])
ORDERS = T.StructType([
    field("id", T.LongType(), False), field("customer", T.StringType()), field("amount", T.DoubleType()),
    field("tags", T.ArrayType(T.StringType())), field("counts", T.MapType(T.StringType(), T.IntegerType())),
    field("address", ADDRESS), field("__key", T.StringType())])


class address(Record):  # noqa: N801  (named after its field: Avro resolution matches nested records by name)
    city = String()
    zip = Integer(required=True)


class Order(Record):
    id = Long(required=True)
    customer = String()
    amount = Double()
    tags = Array(String())
    counts = Map(Integer())
    address = address()


# the sink's top-level record name: a consumer's schema is checked by Avro's rules, which compare record names
Order.__name__ = "topLevelRecord"


def without_names_and_defaults(definition):
    """A definition's layout: what Avro's binary encoding depends on."""
    if isinstance(definition, list):
        return [without_names_and_defaults(d) for d in definition]
    if isinstance(definition, dict):
        return {k: without_names_and_defaults(v) for k, v in definition.items()
                if k not in ("name", "namespace", "default") or (k == "name" and "type" in definition
                                                                 and definition.get("type") != "record")}
    return definition


# --- the mapping -----------------------------------------------------------------------------------------
def test_every_supported_type_maps_to_its_avro_type():
    schema = T.StructType([
        field("b", T.BooleanType(), False), field("i8", T.ByteType(), False), field("i16", T.ShortType(), False),
        field("i32", T.IntegerType(), False), field("i64", T.LongType(), False), field("f", T.FloatType(), False),
        field("d", T.DoubleType(), False), field("s", T.StringType(), False), field("raw", T.BinaryType(), False),
        field("day", T.DateType(), False), field("at", T.TimestampType(), False),
        field("local", T.TimestampNTZType(), False)])
    types = [f["type"] for f in avro_record(schema)["fields"]]
    assert types == ["boolean", "int", "int", "int", "long", "float", "double", "string", "bytes",
                     {"type": "int", "logicalType": "date"}, {"type": "long", "logicalType": "timestamp-micros"},
                     {"type": "long", "logicalType": "local-timestamp-micros"}]


def test_nested_records_are_named_after_their_fields_in_their_parents_namespace():
    definition = avro_record(T.StructType([field("address", T.StructType([
        field("geo", T.StructType([field("lat", T.DoubleType(), False)]), False)]), False)]))
    outer = definition["fields"][0]["type"]
    assert (definition["name"], outer["name"], outer["namespace"]) == ("topLevelRecord", "address", "topLevelRecord")
    assert (outer["fields"][0]["type"]["name"], outer["fields"][0]["type"]["namespace"]) == \
        ("geo", "topLevelRecord.address")
    fastavro.parse_schema(definition)  # a valid Avro schema


def test_nullable_columns_are_unions_with_null_defaulting_to_null_elements_are_never_null():
    fields = avro_record(ORDERS)["fields"]
    assert fields[0] == {"name": "id", "type": "long"}
    assert fields[1] == {"name": "customer", "type": ["null", "string"], "default": None}
    assert fields[3]["type"] == ["null", {"type": "array", "items": "string"}]
    assert fields[4]["type"] == ["null", {"type": "map", "values": "int"}]
    assert [f["name"] for f in fields] == ["id", "customer", "amount", "tags", "counts", "address"]  # no __key


def test_the_layout_is_the_one_pulsar_client_gives_an_equivalent_record():
    assert without_names_and_defaults(avro_record(ORDERS)) == without_names_and_defaults(Order.schema())


@pytest.mark.parametrize("data_type, column, message", [
    (T.DecimalType(10, 2), "price", "decimal.*cast it to double or string"),
    (T.DayTimeIntervalType(), "price", "interval"),
    (T.NullType(), "price", "void"),
    (T.MapType(T.IntegerType(), T.StringType()), "price", "an Avro map has string keys"),
    (T.StructType([field("cents", T.DecimalType(5, 0))]), "price.cents", "decimal"),
    (T.ArrayType(T.CalendarIntervalType()), "price[]", "interval"),
])
def test_a_column_avro_cannot_hold_is_refused_naming_it(data_type, column, message):
    with pytest.raises(SinkSchemaError, match=message) as refused:
        avro_record(T.StructType([field("id", T.LongType()), field("price", data_type)]))
    assert refused.value.column == column and repr(column) in str(refused.value)


def test_a_column_name_avro_does_not_allow_is_refused_with_a_rename():
    with pytest.raises(SinkSchemaError, match=r"'order id' is not a valid Avro field name.*'order_id'"):
        avro_record(T.StructType([field("order id", T.LongType())]))


def test_a_dataframe_of_only_sink_columns_has_nothing_to_derive():
    with pytest.raises(SinkSchemaError, match="has none besides the sink's __ columns"):
        avro_record(T.StructType([field("__key", T.StringType())]))


def test_the_option_takes_avro_or_json_only():
    assert parse_sink_options({"service.url": URL, "topicschema": "Avro"}, streaming=False).topic_schema == "AVRO"
    with pytest.raises(ValueError, match="topicSchema='protobuf' is not valid; use avro or json"):
        parse_sink_options({"service.url": URL, "topicSchema": "protobuf"}, streaming=False)


def test_a_value_column_is_a_field_and_the_sink_columns_keep_their_meaning():
    schema = T.StructType([field("__key", T.StringType()), field("value", T.StringType()), field("n", T.IntegerType())])
    options = parse_sink_options({"service.url": URL, "topic": "t", "topicSchema": "json"}, streaming=False)
    columns = plan_derived_columns(schema, options, derived_topic_schema(schema, "JSON"))
    assert (columns.record.names, columns.record.indices, columns.key, columns.value) == (("value", "n"), (1, 2), 0, -1)


# --- encoding --------------------------------------------------------------------------------------------
AT = datetime.datetime(2024, 5, 1, 12, 0, 0, 250, tzinfo=datetime.timezone.utc)
TIMES = T.StructType([field("at", T.TimestampType()), field("day", T.DateType()), field("raw", T.BinaryType()),
                      field("address", ADDRESS)])
TIMES_BATCH = pa.RecordBatch.from_pydict({
    "at": pa.array([AT], pa.timestamp("us", tz="UTC")), "day": pa.array([datetime.date(2024, 5, 1)]),
    "raw": pa.array([b"\x00\xff"]), "address": pa.array([{"city": "Paris", "zip": 75001}])})


def encoded(kind):
    options = parse_sink_options({"service.url": URL, "topic": "t", "topicSchema": kind}, streaming=False)
    columns = plan_derived_columns(TIMES, options, derived_topic_schema(TIMES, kind.upper()))
    return encode_records(TIMES_BATCH, columns.record), columns.record.topic_schema.definition


def test_avro_records_decode_with_the_derived_definition():
    [data], definition = encoded("avro")
    got = fastavro.schemaless_reader(io.BytesIO(data), fastavro.parse_schema(json.loads(definition)))
    assert got == {"at": AT, "day": datetime.date(2024, 5, 1), "raw": b"\x00\xff",
                   "address": {"city": "Paris", "zip": 75001}}


def test_json_writes_timestamps_dates_and_binary_as_the_definition_types_them():
    [data], _ = encoded("json")
    assert json.loads(data) == {"at": 1714564800000250, "day": 19844, "raw": "AP8=",
                                "address": {"city": "Paris", "zip": 75001}}


# --- the driver's check, against a broker -----------------------------------------------------------------
def test_an_incompatible_dataframe_is_refused_on_the_driver_before_anything_is_written(broker, admin, topic):
    admin.upload_schema(topic, "AVRO", {"type": "record", "name": "R", "fields": [{"name": "id", "type": "string"}]})
    with pytest.raises(IncompatibleSchema, match=r"derived from the DataFrame.*FULL.*type_mismatch at /fields/0"):
        PulsarLikeBatchWriter({"service.url": broker.service_url, "topic": topic, "topicSchema": "avro"},
                              T.StructType([field("id", T.LongType(), False)]), False)
    assert admin.get_schema(topic)["version"] == 0  # nothing registered by asking


# --- Spark -----------------------------------------------------------------------------------------------
@pytest.mark.spark
@pytest.mark.parametrize("kind, official_schema", [("avro", AvroSchema), ("json", JsonSchema)])
def test_a_dataframe_written_with_topic_schema_is_read_by_pulsar_clients_record(spark, broker, admin, topic, kind,
                                                                              official_schema):
    df = spark.createDataFrame([(1, "ann", 2.5, ["a", "b"], {"x": 1}, ("Paris", 75001), "k1"),
                                (2, None, None, None, None, None, "k2")], ORDERS)
    (df.write.format("pulsarlike").option("service.url", broker.service_url).option("topic", topic)
     .option("topicSchema", kind).mode("append").save())

    registered = admin.get_schema(topic)
    assert (registered["version"], registered["type"]) == (0, kind.upper())
    assert json.loads(registered["data"]) == avro_record(ORDERS)
    official = pulsar.Client(broker.service_url, operation_timeout_seconds=10,
                             logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        consumer = official.subscribe(topic, "check", schema=official_schema(Order),
                                      initial_position=pulsar.InitialPosition.Earliest)
        got = sorted((consumer.receive(10_000) for _ in range(2)), key=lambda m: m.value().id)
    finally:
        official.close()
    ann, blank = got[0].value(), got[1].value()
    assert (ann.customer, ann.amount, ann.tags, ann.counts) == ("ann", 2.5, ["a", "b"], {"x": 1})
    assert ann.address.city == "Paris" and got[0].partition_key() == "k1"
    assert (blank.id, blank.customer, blank.address) == (2, None, None)
