"""The schema registry and its BACKWARD compatibility check (broker_core.service.schemas, .schema_compat)."""
from __future__ import annotations

import json

import pytest

from broker_core.clock import FakeClock
from broker_core.errors import CorruptLog, IncompatibleSchema
from broker_core.service.schema_compat import incompatibility
from broker_core.service.schemas import SchemaRegistry, version_number
from broker_core.types import TopicName

TOPIC = TopicName.parse("persistent://public/default/users")


def record(*fields: dict) -> bytes:
    return json.dumps({"type": "record", "name": "User", "fields": list(fields)}).encode()


NAME = {"name": "name", "type": "string"}


def test_the_first_schema_is_version_zero_and_an_identical_one_finds_it(tmp_path):
    registry = SchemaRegistry(tmp_path, FakeClock())
    first = registry.get_or_create(TOPIC, "Json", record(NAME))
    assert (first.version, version_number(first.version_bytes)) == (0, 0)
    assert registry.get_or_create(TOPIC, "Json", record(NAME)).version == 0


def test_a_compatible_schema_is_the_next_version_and_survives_a_restart(tmp_path):
    registry = SchemaRegistry(tmp_path, FakeClock())
    registry.get_or_create(TOPIC, "Avro", record(NAME))
    added = registry.get_or_create(TOPIC, "Avro", record(NAME, {"name": "age", "type": "int", "default": 0}))
    assert added.version == 1
    reopened = SchemaRegistry(tmp_path, FakeClock())
    assert reopened.latest(TOPIC) == added
    assert reopened.get(TOPIC.partition(2), 0).data == record(NAME)  # partitions share the base topic's


def test_an_incompatible_schema_or_another_type_is_refused(tmp_path):
    registry = SchemaRegistry(tmp_path, FakeClock())
    registry.get_or_create(TOPIC, "Json", record(NAME))
    with pytest.raises(IncompatibleSchema, match="new field without a default"):
        registry.get_or_create(TOPIC, "Json", record(NAME, {"name": "age", "type": "int"}))
    with pytest.raises(IncompatibleSchema, match="is Json, not String"):
        registry.get_or_create(TOPIC, "String", b"")
    assert registry.latest(TOPIC).version == 0


def test_a_corrupt_registry_file_is_reported_without_its_path(tmp_path):
    (tmp_path / "schemas.json").write_text("{not json")
    with pytest.raises(CorruptLog) as raised:
        SchemaRegistry(tmp_path, FakeClock())
    assert str(tmp_path) not in raised.value.message


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
    assert incompatibility("KeyValue", b"a", b"b") is None
