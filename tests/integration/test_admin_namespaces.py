"""Tenants and namespaces through Admin, end to end: public/default exists at first start, a topic of a
missing namespace is refused, deleting a namespace with topics (or a tenant with namespaces) needs force,
namespace and topic limits on producers and consumers are enforced, everything survives a restart."""
from __future__ import annotations

import uuid

import pytest

from broker_core import Broker
from connector import (Admin, Client, ConsumerBusy, InvalidConfiguration, MessageId, NamespaceAlreadyExists,
                       NamespaceNotEmpty, NamespaceNotFound, ProducerBusy, SubscriptionMode, TenantAlreadyExists,
                       TenantNotEmpty, TenantNotFound, TopicNotFound)


@pytest.fixture
def tenant(admin):
    name = f"acme-{uuid.uuid4().hex[:8]}"
    admin.create_tenant(name)
    yield name
    try:
        admin.delete_tenant(name, force=True)
    except TenantNotFound:
        pass


def test_public_default_exists_at_first_start(admin):
    assert "public" in admin.list_tenants()
    assert "public/default" in admin.list_namespaces("public")
    assert admin.get_tenant("public") == {"adminRoles": [], "allowedClusters": ["standalone"]}


def test_tenants_and_namespaces_are_created_listed_and_deleted(admin, tenant):
    admin.update_tenant(tenant, admin_roles=["ops"])
    assert admin.get_tenant(tenant) == {"adminRoles": ["ops"], "allowedClusters": ["standalone"]}
    with pytest.raises(TenantAlreadyExists):
        admin.create_tenant(tenant)
    admin.create_namespace(f"{tenant}/orders")
    admin.create_namespace(f"{tenant}/billing")
    assert admin.list_namespaces(tenant) == [f"{tenant}/billing", f"{tenant}/orders"]
    with pytest.raises(NamespaceAlreadyExists):
        admin.create_namespace(f"{tenant}/orders")
    admin.delete_namespace(f"{tenant}/billing")
    assert admin.list_namespaces(tenant) == [f"{tenant}/orders"]
    with pytest.raises(TenantNotEmpty, match=f"still has namespaces \\({tenant}/orders\\)"):
        admin.delete_tenant(tenant)
    admin.delete_namespace(f"{tenant}/orders")
    admin.delete_tenant(tenant)
    assert tenant not in admin.list_tenants()
    with pytest.raises(TenantNotFound):
        admin.list_namespaces(tenant)


def test_a_topic_of_a_missing_namespace_is_refused_with_how_to_create_it(client, admin, tenant):
    topic = f"persistent://{tenant}/orders/t"
    with pytest.raises(NamespaceNotFound, match=f"namespace {tenant}/orders does not exist: create it with "
                                                f"`pulsarlike admin namespaces create {tenant}/orders`"):
        client.create_producer(topic)
    with pytest.raises(NamespaceNotFound):
        client.subscribe(topic, "sub")
    with pytest.raises(NamespaceNotFound):
        admin.create_topic(topic)
    with pytest.raises(NamespaceNotFound):
        admin.create_partitioned_topic(topic, 2)
    with pytest.raises(NamespaceNotFound):
        admin.list_topics(f"{tenant}/orders")
    with pytest.raises(NamespaceNotFound):
        admin.set_namespace_message_ttl(f"{tenant}/orders", 60)
    with pytest.raises(TenantNotFound, match="pulsarlike admin tenants create nobody"):
        client.create_producer("persistent://nobody/ns/t")
    admin.create_namespace(f"{tenant}/orders")
    producer = client.create_producer(topic)
    producer.send(b"now it works")
    producer.close()
    assert admin.list_topics(f"{tenant}/orders") == [topic]


def test_deleting_a_namespace_with_topics_needs_force_which_deletes_them(client, admin, tenant):
    namespace = f"{tenant}/orders"
    admin.create_namespace(namespace)
    admin.create_partitioned_topic(f"persistent://{namespace}/parted", 2)
    producer = client.create_producer(f"persistent://{namespace}/plain")
    producer.send(b"x")
    admin.set_namespace_message_ttl(namespace, 60)
    with pytest.raises(NamespaceNotEmpty, match=f"namespace {namespace} still has 2 topic"):
        admin.delete_namespace(namespace)
    assert len(admin.list_topics(namespace)) == 3  # nothing deleted
    admin.delete_namespace(namespace, force=True)  # even with a connected producer
    assert namespace not in admin.list_namespaces(tenant)
    with pytest.raises(NamespaceNotFound):
        admin.list_topics(namespace)
    admin.create_namespace(namespace)  # a namespace created again starts empty, without the old policies
    assert admin.list_topics(namespace) == [] and admin.namespace_policies(namespace) == {}
    assert admin.get_partitioned_topic_metadata(f"persistent://{namespace}/parted") == {"partitions": 0}


def test_deleting_a_tenant_with_force_deletes_its_namespaces_and_topics(client, admin, tenant):
    admin.create_namespace(f"{tenant}/a")
    admin.create_topic(f"persistent://{tenant}/a/t")
    admin.delete_tenant(tenant, force=True)
    assert tenant not in admin.list_tenants()
    admin.create_tenant(tenant)
    admin.create_namespace(f"{tenant}/a")
    with pytest.raises(TopicNotFound):
        admin.topic_stats(f"persistent://{tenant}/a/t")


def test_max_producers_per_topic_namespace_then_topic_level(client, admin, tenant):
    namespace = f"{tenant}/limits"
    admin.create_namespace(namespace)
    topic = f"persistent://{namespace}/p"
    admin.set_namespace_max_producers_per_topic(namespace, 2)
    assert admin.get_namespace_max_producers_per_topic(namespace) == 2
    first, second = client.create_producer(topic), client.create_producer(topic)
    with pytest.raises(ProducerBusy, match="reached max producers limit \\(2\\)"):
        client.create_producer(topic)
    first.close()
    third = client.create_producer(topic)  # a slot is free again
    admin.set_topic_max_producers(topic, 3)  # the topic's own limit wins, applied to the loaded topic
    fourth = client.create_producer(topic)
    admin.remove_topic_max_producers(topic)
    with pytest.raises(ProducerBusy):
        client.create_producer(topic)
    admin.remove_namespace_max_producers_per_topic(namespace)
    assert admin.get_namespace_max_producers_per_topic(namespace) is None
    client.create_producer(topic).close()
    for p in (second, third, fourth):
        p.close()


def test_max_consumers_per_topic_counts_every_subscription_and_readers(client, admin, tenant):
    namespace = f"{tenant}/limits"
    admin.create_namespace(namespace)
    topic = f"persistent://{namespace}/c"
    admin.set_namespace_max_consumers_per_topic(namespace, 2)
    a = client.subscribe(topic, "a")
    reader = client.create_reader(topic, MessageId.earliest)
    with pytest.raises(ConsumerBusy, match="reached max consumers limit \\(2\\)"):
        client.subscribe(topic, "b")
    with pytest.raises(ConsumerBusy):
        client.subscribe(topic, "c", subscription_mode=SubscriptionMode.NonDurable)
    reader.close()
    client.subscribe(topic, "b").close()
    a.close()


def test_limits_apply_per_partition_and_to_non_persistent_topics(client, admin, tenant):
    namespace = f"{tenant}/limits"
    admin.create_namespace(namespace)
    admin.set_namespace_max_producers_per_topic(namespace, 1)
    parted = f"persistent://{namespace}/parted"
    admin.create_partitioned_topic(parted, 2)
    whole = client.create_producer(parted)  # one producer per partition
    with pytest.raises(ProducerBusy):
        client.create_producer(f"{parted}-partition-1")
    volatile = f"non-persistent://{namespace}/np"
    admin.set_topic_max_consumers(parted, 5)  # unrelated topic-level policy: no effect on the others
    np_producer = client.create_producer(volatile)
    with pytest.raises(ProducerBusy):
        client.create_producer(volatile)
    np_producer.close()
    whole.close()


@pytest.mark.parametrize("call", [
    lambda a, ns, t: a.set_namespace_max_producers_per_topic(ns, -1),
    lambda a, ns, t: a.set_namespace_max_consumers_per_topic(ns, -3),
    lambda a, ns, t: a.set_topic_max_producers(t, -1),
    lambda a, ns, t: a.set_topic_max_consumers(t, -1),
    lambda a, ns, t: a.set_namespace_message_ttl(ns, -1),
    lambda a, ns, t: a.set_namespace_retention(ns, -5, 10),
])
def test_negative_policy_values_are_refused(admin, topic, call):
    admin.create_topic(topic)
    with pytest.raises(InvalidConfiguration, match="takes"):
        call(admin, "public/default", topic)
    assert admin.topic_policies(topic) == {}


def test_tenants_namespaces_and_limits_survive_a_restart(tmp_path):
    with Broker(data_dir=tmp_path, port=0) as broker, Admin(broker.service_url) as admin:
        admin.create_tenant("acme", admin_roles=["ops"], allowed_clusters=["standalone"])
        admin.create_namespace("acme/orders")
        admin.set_namespace_max_producers_per_topic("acme/orders", 1)
    with Broker(data_dir=tmp_path, port=0) as broker, Admin(broker.service_url) as admin, \
            Client(broker.service_url) as client:
        assert admin.get_tenant("acme") == {"adminRoles": ["ops"], "allowedClusters": ["standalone"]}
        assert admin.list_namespaces("acme") == ["acme/orders"]
        producer = client.create_producer("persistent://acme/orders/t")
        with pytest.raises(ProducerBusy):
            client.create_producer("persistent://acme/orders/t")
        producer.close()


def test_a_data_folder_from_before_namespaces_keeps_its_topics(tmp_path):
    with Broker(data_dir=tmp_path, port=0) as broker, Admin(broker.service_url) as admin, \
            Client(broker.service_url) as client:
        admin.create_tenant("legacy")
        admin.create_namespace("legacy/ns")
        producer = client.create_producer("persistent://legacy/ns/t")
        producer.send(b"kept")
        producer.close()
    (tmp_path / "metadata" / "namespaces.json").unlink()  # as an older broker left the folder
    with Broker(data_dir=tmp_path, port=0) as broker, Admin(broker.service_url) as admin:
        assert admin.list_namespaces("legacy") == ["legacy/ns"]
        assert admin.topic_stats("persistent://legacy/ns/t")["msgInCounter"] == 0  # loaded, not refused
        assert admin.list_topics("legacy/ns") == ["persistent://legacy/ns/t"]


def test_force_deleting_a_namespace_deletes_topics_not_loaded_since_a_restart(tmp_path):
    with Broker(data_dir=tmp_path, port=0) as broker, Admin(broker.service_url) as admin, \
            Client(broker.service_url) as client:
        admin.create_namespace("public/old")
        admin.create_partitioned_topic("persistent://public/old/parted", 2)
        producer = client.create_producer("persistent://public/old/parted")
        producer.send(b"x", partition_key="a")
        producer.close()
        admin.create_topic("persistent://public/old/plain")
    with Broker(data_dir=tmp_path, port=0) as broker, Admin(broker.service_url) as admin:
        admin.delete_namespace("public/old", force=True)
        admin.create_namespace("public/old")
        assert admin.list_topics("public/old") == []
        assert admin.get_partitioned_topic_metadata("persistent://public/old/parted") == {"partitions": 0}
    assert not (tmp_path / "topics" / "persistent" / "public" / "old").exists()
