"""The schemas a producer, consumer or reader takes (pulsar-client's ``pulsar.schema``): each encodes the
application's values to a message's bytes and decodes them back, and describes itself as a
:class:`SchemaInfo` -- the type, name and definition registered in the broker's schema registry.

``BytesSchema`` (the default: no schema registered, bytes as they are), ``StringSchema`` (UTF-8),
``JsonSchema`` (a :class:`~connector.client.schema.record.Record` as JSON; the registered definition is the
record's Avro definition, as in Pulsar). The definition text is the one pulsar-client generates (its JSON
with one-space indentation), so a registry sees the same schema from both clients: same version, no new one.
"""
from __future__ import annotations

import enum
import json
from dataclasses import dataclass
from typing import Any

from connector.client.enums import WIRE_SCHEMA_TYPES, SchemaType
from connector.client.schema.record import RESERVED, Record

__all__ = ["BytesSchema", "JsonSchema", "Schema", "SchemaInfo", "StringSchema", "definition_text"]


def definition_text(definition: Any) -> str:
    """A definition as pulsar-client serializes it (``indent=True`` is one space)."""
    return json.dumps(definition, indent=True)


@dataclass(frozen=True)
class SchemaInfo:
    """What is registered: ``schema_type`` is the name of Pulsar's ``Schema.Type`` on the wire (``"Json"``,
    ``"Avro"``, ``"String"``, ``"None"`` for bytes); ``definition`` is the schema text."""

    type_name: str
    schema_name: str
    definition: str
    properties: tuple[tuple[str, str], ...] = ()

    # pulsar-client's SchemaInfo accessors
    def schema_type(self) -> SchemaType:
        """pulsar-client's ``_pulsar.SchemaType`` (BytesSchema's is ``BYTES``, registered as ``"None"``)."""
        if self.type_name == "None" and self.schema_name == "BYTES":
            return SchemaType.BYTES
        return WIRE_SCHEMA_TYPES.get(self.type_name, SchemaType.NONE)

    def name(self) -> str:
        return self.schema_name

    def schema(self) -> str:
        return self.definition


class Schema:
    """Base of every schema: ``encode(value) -> bytes``, ``decode(bytes) -> value``."""

    registered = True
    """False for BytesSchema: a producer or consumer without a typed schema registers nothing."""

    def __init__(self, record_cls: Any, type_name: str, definition: Any, schema_name: str) -> None:
        self._record_cls = record_cls
        self._schema_info = SchemaInfo(type_name, schema_name, definition_text(definition))

    def encode(self, obj: Any) -> bytes:
        raise NotImplementedError

    def decode(self, data: bytes) -> Any:
        raise NotImplementedError

    def decode_message(self, data: bytes, writer: SchemaInfo | None = None) -> Any:
        """A message's value; ``writer`` is the schema its producer registered (when the registry has it),
        which schemas able to resolve versions (Avro) read with."""
        return self.decode(data)

    def schema_info(self) -> SchemaInfo:
        return self._schema_info

    def _validate_object_type(self, obj: Any) -> None:
        if not isinstance(obj, self._record_cls):
            raise TypeError(f"Invalid record obj of type {type(obj)} - expected type is {self._record_cls}")


class BytesSchema(Schema):
    registered = False

    def __init__(self) -> None:
        super().__init__(bytes, "None", None, "BYTES")

    def encode(self, data: Any) -> bytes:
        self._validate_object_type(data)
        return data

    def decode(self, data: bytes) -> bytes:
        return data

    def __str__(self) -> str:
        return "BytesSchema"


class StringSchema(Schema):
    def __init__(self) -> None:
        super().__init__(str, "String", None, "STRING")

    def encode(self, obj: Any) -> bytes:
        self._validate_object_type(obj)
        return obj.encode("utf-8")

    def decode(self, data: bytes) -> str:
        return bytes(data).decode("utf-8")

    def __str__(self) -> str:
        return "StringSchema"


def _json_value(value: Any) -> Any:
    """What ``json`` cannot write itself: an enum as its value, bytes as text, a nested record as its fields."""
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, bytes):
        return value.decode()
    if isinstance(value, Record):
        return _fields(value)
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _fields(record: Record) -> dict[str, Any]:
    return {key: value for key, value in record.__dict__.items() if key not in RESERVED}


class JsonSchema(Schema):
    def __init__(self, record_cls: type[Record]) -> None:
        super().__init__(record_cls, "Json", record_cls.schema(), "JSON")

    def encode(self, obj: Any) -> bytes:
        self._validate_object_type(obj)
        return json.dumps(_fields(obj), default=_json_value, indent=True).encode("utf-8")

    def decode(self, data: bytes) -> Any:
        return self._record_cls(**json.loads(data))

    def __str__(self) -> str:
        return f"JsonSchema({self._record_cls.__name__})"
