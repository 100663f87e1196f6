"""``pulsarlike admin`` verbs for the delivery, subscription and schema policies (issue 31), with
pulsar-admin's names and flags, on a namespace and on a topic, over gRPC (``pulsar://``) and over
``--admin-url`` REST, with the same output."""
from __future__ import annotations

import json

from tests.integration.admin_cli_fixtures import cli, namespace, served, topic, url  # noqa: F401 (fixtures)


def test_namespace_delayed_delivery_with_a_max_delay_is_set_read_and_removed(capsys, url, namespace):
    cli(capsys, url, "namespaces", "set-delayed-delivery", namespace, "-e", "-t", "2s", "-md", "1h")
    assert json.loads(cli(capsys, url, "namespaces", "get-delayed-delivery", namespace)) == {
        "tickTime": 2000, "active": True, "maxDeliveryDelayInMillis": 3_600_000}
    cli(capsys, url, "namespaces", "remove-delayed-delivery", namespace)
    assert cli(capsys, url, "namespaces", "get-delayed-delivery", namespace).strip() == "null"


def test_namespace_schema_and_auth_flags_are_set_and_read(capsys, url, namespace):
    cli(capsys, url, "namespaces", "set-encryption-required", namespace, "-e")
    assert cli(capsys, url, "namespaces", "get-encryption-required", namespace).strip() == "true"
    cli(capsys, url, "namespaces", "set-schema-validation-enforce", namespace, "--enable")
    assert cli(capsys, url, "namespaces", "get-schema-validation-enforce", namespace).strip() == "true"
    cli(capsys, url, "namespaces", "set-subscription-auth-mode", namespace, "-m", "Prefix")
    assert "Prefix" in cli(capsys, url, "namespaces", "get-subscription-auth-mode", namespace)
    cli(capsys, url, "namespaces", "set-deduplication-snapshot-interval", namespace, "-i", "30")
    assert cli(capsys, url, "namespaces", "get-deduplication-snapshot-interval", namespace).strip() == "30"
    cli(capsys, url, "namespaces", "remove-deduplication-snapshot-interval", namespace)
    assert cli(capsys, url, "namespaces", "get-deduplication-snapshot-interval", namespace).strip() == "null"


def test_a_topics_own_policies_are_set_read_and_removed(capsys, url, topic):
    cli(capsys, url, "topics", "set-delayed-delivery", topic, "-d", "-t", "1s")
    assert json.loads(cli(capsys, url, "topics", "get-delayed-delivery", topic)) == {
        "tickTime": 1000, "active": False, "maxDeliveryDelayInMillis": 0}
    cli(capsys, url, "topics", "set-inactive-topic-policies", topic, "-e", "-t", "1h", "-m",
        "delete_when_no_subscriptions")
    assert json.loads(cli(capsys, url, "topics", "get-inactive-topic-policies", topic)) == {
        "inactiveTopicDeleteMode": "delete_when_no_subscriptions", "maxInactiveDurationSeconds": 3600,
        "deleteWhileInactive": True}
    cli(capsys, url, "topics", "set-subscription-types-enabled", topic, "-t", "Shared,Key_Shared")
    assert json.loads(cli(capsys, url, "topics", "get-subscription-types-enabled", topic)) == ["Key_Shared", "Shared"]
    cli(capsys, url, "topics", "set-auto-subscription-creation", topic)
    assert json.loads(cli(capsys, url, "topics", "get-auto-subscription-creation", topic)) == {
        "allowAutoSubscriptionCreation": False}
    cli(capsys, url, "topics", "set-deduplication-snapshot-interval", topic, "-i", "10")
    assert cli(capsys, url, "topics", "get-deduplication-snapshot-interval", topic).strip() == "10"
    cli(capsys, url, "topics", "set-schema-compatibility-strategy", topic, "-s", "BACKWARD")
    assert cli(capsys, url, "topics", "get-schema-compatibility-strategy", topic).strip() == "BACKWARD"
    cli(capsys, url, "topics", "set-schema-validation-enforce", topic, "-e")
    assert cli(capsys, url, "topics", "get-schema-validation-enforce", topic).strip() == "true"
    for policy in ("delayed-delivery", "inactive-topic-policies", "subscription-types-enabled",
                   "auto-subscription-creation", "deduplication-snapshot-interval", "schema-compatibility-strategy"):
        cli(capsys, url, "topics", f"remove-{policy}", topic)
    assert cli(capsys, url, "topics", "get-delayed-delivery", topic).strip() == "null"
    assert cli(capsys, url, "topics", "get-schema-compatibility-strategy", topic).strip() == "UNDEFINED"


def test_a_bad_subscription_type_is_refused_naming_the_accepted_ones(capsys, url, topic):
    err = cli(capsys, url, "topics", "set-subscription-types-enabled", topic, "-t", "Sometimes", code=2)  # a usage error
    assert "Exclusive" in err and "Key_Shared" in err
