"""``AvroSchema`` (pulsar-client's): a :class:`~connector.client.schema.record.Record` (or plain dicts, given
a definition) as Avro binary, through fastavro's schemaless reader and writer.

A message is read with the schema version its producer wrote it with (``decode_message`` gets that
version's definition from the registry), resolved against this schema as Avro's schema resolution does:
fields added with a default take it, fields removed are skipped -- how a compatible evolution is read.
"""
from __future__ import annotations

import enum
import io
import json
from typing import Any

import fastavro

from connector.client.schema.record import RESERVED, Record
from connector.client.schema.schemas import Schema, SchemaInfo

__all__ = ["AvroSchema"]


def _avro_value(value: Any) -> Any:
    """A field's value as fastavro writes it: enums by name, records as dicts of their fields."""
    if isinstance(value, enum.Enum):
        return value.name
    if isinstance(value, Record):
        return {key: _avro_value(item) for key, item in value.__dict__.items() if key not in RESERVED}
    if isinstance(value, list):
        return [_avro_value(item) for item in value]
    if isinstance(value, dict):
        return {key: _avro_value(item) for key, item in value.items()}
    return value


class AvroSchema(Schema):
    def __init__(self, record_cls: type[Record] | None, schema_definition: dict | None = None) -> None:
        if record_cls is None and schema_definition is None:
            raise ValueError("AvroSchema needs a Record class or a schema_definition")
        definition = record_cls.schema() if record_cls is not None else schema_definition
        super().__init__(record_cls, "Avro", definition, "AVRO")
        self._definition = definition
        self._parsed = fastavro.parse_schema(definition)
        self._writers: dict[str, Any] = {}
        """Parsed writer definitions by their text: each registry version is parsed once."""

    def encode(self, obj: Any) -> bytes:
        if self._record_cls is not None:
            self._validate_object_type(obj)
        elif not isinstance(obj, dict):
            raise ValueError("an AvroSchema built from a schema_definition encodes dicts")
        buffer = io.BytesIO()
        fastavro.schemaless_writer(buffer, self._parsed, _avro_value(obj))
        return buffer.getvalue()

    def decode(self, data: bytes) -> Any:
        return self._read(data, self._parsed)

    def decode_message(self, data: bytes, writer: SchemaInfo | None = None) -> Any:
        if writer is None or writer.definition == self._schema_info.definition:
            return self.decode(data)
        parsed = self._writers.get(writer.definition)
        if parsed is None:
            definition = json.loads(writer.definition)
            # Avro resolution matches records by name: a renamed record class still reads its older versions
            if isinstance(definition, dict) and isinstance(self._definition, dict):
                definition["name"] = self._definition.get("name", definition.get("name"))
            parsed = self._writers[writer.definition] = fastavro.parse_schema(definition)
        return self._read(data, parsed)

    def _read(self, data: bytes, writer: Any) -> Any:
        values = fastavro.schemaless_reader(io.BytesIO(data), writer, self._parsed)
        return values if self._record_cls is None else self._record_cls(**values)

    def __str__(self) -> str:
        return f"AvroSchema({getattr(self._record_cls, '__name__', 'definition')})"
