"""``pulsarlike admin`` verbs added for routes served before (issue 31): namespace backlog quotas, schema
compatibility strategy, auto topic creation, partitioned terminate and the deprecated deduplication spellings,
over gRPC (``pulsar://``) and over ``--admin-url`` REST, with the same output."""
from __future__ import annotations

import json

import pytest

from connector.cli.admin import main
from tests.integration.admin_cli_fixtures import cli, served, url  # noqa: F401 (fixtures)


@pytest.fixture
def namespace(url, capsys):
    name = f"acme/ns-{'rest' if url.startswith('http') else 'grpc'}"
    main(["--admin-url", url, "tenants", "create", "acme"])
    assert main(["--admin-url", url, "namespaces", "create", name]) in (0, 1)  # 1: made by a previous test
    capsys.readouterr()
    return name


def test_namespace_backlog_quotas_are_set_read_and_removed_by_type(capsys, url, namespace):
    cli(capsys, url, "namespaces", "set-backlog-quota", namespace, "-l", "10M", "-p", "producer_request_hold")
    cli(capsys, url, "namespaces", "set-backlog-quota", namespace, "-lt", "1h", "-p", "producer_exception",
        "-t", "message_age")
    quotas = json.loads(cli(capsys, url, "namespaces", "get-backlog-quotas", namespace))
    assert quotas["destination_storage"]["limitSize"] == 10 << 20
    assert quotas["destination_storage"]["policy"] == "producer_request_hold"
    assert quotas["message_age"]["limitTime"] == 3600 and quotas["message_age"]["policy"] == "producer_exception"
    cli(capsys, url, "namespaces", "remove-backlog-quota", namespace)
    assert list(json.loads(cli(capsys, url, "namespaces", "get-backlog-quotas", namespace))) == ["message_age"]
    cli(capsys, url, "namespaces", "remove-backlog-quota", namespace, "--type", "message_age")
    assert json.loads(cli(capsys, url, "namespaces", "get-backlog-quotas", namespace)) == {}


def test_a_storage_quota_without_a_size_is_refused_before_anything_is_sent(capsys, url, namespace):
    err = cli(capsys, url, "namespaces", "set-backlog-quota", namespace, "-p", "producer_exception", code=2)
    assert "needs a size limit" in err
    assert "unknown policy 'drop_everything'" in cli(capsys, url, "namespaces", "set-backlog-quota", namespace, "-l", "1M", "-p",
                                   "drop_everything", code=2)


def test_the_schema_compatibility_strategy_is_set_in_any_case_and_read_upper_case(capsys, url, namespace):
    assert cli(capsys, url, "namespaces", "get-schema-compatibility-strategy", namespace).strip() == "UNDEFINED"
    cli(capsys, url, "namespaces", "set-schema-compatibility-strategy", namespace, "-c", "backward_transitive")
    assert cli(capsys, url, "namespaces", "get-schema-compatibility-strategy", namespace).strip() == \
        "BACKWARD_TRANSITIVE"
    assert "Illegal schema compatibility strategy sideways" in cli(
        capsys, url, "namespaces", "set-schema-compatibility-strategy", namespace, "-c", "sideways", code=2)


def test_auto_topic_creation_is_overridden_and_removed(capsys, url, namespace):
    cli(capsys, url, "namespaces", "set-auto-topic-creation", namespace, "-e", "-t", "partitioned", "-n", "3")
    assert json.loads(cli(capsys, url, "namespaces", "get-auto-topic-creation", namespace)) == {
        "allowAutoTopicCreation": True, "topicType": "partitioned", "defaultNumPartitions": 3}
    cli(capsys, url, "namespaces", "remove-auto-topic-creation", namespace)
    assert cli(capsys, url, "namespaces", "get-auto-topic-creation", namespace).strip() in ("", "null")
    assert "either --enable or --disable" in cli(capsys, url, "namespaces", "set-auto-topic-creation", namespace,
                                                 code=2)
    assert "num-partitions" in cli(capsys, url, "namespaces", "set-auto-topic-creation", namespace, "-e", "-t",
                                   "partitioned", code=2)


def test_partitioned_terminate_terminates_every_partition(capsys, url, namespace):
    topic = f"persistent://{namespace}/pt-term"
    cli(capsys, url, "topics", "create-partitioned-topic", topic, "-p", "2")
    lines = cli(capsys, url, "topics", "partitioned-terminate", topic).splitlines()
    assert [line.split(" successfully terminated at ")[0] for line in lines] == [
        f"Topic {topic}-partition-0", f"Topic {topic}-partition-1"]
    assert all(line.endswith(f":{i}") for i, line in enumerate(lines))


def test_the_deprecated_deduplication_verbs_set_the_topic_policy(capsys, url, namespace):
    topic = f"persistent://{namespace}/dedup"
    cli(capsys, url, "topics", "create", topic)
    cli(capsys, url, "topics", "enable-deduplication", topic)
    assert cli(capsys, url, "topics", "get-deduplication-enabled", topic).strip() == "true"
    cli(capsys, url, "topics", "disable-deduplication", topic)
    assert cli(capsys, url, "topics", "get-deduplication", topic).strip() == "false"
