"""Helpers of the sink tests: record batches in the shape Spark hands a writer, and reading a topic back."""
from __future__ import annotations

from typing import Any

import pyarrow as pa

from connector import MessageId

TIMESTAMP = pa.timestamp("us", tz="Etc/UTC")  # what Spark's Arrow conversion gives a timestamp column
PROPERTIES = pa.map_(pa.string(), pa.string())


def spark_schema(**columns: str) -> Any:
    """A Spark StructType from ``name="type"`` pairs, types as ``simpleString()`` spells them (no
    SparkSession needed)."""
    from pyspark.sql import types as T

    simple = {"binary": T.BinaryType(), "string": T.StringType(), "int": T.IntegerType(),
              "bigint": T.LongType(), "smallint": T.ShortType(), "double": T.DoubleType(),
              "timestamp": T.TimestampType(), "timestamp_ntz": T.TimestampNTZType(),
              "map<string,string>": T.MapType(T.StringType(), T.StringType()),
              "map<string,int>": T.MapType(T.StringType(), T.IntegerType()),
              "array<string>": T.ArrayType(T.StringType())}
    return T.StructType([T.StructField(name, simple[kind]) for name, kind in columns.items()])


def batch(**columns: Any) -> pa.RecordBatch:
    """A record batch from ``name=pa.array(...)`` or ``name=list`` (strings -> string, bytes -> binary)."""
    arrays = [c if isinstance(c, pa.Array) else pa.array(c) for c in columns.values()]
    return pa.record_batch(arrays, names=list(columns))


def values(n: int, start: int = 0, prefix: str = "v") -> list[bytes]:
    return [f"{prefix}{i}".encode() for i in range(start, start + n)]


def read_all(client: Any, topic: str, timeout_ms: int = 5000) -> list[Any]:
    """Every message of ``topic`` (each partition of a partitioned one, partition by partition)."""
    out = []
    for name in client.get_topic_partitions(topic):
        reader = client.create_reader(name, MessageId.earliest)
        try:
            while reader.has_message_available():
                out.append(reader.read_next(timeout_millis=timeout_ms))
        finally:
            reader.close()
    return out


def payloads(client: Any, topic: str) -> list[bytes]:
    return [m.data() for m in read_all(client, topic)]
