"""The rows the ``pulsarlike`` source produces (ARCHITECTURE §8), as a Spark schema and as the Arrow
schema its ``read()`` yields record batches in.

==========================  =====================  ==========================================================
column                      Spark type             what
==========================  =====================  ==========================================================
``value``                   binary                 the payload (null for a message sent with a null value)
``__key``                   string                 the partition key, null when the message has none
``__topic``                 string                 the topic, fully qualified, without ``-partition-<i>``
``__partition``             int                    the partition index, -1 for a non-partitioned topic
``__offset``                long                   the message's dense offset in its topic partition
``__messageId``             binary                 ``MessageId.serialize()`` (pulsar-client's bytes)
``__publishTime``           timestamp              publish time set by the producer
``__eventTime``             timestamp              event time, null when the producer set none
``__messageProperties``     map<string,string>     properties (empty map when none)
``__producerName``          string                 the producer's name
``__sequenceId``            long                   the producer's sequence id of the message
==========================  =====================  ==========================================================

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

SCHEMA_DDL = ("value BINARY, __key STRING, __topic STRING, __partition INT, __offset BIGINT, "
              "__messageId BINARY, __publishTime TIMESTAMP, __eventTime TIMESTAMP, "
              "__messageProperties MAP<STRING, STRING>, __producerName STRING, __sequenceId BIGINT")
"""The schema as DDL (what ``DataSource.schema()`` returns)."""

TIMESTAMP = pa.timestamp("us", tz="UTC")
PROPERTIES = pa.map_(pa.string(), pa.string())

ARROW_SCHEMA = pa.schema([
    pa.field("value", pa.binary()),
    pa.field("__key", pa.string()),
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


def spark_schema() -> "StructType":
    """The Spark schema (imports pyspark)."""
    from pyspark.sql.types import (
        BinaryType, IntegerType, LongType, MapType, StringType, StructField, StructType, TimestampType)

    types: dict[str, Any] = {
        "value": BinaryType(), "__key": StringType(), "__topic": StringType(), "__partition": IntegerType(),
        "__offset": LongType(), "__messageId": BinaryType(), "__publishTime": TimestampType(),
        "__eventTime": TimestampType(), "__messageProperties": MapType(StringType(), StringType(), True),
        "__producerName": StringType(), "__sequenceId": LongType()}
    return StructType([StructField(name, types[name], True) for name in COLUMNS])


def spark_schema_of(arrow: pa.Schema) -> "StructType":
    """The Spark schema whose Arrow form is ``arrow`` (a topic with a schema: typed columns, see
    :mod:`connector.spark.typed_values`)."""
    if arrow.equals(ARROW_SCHEMA):
        return spark_schema()
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
