"""``pulsarlike admin`` and ``Admin`` for rate limits, resource groups and the broker's dynamic configuration
(issue 31), with pulsar-admin's verbs and flags: the namespace and topic rates over gRPC (``pulsar://``) and over
``--admin-url`` REST with the same output; resource groups, ``brokers`` and ``broker-stats`` over REST (over
gRPC they say they need an HTTP admin URL)."""
from __future__ import annotations

import json
import uuid

import pytest

from connector import Admin, Client, ResourceGroupInUse, ResourceGroupNotFound
from tests.integration.admin_cli_fixtures import cli, served, url  # noqa: F401 (fixtures)

OFF_DISPATCH = {"dispatchThrottlingRateInMsg": -1, "dispatchThrottlingRateInByte": -1, "relativeToPublishRate": False,
                "ratePeriodInSecond": 1}


@pytest.fixture
def namespace(served):
    name = f"public/rv-{uuid.uuid4().hex[:8]}"
    assert served.put(f"/admin/v2/namespaces/{name}").status == 204
    return name


@pytest.fixture
def topic(served):
    name = f"persistent://public/default/rv-{uuid.uuid4().hex[:8]}"
    with Client(served.broker.service_url) as client:
        client.create_producer(name).close()
    return name


def test_a_namespaces_rates_are_set_read_and_removed_with_pulsar_admins_flags(capsys, url, namespace):
    cli(capsys, url, "namespaces", "set-dispatch-rate", namespace, "-md", "100", "-bd", "2048", "-dt", "2", "-rp")
    assert json.loads(cli(capsys, url, "namespaces", "get-dispatch-rate", namespace)) == {
        "dispatchThrottlingRateInMsg": 100, "dispatchThrottlingRateInByte": 2048, "relativeToPublishRate": True,
        "ratePeriodInSecond": 2}
    cli(capsys, url, "namespaces", "set-subscription-dispatch-rate", namespace, "-md", "5")
    cli(capsys, url, "namespaces", "set-publish-rate", namespace, "-m", "10")
    cli(capsys, url, "namespaces", "set-subscribe-rate", namespace, "-sr", "3", "-st", "60")
    assert json.loads(cli(capsys, url, "namespaces", "get-subscription-dispatch-rate", namespace)) == {
        **OFF_DISPATCH, "dispatchThrottlingRateInMsg": 5}
    assert json.loads(cli(capsys, url, "namespaces", "get-publish-rate", namespace)) == {
        "publishThrottlingRateInMsg": 10, "publishThrottlingRateInByte": -1}
    assert json.loads(cli(capsys, url, "namespaces", "get-subscribe-rate", namespace)) == {
        "subscribeThrottlingRatePerConsumer": 3, "ratePeriodInSecond": 60}
    for rate in ("dispatch-rate", "subscription-dispatch-rate", "publish-rate", "subscribe-rate"):
        cli(capsys, url, "namespaces", f"remove-{rate}", namespace)
        assert cli(capsys, url, "namespaces", f"get-{rate}", namespace).strip() == "null"


def test_a_topics_rates_and_a_subscriptions_own_rate_are_set_through_topics_and_topic_policies(capsys, url, topic):
    cli(capsys, url, "topics", "set-dispatch-rate", topic, "-md", "7")
    assert json.loads(cli(capsys, url, "topicPolicies", "get-dispatch-rate", topic))["dispatchThrottlingRateInMsg"] == 7
    cli(capsys, url, "topicPolicies", "set-subscription-dispatch-rate", topic, "-s", "audit", "-bd", "4096")
    assert json.loads(cli(capsys, url, "topicPolicies", "get-subscription-dispatch-rate", topic, "-s", "audit")) == {
        **OFF_DISPATCH, "dispatchThrottlingRateInByte": 4096}
    assert cli(capsys, url, "topics", "get-subscription-dispatch-rate", topic).strip() == "null"  # the topic's own
    cli(capsys, url, "topicPolicies", "remove-subscription-dispatch-rate", topic, "-s", "audit")
    assert cli(capsys, url, "topicPolicies", "get-subscription-dispatch-rate", topic, "-s", "audit").strip() == "null"
    cli(capsys, url, "topics", "set-publish-rate", topic, "-b", "1048576")
    cli(capsys, url, "topics", "set-subscribe-rate", topic, "-sr", "2")
    assert json.loads(cli(capsys, url, "topics", "get-subscribe-rate", topic)) == {
        "subscribeThrottlingRatePerConsumer": 2, "ratePeriodInSecond": 30}
    cli(capsys, url, "topics", "remove-dispatch-rate", topic)
    assert cli(capsys, url, "topics", "get-dispatch-rate", topic).strip() == "null"
    assert "its only cluster" in cli(capsys, url, "topicPolicies", "set-publish-rate", topic, "-m", "1", "-g", code=2)


def test_a_rate_the_broker_refuses_is_the_brokers_typed_error(capsys, url, topic):
    err = cli(capsys, url, "topics", "set-subscribe-rate", topic, "-sr", "1", "-st", "0", code=2)
    assert "period_s" in err  # refused before anything is sent: a period below 1 s
    with Admin(**({"admin_url": url} if url.startswith("http") else {"service_url": url})) as admin:
        admin.set_topic_dispatch_rate(topic, msg_rate=9)
        assert admin.get_topic_dispatch_rate(topic)["dispatchThrottlingRateInMsg"] == 9


def test_resource_groups_are_made_attached_and_deleted_over_rest(capsys, served, namespace):
    url, group = served.base, f"rg-{uuid.uuid4().hex[:8]}"
    cli(capsys, url, "resourcegroups", "create", group, "-mp", "100", "-bd", "1048576")
    cli(capsys, url, "resourcegroups", "update", group, "-md", "50")
    assert json.loads(cli(capsys, url, "resourcegroups", "get", group)) == {
        "publishRateInMsgs": 100, "publishRateInBytes": -1, "dispatchRateInMsgs": 50, "dispatchRateInBytes": 1048576}
    assert group in cli(capsys, url, "resourcegroups", "list").split()
    cli(capsys, url, "namespaces", "set-resource-group", namespace, "-rgn", group)
    assert cli(capsys, url, "namespaces", "get-resource-group", namespace).strip() == group
    assert "ResourceGroupInUse" in cli(capsys, url, "resourcegroups", "delete", group, code=1)
    cli(capsys, url, "namespaces", "remove-resource-group", namespace)
    cli(capsys, url, "resourcegroups", "delete", group)
    with Admin(admin_url=url) as admin:
        with pytest.raises(ResourceGroupNotFound):
            admin.get_resource_group(group)
        with pytest.raises(ResourceGroupNotFound):
            admin.update_resource_group(group, publish_rate_in_msgs=1)
        admin.create_resource_group(group)
        topic = f"persistent://{namespace}/t"
        admin.create_topic(topic)
        admin.set_topic_resource_group(topic, group)
        assert admin.get_topic_resource_group(topic) == group
        with pytest.raises(ResourceGroupInUse):
            admin.delete_resource_group(group)
        admin.remove_topic_resource_group(topic)
        assert admin.get_topic_resource_group(topic) is None
        admin.delete_resource_group(group)


def test_the_brokers_dynamic_configuration_is_changed_and_read_back_over_rest(capsys, served):
    url = served.base
    assert "dispatchThrottlingRatePerTopicInMsg" in cli(capsys, url, "brokers", "list-dynamic-config").split()
    cli(capsys, url, "brokers", "update-dynamic-config", "-c", "maxPublishRatePerTopicInMessages", "-v", "500")
    try:
        assert json.loads(cli(capsys, url, "brokers", "get-all-dynamic-config")) == {
            "maxPublishRatePerTopicInMessages": "500"}
        runtime = json.loads(cli(capsys, url, "brokers", "get-runtime-config"))
        assert runtime["maxPublishRatePerTopicInMessages"] == "500"
        assert "non-dynamic" in cli(capsys, url, "brokers", "update-dynamic-config", "-c", "clusterName", "-v", "x",
                                    code=1)
    finally:
        cli(capsys, url, "brokers", "delete-dynamic-config", "-c", "maxPublishRatePerTopicInMessages")
    assert json.loads(cli(capsys, url, "brokers", "get-all-dynamic-config")) == {}
    assert cli(capsys, url, "brokers", "backlog-quota-check").strip() == "ok"
    owned = json.loads(cli(capsys, url, "brokers", "namespaces", "standalone", "-u", "127.0.0.1:8080"))
    assert owned["public/default/0x00000000_0xffffffff"]["is_active"] is True
    assert "not an active broker" in cli(capsys, url, "brokers", "namespaces", "standalone", "-u", "elsewhere:8080",
                                         code=1)
    assert isinstance(json.loads(cli(capsys, url, "broker-stats", "topics")), dict)
    assert isinstance(json.loads(cli(capsys, url, "broker-stats", "monitoring-metrics", "-i")), list)


def test_the_rest_only_verbs_over_a_service_url_say_they_need_an_http_admin_url(capsys, served):
    err = cli(capsys, served.broker.service_url, "resourcegroups", "list", code=1)
    assert "NotSupported" in err and "admin REST API only" in err
