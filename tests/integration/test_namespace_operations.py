"""Namespace unload, bundles, properties and subscription permissions, and the namespace and topic limits, over
``Admin`` (gRPC and ``admin_url`` REST answering alike) and ``pulsarlike admin`` with pulsar-admin's verbs and
flags (issue 31); an unloaded namespace's clients -- ours over both transports and the official client --
reconnect and keep working."""
from __future__ import annotations

import json
import uuid

import pytest

from connector import Client, ConsumerType, InvalidConfiguration, InitialPosition
from connector.cli.admin import main
from connector.client.admin import Admin
from tests.integration.test_http_admin_server import admin_http

TRANSPORTS = ("grpc", "rest")


@pytest.fixture(scope="module")
def http(tmp_path_factory):
    with admin_http(tmp_path_factory.mktemp("ns-ops")) as served:
        yield served


@pytest.fixture
def ns(http):
    name = f"public/ops-{uuid.uuid4().hex[:8]}"
    assert http.put(f"/admin/v2/namespaces/{name}").status == 204
    return name


def url(http, transport: str) -> str:
    return http.base if transport == "rest" else http.broker.service_url


@pytest.fixture(params=TRANSPORTS)
def admin(request, http):
    kwargs = {"admin_url": http.base} if request.param == "rest" else {"service_url": http.broker.service_url}
    with Admin(**kwargs) as found:
        yield found


def cli(capsys, http, transport: str, *args: str, code: int = 0) -> str:
    done = main(["admin", "--admin-url", url(http, transport), *args])
    captured = capsys.readouterr()
    assert done == code, (args, done, captured.out, captured.err)
    return captured.out if code == 0 else captured.err


# ------------------------------------------------------------------ unload
@pytest.mark.transports
def test_after_a_namespace_unload_our_clients_reconnect_and_keep_working(http, ns, transport):
    topic = f"persistent://{ns}/u-{uuid.uuid4().hex[:6]}"
    with Client(http.broker.service_url, transport=transport) as client:
        consumer = client.subscribe(topic, "s", initial_position=InitialPosition.Earliest)
        producer = client.create_producer(topic)
        producer.send(b"before")
        assert http.put(f"/admin/v2/namespaces/{ns}/unload").status == 204
        assert f"persistent://{ns}" not in " ".join(http.registry.loaded_topics())
        producer.send(b"after")
        got = [consumer.receive(timeout_millis=10000) for _ in range(2)]
        assert [m.data() for m in got] == [b"before", b"after"]
        for message in got:
            consumer.acknowledge(message)


def test_after_a_namespace_unload_the_official_client_reconnects_and_keeps_working(http, ns):
    pulsar = pytest.importorskip("pulsar")
    topic = f"persistent://{ns}/u-{uuid.uuid4().hex[:6]}"
    client = pulsar.Client(http.broker.service_url, operation_timeout_seconds=10,
                           logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        consumer = client.subscribe(topic, "s", consumer_type=pulsar.ConsumerType.Shared)
        producer = client.create_producer(topic)
        producer.send(b"before")
        with Admin(admin_url=http.base) as admin:
            admin.unload_namespace(ns)
        producer.send(b"after")
        assert sorted(consumer.receive(timeout_millis=10000).data() for _ in range(2)) == [b"after", b"before"]
    finally:
        client.close()


def test_unloading_a_namespace_that_does_not_exist_is_404(http):
    assert http.put("/admin/v2/namespaces/public/never-made/unload").status == 404


# ------------------------------------------------------------------ Admin over both transports
def test_admin_sets_reads_and_removes_the_namespace_limits(http, ns, admin):
    admin.set_namespace_max_consumers_per_subscription(ns, 2)
    admin.set_namespace_max_unacked_messages_per_consumer(ns, 100)
    admin.set_namespace_max_unacked_messages_per_subscription(ns, 300)
    admin.set_namespace_max_subscriptions_per_topic(ns, 4)
    admin.set_namespace_max_topics_per_namespace(ns, 50)
    assert (admin.get_namespace_max_consumers_per_subscription(ns),
            admin.get_namespace_max_unacked_messages_per_consumer(ns),
            admin.get_namespace_max_unacked_messages_per_subscription(ns),
            admin.get_namespace_max_subscriptions_per_topic(ns),
            admin.get_namespace_max_topics_per_namespace(ns)) == (2, 100, 300, 4, 50)
    policies = http.get(f"/admin/v2/namespaces/{ns}").body  # Pulsar's Policies fields
    assert (policies["max_consumers_per_subscription"], policies["max_unacked_messages_per_consumer"],
            policies["max_unacked_messages_per_subscription"], policies["max_subscriptions_per_topic"],
            policies["max_topics_per_namespace"]) == (2, 100, 300, 4, 50)
    admin.remove_namespace_max_consumers_per_subscription(ns)
    admin.remove_namespace_max_topics_per_namespace(ns)
    assert admin.get_namespace_max_consumers_per_subscription(ns) is None
    assert admin.get_namespace_max_topics_per_namespace(ns) == 0  # unset: the broker's, as Pulsar answers
    with pytest.raises(ValueError, match="max_subscriptions"):  # refused before anything is sent
        admin.set_namespace_max_subscriptions_per_topic(ns, -1)


def test_admin_sets_reads_and_removes_a_topics_own_limits(http, ns, admin):
    topic = f"persistent://{ns}/lim-{uuid.uuid4().hex[:6]}"
    admin.create_topic(topic)
    admin.set_topic_max_consumers_per_subscription(topic, 3)
    admin.set_topic_max_unacked_messages_per_consumer(topic, 11)
    admin.set_topic_max_unacked_messages_per_subscription(topic, 22)
    admin.set_topic_max_subscriptions_per_topic(topic, 5)
    admin.set_topic_max_message_size(topic, 2048)
    assert (admin.get_topic_max_consumers_per_subscription(topic),
            admin.get_topic_max_unacked_messages_per_consumer(topic),
            admin.get_topic_max_unacked_messages_per_subscription(topic),
            admin.get_topic_max_subscriptions_per_topic(topic),
            admin.get_topic_max_message_size(topic)) == (3, 11, 22, 5, 2048)
    assert http.get(f"/admin/v2/persistent/{topic[len('persistent://'):]}/maxUnackedMessagesOnConsumer").body == 11
    with pytest.raises(InvalidConfiguration):  # above the broker's maxMessageSize
        admin.set_topic_max_message_size(topic, http.broker.config.maxMessageSize + 1)
    admin.remove_topic_max_message_size(topic)
    admin.remove_topic_max_consumers_per_subscription(topic)
    assert admin.get_topic_max_message_size(topic) is None
    assert admin.get_topic_max_consumers_per_subscription(topic) is None


def test_admin_keeps_namespace_properties_bundles_and_subscription_permissions(http, ns, admin):
    assert admin.get_namespace_bundles(ns) == {"boundaries": ["0x00000000", "0xffffffff"], "numBundles": 1}
    assert admin.get_namespace_properties(ns) == {}
    admin.set_namespace_properties(ns, {"a": "1", "b": "2"})
    admin.set_namespace_property(ns, "c", "3")
    admin.set_namespace_properties(ns, {"a": "10"})  # adds to those there, as Pulsar's PUT
    assert admin.get_namespace_properties(ns) == {"a": "10", "b": "2", "c": "3"}
    assert admin.get_namespace_property(ns, "b") == "2" and admin.get_namespace_property(ns, "zz") is None
    admin.remove_namespace_property(ns, "b")
    assert http.get(f"/admin/v2/namespaces/{ns}").body["properties"] == {"a": "10", "c": "3"}
    admin.clear_namespace_properties(ns)
    assert admin.get_namespace_properties(ns) == {}
    admin.grant_subscription_permission(ns, "audit", ["alice", "bob"])
    assert admin.get_subscription_permissions(ns) == {"audit": ["alice", "bob"]}
    admin.revoke_subscription_permission(ns, "audit", "alice")
    assert admin.get_subscription_permissions(ns) == {"audit": ["bob"]}
    assert http.get(f"/admin/v2/namespaces/{ns}").body["auth_policies"]["subscription_auth_roles"] == {"audit": ["bob"]}


# ------------------------------------------------------------------ pulsar-admin's verbs
@pytest.mark.parametrize("transport", TRANSPORTS)
def test_the_cli_sets_and_reads_the_limits_with_pulsar_admins_verbs(capsys, http, ns, transport):
    topic = f"persistent://{ns}/cli-{uuid.uuid4().hex[:6]}"
    with Admin(http.broker.service_url) as admin:
        admin.create_topic(topic)
    for verb, flag, value in (("max-consumers-per-subscription", "-c", 2),
                              ("max-unacked-messages-per-consumer", "-c", 7),
                              ("max-unacked-messages-per-subscription", "-c", 9),
                              ("max-subscriptions-per-topic", "-m", 3), ("max-topics-per-namespace", "-t", 40)):
        cli(capsys, http, transport, "namespaces", f"set-{verb}", ns, flag, str(value))
        assert json.loads(cli(capsys, http, transport, "namespaces", f"get-{verb}", ns)) == value, verb
    cli(capsys, http, transport, "namespaces", "remove-max-consumers-per-subscription", ns)
    assert cli(capsys, http, transport, "namespaces", "get-max-consumers-per-subscription", ns).strip() == "null"
    for verb, value in (("max-consumers-per-subscription -c", 4), ("max-unacked-messages-on-consumer -m", 5),
                        ("max-unacked-messages-per-subscription -m", 6), ("max-subscriptions -m", 2),
                        ("max-message-size -m", 4096)):
        name, flag = verb.split()
        cli(capsys, http, transport, "topics", f"set-{name}", topic, flag, str(value))
        assert json.loads(cli(capsys, http, transport, "topics", f"get-{name}", topic)) == value, name
    cli(capsys, http, transport, "topics", "remove-max-message-size", topic)
    assert cli(capsys, http, transport, "topics", "get-max-message-size", topic).strip() == "null"
    assert "topic-level maxMessageSize" in cli(capsys, http, transport, "topics", "set-max-message-size", topic,
                                               "-m", str(http.broker.config.maxMessageSize + 1), code=1)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_the_cli_unloads_a_namespace_and_keeps_its_properties(capsys, http, ns, transport):
    cli(capsys, http, transport, "namespaces", "set-property", ns, "-k", "owner", "-v", "billing")
    cli(capsys, http, transport, "namespaces", "set-properties", ns, "-p", "a=1,b=2")
    assert json.loads(cli(capsys, http, transport, "namespaces", "get-properties", ns)) == {
        "owner": "billing", "a": "1", "b": "2"}
    cli(capsys, http, transport, "namespaces", "remove-property", ns, "-k", "a")
    assert json.loads(cli(capsys, http, transport, "namespaces", "get-property", ns, "-k", "owner")) == "billing"
    assert json.loads(cli(capsys, http, transport, "namespaces", "bundles", ns))["numBundles"] == 1
    with Client(http.broker.service_url) as client:
        consumer = client.subscribe(f"persistent://{ns}/t", "s", consumer_type=ConsumerType.Shared)
        cli(capsys, http, transport, "namespaces", "unload", ns)
        client.create_producer(f"persistent://{ns}/t").send(b"after")
        assert consumer.receive(timeout_millis=10000).data() == b"after"
    assert "one bundle" in cli(capsys, http, transport, "namespaces", "unload", ns, "-b", "0x0_0x1", code=2)
