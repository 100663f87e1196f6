"""``pulsarlike admin topicPolicies`` (issue 31): pulsar-admin's topic-policy group, the ``topics`` group's policy
verbs under their names there, on the same routes, over gRPC (``pulsar://``) and ``--admin-url`` REST; ``--global``
refused; ``topics get-X -ap`` answers the value in force (the topic's, else its namespace's)."""
from __future__ import annotations

import json
import uuid

from tests.integration.admin_cli_fixtures import cli, namespace, served, topic, url  # noqa: F401 (fixtures)


def test_a_policy_set_with_topic_policies_is_the_topics_own(capsys, url, topic):
    cli(capsys, url, "topicPolicies", "set-message-ttl", topic, "-t", "1h")
    assert cli(capsys, url, "topics", "get-message-ttl", topic).strip() == "3600"
    assert cli(capsys, url, "topicPolicies", "get-message-ttl", topic).strip() == "3600"
    cli(capsys, url, "topicPolicies", "remove-message-ttl", topic)
    assert cli(capsys, url, "topicPolicies", "get-message-ttl", topic).strip() == "null"


def test_topic_policies_spell_verbs_and_flags_as_pulsar_admin_does(capsys, url, topic):
    cli(capsys, url, "topicPolicies", "set-max-subscriptions-per-topic", topic, "-s", "4")
    assert cli(capsys, url, "topics", "get-max-subscriptions", topic).strip() == "4"
    cli(capsys, url, "topicPolicies", "set-max-unacked-messages-per-consumer", topic, "-m", "7")
    assert cli(capsys, url, "topicPolicies", "get-max-unacked-messages-per-consumer", topic).strip() == "7"
    cli(capsys, url, "topicPolicies", "set-backlog-quota", topic, "-l", "10M", "-p", "producer_request_hold")
    quotas = json.loads(cli(capsys, url, "topicPolicies", "get-backlog-quota", topic))
    assert quotas["destination_storage"]["limitSize"] == 10 << 20
    cli(capsys, url, "topicPolicies", "set-schema-compatibility-strategy", topic, "-s", "FORWARD")
    assert cli(capsys, url, "topics", "get-schema-compatibility-strategy", topic).strip() == "FORWARD"
    cli(capsys, url, "topicPolicies", "set-auto-subscription-creation", topic, "-e")
    assert json.loads(cli(capsys, url, "topicPolicies", "get-auto-subscription-creation", topic, "-a")) == {
        "allowAutoSubscriptionCreation": True}


def test_global_is_refused_before_anything_is_sent(capsys, url, topic):
    err = cli(capsys, url, "topicPolicies", "set-retention", topic, "-t", "1h", "-s", "10M", "-g", code=2)
    assert "--global" in err and "only cluster" in err
    assert cli(capsys, url, "topics", "get-retention", topic).strip() == "null"
    cli(capsys, url, "topicPolicies", "get-max-producers", topic, "--global", code=2)


def test_topic_policies_has_only_its_verbs():
    # topics verbs that are not topic policies, and the topics group's own spellings, are not in the group
    from connector.cli import admin
    leaves = {verb for group, verb in admin.build_parser().leaves if group == "topicPolicies"}
    assert {"stats", "get-max-subscriptions", "get-backlog-quotas", "get-properties"}.isdisjoint(leaves)
    assert {"get-max-subscriptions-per-topic", "get-backlog-quota", "set-dispatch-rate"} <= leaves


def test_applied_is_the_topics_own_else_its_namespaces(capsys, url, namespace, topic):
    err = cli(capsys, url, "topics", "get-message-ttl", topic, "-ap", code=1)
    assert "NotSupported" in err and "ttlDurationDefaultInSeconds" in err
    cli(capsys, url, "namespaces", "set-message-ttl", namespace, "-ttl", "120")
    assert cli(capsys, url, "topics", "get-message-ttl", topic, "-ap").strip() == "120"
    assert cli(capsys, url, "topics", "get-message-ttl", topic).strip() == "null"
    cli(capsys, url, "topics", "set-message-ttl", topic, "-t", "60")
    assert cli(capsys, url, "topics", "get-message-ttl", topic, "--applied").strip() == "60"
    cli(capsys, url, "namespaces", "set-max-producers-per-topic", namespace, "-p", "3")
    assert cli(capsys, url, "topics", "get-maxProducers", topic, "-ap").strip() == "3"
    cli(capsys, url, "namespaces", "set-retention", namespace, "-t", "2h", "-s", "5M")
    assert json.loads(cli(capsys, url, "topicPolicies", "get-retention", topic, "-ap")) == {
        "retentionTimeInMinutes": 120, "retentionSizeInMB": 5}


def test_shadow_source_of_a_topic_that_is_no_shadow_is_null(capsys, url, topic):
    assert cli(capsys, url, "topics", "get-shadow-source", topic).strip() == "null"


# ---------------------------------------------------------------------------------- pulsar-admin's other flags
def test_topics_and_subscriptions_are_created_with_their_properties(capsys, url, namespace):
    topic, partitioned = f"persistent://{namespace}/props", f"persistent://{namespace}/pprops"
    cli(capsys, url, "topics", "create", topic, "-m", "owner=billing", "-m", "tier=gold")
    assert json.loads(cli(capsys, url, "topics", "get-properties", topic)) == {"owner": "billing", "tier": "gold"}
    cli(capsys, url, "topics", "create-partitioned-topic", partitioned, "-p", "2", "--metadata", "owner=ops")
    assert json.loads(cli(capsys, url, "topics", "get-properties", partitioned)) == {"owner": "ops"}
    cli(capsys, url, "topics", "create-subscription", topic, "-s", "audit", "-p", "team=risk")
    assert json.loads(cli(capsys, url, "topics", "get-subscription-properties", topic, "-s", "audit")) == {
        "team": "risk"}
    assert "--replicated" in cli(capsys, url, "topics", "create-subscription", topic, "-s", "r", "-r", code=2)
    assert cli(capsys, url, "topics", "list", namespace, "-p", "tier=gold").split() == [topic]
    assert cli(capsys, url, "topics", "list", namespace, "-td", "non_persistent").strip() == ""
    assert topic in cli(capsys, url, "topics", "list", namespace, "-td", "persistent", "-ist",
                        "-b", "0x00000000_0xffffffff").split()
    assert "one bundle" in cli(capsys, url, "topics", "list", namespace, "-b", "0x00000000_0x7fffffff", code=2)
    assert cli(capsys, url, "namespaces", "topics", namespace, "-m", "non_persistent").strip() == ""
    assert topic in cli(capsys, url, "namespaces", "topics", namespace, "-m", "ALL", "-ist").split()
    assert cli(capsys, url, "topics", "list-partitioned-topics", namespace, "-ist").split() == [partitioned]


def test_namespaces_are_created_on_this_cluster_with_one_bundle(capsys, url, served):
    cluster = served.broker.config.clusterName
    name = f"public/nc-{uuid.uuid4().hex[:8]}"
    cli(capsys, url, "namespaces", "create", name, "-c", cluster, "-b", "1")
    assert name in cli(capsys, url, "namespaces", "list", "public").split()
    assert "allowed clusters" in cli(capsys, url, "namespaces", "create", name + "x", "-c", "elsewhere", code=2)
    assert "only cluster" in cli(capsys, url, "namespaces", "create", name + "y", "-c", f"{cluster},b", code=2)
    assert "one bundle" in cli(capsys, url, "namespaces", "create", name + "z", "-b", "4", code=2)
    assert name + "x" not in cli(capsys, url, "namespaces", "list", "public").split()


def test_flags_one_broker_cannot_honour_are_refused_and_the_others_accepted(capsys, url, namespace, topic):
    cli(capsys, url, "topics", "create-subscription", topic, "-s", "s1", "-m", "earliest")
    assert "--exclude-reset-position" in cli(capsys, url, "topics", "reset-cursor", topic, "-s", "s1", "-t", "1h",
                                             "-e", code=2)
    assert "--exclude-reset-position" in cli(capsys, url, "topics", "expire-messages", topic, "-s", "s1",
                                             "-p", "0:0", "-e", code=2)
    assert "--metadata" in cli(capsys, url, "topics", "stats-internal", topic, "-m", code=2)
    assert "--enable-for-replicator" in cli(capsys, url, "namespaces", "set-is-allow-auto-update-schema",
                                            namespace, "-e", "--enable-for-replicator", code=2)
    cli(capsys, url, "topics", "peek-messages", topic, "-s", "s1", "-ssm", "-til", "read_uncommitted")
    partitioned = f"persistent://{namespace}/grow"
    cli(capsys, url, "topics", "create-partitioned-topic", partitioned, "-p", "1")
    cli(capsys, url, "topics", "update-partitioned-topic", partitioned, "-p", "2", "-ulo")
    assert "--force" in cli(capsys, url, "topics", "update-partitioned-topic", partitioned, "-p", "3", "-f", code=2)
