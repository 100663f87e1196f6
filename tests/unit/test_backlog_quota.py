"""The policies of their own shape, checked before they are stored (backlog quotas, auto topic creation, the
schema compatibility strategy), and the schema registry under each of Pulsar's compatibility strategies."""
from __future__ import annotations

import asyncio
import json

import pytest

from broker_core.clock import FakeClock
from broker_core.core.backlog_quota import as_pulsar, check_quota_map
from broker_core.core.policies import NAMESPACE, PoliciesStore
from broker_core.core.schema_compat import strategy_problem
from broker_core.core.schemas import SchemaRegistry
from broker_core.errors import IncompatibleSchema, InvalidConfiguration
from broker_core.types import TopicName

TOPIC = TopicName.parse("persistent://public/default/users")


# ------------------------------------------------------------------ backlog quotas
def test_a_quota_map_is_stored_with_its_missing_limits_as_minus_one():
    stored = check_quota_map("backlogQuota", {"destination_storage": {"limit": 100, "policy": "producer_exception"}})
    assert stored == {"destination_storage": {"limitSize": 100, "limitTime": -1, "policy": "producer_exception"}}
    assert as_pulsar(stored["destination_storage"])["limit"] == 100


@pytest.mark.parametrize("value, words", [
    ({}, "non-empty map"),
    ({"disk": {"policy": "producer_exception"}}, "backlogQuotaType"),
    ({"message_age": {"limitTime": 5}}, "policy"),
    ({"message_age": {"limitTime": 5.5, "policy": "producer_exception"}}, "limitTime"),
    ({"message_age": {"limitTime": True, "policy": "producer_exception"}}, "limitTime"),
    ({"message_age": {"limitTime": 1 << 70, "policy": "producer_exception"}}, "limitTime"),
    ({"message_age": {"limitTime": 5, "policy": "producer_exception", "extra": 1}}, "unknown fields"),
])
def test_a_bad_quota_map_is_refused_naming_what_is_wrong(value, words):
    with pytest.raises(InvalidConfiguration) as refused:
        check_quota_map("backlogQuota", value)
    assert words in str(refused.value)


def test_the_new_policies_survive_a_restart_of_the_store(tmp_path):
    store = PoliciesStore(tmp_path)
    store.set(NAMESPACE, "public/default", "backlogQuota",
              {"message_age": {"limitTime": 60, "policy": "consumer_backlog_eviction"}})
    store.set(NAMESPACE, "public/default", "autoTopicCreation",
              {"allowAutoTopicCreation": True, "topicType": "partitioned", "defaultNumPartitions": 2})
    store.set(NAMESPACE, "public/default", "schemaCompatibilityStrategy", "FULL_TRANSITIVE")
    again = PoliciesStore(tmp_path).get(NAMESPACE, "public/default")
    assert again["backlogQuota"]["message_age"]["limitTime"] == 60
    assert again["autoTopicCreation"]["defaultNumPartitions"] == 2
    assert again["schemaCompatibilityStrategy"] == "FULL_TRANSITIVE"


@pytest.mark.parametrize("key, value", [
    ("autoTopicCreation", {"allowAutoTopicCreation": True, "topicType": "non-partitioned",
                           "defaultNumPartitions": 2}),
    ("autoTopicCreation", {"allowAutoTopicCreation": True, "topicType": "partitioned",
                           "defaultNumPartitions": 5000}),
    ("schemaCompatibilityStrategy", "backward"),
    ("schemaCompatibilityStrategy", ["FULL"]),
])
def test_bad_values_of_the_other_policies_are_refused(tmp_path, key, value):
    with pytest.raises(InvalidConfiguration):
        PoliciesStore(tmp_path).set(NAMESPACE, "public/default", key, value)


# ------------------------------------------------------------------ schema compatibility strategies
def record(*fields: dict) -> bytes:
    return json.dumps({"type": "record", "name": "User", "fields": list(fields)}).encode()


A = {"name": "a", "type": "string"}
B_DEFAULT = {"name": "b", "type": "string", "default": ""}
B = {"name": "b", "type": "string"}


@pytest.mark.parametrize("strategy, old, new, compatible", [
    ("BACKWARD", record(A), record(A, B), False),  # the new reader needs b, old data lacks it
    ("FORWARD", record(A), record(A, B), True),  # an old reader ignores b
    ("FORWARD", record(A, B), record(A), False),  # an old reader needs b, new data lacks it
    ("BACKWARD", record(A, B), record(A), True),
    ("FULL", record(A), record(A, B), False),
    ("FULL", record(A), record(A, B_DEFAULT), True),
    ("UNDEFINED", record(A), record(A, B), False),  # the broker's default, FULL
    ("ALWAYS_COMPATIBLE", record(A), b'"string"', True),
    ("ALWAYS_INCOMPATIBLE", record(A), record(A, B_DEFAULT), False),
])
def test_each_strategy_compares_reader_and_writer_its_way(strategy, old, new, compatible):
    problem = strategy_problem(strategy, "Avro", "Avro", old, new)
    assert (problem is None) == compatible, problem


def test_a_type_change_is_refused_unless_the_strategy_is_always_compatible():
    assert strategy_problem("FULL", "String", "Avro", record(A), b"") is not None
    assert strategy_problem("ALWAYS_COMPATIBLE", "String", "Avro", record(A), b"") is None


def test_a_transitive_strategy_checks_every_version_not_only_the_latest(tmp_path):
    strategies = {"users": "BACKWARD", "orders": "BACKWARD_TRANSITIVE"}
    registry = SchemaRegistry(tmp_path, FakeClock(), strategy_of=lambda name: strategies[name.local_name])

    async def evolve(topic: TopicName) -> None:
        await registry.get_or_create(topic, "Avro", record(A))
        await registry.get_or_create(topic, "Avro", record(A, B_DEFAULT))
        await registry.get_or_create(topic, "Avro", record(A, B))  # reads v1's data, not v0's

    asyncio.run(evolve(TOPIC))
    assert registry.latest(TOPIC).version == 2
    orders = TopicName.parse("persistent://public/default/orders")
    with pytest.raises(IncompatibleSchema) as refused:
        asyncio.run(evolve(orders))
    assert "version 0 (BACKWARD_TRANSITIVE)" in str(refused.value)
