"""Subscription expiration against a real broker whose clock a test moves: an abandoned subscription
expires (loaded topic or not), a used one stays, and the namespace policy has its admin verbs."""
from __future__ import annotations

import json

import pytest

from broker_core import Broker
from broker_core.clock import FakeClock
from broker_core.types import TopicName
from connector import Admin, Client
from connector.cli.admin import main as admin_main
from tests.waiting import wait_until

MINUTE = 60_000


@pytest.fixture(scope="module")
def clock():
    return FakeClock()


@pytest.fixture(scope="module")
def timed_broker(tmp_path_factory, clock):
    """Expiration after 10 minutes of the fake clock, checked every real second; idle topics unloaded after
    2 seconds of the fake clock, looked for every real second."""
    with Broker(data_dir=tmp_path_factory.mktemp("expiry"), port=0, clock=clock,
                subscriptionExpirationTimeMinutes=10, subscriptionExpiryCheckIntervalInSeconds=1,
                brokerTopicIdleUnloadSeconds=2) as running:
        yield running


@pytest.fixture
def timed_admin(timed_broker):
    with Admin(timed_broker.service_url) as a:
        yield a


def test_an_abandoned_subscription_expires_and_a_used_one_stays(timed_broker, timed_admin, clock, topic):
    timed_admin.create_topic(topic)
    timed_admin.create_subscription(topic, "abandoned")
    with Client(timed_broker.service_url) as client:
        client.subscribe(topic, "in-use")  # stays connected while time passes
        clock.advance(11 * MINUTE)
        assert wait_until(lambda: timed_admin.list_subscriptions(topic) == ["in-use"])


def test_the_subscription_of_an_unloaded_topic_expires_on_disk(timed_broker, timed_admin, clock, topic):
    timed_admin.create_topic(topic)
    timed_admin.create_subscription(topic, "abandoned")
    registry = timed_broker._service.registry  # what the broker holds in memory
    clock.advance(MINUTE)  # idle past brokerTopicIdleUnloadSeconds: the topic is unloaded
    assert wait_until(lambda: registry.loaded(TopicName.parse(topic)) is None)
    clock.advance(11 * MINUTE)
    assert wait_until(lambda: registry.cursor_store(TopicName.parse(topic)).load_all() == {})
    assert registry.loaded(TopicName.parse(topic)) is None  # swept from disk, never loaded
    assert timed_admin.list_subscriptions(topic) == []


def test_the_namespace_policy_is_set_read_and_removed(broker, admin):
    admin.create_namespace("public/expiring")
    admin.set_namespace_subscription_expiration_time("public/expiring", 120)
    assert admin.get_namespace_subscription_expiration_time("public/expiring") == 120
    admin.remove_namespace_subscription_expiration_time("public/expiring")
    assert admin.get_namespace_subscription_expiration_time("public/expiring") is None
    with pytest.raises(ValueError):
        admin.set_namespace_subscription_expiration_time("public/expiring", -1)


def test_the_namespace_verbs_set_and_show_the_expiration_time(broker, admin, capsys):
    admin.create_namespace("public/expiring-cli")
    url = ["admin", "--url", broker.service_url, "namespaces"]
    assert admin_main([*url, "set-subscription-expiration-time", "public/expiring-cli", "-t", "30"]) == 0
    capsys.readouterr()
    assert admin_main([*url, "get-subscription-expiration-time", "public/expiring-cli"]) == 0
    assert capsys.readouterr().out.strip() == "30"
    assert admin_main([*url, "policies", "public/expiring-cli"]) == 0
    assert json.loads(capsys.readouterr().out)["subscription_expiration_time_minutes"] == 30
    assert admin_main([*url, "remove-subscription-expiration-time", "public/expiring-cli"]) == 0
    assert admin.get_namespace_subscription_expiration_time("public/expiring-cli") is None
