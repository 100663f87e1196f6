"""The sink's derived schema (option ``topicSchema``, ``avro`` or ``json``): a record schema made from the
DataFrame's own columns, registered for the topic, and the rows written as records of it.

The record's fields are the columns not starting with ``__`` (a ``value`` column too: it is a field like
any other here), in the DataFrame's order; the ``__`` columns keep their meaning (``__key``, ``__topic``,
``__eventTime`` ...). The definition is an Avro record (a JSON schema's definition is one too, as in
Pulsar), named as Spark's Avro writer and StreamNative's pulsar-spark name theirs: the top level
``topLevelRecord``, a nested record after its field, in its parent's namespace
(``topLevelRecord.address``).

==============================  ==============================================================
Spark type                      Avro type
==============================  ==============================================================
boolean                         ``boolean``
byte, short, int                ``int``
long                            ``long``
float / double                  ``float`` / ``double``
string (char, varchar)          ``string``
binary                          ``bytes`` (JSON: base64 text, as Java's JSON schema writes bytes)
date                            ``int`` with ``logicalType: date`` (JSON: days since the epoch)
timestamp                       ``long`` with ``logicalType: timestamp-micros`` (JSON: microseconds)
timestamp_ntz                   ``long`` with ``logicalType: local-timestamp-micros``
struct                          a nested ``record``
array<T>                        ``array`` of T (elements never null, as pulsar-client's ``Array``)
map<string, T>                  ``map`` of T (values never null, as pulsar-client's ``Map``)
a nullable column or field      ``["null", T]`` with ``"default": null``
==============================  ==============================================================

So the layout is the one pulsar-client gives an equivalent ``Record`` -- fields ``required=True`` where the
column is not nullable, optional (its default) where it is -- and its ``AvroSchema``/``JsonSchema`` reads
the records. The ``null`` defaults are the one addition: they make a later nullable column a compatible
evolution under ``BACKWARD``. A null array element or map value fails its task naming the row (Avro); nested
records are matched by name in Avro's resolution, so a reader's nested ``Record`` classes are best named
after their fields (pulsar-client otherwise falls back to its own definition, with a warning).
Anything else (decimal, intervals, a map with non-string keys, void, a user-defined type) is refused on the
driver with :class:`~connector.spark.sink_options.SinkSchemaError` naming the column (``address.zip`` for a
nested one), as is a column whose name Avro does not allow.

Registration: with option ``topic``, the driver asks the broker first whether the topic takes the schema
(``Admin.test_schema_compatibility``, the namespace's strategy), so an incompatible DataFrame fails before
any task runs (:class:`~broker_core.errors.IncompatibleSchema` with the broker's reason); each task's
producers then register it (``GetOrCreateSchema``: the broker's registry decides and versions) and their
messages carry its version. With a ``__topic`` column, each topic is checked when its producer opens.
"""
from __future__ import annotations

import dataclasses
import json
import re
from typing import Any

from broker_core import errors

from connector.spark.sink_options import SinkColumns, SinkOptions, SinkSchemaError, plan_columns
from connector.spark.sink_records import RecordColumns
from connector.spark.typed_values import TopicSchema

TOP_LEVEL_RECORD = "topLevelRecord"
"""The record's name (Spark's Avro writer's and pulsar-spark's)."""
_AVRO_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def derived_topic_schema(schema: Any, kind: str) -> TopicSchema:
    """The ``kind`` (``AVRO``/``JSON``) topic schema of the DataFrame schema ``schema``'s record columns."""
    definition = avro_record(schema)
    return TopicSchema(kind, json.dumps(definition), -1, kind)


def avro_record(schema: Any) -> dict[str, Any]:
    """The Avro record of ``schema``'s columns not starting with ``__``; ``SinkSchemaError`` naming the first
    column that has no Avro type."""
    fields = [f for f in schema.fields if not f.name.startswith("__")]
    if not fields:
        raise SinkSchemaError("option topicSchema writes the DataFrame's columns as a record's fields, and it "
                              f"has none besides the sink's __ columns ({', '.join(schema.fieldNames())}): add "
                              "the columns to write, or drop topicSchema and give a value column", "")
    return _record(fields, TOP_LEVEL_RECORD, "", "")


def _record(fields: list, name: str, namespace: str, path: str) -> dict[str, Any]:
    inner = f"{namespace}.{name}" if namespace else name
    out: dict[str, Any] = {"type": "record", "name": name}
    if namespace:
        out["namespace"] = namespace
    out["fields"] = []
    for field in fields:
        where = f"{path}.{field.name}" if path else field.name
        if not _AVRO_NAME.match(field.name):
            raise SinkSchemaError(f"column {where!r} is not a valid Avro field name (letters, digits and _, not "
                                  "starting with a digit), which option topicSchema needs: rename it, e.g. "
                                  f"withColumnRenamed({field.name!r}, {re.sub(r'[^A-Za-z0-9_]', '_', field.name)!r})"
                                  + (" (a nested field: rebuild the struct with struct(...))" if path else ""),
                                  where)
        entry: dict[str, Any] = {"name": field.name,
                                 "type": _avro_type(field.dataType, field.nullable, field.name, inner, where)}
        if field.nullable:
            entry["default"] = None
        out["fields"].append(entry)
    return out


def _avro_type(data_type: Any, nullable: bool, name: str, namespace: str, where: str) -> Any:
    from pyspark.sql import types as T

    found: Any
    if isinstance(data_type, T.BooleanType):
        found = "boolean"
    elif isinstance(data_type, (T.ByteType, T.ShortType, T.IntegerType)):
        found = "int"
    elif isinstance(data_type, T.LongType):
        found = "long"
    elif isinstance(data_type, T.FloatType):
        found = "float"
    elif isinstance(data_type, T.DoubleType):
        found = "double"
    elif isinstance(data_type, (T.StringType, T.CharType, T.VarcharType)):
        found = "string"
    elif isinstance(data_type, T.BinaryType):
        found = "bytes"
    elif isinstance(data_type, T.DateType):
        found = {"type": "int", "logicalType": "date"}
    elif isinstance(data_type, T.TimestampNTZType):
        found = {"type": "long", "logicalType": "local-timestamp-micros"}
    elif isinstance(data_type, T.TimestampType):
        found = {"type": "long", "logicalType": "timestamp-micros"}
    elif isinstance(data_type, T.StructType):
        found = _record(list(data_type.fields), name, namespace, where)
    elif isinstance(data_type, T.ArrayType):
        # elements and map values are never null in the definition, as in pulsar-client's Array and Map
        # (Spark marks them nullable almost always, and a union there would make Records unable to read it)
        found = {"type": "array", "items": _avro_type(data_type.elementType, False, name, namespace, f"{where}[]")}
    elif isinstance(data_type, T.MapType):
        if not isinstance(data_type.keyType, T.StringType):
            raise SinkSchemaError(f"column {where!r} is a {data_type.simpleString()}; an Avro map has string "
                                  "keys: cast its keys, e.g. transform_keys(col, (k, v) -> cast(k as string))",
                                  where)
        found = {"type": "map", "values": _avro_type(data_type.valueType, False, name, namespace, f"{where}{{}}")}
    else:
        hint = ("cast it to double or string" if isinstance(data_type, T.DecimalType)
                else "cast it to a type the table lists (e.g. string), or drop it")
        raise SinkSchemaError(f"column {where!r} has type {data_type.simpleString()}, which option topicSchema "
                              f"cannot map to an Avro type: {hint}", where)
    return ["null", found] if nullable else found


def plan_derived_columns(schema: Any, options: SinkOptions, topic_schema: TopicSchema) -> SinkColumns:
    """The sink's columns for a derived-schema write: every column not starting with ``__`` is a field."""
    from pyspark.sql.types import BinaryType, StructField, StructType

    given = [(i, f.name) for i, f in enumerate(schema.fields) if not f.name.startswith("__")]
    # the __ columns planned as usual; the record's columns stand aside under names the planner ignores
    # (a "value" among them is a field here), and a stand-in value column goes after them all
    stand_ins = [f if f.name.startswith("__") else StructField(f"record field {i}", f.dataType)
                 for i, f in enumerate(schema.fields)]
    planned = plan_columns(StructType(stand_ins + [StructField("value", BinaryType())]), options)
    record = RecordColumns(topic_schema, tuple(i for i, _ in given), tuple(n for _, n in given), derived=True)
    return dataclasses.replace(planned, value=-1, value_is_string=False, record=record)


def check_compatible(options: SinkOptions, topic_schema: TopicSchema) -> None:
    """On the driver, with option ``topic``: ``IncompatibleSchema`` with the broker's reason when the topic
    would refuse the derived schema (nothing is registered by asking)."""
    if options.topic is None:
        return
    from connector import Admin

    timeout_s = options.operation_timeout_ms / 1000.0
    with Admin(options.service_url, operation_timeout_seconds=timeout_s,
               connection_timeout_ms=options.operation_timeout_ms,
               **options.security.client_kwargs(options.service_url)) as admin:
        answer = admin.test_schema_compatibility(options.topic, topic_schema.kind, topic_schema.definition)
    if not answer.get("compatibility", True):
        raise errors.IncompatibleSchema(
            f"the {topic_schema.kind} schema derived from the DataFrame (option topicSchema) is not compatible "
            f"with the schema of {options.topic} under its strategy {answer.get('schemaCompatibilityStrategy')}: "
            f"{answer.get('reason', 'refused')}. Make the columns fit (a new column nullable, so it has a "
            "default; no type changes), or write to another topic", topic=options.topic)
