"""The sink's typed write (issue 22): a DataFrame without a ``value`` column, written to a topic whose
schema in the broker's registry is an Avro or JSON record, is written as records of that schema -- its
columns (other than the sink's ``__`` columns) are the record's fields, by name -- encoded with fastavro or
``json``, sent by producers bound to that very schema (so messages carry its ``schema_version``, and
pulsar-client's consumers decode them with ``AvroSchema(MyRecord)``/``JsonSchema(MyRecord)``).

A column the record does not have, or a record field without a default that no column gives, fails on the
driver (``SinkSchemaError``); a value that does not fit its field fails the task naming the row.
"""
from __future__ import annotations

import base64
import dataclasses
import datetime
import io
import json
import logging
from dataclasses import dataclass
from typing import Any

from broker_core import errors

from connector.spark.sink_options import SinkColumns, SinkOptions, SinkSchemaError, plan_columns
from connector.spark.typed_values import RECORD_TYPES, TopicSchema, fetch_topic_schema, record_fields

log = logging.getLogger(__name__)

_REGISTRY_TYPES = {"AVRO": "Avro", "JSON": "Json"}
LOOKUP_CONNECT_S = 2.0


@dataclass(frozen=True)
class RecordColumns:
    topic_schema: TopicSchema
    indices: tuple[int, ...]
    names: tuple[str, ...]
    derived: bool = False
    """The schema was derived from the DataFrame (option ``topicSchema``): JSON writes dates, timestamps and
    binary as its definition says (days, microseconds, base64; :mod:`connector.spark.sink_schema`)."""


def topic_record_schema(options: SinkOptions) -> TopicSchema | None:
    """The sink topic's schema when it is an Avro/JSON record (None otherwise, or with no single topic)."""
    if options.topic is None:
        return None
    from connector.client.broker_kind import open_transport
    from connector.client.lookup import Lookup

    timeout_s = options.operation_timeout_ms / 1000.0
    # a short connect deadline: an unreachable broker must not hold a write that needs no schema (it has no
    # value column, so it is refused below) for the whole operation timeout
    connection = open_transport(options.transport, options.service_url, timeout_s, min(timeout_s, LOOKUP_CONNECT_S),
                                options.security.connection_security(options.service_url))
    try:
        found = fetch_topic_schema(Lookup(connection), options.topic, retry=False)
    except (errors.ConnectError, errors.Timeout) as exc:
        # one attempt: without the schema the write needs a value column, and says so; the tasks would
        # fail on the same unreachable broker anyway
        log.warning("event=sink_topic_schema_unknown topic=%s reason=%r", options.topic, exc.message)
        return None
    finally:
        connection.close()
    return found if found is not None and found.kind in RECORD_TYPES else None


def plan_record_columns(schema: Any, options: SinkOptions, topic_schema: TopicSchema) -> SinkColumns:
    """The sink's columns for a typed write: the record's fields by name, the ``__`` columns as usual."""
    from pyspark.sql.types import BinaryType, StructField, StructType

    fields = {f.name: f for f in record_fields(topic_schema.definition, topic_schema.kind)}
    defaults = _defaults(topic_schema.definition)
    given = [(i, f.name) for i, f in enumerate(schema.fields) if not f.name.startswith("__")]
    unknown = [name for _, name in given if name not in fields]
    if unknown:
        raise SinkSchemaError(f"column(s) {', '.join(unknown)} are not fields of {options.topic}'s "
                              f"{topic_schema.kind} schema ({', '.join(fields)}): rename or drop them", unknown[0])
    missing = [name for name in fields if name not in {n for _, n in given} and name not in defaults]
    if missing:
        raise SinkSchemaError(f"the {topic_schema.kind} schema of {options.topic} needs field(s) "
                              f"{', '.join(missing)}, which no column gives", missing[0])
    # the metadata columns planned as usual, with a stand-in value column after the real ones
    planned = plan_columns(StructType(list(schema.fields) + [StructField("value", BinaryType())]), options)
    record = RecordColumns(topic_schema, tuple(i for i, _ in given), tuple(n for _, n in given))
    return dataclasses.replace(planned, value=-1, value_is_string=False, record=record)


def _defaults(definition: str) -> set[str]:
    """Fields that may be left out: with a default, or nullable (a ``null`` union member)."""
    out = set()
    for f in json.loads(definition).get("fields", []):
        kind = f.get("type")
        if "default" in f or (isinstance(kind, list) and "null" in kind):
            out.add(f["name"])
    return out


class PreEncoded:
    """A producer schema (duck-typed, as the client's ``bind`` takes pulsar-client's) describing the
    topic's registered schema, whose values the sink has already encoded."""

    def __init__(self, topic_schema: TopicSchema) -> None:
        from connector.client.schema.schemas import SchemaInfo

        self._info = SchemaInfo(_REGISTRY_TYPES[topic_schema.kind], topic_schema.name, topic_schema.definition)

    def schema_info(self) -> Any:
        return self._info

    def encode(self, value: bytes) -> bytes:
        return value

    def decode(self, data: bytes) -> bytes:
        return data


def encode_records(batch: Any, record: RecordColumns) -> list[bytes]:
    """Each row's record, encoded; ``ValueError`` naming the row for a value that does not fit."""
    import pyarrow as pa

    columns = [batch.column(i) for i in record.indices]
    table = pa.Table.from_arrays(columns, names=list(record.names))
    rows = table.to_pylist()
    maps = [n for n, c in zip(record.names, columns) if _has_map(c.type)]
    if maps:
        types = {n: c.type for n, c in zip(record.names, columns)}
        rows = [{k: (_plain(v, types[k]) if k in maps else v) for k, v in row.items()} for row in rows]
    if record.topic_schema.kind == "JSON":
        default = _derived_json if record.derived else str
        return [json.dumps(row, default=default).encode() for row in rows]
    from fastavro import parse_schema, schemaless_writer

    parsed = parse_schema(json.loads(record.topic_schema.definition))
    out: list[bytes] = []
    for n, row in enumerate(rows):
        buffer = io.BytesIO()
        try:
            schemaless_writer(buffer, parsed, row)
        except Exception as exc:  # fastavro raises ValueError, TypeError, AttributeError ...
            raise ValueError(f"row {n} does not fit the topic's Avro schema: {str(exc)[:300]}") from None
        out.append(buffer.getvalue())
    return out


_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
_MICROSECOND = datetime.timedelta(microseconds=1)


def _derived_json(value: Any) -> Any:
    """A value ``json`` cannot write, as a derived definition types it: a timestamp as microseconds since the
    epoch (a zoneless one read as UTC), a date as days since the epoch, binary as base64."""
    if isinstance(value, datetime.datetime):
        aware = value if value.tzinfo is not None else value.replace(tzinfo=datetime.timezone.utc)
        return (aware - _EPOCH) // _MICROSECOND
    if isinstance(value, datetime.date):
        return (value - _EPOCH.date()).days
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode("ascii")
    raise TypeError(f"a {type(value).__name__} value has no JSON form")


def _has_map(arrow_type: Any) -> bool:
    import pyarrow as pa

    if pa.types.is_map(arrow_type):
        return True
    if pa.types.is_struct(arrow_type):
        return any(_has_map(arrow_type.field(i).type) for i in range(arrow_type.num_fields))
    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type):
        return _has_map(arrow_type.value_type)
    return False


def _plain(value: Any, arrow_type: Any) -> Any:
    """Arrow's Python form of a value with maps as lists of pairs -> maps as dicts (what Avro writers take)."""
    import pyarrow as pa

    if value is None:
        return None
    if pa.types.is_map(arrow_type):
        return {k: _plain(v, arrow_type.item_type) for k, v in value}
    if pa.types.is_struct(arrow_type):
        return {arrow_type.field(i).name: _plain(value.get(arrow_type.field(i).name), arrow_type.field(i).type)
                for i in range(arrow_type.num_fields)}
    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type):
        return [_plain(v, arrow_type.value_type) for v in value]
    return value
