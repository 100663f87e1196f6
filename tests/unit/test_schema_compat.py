"""BACKWARD compatibility (broker_core.core.schema_compat): Avro's resolution rules, and KeyValue schemas
checked key and value each, in Pulsar's KeyValue layout."""
from __future__ import annotations

import asyncio
import json
import struct

import pytest

from broker_core.clock import FakeClock
from broker_core.errors import IncompatibleSchema, InvalidSchema
from broker_core.core.schema_compat import incompatibility, split_key_value
from broker_core.core.schemas import SchemaRegistry
from broker_core.types import TopicName


def record(*fields: dict) -> bytes:
    return json.dumps({"type": "record", "name": "User", "fields": list(fields)}).encode()


def key_value(key: bytes, value: bytes) -> bytes:
    """Pulsar's KeyValue schema data: each part's data after its 4-byte big-endian length."""
    return struct.pack(">i", len(key)) + key + struct.pack(">i", len(value)) + value


def kv_properties(key_type: str = "AVRO", value_type: str = "AVRO") -> dict[str, str]:
    return {"key.schema.type": key_type, "value.schema.type": value_type, "kv.encoding.type": "SEPARATED",
            "key.schema.name": "", "value.schema.name": ""}


ID = {"name": "id", "type": "int"}
NAME = {"name": "name", "type": "string"}


@pytest.mark.parametrize("old, new, problem", [
    ({"name": "a", "type": "int"}, {"name": "a", "type": "long"}, None),
    ({"name": "a", "type": "int"}, {"name": "a", "type": "string"}, "type changed from int to string"),
    ({"name": "a", "type": "string"}, {"name": "a", "type": ["null", "string"]}, None),
    ({"name": "a", "type": ["null", "string"]}, {"name": "a", "type": "string"}, "old union branch null"),
    ({"name": "a", "type": {"type": "enum", "name": "E", "symbols": ["X", "Y"]}},
     {"name": "a", "type": {"type": "enum", "name": "E", "symbols": ["X"]}}, "enum symbols ['Y']"),
])
def test_avro_resolution_rules_decide_backward_compatibility(old, new, problem):
    found = incompatibility("Avro", record(old), record(new))
    assert (found is None) if problem is None else (problem in found)


def test_types_without_a_definition_are_compatible_with_themselves():
    assert incompatibility("String", b"", b"") is None
    assert incompatibility("Bytes", b"", b"") is None


@pytest.mark.parametrize("new_key, new_value, problem", [
    (record(ID), record(NAME, {"name": "age", "type": "int", "default": 0}), None),  # value gains a default field
    (record({"name": "id", "type": "long"}), record(NAME), None),  # key widens
    (record(ID), record(NAME, {"name": "age", "type": "int"}), "value schema: schema.age: a new field without"),
    (record({"name": "id", "type": "string"}), record(NAME), "key schema: schema.id: type changed from int to"),
])
def test_a_key_value_schema_is_checked_key_and_value_each(new_key, new_value, problem):
    old = key_value(record(ID), record(NAME))
    found = incompatibility("KeyValue", old, key_value(new_key, new_value), kv_properties(), kv_properties())
    assert (found is None) if problem is None else found.startswith(problem)


def test_a_key_value_schema_whose_part_changes_type_is_incompatible():
    old = key_value(b"", record(NAME))
    found = incompatibility("KeyValue", old, key_value(record(ID), record(NAME)), kv_properties("STRING"),
                            kv_properties("AVRO"))
    assert found == "key schema: type changed from STRING to AVRO"


def test_key_value_data_splits_only_when_its_two_lengths_fill_it():
    assert split_key_value(key_value(b"k", b"value")) == (b"k", b"value")
    assert split_key_value(struct.pack(">i", -1) + struct.pack(">i", 1) + b"v") == (b"", b"v")  # -1: no data
    assert split_key_value(key_value(b"k", b"v") + b"!") is None
    assert split_key_value(struct.pack(">i", 1 << 30) + b"k") is None
    assert split_key_value(b"\0\0") is None


def test_the_registry_refuses_an_incompatible_key_value_version_and_malformed_data(tmp_path):
    topic = TopicName.parse("persistent://public/default/kv")
    registry = SchemaRegistry(tmp_path, FakeClock())

    def register(data: bytes):
        return asyncio.run(registry.get_or_create(topic, "KeyValue", data, properties=kv_properties()))
    assert register(key_value(record(ID), record(NAME))).version == 0
    assert register(key_value(record(ID), record(NAME, {"name": "x", "type": "int", "default": 1}))).version == 1
    with pytest.raises(IncompatibleSchema, match="value schema"):
        register(key_value(record(ID), record({"name": "other", "type": "int"})))
    with pytest.raises(InvalidSchema, match="KeyValue layout"):
        register(b"not two length-prefixed parts")
    assert registry.latest(topic).version == 1
