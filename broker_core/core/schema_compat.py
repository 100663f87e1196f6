"""Schema compatibility, Pulsar's default strategy ``BACKWARD``: a consumer using the new schema can read
data written with the previous one. A namespace's ``schemaCompatibilityStrategy`` picks another of Pulsar's
strategies (:func:`strategy_problem`): FORWARD swaps reader and writer, FULL checks both ways, the
``_TRANSITIVE`` ones check every version, ``ALWAYS_COMPATIBLE`` and ``ALWAYS_INCOMPATIBLE`` check nothing.

Pulsar's Json, Avro and Protobuf schemas all carry an Avro schema definition (JSON text) as their schema
data, so one Avro check serves the three. It applies Avro's schema-resolution rules with the new schema as
the reader and the latest registered one as the writer:

- records: each field of the reader that the writer lacks needs a ``default``; fields the writer has are
  checked recursively; fields the reader dropped are fine;
- primitives: the same type, or one Avro promotes (``int`` -> ``long``/``float``/``double``, ``long`` ->
  ``float``/``double``, ``float`` -> ``double``, ``string`` <-> ``bytes``);
- unions: every branch of the writer must be readable by some branch of the reader; a non-union reader
  must read every branch of a union writer;
- enums: the reader has every symbol of the writer (or a ``default``); arrays and maps by their items and
  values; fixed by size; named types by name.

KeyValue schemas are checked part by part, as Pulsar's KeyValue checker does: the key schema under the
strategy, then the value schema. Their data is Pulsar's KeyValue layout (:data:`KV_LENGTH`): the key
schema's data and the value schema's data, each after its length, and their types in the properties
``key.schema.type`` and ``value.schema.type`` (Java's ``SchemaType`` names: ``AVRO``, ``JSON``, ``STRING``;
``BYTES`` when absent; ``kv.encoding.type`` says how messages are laid out and is not compared). A part whose
type changed is incompatible; an Avro-family part follows the rules above.

Other schema types (String, the numeric types, Bytes) are compatible with themselves; a schema of another
type is never compatible (Pulsar refuses a type change under ``BACKWARD``, the caller checks it).
ProtobufNative schemas (a KeyValue part too) keep their root message's name, as Pulsar's default
ProtobufNative checker asks; their fields are not compared (:mod:`.schema_protobuf_native`).

Example: writer ``{"type":"record","name":"U","fields":[{"name":"a","type":"int"}]}``; a reader adding
``{"name":"b","type":"string"}`` is incompatible (no default), adding ``{"name":"b","type":"string",
"default":""}`` is compatible, changing ``a`` to ``long`` is compatible, to ``string`` is not.
"""
from __future__ import annotations

import json
import struct
from typing import Any, Mapping

from broker_core.core import schema_protobuf_native as protobuf_native

AVRO_TYPES = frozenset({"Json", "Avro", "Protobuf"})
"""Types whose schema data is an Avro definition (the names of Pulsar's ``Schema.Type``)."""
KEY_VALUE = "KeyValue"
KV_LENGTH = struct.Struct(">i")
"""KeyValue schema data: ``[key length][key schema data][value length][value schema data]``, each length a
signed 32-bit big-endian number; -1 stands for no data (Pulsar's ``KeyValue.encode``)."""
_KV_PARTS = ("key", "value")
_PROMOTIONS = {"int": {"long", "float", "double"}, "long": {"float", "double"}, "float": {"double"},
               "string": {"bytes"}, "bytes": {"string"}}
_MAX_DEPTH = 64


STRATEGIES = ("UNDEFINED", "ALWAYS_INCOMPATIBLE", "ALWAYS_COMPATIBLE", "BACKWARD", "FORWARD", "FULL",
              "BACKWARD_TRANSITIVE", "FORWARD_TRANSITIVE", "FULL_TRANSITIVE")
"""Pulsar's SchemaCompatibilityStrategy names (the ``schemaCompatibilityStrategy`` namespace policy);
``UNDEFINED`` is the broker's default, :data:`DEFAULT_STRATEGY`."""
DEFAULT_STRATEGY = "BACKWARD"


def is_transitive(strategy: str) -> bool:
    """Whether ``strategy`` checks a new version against every version, not only the latest."""
    return strategy.endswith("_TRANSITIVE")


def strategy_problem(strategy: str, schema_type: str, old_type: str, old_data: bytes, new_data: bytes,
                     old_properties: Mapping[str, str] = {}, new_properties: Mapping[str, str] = {}) -> str | None:
    """Why a new version cannot follow one registered version under ``strategy`` (None: it can).
    BACKWARD: the new schema reads data of the old; FORWARD: the old reads data of the new; FULL: both
    (each ``_TRANSITIVE`` the same against every version, which the caller passes one by one).
    ``ALWAYS_COMPATIBLE`` takes anything, a type change too; ``ALWAYS_INCOMPATIBLE`` no new version."""
    strategy = DEFAULT_STRATEGY if strategy == "UNDEFINED" else strategy
    if strategy == "ALWAYS_COMPATIBLE":
        return None
    if strategy == "ALWAYS_INCOMPATIBLE":
        return "the strategy ALWAYS_INCOMPATIBLE takes no new schema version"
    if old_type != schema_type:
        return f"the topic's schema is {old_type}, not {schema_type}"
    base = strategy.removesuffix("_TRANSITIVE")
    if base in ("BACKWARD", "FULL"):
        problem = incompatibility(schema_type, old_data, new_data, old_properties, new_properties)
        if problem:
            return problem if base == "BACKWARD" else f"backward: {problem}"
    if base in ("FORWARD", "FULL"):
        problem = incompatibility(schema_type, new_data, old_data, new_properties, old_properties)
        if problem:
            return f"forward (a reader of the old schema): {problem}"
    return None


def incompatibility(schema_type: str, old_data: bytes, new_data: bytes, old_properties: Mapping[str, str] = {},
                    new_properties: Mapping[str, str] = {}) -> str | None:
    """Why a ``schema_type`` schema ``new_data`` cannot replace ``old_data`` under BACKWARD, or None when
    it can. Schemas of one type only: a type change is refused by the caller. The properties matter to
    KeyValue schemas only (their parts' types)."""
    if schema_type == KEY_VALUE:
        return _key_value(old_data, new_data, old_properties, new_properties)
    if schema_type == protobuf_native.TYPE:
        return protobuf_native.root_change(old_data, new_data)
    return _definition(schema_type in AVRO_TYPES, old_data, new_data)


def split_key_value(data: bytes) -> tuple[bytes, bytes] | None:
    """The key schema's and the value schema's data of KeyValue schema ``data``; None when it is not two
    length-prefixed parts filling it exactly."""
    parts, at = [], 0
    for _ in _KV_PARTS:
        if len(data) - at < KV_LENGTH.size:
            return None
        (size,), at = KV_LENGTH.unpack_from(data, at), at + KV_LENGTH.size
        size = 0 if size == -1 else size
        if not 0 <= size <= len(data) - at:
            return None
        parts.append(data[at:at + size])
        at += size
    return (parts[0], parts[1]) if at == len(data) else None


def _definition(avro: bool, old_data: bytes, new_data: bytes) -> str | None:
    if not avro or old_data == new_data:
        return None
    try:
        writer, reader = json.loads(old_data), json.loads(new_data)
    except ValueError:
        return "the schema definition is not JSON (an Avro schema)"
    return _readable(reader, writer, "", {}, 0)


def _key_value(old_data: bytes, new_data: bytes, old_properties: Mapping[str, str],
               new_properties: Mapping[str, str]) -> str | None:
    old, new = split_key_value(old_data), split_key_value(new_data)
    if new is None:
        return "the KeyValue schema data is not a key and a value schema, each after its length"
    if old is None:
        return "the registered KeyValue schema data is not a key and a value schema, each after its length"
    for part, old_part, new_part in zip(_KV_PARTS, old, new):
        old_type = str(old_properties.get(f"{part}.schema.type", "BYTES")).upper()
        new_type = str(new_properties.get(f"{part}.schema.type", "BYTES")).upper()
        if old_type != new_type:
            return f"{part} schema: type changed from {old_type} to {new_type}"
        problem = (protobuf_native.root_change(old_part, new_part) if new_type == protobuf_native.KEY_VALUE_PART_TYPE
                   else _definition(new_type in _AVRO_UPPER, old_part, new_part))
        if problem:
            return f"{part} schema: {problem}"
    return None


_AVRO_UPPER = frozenset(t.upper() for t in AVRO_TYPES)


def _type_name(schema: Any) -> str:
    if isinstance(schema, list):
        return "union"
    if isinstance(schema, dict):
        kind = schema.get("type")
        return kind if isinstance(kind, str) else _type_name(kind)
    return str(schema)


def _full_name(schema: dict) -> str:
    name = str(schema.get("name", ""))
    namespace = schema.get("namespace")
    return name if "." in name or not namespace else f"{namespace}.{name}"


def _readable(reader: Any, writer: Any, path: str, named: dict[str, Any], depth: int) -> str | None:
    """Why data written with ``writer`` cannot be read with ``reader`` (None: it can)."""
    if depth > _MAX_DEPTH:
        return f"{path or 'schema'}: nested too deeply"
    for schema in (reader, writer):  # named types defined earlier are referred to by name
        if isinstance(schema, dict) and schema.get("type") in ("record", "enum", "fixed") and "name" in schema:
            named.setdefault(_full_name(schema), schema)
    reader = named.get(reader, reader) if isinstance(reader, str) else reader
    writer = named.get(writer, writer) if isinstance(writer, str) else writer
    if isinstance(reader, dict) and isinstance(reader.get("type"), (dict, list)):
        reader = reader["type"]
    if isinstance(writer, dict) and isinstance(writer.get("type"), (dict, list)):
        writer = writer["type"]
    r_kind, w_kind = _type_name(reader), _type_name(writer)
    where = path or "schema"
    if w_kind == "union":
        for branch in writer:
            if _readable(reader, branch, path, named, depth + 1) is not None:
                return f"{where}: a value of the old union branch {_type_name(branch)} cannot be read"
        return None
    if r_kind == "union":
        if any(_readable(branch, writer, path, named, depth + 1) is None for branch in reader):
            return None
        return f"{where}: no branch of the new union reads the old {w_kind}"
    if r_kind != w_kind:
        if w_kind in _PROMOTIONS and r_kind in _PROMOTIONS[w_kind]:
            return None
        return f"{where}: type changed from {w_kind} to {r_kind}"
    if r_kind == "record":
        return _record(reader, writer, where, named, depth)
    if r_kind == "enum":
        missing = set(writer.get("symbols", [])) - set(reader.get("symbols", []))
        if missing and "default" not in reader:
            return f"{where}: enum symbols {sorted(missing)} were removed without a default"
        return None
    if r_kind == "array":
        return _readable(reader.get("items"), writer.get("items"), f"{where}[]", named, depth + 1)
    if r_kind == "map":
        return _readable(reader.get("values"), writer.get("values"), f"{where}{{}}", named, depth + 1)
    if r_kind == "fixed" and reader.get("size") != writer.get("size"):
        return f"{where}: fixed size changed from {writer.get('size')} to {reader.get('size')}"
    return None


def _record(reader: dict, writer: dict, where: str, named: dict[str, Any], depth: int) -> str | None:
    written = {f.get("name"): f for f in writer.get("fields", []) if isinstance(f, dict)}
    for field in reader.get("fields", []):
        if not isinstance(field, dict):
            continue
        name = field.get("name")
        old = written.get(name)
        if old is None:
            if "default" not in field:
                return f"{where}.{name}: a new field without a default"
            continue
        problem = _readable(field.get("type"), old.get("type"), f"{where}.{name}", named, depth + 1)
        if problem:
            return problem
    return None
