"""Namespace and topic policies: validation, resolution order (topic, partitioned base, namespace,
broker default) and persistence."""
import pytest

from broker_core.errors import InvalidConfiguration
from broker_core.core.policies import NAMESPACE, TOPIC, PoliciesStore
from broker_core.types import TopicName

T = "persistent://public/default/orders"


def test_topic_policy_wins_over_namespace_policy_over_the_broker_default(tmp_path):
    store = PoliciesStore(tmp_path)
    name = TopicName.parse(T)
    assert store.resolve(name, "deduplicationEnabled", False) is False
    store.set(NAMESPACE, "public/default", "deduplicationEnabled", True)
    assert store.resolve(name, "deduplicationEnabled", False) is True
    store.set(TOPIC, T, "deduplicationEnabled", False)
    assert store.resolve(name, "deduplicationEnabled", True) is False
    store.set(TOPIC, T, "deduplicationEnabled", None)
    assert store.resolve(name, "deduplicationEnabled", False) is True


def test_a_partitioned_topics_policy_applies_to_its_partitions(tmp_path):
    store = PoliciesStore(tmp_path)
    store.set(TOPIC, "orders", "deduplicationEnabled", True)  # short names are qualified
    assert store.resolve(TopicName.parse(T + "-partition-3"), "deduplicationEnabled", False) is True
    assert store.get(TOPIC, T) == {"deduplicationEnabled": True}


def test_policies_are_persisted(tmp_path):
    PoliciesStore(tmp_path).set(NAMESPACE, "acme/billing", "deduplicationEnabled", True)
    reloaded = PoliciesStore(tmp_path)
    assert reloaded.get(NAMESPACE, "acme/billing") == {"deduplicationEnabled": True}
    reloaded.forget_topic(T)  # nothing set: no error
    assert PoliciesStore(tmp_path).get(TOPIC, T) == {}


@pytest.mark.parametrize("scope, name, key, value, match", [
    (NAMESPACE, "public/default", "deduplicationEnabld", True, "unknown policy 'deduplicationEnabld'"),
    (NAMESPACE, "public/default", "deduplicationEnabled", "yes", "true or false"),
    (NAMESPACE, "public", "deduplicationEnabled", True, "tenant/namespace"),
    ("tenant", "public", "deduplicationEnabled", True, "unknown policy scope"),
])
def test_bad_policies_are_refused_with_what_is_accepted(tmp_path, scope, name, key, value, match):
    with pytest.raises(InvalidConfiguration, match=match):
        PoliciesStore(tmp_path).set(scope, name, key, value)
    assert not (tmp_path / "policies.json").exists()


def test_a_corrupt_policies_file_is_reported(tmp_path):
    from broker_core.errors import CorruptLog

    (tmp_path / "policies.json").write_text("[1,")
    with pytest.raises(CorruptLog, match="policies.json"):
        PoliciesStore(tmp_path)


def test_retention_and_ttl_policies_resolve_topic_over_namespace_as_a_whole(tmp_path):
    store = PoliciesStore(tmp_path)
    name = TopicName.parse(T)
    ns_retention = {"retentionTimeInMinutes": 60, "retentionSizeInMB": -1}
    store.set(NAMESPACE, "public/default", "retention", ns_retention)
    store.set(NAMESPACE, "public/default", "messageTTLInSeconds", 300)
    assert store.resolve(name, "retention", None) == ns_retention
    store.set(TOPIC, T, "retention", {"retentionTimeInMinutes": -1, "retentionSizeInMB": 10})
    store.set(TOPIC, T, "messageTTLInSeconds", 0)  # 0 set on the topic: no TTL there
    assert store.resolve(name, "retention", None) == {"retentionTimeInMinutes": -1, "retentionSizeInMB": 10}
    assert store.resolve(name, "messageTTLInSeconds", 5) == 0
    reloaded = PoliciesStore(tmp_path)
    assert reloaded.get(NAMESPACE, "public/default") == {"retention": ns_retention, "messageTTLInSeconds": 300}


@pytest.mark.parametrize("key, value, match", [
    ("retention", {"retentionTimeInMinutes": -2, "retentionSizeInMB": 10}, "retention.retentionTimeInMinutes"),
    ("retention", {"retentionTimeInMinutes": 10, "retentionSizeInMB": -5}, "retention.retentionSizeInMB"),
    ("retention", {"retentionTimeInMinutes": 0, "retentionSizeInMB": 10}, "use -1 to ignore a limit"),
    ("retention", {"retentionTimeInMinutes": 10}, "retentionSizeInMB"),
    ("retention", {"retentionTimeInMinutes": True, "retentionSizeInMB": 1}, "retentionTimeInMinutes"),
    ("retention", 10, "retentionTimeInMinutes"),
    ("messageTTLInSeconds", -1, "messageTTLInSeconds takes an integer >= 0"),
    ("messageTTLInSeconds", 1.5, "messageTTLInSeconds"),
])
def test_bad_retention_and_ttl_values_are_refused_naming_the_field(tmp_path, key, value, match):
    with pytest.raises(InvalidConfiguration, match=match):
        PoliciesStore(tmp_path).set(NAMESPACE, "public/default", key, value)


@pytest.mark.parametrize("key", ["maxProducersPerTopic", "maxConsumersPerTopic", "messageTTLInSeconds"])
@pytest.mark.parametrize("value", [-1, -5, 1.5, "3", True])
def test_negative_or_non_integer_limits_are_refused(tmp_path, key, value):
    with pytest.raises(InvalidConfiguration, match=f"policy {key} takes an integer >= 0"):
        PoliciesStore(tmp_path).set(NAMESPACE, "public/default", key, value)


def test_max_producers_and_consumers_resolve_topic_over_namespace(tmp_path):
    store = PoliciesStore(tmp_path)
    name = TopicName.parse(T + "-partition-1")
    store.set(NAMESPACE, "public/default", "maxProducersPerTopic", 3)
    store.set(NAMESPACE, "public/default", "maxConsumersPerTopic", 0)
    assert store.resolve(name, "maxProducersPerTopic", 0) == 3
    store.set(TOPIC, T, "maxProducersPerTopic", 1)
    assert store.resolve(name, "maxProducersPerTopic", 0) == 1
    assert store.resolve(name, "maxConsumersPerTopic", 7) == 0  # 0 set on the namespace: no limit


def test_forgetting_a_namespace_drops_its_policies_and_its_topics_policies(tmp_path):
    store = PoliciesStore(tmp_path)
    store.set(NAMESPACE, "acme/orders", "messageTTLInSeconds", 60)
    store.set(TOPIC, "persistent://acme/orders/t", "deduplicationEnabled", True)
    store.set(TOPIC, T, "deduplicationEnabled", True)
    store.forget_namespace("acme/orders")
    reloaded = PoliciesStore(tmp_path)
    assert reloaded.get(NAMESPACE, "acme/orders") == {}
    assert reloaded.get(TOPIC, "persistent://acme/orders/t") == {}
    assert reloaded.get(TOPIC, T) == {"deduplicationEnabled": True}
