"""Schema compatibility (broker_core.core.schema_compat): Avro's own checker under Pulsar's nine strategies
-- aliases, defaults, unions, renames, promotions --, the transitive ones against every version, Json
schemas with and without an Avro definition, KeyValue schemas key and value each, and the registry's
refusal naming the strategy it applied and Avro's reason."""
from __future__ import annotations

import asyncio
import json
import struct

import pytest

from broker_core.clock import FakeClock
from broker_core.core.schema_compat import (STRATEGIES, consumer_strategy, incompatibility, split_key_value,
                                            strategy_problem)
from broker_core.core.schemas import SchemaRegistry
from broker_core.errors import IncompatibleSchema, InvalidSchema
from broker_core.types import TopicName


def record(*fields: dict, name: str = "User", **more) -> bytes:
    return json.dumps({"type": "record", "name": name, "fields": list(fields), **more}).encode()


def key_value(key: bytes, value: bytes) -> bytes:
    """Pulsar's KeyValue schema data: each part's data after its 4-byte big-endian length."""
    return struct.pack(">i", len(key)) + key + struct.pack(">i", len(value)) + value


def kv_properties(key_type: str = "AVRO", value_type: str = "AVRO") -> dict[str, str]:
    return {"key.schema.type": key_type, "value.schema.type": value_type, "kv.encoding.type": "SEPARATED",
            "key.schema.name": "", "value.schema.name": ""}


ID = {"name": "id", "type": "int"}
NAME = {"name": "name", "type": "string"}
COLOR = {"type": "enum", "name": "Color", "symbols": ["RED", "GREEN"]}

# (old, new, the new schema reads the old one's data, the old schema reads the new one's)
EVOLUTIONS = {
    "a field renamed with an alias": (record(ID), record({"name": "key", "type": "int", "aliases": ["id"]}),
                                      True, False),
    "a field renamed without an alias": (record(ID), record({"name": "key", "type": "int"}), False, False),
    # Pulsar's SchemaValidator runs Avro's resolver: records by their fields (renamed freely), enums by name
    "the record renamed without an alias": (record(ID), record(ID, name="Person"), True, True),
    "the record renamed with an alias in its namespace": (
        record(ID, namespace="shop"), record(ID, name="Person", namespace="shop", aliases=["User"]), True, True),
    "a nested record renamed": (record({"name": "a", "type": {"type": "record", "name": "Inner", "fields": [ID]}}),
                                record({"name": "a", "type": {"type": "record", "name": "Other", "fields": [ID]}}),
                                True, True),
    "an enum renamed without an alias": (record({"name": "c", "type": COLOR}),
                                         record({"name": "c", "type": {**COLOR, "name": "Colour"}}), False, False),
    "a field added with a default": (record(ID), record(ID, {"name": "age", "type": "int", "default": 0}),
                                     True, True),
    "a field added without a default": (record(ID), record(ID, {"name": "age", "type": "int"}), False, True),
    "a field without a default removed": (record(ID, NAME), record(ID), True, False),
    "a field with a default removed": (record(ID, {**NAME, "default": ""}), record(ID), True, True),
    "a union widened": (record({"name": "v", "type": ["null", "int"]}),
                        record({"name": "v", "type": ["null", "int", "string"]}), True, False),
    "a union narrowed": (record({"name": "v", "type": ["null", "int", "string"]}),
                         record({"name": "v", "type": ["null", "int"]}), False, True),
    "a field made nullable": (record(NAME), record({"name": "name", "type": ["null", "string"]}), True, False),
    "int promoted to long": (record(ID), record({"name": "id", "type": "long"}), True, False),
    "int changed to string": (record(ID), record({"name": "id", "type": "string"}), False, False),
    "string read as bytes": (record(NAME), record({"name": "name", "type": "bytes"}), True, True),
    "an enum symbol added": (record({"name": "c", "type": COLOR}),
                             record({"name": "c", "type": {**COLOR, "symbols": ["RED", "GREEN", "BLUE"]}}),
                             True, False),
    "an enum symbol added with a default": (
        record({"name": "c", "type": {**COLOR, "default": "RED"}}),
        record({"name": "c", "type": {**COLOR, "symbols": ["RED", "GREEN", "BLUE"], "default": "RED"}}),
        True, True),
}


def expected(strategy: str, backward: bool, forward: bool) -> bool:
    base = {"UNDEFINED": "FULL"}.get(strategy, strategy).removesuffix("_TRANSITIVE")
    return {"ALWAYS_COMPATIBLE": True, "ALWAYS_INCOMPATIBLE": False, "BACKWARD": backward, "FORWARD": forward,
            "FULL": backward and forward}[base]


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("evolution", EVOLUTIONS)
def test_each_strategy_applies_avros_rules_in_its_direction(strategy, evolution):
    old, new, backward, forward = EVOLUTIONS[evolution]
    for schema_type in ("Avro", "Json"):  # Json schemas carrying an Avro definition are checked the same
        problem = strategy_problem(strategy, schema_type, schema_type, old, new)
        assert (problem is None) == expected(strategy, backward, forward), problem


def test_the_nine_strategies_are_pulsars():
    assert sorted(STRATEGIES) == sorted(["UNDEFINED", "ALWAYS_INCOMPATIBLE", "ALWAYS_COMPATIBLE", "BACKWARD",
                                         "FORWARD", "FULL", "BACKWARD_TRANSITIVE", "FORWARD_TRANSITIVE",
                                         "FULL_TRANSITIVE"])


@pytest.mark.parametrize("evolution, reason", [
    ("a field added without a default", "reader_field_missing_default_value at /fields/1: age"),
    ("an enum renamed without an alias", "name_mismatch at /fields/0/type/name: expected: Color"),
    ("int changed to string", "type_mismatch at /fields/0/type: reader type: string not compatible with writer"
                              " type: int"),
    ("a union narrowed", "missing_union_branch at /fields/0/type/2: reader union lacking writer type: STRING"),
    ("an enum symbol added", None),
])
def test_a_backward_refusal_gives_avros_incompatibility_and_its_location(evolution, reason):
    old, new, _, _ = EVOLUTIONS[evolution]
    assert incompatibility("Avro", old, new) == reason


def test_under_forward_and_full_the_refusal_says_which_way_failed():
    old, new, _, _ = EVOLUTIONS["an enum symbol added"]
    assert strategy_problem("FORWARD", "Avro", "Avro", old, new) == (
        "forward: missing_enum_symbols at /fields/0/type/symbols: {'BLUE'}")
    old, new, _, _ = EVOLUTIONS["a field added without a default"]
    assert strategy_problem("FULL", "Avro", "Avro", old, new).startswith("backward: reader_field_missing")


def test_a_writer_union_branch_is_located_at_the_union():
    found = incompatibility("Avro", record({"name": "v", "type": ["null", "int"]}), record({"name": "v",
                                                                                          "type": "int"}))
    assert found == "type_mismatch at /fields/0/type: reader type: int not compatible with writer type: null"


def test_a_refusal_quotes_a_few_of_many_broken_fields():
    old = record(*({"name": f"f{i}", "type": "int"} for i in range(12)))
    new = record(*({"name": f"f{i}", "type": "string"} for i in range(12)))
    found = incompatibility("Avro", old, new)
    assert found.startswith("type_mismatch at /fields/0/type, /fields/1/type,") and "(and 7 more)" in found


def test_a_definition_avro_does_not_parse_is_refused_with_the_parsers_reason():
    assert incompatibility("Avro", record(ID), b'{"type": "record"}').startswith("the new schema is not an Avro")
    assert incompatibility("Avro", b"{not json", record(ID)).startswith("the registered schema is not an Avro")
    deep = b'{"type": "array", "items": ' * 3000 + b'"int"' + b"}" * 3000
    assert incompatibility("Avro", record(ID), deep) == "the new schema is not an Avro schema: nested too deeply"


def test_java_class_names_with_a_dollar_are_taken_as_pulsars_parser_takes_them():
    inner = record(ID, name="Outer$Inner")
    assert incompatibility("Avro", inner, record(ID, {**NAME, "default": ""}, name="Outer$Inner")) is None


# --- Json schemas without an Avro definition (Pulsar's older JSON Schema format) ---------------------------
JSON_SCHEMA = json.dumps({"type": "object", "id": "urn:user", "properties": {"id": {"type": "integer"}}}).encode()


@pytest.mark.parametrize("old, new, problem", [
    (JSON_SCHEMA, JSON_SCHEMA.replace(b"integer", b"string"), None),  # the same id
    (JSON_SCHEMA, JSON_SCHEMA.replace(b"urn:user", b"urn:other"), "the JSON Schema's id 'urn:other' is not"),
    (record(ID), JSON_SCHEMA, None),  # an Avro definition and a JSON Schema replace each other
    (JSON_SCHEMA, record(ID), None),
    (record(ID), b"[1, 2]", "the new JSON schema is neither an Avro schema"),
    (b"\x00garbage", record(ID), None),  # a stored definition of no known format is replaced
])
def test_json_schemas_without_an_avro_definition_follow_pulsars_json_check(old, new, problem):
    found = strategy_problem("FULL", "Json", "Json", old, new)
    assert (found is None) if problem is None else problem in found, found


# --- other types ---------------------------------------------------------------------------------------------
def test_a_protobuf_schemas_avro_definition_is_checked_as_avro():
    old, new, _, _ = EVOLUTIONS["a field added without a default"]
    assert "reader_field_missing_default_value" in incompatibility("Protobuf", old, new)


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_a_primitive_schema_is_compatible_with_itself_unless_always_incompatible(strategy):
    found = strategy_problem(strategy, "String", "String", b"", b"")
    assert (found is None) == (strategy != "ALWAYS_INCOMPATIBLE")


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_a_type_change_is_refused_unless_always_compatible(strategy):
    found = strategy_problem(strategy, "String", "Avro", record(ID), b"")
    assert (found is None) == (strategy == "ALWAYS_COMPATIBLE")


@pytest.mark.parametrize("new_key, new_value, strategy, problem", [
    (record(ID), record(NAME, {"name": "age", "type": "int", "default": 0}), "FULL", None),
    (record({"name": "id", "type": "long"}), record(NAME), "BACKWARD", None),  # the key widens
    (record({"name": "id", "type": "long"}), record(NAME), "FORWARD", "key schema: forward: type_mismatch"),
    (record(ID), record(NAME, {"name": "age", "type": "int"}), "BACKWARD",
     "value schema: reader_field_missing_default_value at /fields/1: age"),
    (record({"name": "id", "type": "string"}), record(NAME), "BACKWARD", "key schema: type_mismatch"),
])
def test_a_key_value_schema_is_checked_key_and_value_each(new_key, new_value, strategy, problem):
    old = key_value(record(ID), record(NAME))
    found = strategy_problem(strategy, "KeyValue", "KeyValue", old, key_value(new_key, new_value), kv_properties(),
                             kv_properties())
    assert (found is None) if problem is None else found.startswith(problem), found


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


# --- the registry -------------------------------------------------------------------------------------------
TOPIC = TopicName.parse("persistent://public/default/users")
A = {"name": "a", "type": "int"}
B = {"name": "b", "type": "int"}
B_DEFAULT = {**B, "default": 0}


def register(registry: SchemaRegistry, data: bytes, schema_type: str = "Avro", **kwargs):
    return asyncio.run(registry.get_or_create(TOPIC, schema_type, data, **kwargs))


@pytest.mark.parametrize("strategy, versions", [
    ("BACKWARD", [record(A), record(A, B_DEFAULT), record(A, B)]),  # v2 reads v1's data, not v0's (no b)
    ("FORWARD", [record(A, B), record(A, B_DEFAULT), record(A)]),  # v1 reads v2's data, v0 does not (needs b)
    ("FULL", [record(A), record(A, B_DEFAULT), record(A, B)]),  # v1 and v2 read each other, v2 not v0's data
])
def test_a_transitive_strategy_sees_an_older_version_the_latest_does_not(tmp_path, strategy, versions):
    for transitive in (False, True):
        applied = f"{strategy}_TRANSITIVE" if transitive else strategy
        registry = SchemaRegistry(tmp_path / applied, FakeClock(), strategy_of=lambda name: applied)
        for data in versions[:2]:
            register(registry, data)
        if not transitive:
            assert register(registry, versions[2]).version == 2
            continue
        with pytest.raises(IncompatibleSchema, match=rf"its version 0 \({applied}\): .*missing_default_value"):
            register(registry, versions[2])
        assert registry.latest(TOPIC).version == 1


def test_the_refusal_names_the_strategy_applied_for_undefined_the_brokers_default_full(tmp_path):
    registry = SchemaRegistry(tmp_path, FakeClock(), strategy_of=lambda name: "UNDEFINED")
    assert registry.strategy(TOPIC) == "FULL"
    register(registry, record(A))
    with pytest.raises(IncompatibleSchema) as refused:
        register(registry, record({"name": "a", "type": "long"}))  # int -> long: backward only
    assert str(refused.value) == ("schema of persistent://public/default/users is incompatible with its version 0"
                                  " (FULL): forward: type_mismatch at /fields/0/type: reader type: int not"
                                  " compatible with writer type: long")


@pytest.mark.parametrize("strategy, applied", [
    ("UNDEFINED", "BACKWARD"), ("BACKWARD", "BACKWARD"), ("FORWARD", "BACKWARD"), ("FULL", "BACKWARD"),
    ("FORWARD_TRANSITIVE", "BACKWARD"), ("BACKWARD_TRANSITIVE", "BACKWARD_TRANSITIVE"),
    ("FULL_TRANSITIVE", "FULL_TRANSITIVE"), ("ALWAYS_COMPATIBLE", "ALWAYS_COMPATIBLE"),
    ("ALWAYS_INCOMPATIBLE", "ALWAYS_INCOMPATIBLE"),
])
def test_a_consumers_schema_is_checked_as_pulsar_checks_a_consumers(strategy, applied):
    assert consumer_strategy(strategy) == applied


def test_a_consumer_reading_fewer_fields_is_taken_under_full_where_a_producer_is_not(tmp_path):
    registry = SchemaRegistry(tmp_path, FakeClock())
    register(registry, record(A, B))
    projection = record(A)  # reads v0's data; v0 cannot read its data (b has no default)
    assert asyncio.run(registry.consumer_compatibility(TOPIC, "Avro", projection)) is None
    assert "forward: reader_field_missing_default_value" in asyncio.run(
        registry.compatibility(TOPIC, "Avro", projection))


def test_the_registry_refuses_an_incompatible_key_value_version_and_malformed_data(tmp_path):
    registry = SchemaRegistry(tmp_path, FakeClock())

    def register_kv(data: bytes):
        return register(registry, data, "KeyValue", properties=kv_properties())
    assert register_kv(key_value(record(ID), record(NAME))).version == 0
    assert register_kv(key_value(record(ID), record(NAME, {"name": "x", "type": "int", "default": 1}))).version == 1
    with pytest.raises(IncompatibleSchema, match="value schema"):
        register_kv(key_value(record(ID), record({"name": "other", "type": "int"})))
    with pytest.raises(InvalidSchema, match="KeyValue layout"):
        register_kv(b"not two length-prefixed parts")
    assert registry.latest(TOPIC).version == 1

