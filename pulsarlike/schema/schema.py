"""``pulsar.schema.schema`` as pulsar-client lays it out: ``Schema`` and the bytes, string and JSON schemas,
the very objects of :mod:`pulsarlike.schema`."""
from pulsarlike.schema import BytesSchema, JsonSchema, Schema, StringSchema

__all__ = ["BytesSchema", "JsonSchema", "Schema", "StringSchema"]
