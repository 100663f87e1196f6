"""The rows the ``pulsarlike`` source produces (ARCHITECTURE §8), as a Spark schema and as the Arrow
schema its ``read()`` yields record batches in.

==========================  =====================  ==========================================================
column                      Spark type             what
==========================  =====================  ==========================================================
``value``                   binary                 the payload (null for a message sent with a null value)
``__key``                   binary                 the key's bytes (as Java's ``getKeyBytes()``), null: no key
``__topic``                 string                 the message's topic, fully qualified: a partition's name
                                                   (``-partition-<i>``) unless ``topicColumn=topic``
``__partition``             int                    the partition index, -1 for a non-partitioned topic
``__offset``                long                   the message's dense offset in its topic partition
``__messageId``             binary                 ``MessageId.serialize()`` (pulsar-client's bytes)
``__publishTime``           timestamp              publish time set by the producer
``__eventTime``             timestamp              event time, null when the producer set none
``__messageProperties``     map<string,string>     properties (empty map when none)
``__producerName``          string                 the producer's name
``__sequenceId``            long                   the producer's sequence id of the message
==========================  =====================  ==========================================================

``__key`` is binary, as in StreamNative's pulsar-spark: a key flagged ``partition_key_b64_encoded`` (sent as
bytes, e.g. Java's ``keyBytes``) is its decoded bytes, any other key its UTF-8 bytes. Option ``keyType=string``
(:data:`KEY_TYPES`) gives pulsarlike 0.1's string column instead: the key as stored (base64 text for a
flagged key). ARCHITECTURE §8 still says string; the binary default follows pulsar-spark (docs/spark.md).

Every column is nullable. The Arrow schema is exactly what Spark converts the Spark schema to with UTC
timestamps (``to_arrow_schema(SPARK_SCHEMA, timezone="UTC")``; a test pins it), which is what a Python data
source's ``read()`` must yield. It is spelled out here in pyarrow so executors need no pyspark import to
build batches.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pyarrow as pa

if TYPE_CHECKING:
    from pyspark.sql.types import StructType

COLUMNS = ("value", "__key", "__topic", "__partition", "__offset", "__messageId", "__publishTime",
           "__eventTime", "__messageProperties", "__producerName", "__sequenceId")

KEY_TYPES = ("binary", "string")
"""Values of the source's option ``keyType``: the type of ``__key`` (binary by default)."""

SCHEMA_DDL = ("value BINARY, __key BINARY, __topic STRING, __partition INT, __offset BIGINT, "
              "__messageId BINARY, __publishTime TIMESTAMP, __eventTime TIMESTAMP, "
              "__messageProperties MAP<STRING, STRING>, __producerName STRING, __sequenceId BIGINT")
"""The schema as DDL (what ``DataSource.schema()`` returns)."""

TIMESTAMP = pa.timestamp("us", tz="UTC")
PROPERTIES = pa.map_(pa.string(), pa.string())

ARROW_SCHEMA = pa.schema([
    pa.field("value", pa.binary()),
    pa.field("__key", pa.binary()),
    pa.field("__topic", pa.string()),
    pa.field("__partition", pa.int32()),
    pa.field("__offset", pa.int64()),
    pa.field("__messageId", pa.binary()),
    pa.field("__publishTime", TIMESTAMP),
    pa.field("__eventTime", TIMESTAMP),
    pa.field("__messageProperties", PROPERTIES),
    pa.field("__producerName", pa.string()),
    pa.field("__sequenceId", pa.int64()),
])
assert tuple(ARROW_SCHEMA.names) == COLUMNS
KEY_INDEX = ARROW_SCHEMA.get_field_index("__key")
ARROW_SCHEMA_STRING_KEY = ARROW_SCHEMA.set(KEY_INDEX, pa.field("__key", pa.string()))
"""The Arrow schema with option ``keyType=string``."""


def with_key_type(schema: pa.Schema, key_type: str) -> pa.Schema:
    """``schema`` (the source's rows, typed or not) with ``__key`` of ``key_type``."""
    index = schema.get_field_index("__key")
    return schema.set(index, pa.field("__key", pa.string() if key_type == "string" else pa.binary()))


def spark_schema(key_type: str = "binary") -> "StructType":
    """The Spark schema (imports pyspark); ``key_type``: option ``keyType``."""
    from pyspark.sql.types import (
        BinaryType, IntegerType, LongType, MapType, StringType, StructField, StructType, TimestampType)

    types: dict[str, Any] = {
        "value": BinaryType(), "__key": StringType() if key_type == "string" else BinaryType(),
        "__topic": StringType(), "__partition": IntegerType(),
        "__offset": LongType(), "__messageId": BinaryType(), "__publishTime": TimestampType(),
        "__eventTime": TimestampType(), "__messageProperties": MapType(StringType(), StringType(), True),
        "__producerName": StringType(), "__sequenceId": LongType()}
    return StructType([StructField(name, types[name], True) for name in COLUMNS])


def spark_schema_of(arrow: pa.Schema) -> "StructType":
    """The Spark schema whose Arrow form is ``arrow`` (a topic with a schema: typed columns, see
    :mod:`connector.spark.typed_values`)."""
    if arrow.equals(ARROW_SCHEMA):
        return spark_schema()
    if arrow.equals(ARROW_SCHEMA_STRING_KEY):
        return spark_schema("string")
    from pyspark.sql.pandas.types import from_arrow_schema

    return from_arrow_schema(arrow)


def check_requested_schema(schema: "StructType", expected: "StructType | None" = None) -> None:
    """A user-specified schema must be the source's own (the source cannot produce any other)."""
    expected = expected or spark_schema()
    if schema is not None and schema.simpleString() != expected.simpleString():
        raise ValueError(
            "the pulsarlike source's schema is the topic's (its registered schema's fields, or value as bytes); "
            "do not call .schema(...) on the reader, or pass exactly "
            f"{expected.simpleString()} (got {schema.simpleString()}; was the topic's schema changed meanwhile?)")
