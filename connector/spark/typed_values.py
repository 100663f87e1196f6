"""Typed columns for a topic with a schema (issue 22), as StreamNative's pulsar-spark gives them.

The broker's schema registry holds the topic's schema (``GetSchema``). The source then reads:

- ``AVRO`` or ``JSON`` (a record): the record's fields as top-level columns, in place of ``value`` --
  nested records as structs, arrays as arrays, maps as ``map<string, ...>``, enums as strings, Avro's
  ``date``/``timestamp-millis``/``timestamp-micros`` as date/timestamp -- beside the metadata columns
  (``__key``, ``__topic`` ...). A ``["null", T]`` union is a nullable ``T``; other unions are refused.
- a primitive schema (``STRING``, ``INT8``..``INT64``, ``FLOAT``, ``DOUBLE``, ``BOOLEAN``): ``value`` of
  that type (Pulsar's encodings: UTF-8, big-endian integers and IEEE floats, one byte for a boolean).
- ``BYTES``/``NONE``, no schema, or a topic that does not exist yet: ``value`` as bytes, as before.

Schema evolution: the columns are those of the schema registered when the query is planned (Spark's schema
of a query does not change while it runs). Each message is decoded with the version it was written with
(its ``schema_version``): Avro by Avro's schema resolution from that writer version to the query's (fields
added later are dropped, fields removed are null, a field without a default that the writer lacks fails
clearly), JSON by field name (missing fields are null). A message that does not decode fails the task
with :class:`TypedValueError` naming topic, partition, offset and why. Topics read together must share one
schema.

Decoding: fastavro for Avro (``schemaless_reader`` over each message), ``json`` for JSON; the decoded
records become one Arrow struct array per batch, whose children are the columns (no per-field Python loop).
"""
from __future__ import annotations

import io
import json
import struct
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import pyarrow as pa

from broker_core import errors

from connector.spark.schema import ARROW_SCHEMA, TIMESTAMP, with_key_type

RECORD_TYPES = ("AVRO", "JSON")
PRIMITIVES: dict[str, tuple[pa.DataType, str | None]] = {
    "STRING": (pa.string(), None), "BOOL": (pa.bool_(), ">?"), "BOOLEAN": (pa.bool_(), ">?"),
    "INT8": (pa.int8(), ">b"), "INT16": (pa.int16(), ">h"), "INT32": (pa.int32(), ">i"),
    "INT64": (pa.int64(), ">q"), "FLOAT": (pa.float32(), ">f"), "DOUBLE": (pa.float64(), ">d")}
"""Primitive schema type -> (value's Arrow type, struct format of Pulsar's encoding)."""
METADATA = tuple(f for f in ARROW_SCHEMA if f.name != "value")


class TypedValueError(errors.InvalidMessage):
    """A message whose payload does not decode with the topic's schema (``topic``, ``partition``,
    ``offset``, ``reason``)."""


class _RowError(Exception):
    def __init__(self, row: int, reason: str) -> None:
        super().__init__(reason)
        self.row = row
        self.reason = reason


class UnsupportedSchema(errors.NotSupported):
    """A topic schema the source cannot map to columns (named in the message)."""


@dataclass(frozen=True)
class TopicSchema:
    """A topic's schema as the registry gives it: ``kind`` upper-cased (``AVRO``, ``JSON``, ``STRING`` ...)."""

    kind: str
    definition: str = ""
    version: int = -1
    name: str = ""

    @property
    def typed(self) -> bool:
        return self.kind in RECORD_TYPES or self.kind in PRIMITIVES


BYTES = TopicSchema("BYTES")


def of_registry(kind: str, data: bytes, version: int, name: str = "") -> TopicSchema:
    return TopicSchema(kind.upper(), data.decode("utf-8", "replace"), version, name)


# --- Avro definition -> Arrow types ---------------------------------------------------------------------
def record_fields(definition: str, kind: str = "AVRO") -> list[pa.Field]:
    """The top-level columns of a record schema (``UnsupportedSchema`` for what has none)."""
    try:
        parsed = json.loads(definition)
    except ValueError as exc:
        raise UnsupportedSchema(f"the topic's {kind} schema is not JSON ({exc})") from None
    if not isinstance(parsed, dict) or parsed.get("type") != "record":
        raise UnsupportedSchema(f"the topic's {kind} schema is not a record: {definition[:200]}")
    struct_type = _arrow_type(parsed, {}, logical=kind == "AVRO")
    reserved = {f.name for f in ARROW_SCHEMA}
    clash = [f.name for f in struct_type if f.name in reserved]
    if clash:
        raise UnsupportedSchema(f"the record's field(s) {', '.join(clash)} clash with the source's metadata "
                                "columns; rename them in the schema")
    return [struct_type.field(i) for i in range(struct_type.num_fields)]


_AVRO_PRIMITIVE = {"boolean": pa.bool_(), "int": pa.int32(), "long": pa.int64(), "float": pa.float32(),
                   "double": pa.float64(), "bytes": pa.binary(), "string": pa.string()}


def _arrow_type(avro: Any, names: dict[str, pa.DataType], logical: bool) -> pa.DataType:
    if isinstance(avro, list):  # a union: ["null", T] is a nullable T
        others = [t for t in avro if t != "null"]
        if len(others) != 1:
            raise UnsupportedSchema(f"the union {json.dumps(avro)} has several non-null types; the source maps "
                                    "only [\"null\", T] unions to columns")
        return _arrow_type(others[0], names, logical)
    if isinstance(avro, str):
        if avro in _AVRO_PRIMITIVE:
            return _AVRO_PRIMITIVE[avro]
        if avro in names:
            return names[avro]
        raise UnsupportedSchema(f"the schema type {avro!r} is not supported (or is a recursive reference)")
    if not isinstance(avro, dict):
        raise UnsupportedSchema(f"the schema type {avro!r} is not valid Avro")
    kind = avro.get("type")
    lt = avro.get("logicalType") if logical else None
    if lt == "date" and kind == "int":
        return pa.date32()
    if lt in ("timestamp-millis", "timestamp-micros") and kind == "long":
        return TIMESTAMP
    if kind == "record":
        fields = [pa.field(f["name"], _arrow_type(f["type"], names, logical)) for f in avro.get("fields", [])]
        made = pa.struct(fields)
        names[avro.get("name", "")] = made
        if avro.get("namespace"):
            names[f"{avro['namespace']}.{avro.get('name', '')}"] = made
        return made
    if kind == "array":
        return pa.list_(_arrow_type(avro["items"], names, logical))
    if kind == "map":
        return pa.map_(pa.string(), _arrow_type(avro["values"], names, logical))
    if kind == "enum":
        names[avro.get("name", "")] = pa.string()
        return pa.string()
    if kind == "fixed":
        names[avro.get("name", "")] = pa.binary()
        return pa.binary()
    return _arrow_type(kind, names, logical)


# --- the source's Arrow schema for a topic schema ---------------------------------------------------------
def arrow_schema(topic_schema: TopicSchema, key_type: str = "binary") -> pa.Schema:
    """The rows' Arrow schema: typed value columns, then the metadata columns (``__key`` of ``key_type``,
    option ``keyType``)."""
    if topic_schema.kind in RECORD_TYPES:
        found = pa.schema(record_fields(topic_schema.definition, topic_schema.kind) + list(METADATA))
    elif topic_schema.kind in PRIMITIVES:
        found = pa.schema([pa.field("value", PRIMITIVES[topic_schema.kind][0])] + list(METADATA))
    else:
        found = ARROW_SCHEMA
    return found if key_type == "binary" else with_key_type(found, key_type)


# --- decoding ------------------------------------------------------------------------------------------
WriterSchemas = Callable[[int], "TopicSchema | None"]
"""A version's schema (the executor fetches it from the registry once per version)."""


@dataclass
class TypedValues:
    """Turns the source's byte batches (``value`` binary) into typed ones for one topic schema."""

    topic_schema: TopicSchema
    writer_schemas: WriterSchemas = lambda version: None
    _schema: pa.Schema = field(init=False)
    _avro: dict[int, Any] = field(init=False, default_factory=dict)

    def __post_init__(self) -> None:
        self._schema = arrow_schema(self.topic_schema)
        if self.topic_schema.kind == "AVRO":
            from fastavro import parse_schema
            self._reader = parse_schema(json.loads(self.topic_schema.definition))

    @property
    def schema(self) -> pa.Schema:
        return self._schema

    def convert(self, batch: pa.RecordBatch, versions: Sequence[int]) -> pa.RecordBatch:
        """``batch`` (the source's byte schema) with ``value`` decoded; ``versions``: each row's writer
        schema version (-1: none)."""
        kind = self.topic_schema.kind
        if kind not in RECORD_TYPES and kind not in PRIMITIVES:
            return batch
        payloads = batch.column(0).to_pylist()
        meta = [batch.column(i) for i in range(1, batch.num_columns)]
        # the metadata columns as the batch has them (__key binary or string: option keyType)
        schema = pa.schema(list(self._schema)[:len(self._schema) - len(METADATA)] + list(batch.schema)[1:])
        try:
            if kind in PRIMITIVES:
                return pa.RecordBatch.from_arrays([self._primitive(payloads)] + meta, schema=schema)
            records = self._avro_records(payloads, versions) if kind == "AVRO" else self._json_records(payloads)
            value_fields = self._schema.names[:len(self._schema) - len(METADATA)]
            struct_type = pa.struct([self._schema.field(n) for n in value_fields])
            columns = pa.array(records, struct_type).flatten()
        except _RowError as exc:
            raise self._failure(batch, exc.row, exc.reason) from None
        except (pa.ArrowInvalid, pa.ArrowTypeError, ValueError, TypeError, struct.error) as exc:
            raise self._failure(batch, -1, f"a value does not fit the schema's columns ({exc})") from None
        return pa.RecordBatch.from_arrays(list(columns) + meta, schema=schema)

    def _primitive(self, payloads: list[bytes | None]) -> pa.Array:
        arrow_type, fmt = PRIMITIVES[self.topic_schema.kind]
        if fmt is None:
            return pa.array(payloads, pa.binary()).cast(arrow_type)  # UTF-8 checked by the cast
        unpack = struct.Struct(fmt).unpack
        return pa.array([None if p is None else unpack(p)[0] for p in payloads], arrow_type)

    def _avro_records(self, payloads: list[bytes | None], versions: Sequence[int]) -> list[Any]:
        from fastavro import schemaless_reader

        reader = self._reader
        out: list[Any] = []
        # One stream over all the payloads is over twice as fast as one per message; Avro values are
        # self-delimiting, and each must end exactly where its payload does (else it is not that schema's).
        stream = io.BytesIO(b"".join(p for p in payloads if p is not None))
        tell = stream.tell
        end = 0
        for row, (payload, version) in enumerate(zip(payloads, versions)):
            if payload is None:
                out.append(None)
                continue
            writer = self._writer(version, row)
            end += len(payload)
            try:
                out.append(schemaless_reader(stream, writer, reader if writer is not reader else None))
            except Exception as exc:  # fastavro raises several kinds (EOFError, SchemaResolutionError, ...)
                raise _RowError(row, f"an Avro value does not decode with schema version {version} "
                                     f"(read as version {self.topic_schema.version}): {str(exc)[:300]}") from None
            if tell() != end:
                raise _RowError(row, f"an Avro value of schema version {version} does not span its whole "
                                     f"payload ({len(payload)} bytes): it was not written with that schema")
        return out

    def _writer(self, version: int, row: int) -> Any:
        if version < 0 or version == self.topic_schema.version:
            return self._reader
        found = self._avro.get(version)
        if found is None:
            from fastavro import parse_schema

            written = self.writer_schemas(version)
            if written is None or written.kind != "AVRO":
                raise _RowError(row, f"schema version {version} of the topic is not an AVRO schema the "
                                     f"registry holds (the query reads version {self.topic_schema.version})")
            definition = json.loads(written.definition)
            if isinstance(definition, dict) and definition.get("type") == "record":
                # Pulsar's compatibility checks ignore the top-level record's name (pulsar-client names it
                # after the Python class): resolve by fields, not by that name
                definition["name"] = self._reader["name"]
                definition.pop("namespace", None)
            found = self._avro[version] = parse_schema(definition)
        return found

    @staticmethod
    def _json_records(payloads: list[bytes | None]) -> list[Any]:
        out: list[Any] = []
        loads = json.loads
        for row, payload in enumerate(payloads):
            if payload is None:
                out.append(None)
                continue
            try:
                out.append(loads(payload))
            except ValueError as exc:
                raise _RowError(row, f"a JSON value does not parse: {exc}") from None
        return out

    @staticmethod
    def _failure(batch: pa.RecordBatch, row: int, reason: str) -> TypedValueError:
        """The error naming where: the row's offset (or the batch's range, for a row not known)."""
        def at(name: str, i: int) -> Any:
            return batch.column(ARROW_SCHEMA.get_field_index(name))[i].as_py()
        if not len(batch):
            return TypedValueError(reason, reason=reason)
        topic, partition = at("__topic", 0), at("__partition", 0)
        where = f"offset {at('__offset', row)}" if row >= 0 else \
            f"offsets {at('__offset', 0)}..{at('__offset', len(batch) - 1)}"
        return TypedValueError(f"{topic} partition {partition} {where}: {reason}", topic=topic,
                               partition=partition, offset=at("__offset", max(row, 0)), reason=reason)


# --- the registry ----------------------------------------------------------------------------------------
def fetch_topic_schema(lookup: Any, topic: str, version: int = -1, retry: bool = True) -> TopicSchema | None:
    """The topic's schema in the broker's registry (the latest, or ``version``) through the client's
    ``Lookup``; None when it has none."""
    reply = lookup.schema(topic, version, retry=retry)
    return None if reply is None else of_registry(reply.type, reply.data, reply.version, reply.name)


def common_schema(found: dict[str, "TopicSchema | None"]) -> TopicSchema:
    """The one schema of the topics read together (bytes when none has one); ``UnsupportedSchema`` when
    they differ, or a typed schema cannot be mapped to columns."""
    kinds = {topic: (s.kind, s.definition) if s is not None and s.typed else ("BYTES", "")
             for topic, s in found.items()}
    if len(set(kinds.values())) > 1:
        listing = "; ".join(f"{topic}: {kind}" for topic, (kind, _) in sorted(kinds.items()))
        raise UnsupportedSchema("the topics read together have different schemas, so no one set of columns "
                                f"fits them all ({listing}); read them in separate queries")
    typed = [s for s in found.values() if s is not None and s.typed]
    if not typed:
        return BYTES
    chosen = typed[0]
    arrow_schema(chosen)  # refuses now, on the driver, what cannot be mapped
    return chosen
