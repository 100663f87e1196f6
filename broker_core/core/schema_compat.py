"""Schema compatibility as Pulsar's broker decides it: Pulsar's strategies on top, Avro's own checker below.

A namespace's ``schemaCompatibilityStrategy`` (:data:`STRATEGIES`) maps onto reader/writer checks as Pulsar's
``AvroSchemaBasedCompatibilityCheck`` maps it onto Avro's ``SchemaValidatorBuilder``:

=====================  =========================================  ==================================
strategy               who reads whom                             against
=====================  =========================================  ==================================
BACKWARD               the new schema reads the old one's data    the latest version
FORWARD                the old schema reads the new one's data    the latest version
FULL                   both                                       the latest version
``*_TRANSITIVE``       as above                                   every version, the newest first
ALWAYS_COMPATIBLE      nothing is checked, not even the type      --
ALWAYS_INCOMPATIBLE    no new version                             --
UNDEFINED              the broker's default, FULL (Pulsar's ``schemaCompatibilityStrategy=FULL``)
=====================  =========================================  ==================================

Otherwise a schema of another type than the registered one is refused, and an identical one is not checked.
What a check compares depends on the type, as Pulsar's checkers do:

- **Avro**, and **Json** whose data is an Avro definition (what Pulsar's clients send): Avro's own
  ``ReaderWriterCompatibilityChecker`` (the ``avro`` package: Apache Avro's Python port of the Java checker
  Pulsar calls). A reader's field missing from the writer needs a ``default``; a field renamed keeps its old
  name in ``aliases``; an enum or fixed keeps its name (or lists the old one in ``aliases``), a record may
  change its name (Pulsar's ``SchemaValidator`` runs Avro's resolver, which matches records by their fields
  and checks the names of enums and fixed only, where the port's checker also checks a record's); ``int``
  is read as ``long``/``float``/``double``, ``long`` as ``float``/``double``, ``float`` as ``double``,
  ``string`` and ``bytes`` as each other; every branch a writer's union may hold must be readable; an enum
  reader has the writer's symbols (or a ``default``); a fixed keeps its size.
- **Json** whose data is not an Avro definition (Pulsar's older JSON Schema format), as Pulsar's
  ``JsonSchemaCompatibilityCheck``: two such versions must have the same ``id``; one of them replacing an
  Avro definition or the other way round is taken; a new definition that is neither is refused; a stored
  one that is neither is replaced.
- **Protobuf** (an Avro definition derived from the message): checked as Avro. Pulsar has this check
  (``ProtobufSchemaCompatibilityCheck``) but leaves it out of its default ``schemaRegistryCompatibilityCheckers``,
  so a default Pulsar broker takes any new Protobuf version; this broker keeps the check, which refuses only
  what a reader of the other version could not decode.
- **KeyValue**, as Pulsar's ``KeyValueSchemaCompatibilityCheck``: the key's and the value's types must stay
  the same, and each part is checked as a schema of its type. The data is Pulsar's KeyValue layout
  (:data:`KV_LENGTH`), the parts' types in the properties ``key.schema.type`` and ``value.schema.type``
  (Java's ``SchemaType`` names; ``BYTES`` when absent).
- **ProtobufNative** (a KeyValue part too) keeps its root message's name, as Pulsar's default checker asks
  (:mod:`.schema_protobuf_native`).
- Other types (String, the numbers, Bytes): compatible with themselves, as Pulsar's default check.

A refusal carries Avro's reason: the incompatibility types, where in the reader's schema (``/fields/1``)
and Avro's message, e.g. ``reader_field_missing_default_value at /fields/1: b``; under FORWARD or FULL it
says which way failed (``forward: ...``). Two things the Python port does differently from Java's checker are
made as Java's: a named type's alias without a dot is taken in the type's namespace (the Avro specification),
and the branches of a writer's union are located at the union instead of ``/``.

``avro`` is imported at the first check, never at broker start (the start time is measured).

Example: writer ``{"type":"record","name":"U","fields":[{"name":"a","type":"int"}]}``. Under BACKWARD a
reader adding ``{"name":"b","type":"string"}`` is refused (``reader_field_missing_default_value``), adding it
with ``"default":""`` is taken, ``a`` as ``long`` is taken, as ``string`` refused, ``a`` renamed
``{"name":"count","type":"int","aliases":["a"]}`` is taken, the record renamed ``V`` is taken (an enum
renamed is refused: ``name_mismatch``).
"""
from __future__ import annotations

import json
import struct
from functools import lru_cache
from typing import Any, Callable, Mapping, NamedTuple

from broker_core.core import schema_protobuf_native as protobuf_native

AVRO_TYPES = frozenset({"Json", "Avro", "Protobuf"})
"""Types whose schema data is an Avro definition (the names of Pulsar's ``Schema.Type``)."""
KEY_VALUE = "KeyValue"
KV_LENGTH = struct.Struct(">i")
"""KeyValue schema data: ``[key length][key schema data][value length][value schema data]``, each length a
signed 32-bit big-endian number; -1 stands for no data (Pulsar's ``KeyValue.encode``)."""
_KV_PARTS = ("key", "value")

STRATEGIES = ("UNDEFINED", "ALWAYS_INCOMPATIBLE", "ALWAYS_COMPATIBLE", "BACKWARD", "FORWARD", "FULL",
              "BACKWARD_TRANSITIVE", "FORWARD_TRANSITIVE", "FULL_TRANSITIVE")
"""Pulsar's SchemaCompatibilityStrategy names (the ``schemaCompatibilityStrategy`` namespace policy)."""
DEFAULT_STRATEGY = "FULL"
"""What ``UNDEFINED`` stands for: Pulsar's broker default (``schemaCompatibilityStrategy=FULL``), which it
applies when neither the topic nor the namespace sets one."""

_AVRO, _JSON, _NATIVE = "avro", "json", "protobuf-native"
_CHECKS = {"Avro": _AVRO, "Protobuf": _AVRO, "Json": _JSON, protobuf_native.TYPE: _NATIVE}
"""The check a top-level schema type gets (none: compatible with itself)."""
_PART_CHECKS = {"AVRO": _AVRO, "PROTOBUF": _AVRO, "JSON": _JSON, protobuf_native.KEY_VALUE_PART_TYPE: _NATIVE}
"""The check a KeyValue part's type (Java's ``SchemaType`` name) gets."""
_DIRECTIONS = {"BACKWARD": ("backward",), "FORWARD": ("forward",), "FULL": ("backward", "forward")}
_MOST_LISTED = 5
"""Locations and messages quoted of one refusal (a definition of thousands of fields may break them all)."""


def applied_strategy(strategy: str) -> str:
    """The strategy a check applies: ``UNDEFINED`` (no policy set) is :data:`DEFAULT_STRATEGY`."""
    return DEFAULT_STRATEGY if strategy == "UNDEFINED" else strategy


def is_transitive(strategy: str) -> bool:
    """Whether ``strategy`` checks a new version against every version, not only the latest."""
    return applied_strategy(strategy).endswith("_TRANSITIVE")


def consumer_strategy(strategy: str) -> str:
    """The strategy a consumer's schema is checked under, as Pulsar's ``checkConsumerCompatibility``: a
    consumer only reads, so under BACKWARD, FORWARD, FORWARD_TRANSITIVE and FULL it must read the latest
    version's data (BACKWARD); BACKWARD_TRANSITIVE and FULL_TRANSITIVE check every version as for a producer."""
    strategy = applied_strategy(strategy)
    return "BACKWARD" if strategy in ("BACKWARD", "FORWARD", "FORWARD_TRANSITIVE", "FULL") else strategy


def strategy_problem(strategy: str, schema_type: str, old_type: str, old_data: bytes, new_data: bytes,
                     old_properties: Mapping[str, str] = {}, new_properties: Mapping[str, str] = {}) -> str | None:
    """Why a new version cannot follow one registered version under ``strategy`` (None: it can); the caller
    passes each version a transitive strategy checks. The properties matter to KeyValue schemas only."""
    strategy = applied_strategy(strategy)
    if strategy == "ALWAYS_COMPATIBLE":
        return None
    if strategy == "ALWAYS_INCOMPATIBLE":
        return "the strategy ALWAYS_INCOMPATIBLE takes no new schema version"
    if old_type != schema_type:
        return f"the topic's schema is {old_type}, not {schema_type}"
    directions = _DIRECTIONS[strategy.removesuffix("_TRANSITIVE")]
    if schema_type == KEY_VALUE:
        return _key_value(old_data, new_data, old_properties, new_properties, directions)
    return _check(_CHECKS.get(schema_type), old_data, new_data, directions)


def incompatibility(schema_type: str, old_data: bytes, new_data: bytes, old_properties: Mapping[str, str] = {},
                    new_properties: Mapping[str, str] = {}) -> str | None:
    """Why a ``schema_type`` schema ``new_data`` cannot follow ``old_data`` under BACKWARD (None: it can)."""
    return strategy_problem("BACKWARD", schema_type, schema_type, old_data, new_data, old_properties,
                            new_properties)


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


def _key_value(old_data: bytes, new_data: bytes, old_properties: Mapping[str, str],
               new_properties: Mapping[str, str], directions: tuple[str, ...]) -> str | None:
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
        problem = _check(_PART_CHECKS.get(new_type), old_part, new_part, directions)
        if problem:
            return f"{part} schema: {problem}"
    return None


def _check(check: str | None, old: bytes, new: bytes, directions: tuple[str, ...]) -> str | None:
    """Why ``new`` cannot follow ``old`` in ``directions`` under ``check`` (one of ``_CHECKS``' values)."""
    if check is None or old == new:
        return None
    if check == _NATIVE:  # a root message's name: one comparison serves both directions
        return _directed(directions, directions[-1], protobuf_native.root_change(old, new))
    old_schema, old_reason = _parsed(old)
    new_schema, new_reason = _parsed(new)
    if check == _JSON and (old_schema is None or new_schema is None):
        return _json_schema_problem(old, new, old_schema is not None, new_schema is not None, new_reason)
    if new_schema is None:
        return f"the new schema is not an Avro schema: {new_reason}"
    if old_schema is None:
        return f"the registered schema is not an Avro schema: {old_reason}"
    for direction in directions:  # backward: the new schema reads; forward: the old one does
        reader, writer = (new_schema, old_schema) if direction == "backward" else (old_schema, new_schema)
        problem = _directed(directions, direction, _avro_reason(reader, writer))
        if problem:
            return problem
    return None


def _directed(directions: tuple[str, ...], direction: str, problem: str | None) -> str | None:
    if problem is None or directions == ("backward",):
        return problem
    return f"{direction}: {problem}"


def _json_schema_problem(old: bytes, new: bytes, old_is_avro: bool, new_is_avro: bool,
                         new_reason: str | None) -> str | None:
    """Pulsar's rules for Json schemas of which one at least is not an Avro definition."""
    old_json, new_json = _json_object(old), _json_object(new)
    if not old_is_avro and old_json is None:
        return None  # a stored definition of no known format is replaced, as Pulsar does
    if not new_is_avro and new_json is None:
        return f"the new JSON schema is neither an Avro schema ({new_reason}) nor a JSON Schema"
    if old_is_avro or new_is_avro:
        return None  # the two formats replace each other
    old_id, new_id = old_json.get("id"), new_json.get("id")
    if old_id is None or old_id != new_id:  # Pulsar compares ids (its check fails on a missing one)
        return (f"the JSON Schema's id {str(new_id)[:100]!r} is not the registered one's, {str(old_id)[:100]!r}"
                " (JSON Schemas without an Avro definition are compared by id)")
    return None


def _json_object(data: bytes) -> dict | None:
    try:
        found = json.loads(data)
    except (ValueError, RecursionError):
        return None
    return found if isinstance(found, dict) else None


class _Avro(NamedTuple):
    """What the checks use of the ``avro`` package."""

    parse: Callable[..., Any]
    """``avro.schema.parse``."""
    checker: type
    """Avro's ``ReaderWriterCompatibilityChecker`` (:func:`_avro`'s subclass)."""
    incompatible: Any
    """``SchemaCompatibilityType.incompatible``: a result that is not."""
    error: type[Exception]
    """``AvroException``, the root of the package's errors."""


@lru_cache(maxsize=1)
def _avro() -> _Avro:
    """The ``avro`` package, imported at the first check."""
    from avro.compatibility import ReaderWriterCompatibilityChecker, SchemaCompatibilityType
    from avro.errors import AvroException
    from avro.schema import parse

    class Checker(ReaderWriterCompatibilityChecker):
        """Avro's checker, locating the branches of a writer's union at the union (the port restarts them
        at ``/``: the recursion checking a branch does not pass the union's location on)."""

        def __init__(self) -> None:
            super().__init__()
            self._locations: list[list[str]] = []

        def get_compatibility(self, reader, writer, reference_token="/", location=None):
            if location is None and self._locations:
                *location, reference_token = self._locations[-1]
            return super().get_compatibility(reader, writer, reference_token, location)

        def calculate_compatibility(self, reader, writer, location):
            self._locations.append(location)
            try:
                if reader.type == writer.type == "record":  # by its fields, whatever its name (module docstring)
                    return self.check_reader_writer_record_fields(reader, writer, location)
                return super().calculate_compatibility(reader, writer, location)
            finally:
                self._locations.pop()

    return _Avro(parse, Checker, SchemaCompatibilityType.incompatible, AvroException)


@lru_cache(maxsize=4)
def _parsed(data: bytes) -> tuple[Any, str | None]:
    """(the Avro schema of ``data``, None) or (None, why it is none). Names are taken as Pulsar's lenient
    parser takes them (``Outer$Inner`` from Java classes), defaults are not validated (Pulsar's
    ``setValidateDefaults(false)``). Cached: a transitive check reads the new schema once per version."""
    try:
        schema = _avro().parse(data.decode("utf-8"), validate_enum_symbols=False, validate_names=False)
    except RecursionError:
        return None, "nested too deeply"
    except Exception as exc:  # noqa: BLE001 - any failure of the parser on this text means it is no Avro schema
        return None, str(exc)[:300] or type(exc).__name__
    _qualify_aliases(schema)
    return schema, None


def _qualify_aliases(root: Any) -> None:
    """Take a named type's aliases without a dot in its namespace, as the Avro specification and Java's
    checker do (``{"name": "Order", "namespace": "shop", "aliases": ["Purchase"]}`` reads ``shop.Purchase``);
    the Python port compares them as written."""
    seen, todo = set(), [root]
    while todo:
        schema = todo.pop()
        if id(schema) in seen:
            continue
        seen.add(id(schema))
        aliases, namespace = schema.props.get("aliases"), getattr(schema, "namespace", None)
        if isinstance(aliases, list) and namespace and schema.type in ("record", "error", "enum", "fixed"):
            schema.props["aliases"] = [f"{namespace}.{a}" if isinstance(a, str) and "." not in a else a
                                       for a in aliases]
        todo.extend(field.type for field in getattr(schema, "fields", None) or ())
        todo.extend(getattr(schema, "schemas", None) or ())
        todo.extend(child for child in (getattr(schema, "items", None), getattr(schema, "values", None))
                    if child is not None)


def _avro_reason(reader: Any, writer: Any) -> str | None:
    """Avro's reason why ``reader`` cannot read what ``writer`` wrote (None: it can)."""
    avro = _avro()
    try:
        result = avro.checker().get_compatibility(reader, writer)
    except RecursionError:
        return "nested too deeply for Avro's checker"
    except avro.error as exc:
        return f"Avro's checker failed: {str(exc)[:300]}"
    if result.compatibility is not avro.incompatible:
        return None
    kinds = list(dict.fromkeys(kind.value for kind in result.incompatibilities))
    # a result merged with a compatible one also lists the root, "/"
    locations = sorted(result.locations - {"/"}) or ["/"]
    return f"{', '.join(kinds)} at {_listed(locations, ', ')}: {_listed(sorted(result.messages), '; ')}"


def _listed(items: list[str], separator: str) -> str:
    shown = separator.join(item[:200] for item in items[:_MOST_LISTED])
    return shown + (f" (and {len(items) - _MOST_LISTED} more)" if len(items) > _MOST_LISTED else "")
