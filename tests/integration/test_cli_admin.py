"""``pulsarlike admin`` round trips against a real ``pulsarlike broker`` process. The first test runs the CLI
as a subprocess (``python -m broker_core.cli admin ...``) the way an operator runs it; the others call the
same ``main`` in this process (a Python start per call would cost the suite a second each)."""
from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys

from connector import Client
from connector.cli.admin import main


def admin(broker, *args: str, check: int | None = 0, process: bool = False) -> subprocess.CompletedProcess:
    """Run ``pulsarlike admin --admin-url URL ARGS`` (``process``: as a subprocess); ``check``: the exit
    code expected."""
    argv = ["--admin-url", broker.service_url, *args]
    if process:
        done = subprocess.run([sys.executable, "-m", "broker_core.cli", "admin", *argv], capture_output=True,
                              text=True, timeout=60)
    else:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(argv)
        done = subprocess.CompletedProcess(argv, code, out.getvalue(), err.getvalue())
    if check is not None:
        assert done.returncode == check, (args, done.returncode, done.stdout, done.stderr)
    return done


def out(broker, *args: str) -> str:
    return admin(broker, *args).stdout


def as_operator(broker, *args: str) -> str:
    """``pulsarlike admin ...`` as a subprocess, as an operator runs it; its standard output."""
    return admin(broker, *args, process=True).stdout


def produce(broker, topic: str, n: int) -> None:
    with Client(broker.service_url) as client:
        producer = client.create_producer(topic, batching_enabled=False)
        for i in range(n):
            producer.send(b"msg-%d" % i, partition_key=f"k{i}", properties={"i": str(i)})
        producer.close()


def test_create_tenant_namespace_and_topics_then_read_their_stats(broker_process):
    broker = broker_process()
    assert as_operator(broker, "tenants", "list").split() == ["public"]
    as_operator(broker, "tenants", "create", "acme", "--admin-roles", "ops,dev")
    assert json.loads(as_operator(broker, "tenants", "get", "acme")) == {"adminRoles": ["ops", "dev"],
                                                                 "allowedClusters": ["standalone"]}
    as_operator(broker, "namespaces", "create", "acme/orders")
    assert as_operator(broker, "namespaces", "list", "acme").split() == ["acme/orders"]
    as_operator(broker, "topics", "create", "persistent://acme/orders/plain")
    as_operator(broker, "topics", "create-partitioned-topic", "persistent://acme/orders/parted", "-p", "2")
    assert as_operator(broker, "topics", "list", "acme/orders").split() == [
        "persistent://acme/orders/parted-partition-0", "persistent://acme/orders/parted-partition-1",
        "persistent://acme/orders/plain"]
    produce(broker, "persistent://acme/orders/plain", 3)
    text = as_operator(broker, "topics", "stats", "persistent://acme/orders/plain")
    assert text.startswith('{\n  "msgInCounter" : 3,\n')  # pretty-printed as pulsar-admin prints it
    assert json.loads(text)["msgInCounter"] == 3
    produce(broker, "persistent://acme/orders/parted", 4)
    summed = json.loads(as_operator(broker, "topics", "partitioned-stats", "persistent://acme/orders/parted"))
    assert summed["metadata"] == {"partitions": 2} and summed["msgInCounter"] == 4
    internal = json.loads(as_operator(broker, "topics", "stats-internal", "persistent://acme/orders/plain"))
    assert internal["numberOfEntries"] == 3 and internal["ledgers"][0]["lastOffset"] == 2


def test_subscriptions_reset_cursor_peek_skip_and_clear_backlog(broker_process):
    broker = broker_process()
    topic = "persistent://public/default/orders"
    admin(broker, "topics", "create", topic)
    admin(broker, "topics", "create-subscription", topic, "-s", "audit", "-m", "earliest")
    produce(broker, topic, 5)
    assert out(broker, "topics", "subscriptions", topic).split() == ["audit"]

    def backlog() -> int:
        return json.loads(out(broker, "topics", "stats", topic))["subscriptions"]["audit"]["msgBacklog"]

    peeked = out(broker, "topics", "peek-messages", topic, "-s", "audit", "-n", "2")
    assert peeked.count("Message ID: 0:") == 2 and "Message ID: 0:0\n" in peeked and "Message ID: 0:1\n" in peeked
    assert "Key: k0" in peeked and '"i" : "0"' in peeked and "|msg-0           |" in peeked
    assert "-" * 73 in peeked and backlog() == 5  # peeking moves nothing
    admin(broker, "topics", "skip", topic, "-s", "audit", "-n", "2")
    assert backlog() == 3
    first = json.loads(out(broker, "topics", "peek-messages", topic, "-s", "audit", "--json"))
    assert [m["payload"] for m in first] == ["msg-2"] and first[0]["messageId"] == "0:2"
    admin(broker, "topics", "reset-cursor", topic, "-s", "audit", "-m", "0:1")
    assert backlog() == 4
    admin(broker, "topics", "reset-cursor", topic, "-s", "audit", "-t", "1h")  # everything of the last hour
    assert backlog() == 5
    admin(broker, "topics", "clear-backlog", topic, "-s", "audit")
    assert backlog() == 0 and out(broker, "topics", "peek-messages", topic, "-s", "audit") == ""
    admin(broker, "topics", "unsubscribe", topic, "-s", "audit")
    assert out(broker, "topics", "subscriptions", topic) == ""
    missing = admin(broker, "topics", "skip", topic, "-s", "audit", "-n", "1", check=1)
    assert missing.stderr.startswith("pulsarlike admin: SubscriptionNotFound: ")


def test_namespace_policies_round_trip(broker_process):
    broker = broker_process()
    ns = "public/default"
    assert out(broker, "namespaces", "get-retention", ns).strip() == "null"
    admin(broker, "namespaces", "set-retention", ns, "--time", "3h", "--size", "10M")
    assert out(broker, "namespaces", "get-retention", ns) == (
        '{\n  "retentionTimeInMinutes" : 180,\n  "retentionSizeInMB" : 10\n}\n')
    admin(broker, "namespaces", "set-message-ttl", ns, "--messageTTL", "3600")
    assert out(broker, "namespaces", "get-message-ttl", ns).strip() == "3600"
    admin(broker, "namespaces", "set-deduplication", ns, "--enable")
    admin(broker, "namespaces", "set-max-producers-per-topic", ns, "-p", "4")
    admin(broker, "namespaces", "set-max-consumers-per-topic", ns, "-c", "8")
    policies = json.loads(out(broker, "namespaces", "policies", ns))
    assert policies["retention_policies"] == {"retentionTimeInMinutes": 180, "retentionSizeInMB": 10}
    assert (policies["message_ttl_in_seconds"], policies["deduplicationEnabled"]) == (3600, True)
    assert (policies["max_producers_per_topic"], policies["max_consumers_per_topic"]) == (4, 8)
    admin(broker, "namespaces", "remove-retention", ns)
    admin(broker, "namespaces", "set-deduplication", ns, "--disable")
    policies = json.loads(out(broker, "namespaces", "policies", ns))
    assert policies["retention_policies"] is None and policies["deduplicationEnabled"] is False


def test_bad_input_unknown_verbs_negative_values_and_non_empty_namespaces(broker_process):
    broker = broker_process()
    typo = admin(broker, "topics", "peek-message", "t", "-s", "x", check=2)
    assert "unknown verb 'peek-message'; did you mean 'peek-messages'?" in typo.stderr
    assert "usage: pulsarlike admin topics" in typo.stderr
    flag = admin(broker, "namespaces", "delete", "public/default", "--forse", check=2)
    assert "unknown option '--forse'; did you mean '--force'?" in flag.stderr
    negative = admin(broker, "namespaces", "set-max-producers-per-topic", "public/default", "-p", "-1", check=1)
    assert negative.stderr.startswith("pulsarlike admin: InvalidConfiguration: policy maxProducersPerTopic "
                                      "takes an integer >= 0, not -1")
    size = admin(broker, "namespaces", "set-retention", "public/default", "-t", "1h", "-s", "-5M", check=2)
    assert "negative values are refused" in size.stderr
    admin(broker, "tenants", "create", "acme")
    admin(broker, "namespaces", "create", "acme/orders")
    admin(broker, "topics", "create", "persistent://acme/orders/t")
    refused = admin(broker, "namespaces", "delete", "acme/orders", check=1)
    assert refused.stderr.startswith("pulsarlike admin: NamespaceNotEmpty: namespace acme/orders still has 1 "
                                     "topic(s) (persistent://acme/orders/t)")
    assert out(broker, "topics", "list", "acme/orders").split() == ["persistent://acme/orders/t"]
    tenant = admin(broker, "tenants", "delete", "acme", check=1)
    assert "TenantNotEmpty" in tenant.stderr
    admin(broker, "namespaces", "delete", "acme/orders", "--force")
    assert out(broker, "namespaces", "list", "acme") == ""
    missing = admin(broker, "topics", "create", "persistent://acme/orders/t", check=1)
    assert "NamespaceNotFound: namespace acme/orders does not exist" in missing.stderr
    admin(broker, "tenants", "delete", "acme")
