"""``pulsar.schema``, a package as pulsar-client's (its modules ``definition``, ``schema``, ``schema_avro``
and ``schema_protobuf`` re-export the names below): typed schemas (``Record`` and its fields, ``StringSchema``,
``BytesSchema``, ``JsonSchema``, ``AvroSchema``, ``ProtobufNativeSchema``), served by
:mod:`connector.client.schema`. A name of pulsar-client's ``pulsar.schema`` that is not served yet is still
defined here, and using it raises ``NotSupported`` naming it.
"""
from __future__ import annotations

from pulsarlike._unsupported import unsupported_class

PULSAR_SCHEMA_NAMES = (
    "Array", "AvroSchema", "Boolean", "Bytes", "BytesSchema", "CustomEnum", "Double", "Field", "Float", "Integer",
    "JsonSchema", "Long", "Map", "Null", "ProtobufNativeSchema", "Record", "Schema", "String", "StringSchema")
"""pulsar-client 3.13's ``pulsar.schema`` public names (tests/unit/test_pulsarlike_coverage.py checks the list)."""

try:
    import connector.client.schema as _served
except ModuleNotFoundError as exc:  # the schema package is not there (an older checkout): nothing served
    if not (exc.name or "").startswith("connector.client.schema"):
        raise
    _served = None  # type: ignore[assignment]

_served_names: list[str] = list(getattr(_served, "__all__", ())) if _served is not None else []
globals().update({name: getattr(_served, name) for name in _served_names})
for _name in PULSAR_SCHEMA_NAMES:
    if _name not in globals():
        globals()[_name] = unsupported_class(_name, "this schema type is not implemented", "pulsarlike.schema")

__all__ = sorted(set(_served_names) | set(PULSAR_SCHEMA_NAMES))
del _name
