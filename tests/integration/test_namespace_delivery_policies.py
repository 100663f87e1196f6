"""The namespace policies about delivery and a topic's life, set over the admin REST API and enforced on a
real broker (issue 31): delayed delivery switched and ticked per namespace, inactive topics deleted per
Pulsar's InactiveTopicPolicies, a namespace unloaded (its clients reconnect), deduplication snapshots taken by
time; and the namespace's bundles and properties."""
from __future__ import annotations

import json
import time
import uuid

import pytest

from connector import Client, ConsumerType, NotAllowedError, Timeout
from tests.integration.test_http_admin_server import admin_http
from tests.waiting import wait_until


@pytest.fixture(scope="module")
def http(tmp_path_factory):
    with admin_http(tmp_path_factory.mktemp("ns-delivery"), brokerDeleteInactiveTopicsFrequencySeconds=1) as served:
        yield served


@pytest.fixture
def ns(http):
    name = f"public/dlv-{uuid.uuid4().hex[:8]}"
    assert http.put(f"/admin/v2/namespaces/{name}").status == 204
    return name


@pytest.fixture
def topic(ns):
    return f"persistent://{ns}/t-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def ours(http, transport):
    with Client(http.broker.service_url, transport=transport) as client:
        yield client


def set_policy(http, ns: str, segment: str, value, method: str = "POST") -> None:
    answer = http.call(method, f"/admin/v2/namespaces/{ns}/{segment}", value)
    assert answer.status == 204, answer


def rest(topic: str) -> str:
    return f"/admin/v2/persistent/{topic.removeprefix('persistent://')}"


def topics_of(http, ns: str) -> list[str]:
    return http.get(f"/admin/v2/namespaces/{ns}/topics").body


# ------------------------------------------------------------------ delayed delivery
@pytest.mark.transports
def test_a_namespace_without_delayed_delivery_delivers_delayed_messages_at_once(http, ns, topic, ours):
    set_policy(http, ns, "delayedDelivery", {"tickTime": 1000, "active": False})
    assert http.get(f"/admin/v2/namespaces/{ns}/delayedDelivery").body == {  # Pulsar's DelayedDeliveryPolicies
        "tickTime": 1000, "active": False, "maxDeliveryDelayInMillis": 0}
    consumer = ours.subscribe(topic, "s", consumer_type=ConsumerType.Shared)
    ours.create_producer(topic).send(b"later", deliver_after=3_600_000)
    assert consumer.receive(timeout_millis=3000).data() == b"later"


@pytest.mark.transports
def test_turning_delayed_delivery_off_releases_what_waits_and_on_again_holds_new_ones(http, ns, topic, ours):
    consumer = ours.subscribe(topic, "s", consumer_type=ConsumerType.Shared)
    producer = ours.create_producer(topic)
    producer.send(b"held", deliver_after=3_600_000)
    with pytest.raises(Timeout):
        consumer.receive(timeout_millis=300)
    set_policy(http, ns, "delayedDelivery", {"tickTime": 1000, "active": False})
    assert consumer.receive(timeout_millis=3000).data() == b"held"
    set_policy(http, ns, "delayedDelivery", {"tickTime": 100, "active": True})
    producer.send(b"soon", deliver_after=700)
    with pytest.raises(Timeout):
        consumer.receive(timeout_millis=300)
    assert consumer.receive(timeout_millis=3000).data() == b"soon"
    assert http.delete(f"/admin/v2/namespaces/{ns}/delayedDelivery").status == 204
    assert http.get(f"/admin/v2/namespaces/{ns}/delayedDelivery").status == 204  # the broker's again


# ------------------------------------------------------------------ inactive topics
def test_a_topic_without_subscriptions_is_deleted_once_inactive_for_the_namespaces_duration(http, ns, ours):
    gone, kept = f"persistent://{ns}/gone", f"persistent://{ns}/kept"
    policy = {"inactiveTopicDeleteMode": "delete_when_no_subscriptions", "maxInactiveDurationSeconds": 1,
              "deleteWhileInactive": True}
    set_policy(http, ns, "inactiveTopicPolicies", policy)
    assert http.get(f"/admin/v2/namespaces/{ns}/inactiveTopicPolicies").body == policy
    producer = ours.create_producer(gone)
    producer.send(b"x")
    producer.close()
    ours.subscribe(kept, "s").close()  # a subscription keeps it in this mode
    assert wait_until(lambda: gone not in topics_of(http, ns), timeout_s=15)
    time.sleep(2.5)  # two more rounds: the topic with a subscription stays
    assert topics_of(http, ns) == [kept]
    assert http.get(f"{rest(gone)}/stats").status == 404


def test_caught_up_mode_deletes_a_topic_whose_subscriptions_have_everything_and_keeps_a_backlog(http, ns, ours):
    caught_up, behind = f"persistent://{ns}/caught-up", f"persistent://{ns}/behind"
    set_policy(http, ns, "inactiveTopicPolicies", {"inactiveTopicDeleteMode": "delete_when_subscriptions_caught_up",
                                                   "maxInactiveDurationSeconds": 1, "deleteWhileInactive": True})
    for name in (caught_up, behind):
        consumer = ours.subscribe(name, "s")
        producer = ours.create_producer(name)
        producer.send(b"x")
        producer.close()
        if name == caught_up:
            consumer.acknowledge(consumer.receive(timeout_millis=3000))
        consumer.close()
    assert wait_until(lambda: caught_up not in topics_of(http, ns), timeout_s=15)
    assert behind in topics_of(http, ns)


def test_inactive_topics_are_kept_while_delete_while_inactive_is_off(http, ns, ours):
    set_policy(http, ns, "inactiveTopicPolicies", {"inactiveTopicDeleteMode": "delete_when_no_subscriptions",
                                                   "maxInactiveDurationSeconds": 0, "deleteWhileInactive": False})
    name = f"persistent://{ns}/stays"
    ours.create_producer(name).close()
    time.sleep(2.5)
    assert topics_of(http, ns) == [name]


# ------------------------------------------------------------------ unload, bundles, properties
@pytest.mark.transports
def test_unloading_a_namespace_disconnects_its_clients_who_reconnect_and_go_on(http, ns, topic, ours):
    other = f"persistent://public/default/u-{uuid.uuid4().hex[:8]}"
    consumer = ours.subscribe(topic, "s")
    producer = ours.create_producer(topic)
    producer.send(b"before")
    ours.create_producer(other).close()
    assert http.put(f"/admin/v2/namespaces/{ns}/unload").status == 204
    loaded = http.broker._service.registry.loaded_topics()
    assert topic not in loaded or loaded[topic].has_clients  # unloaded; loaded again by a reconnecting client
    assert other in loaded  # another namespace's topic stays
    producer.send(b"after")  # the producer reconnected
    assert [consumer.receive(timeout_millis=5000).data() for _ in range(2)] == [b"before", b"after"]
    assert http.put("/admin/v2/namespaces/public/nope/unload").status == 404


def test_a_namespace_has_one_bundle_over_the_whole_hash_range(http, ns):
    assert http.get(f"/admin/v2/namespaces/{ns}/bundles").body == {"boundaries": ["0x00000000", "0xffffffff"],
                                                                   "numBundles": 1}


def test_namespace_properties_are_set_one_by_one_or_added_read_removed_and_cleared(http, ns):
    base = f"/admin/v2/namespaces/{ns}"
    assert http.get(f"{base}/properties").body == {}
    assert http.put(f"{base}/property/owner/billing").status == 204
    assert http.put(f"{base}/properties", {"tier": "gold", "owner": "shop"}).status == 204  # added, owner replaced
    assert http.get(f"{base}/properties").body == {"owner": "shop", "tier": "gold"}
    assert http.get(f"{base}/property/tier").body == "gold"
    assert http.get(f"{base}/property/none").status == 204
    assert http.delete(f"{base}/property/tier").status == 204
    assert http.get(base).body["properties"] == {"owner": "shop"}  # in Pulsar's Policies too
    assert http.delete(f"{base}/properties").status == 204
    assert http.get(f"{base}/properties").body == {}
    assert http.put(f"{base}/properties", {"k": 1}).status == 400


# ------------------------------------------------------------------ deduplication snapshots
def test_deduplication_state_is_snapshotted_when_entries_come_an_interval_after_the_last_snapshot(http, ns, topic,
                                                                                                ours):
    set_policy(http, ns, "deduplication", True)
    set_policy(http, ns, "deduplicationSnapshotInterval", 1)
    assert http.get(f"/admin/v2/namespaces/{ns}/deduplicationSnapshotInterval").body == 1
    producer = ours.create_producer(topic, producer_name="p")
    producer.send(b"0")
    loaded = http.broker._service.registry.loaded_topics()[topic]
    snapshot = loaded.directory / "dedup-snapshot.json"

    def covered() -> int:
        return json.loads(snapshot.read_bytes())["offset"] if snapshot.exists() else 0
    assert covered() == 0  # one entry: neither 1,000 entries nor a second since
    time.sleep(1.1)
    producer.send(b"1")  # a second after the last snapshot: taken now, not after 1,000 entries
    assert wait_until(lambda: covered() == 2)
    assert http.post(f"/admin/v2/namespaces/{ns}/deduplicationSnapshotInterval").status == 204  # no body: removed
    assert http.get(f"/admin/v2/namespaces/{ns}/deduplicationSnapshotInterval").status == 204


# ------------------------------------------------------------------ a topic's own, over its namespace's
@pytest.mark.transports
def test_a_delay_longer_than_max_delivery_delay_is_refused_and_a_shorter_one_taken(http, ns, topic, ours):
    set_policy(http, ns, "delayedDelivery", {"tickTime": 100, "active": True, "maxDeliveryDelayInMillis": 1000})
    producer = ours.create_producer(topic)
    with pytest.raises(NotAllowedError, match="Exceeds max allowed delivery delay of 1000 milliseconds"):
        producer.send(b"too late", deliver_after=60_000)
    consumer = ours.subscribe(topic, "s", consumer_type=ConsumerType.Shared)
    ours.create_producer(topic).send(b"in time", deliver_after=300)
    assert consumer.receive(timeout_millis=3000).data() == b"in time"


def test_a_topics_delayed_delivery_wins_over_its_namespaces_until_removed(http, ns, topic, ours):
    base = f"{rest(topic)}/delayedDelivery"
    consumer = ours.subscribe(topic, "s", consumer_type=ConsumerType.Shared)
    assert http.get(base).status == 204  # none of its own
    assert http.post(base, {"tickTime": 500, "active": False}).status == 204
    assert http.get(base).body == {"tickTime": 500, "active": False, "maxDeliveryDelayInMillis": 0}
    ours.create_producer(topic).send(b"now", deliver_after=3_600_000)  # the namespace's (the broker's) would hold it
    assert consumer.receive(timeout_millis=3000).data() == b"now"
    assert http.delete(base).status == 204
    ours.create_producer(topic).send(b"held", deliver_after=3_600_000)
    with pytest.raises(Timeout):
        consumer.receive(timeout_millis=300)
    assert http.get(f"{rest(topic)}-none/delayedDelivery").status == 404


def test_a_topics_subscription_types_win_over_its_namespaces(http, ns, topic, ours):
    set_policy(http, ns, "subscriptionTypesEnabled", ["Shared"])
    assert http.get(f"/admin/v2/namespaces/{ns}/subscriptionTypesEnabled").body == ["Shared"]
    with pytest.raises(NotAllowedError, match="doesn't support Exclusive sub type"):
        ours.subscribe(topic, "x", consumer_type=ConsumerType.Exclusive)
    assert http.post(f"{rest(topic)}/subscriptionTypesEnabled", ["Exclusive", "Failover"]).status == 204
    assert http.get(f"{rest(topic)}/subscriptionTypesEnabled").body == ["Exclusive", "Failover"]
    ours.subscribe(topic, "x", consumer_type=ConsumerType.Exclusive).close()
    with pytest.raises(NotAllowedError, match="doesn't support Shared sub type"):
        ours.subscribe(topic, "y", consumer_type=ConsumerType.Shared)
    assert http.post(f"{rest(topic)}/subscriptionTypesEnabled", ["Nope"]).status == 412


def test_a_topics_inactive_topic_policies_delete_it_where_its_namespace_keeps_topics(http, ns, ours):
    gone, kept = f"persistent://{ns}/own-policy", f"persistent://{ns}/namespace-policy"
    set_policy(http, ns, "inactiveTopicPolicies", {"inactiveTopicDeleteMode": "delete_when_no_subscriptions",
                                                   "maxInactiveDurationSeconds": 0, "deleteWhileInactive": False})
    for name in (gone, kept):
        ours.create_producer(name).close()
    own = {"inactiveTopicDeleteMode": "delete_when_no_subscriptions", "maxInactiveDurationSeconds": 1,
           "deleteWhileInactive": True}
    assert http.post(f"{rest(gone)}/inactiveTopicPolicies", own).status == 204
    assert http.get(f"{rest(gone)}/inactiveTopicPolicies").body == own
    assert wait_until(lambda: gone not in topics_of(http, ns), timeout_s=15)
    assert topics_of(http, ns) == [kept]


def test_a_non_persistent_topic_serves_the_same_policies(http, ns):
    topic = f"{ns}/np-{uuid.uuid4().hex[:8]}"
    assert http.put(f"/admin/v2/non-persistent/{topic}").status == 204
    base = f"/admin/v2/non-persistent/{topic}"
    assert http.post(f"{base}/subscriptionTypesEnabled", ["Shared"]).status == 204
    assert http.get(f"{base}/subscriptionTypesEnabled").body == ["Shared"]
    assert http.post(f"{base}/autoSubscriptionCreation", {"allowAutoSubscriptionCreation": False}).status == 204
    assert http.get(f"{base}/autoSubscriptionCreation").body == {"allowAutoSubscriptionCreation": False}
    assert http.post(f"{base}/deduplicationSnapshotInterval", 10).status == 204
    assert http.delete(f"{base}/deduplicationSnapshotInterval").status == 204
    assert http.get(f"{base}/deduplicationSnapshotInterval").status == 204


@pytest.mark.parametrize("over", ["grpc", "rest"])
def test_admin_sets_reads_and_removes_a_topics_own_policies_over_grpc_and_rest(http, ns, topic, over):
    from connector import Admin

    http.put(f"{rest(topic)}")
    with (Admin(http.broker.service_url) if over == "grpc" else Admin(admin_url=http.base)) as admin:
        admin.set_topic_delayed_delivery(topic, False, 500, max_delivery_delay_ms=2000)
        assert admin.get_topic_delayed_delivery(topic) == {"tickTime": 500, "active": False,
                                                           "maxDeliveryDelayInMillis": 2000}
        admin.set_topic_subscription_types_enabled(topic, ["Shared", "Exclusive"])
        assert admin.get_topic_subscription_types_enabled(topic) == ["Exclusive", "Shared"]
        admin.set_topic_auto_subscription_creation(topic, False)
        admin.set_topic_deduplication_snapshot_interval(topic, 30)
        admin.set_topic_inactive_topic_policies(topic, "delete_when_subscriptions_caught_up", 60, True)
        admin.set_topic_schema_compatibility_strategy(topic, "backward")
        admin.set_topic_schema_validation_enforced(topic, True)
        assert (admin.get_topic_auto_subscription_creation(topic), admin.get_topic_deduplication_snapshot_interval(
            topic), admin.get_topic_schema_compatibility_strategy(topic),
            admin.get_topic_schema_validation_enforced(topic)) == (
            {"allowAutoSubscriptionCreation": False}, 30, "BACKWARD", True)
        assert admin.get_topic_inactive_topic_policies(topic)["inactiveTopicDeleteMode"] == \
            "delete_when_subscriptions_caught_up"
        for policy in ("delayed_delivery", "subscription_types_enabled", "auto_subscription_creation",
                       "deduplication_snapshot_interval", "inactive_topic_policies", "schema_compatibility_strategy"):
            getattr(admin, f"remove_topic_{policy}")(topic)
        assert admin.get_topic_delayed_delivery(topic) is None
        assert admin.get_topic_schema_compatibility_strategy(topic) == "UNDEFINED"
        admin.set_namespace_deduplication_snapshot_interval(ns, 5)
        admin.remove_namespace_deduplication_snapshot_interval(ns)  # REST: a POST without a body, as Pulsar's
        assert admin.get_namespace_deduplication_snapshot_interval(ns) is None
        admin.set_namespace_schema_auto_update_strategy(ns, "Backward")  # REST: PUT
        assert admin.get_namespace_schema_auto_update_strategy(ns) == "Backward"
