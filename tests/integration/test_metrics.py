"""Prometheus metrics scraped over HTTP from real brokers (a ``pulsarlike broker`` process and in-process)."""
from __future__ import annotations

import json
import re
import time
import urllib.error
import urllib.request
import uuid

import pytest
from prometheus_client.parser import text_string_to_metric_families

from broker_core import Broker
from connector import Client

METRICS_LINE = "pulsarlike metrics on "


def scrape(url: str) -> dict[str, list]:
    with urllib.request.urlopen(url, timeout=30) as response:
        assert response.status == 200
        text = response.read().decode()
    samples: dict[str, list] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples.setdefault(sample.name, []).append(sample)
    return samples


def value(samples: dict[str, list], name: str, **labels: str) -> float:
    matching = [s.value for s in samples.get(name, []) if all(s.labels.get(k) == v for k, v in labels.items())]
    assert len(matching) == 1, f"{name}{labels}: {matching}"
    return matching[0]


def scrape_until(url: str, name: str, expected: float, **labels: str) -> dict[str, list]:
    """Acknowledgments reach the broker asynchronously: scrape until the figure shows them."""
    deadline = time.monotonic() + 30
    while True:
        samples = scrape(url)
        if value(samples, name, **labels) == expected or time.monotonic() > deadline:
            return samples


def produce_and_ack(service_url: str, topic: str, produced: int, acked: int, subscription: str) -> None:
    client = Client(service_url)
    try:
        consumer = client.subscribe(topic, subscription)
        producer = client.create_producer(topic, batching_enabled=False)
        for i in range(produced):
            producer.send(f"m{i}".encode())
        for _ in range(acked):
            consumer.acknowledge(consumer.receive(timeout_millis=10_000))
        consumer.close()
        producer.close()
    finally:
        client.close()


def test_broker_process_prints_its_metrics_url_and_serves_the_subscription_backlog(broker_process):
    proc = broker_process()
    url = proc.proc.stdout.readline().strip()
    assert url.startswith(METRICS_LINE + "http://127.0.0.1:") and url.endswith("/metrics")
    url = url[len(METRICS_LINE):]
    topic = "persistent://public/default/metered"
    produce_and_ack(proc.service_url, topic, produced=10, acked=4, subscription="sub")

    samples = scrape_until(url, "pulsar_subscription_back_log", 6, topic=topic, subscription="sub")
    labels = {"cluster": "standalone", "namespace": "public/default", "topic": topic}
    assert value(samples, "pulsar_subscription_back_log", subscription="sub", **labels) == 6
    assert value(samples, "pulsar_msg_backlog", **labels) == 6
    assert value(samples, "pulsar_in_messages_total", **labels) == 10
    assert value(samples, "pulsar_storage_size", **labels) > 0
    assert value(samples, "pulsar_storage_backlog_size", **labels) > 0
    for name in ("pulsar_rate_in", "pulsar_rate_out", "pulsar_throughput_in", "pulsar_throughput_out",
                 "pulsar_subscriptions_count", "pulsar_producers_count", "pulsar_consumers_count"):
        assert value(samples, name, **labels) >= 0
    for name in ("pulsar_subscription_msg_rate_out", "pulsar_subscription_msg_throughput_out",
                 "pulsar_subscription_unacked_messages"):
        assert value(samples, name, subscription="sub", **labels) >= 0
    assert value(samples, "pulsar_topics_count", cluster="standalone", namespace="public/default") == 1
    assert proc.terminate() == 0


def test_in_process_broker_metrics_follow_acks_and_new_messages(tmp_path):
    with Broker(data_dir=tmp_path, clusterName="east") as broker:
        topic = f"persistent://public/default/m-{uuid.uuid4().hex[:8]}"
        produce_and_ack(broker.service_url, topic, produced=5, acked=5, subscription="s")
        samples = scrape_until(broker.metrics_url, "pulsar_subscription_back_log", 0, topic=topic)
        assert value(samples, "pulsar_subscription_back_log", cluster="east", topic=topic, subscription="s") == 0
        assert value(samples, "pulsar_out_messages_total", topic=topic) == 5

        produce_and_ack(broker.service_url, topic, produced=3, acked=0, subscription="s")
        samples = scrape_until(broker.metrics_url, "pulsar_subscription_back_log", 3, topic=topic)
        assert value(samples, "pulsar_subscription_back_log", topic=topic, subscription="s") == 3
        assert value(samples, "pulsar_in_messages_total", topic=topic) == 8


def test_namespace_level_metrics_when_topic_level_metrics_are_off(tmp_path):
    with Broker(data_dir=tmp_path, exposeTopicLevelMetricsInPrometheus=False) as broker:
        produce_and_ack(broker.service_url, "ns-a", produced=4, acked=1, subscription="s")
        produce_and_ack(broker.service_url, "ns-b", produced=2, acked=0, subscription="s")
        samples = scrape_until(broker.metrics_url, "pulsar_msg_backlog", 5, namespace="public/default")
        assert value(samples, "pulsar_in_messages_total", namespace="public/default") == 6
        assert "pulsar_subscription_back_log" not in samples
        assert all("topic" not in s.labels for s in samples["pulsar_storage_size"])


def test_status_page_answers_ok_and_other_paths_are_not_found_with_a_reason(tmp_path):
    with Broker(data_dir=tmp_path) as broker:
        base = broker.metrics_url.rsplit("/", 1)[0]
        assert base == broker.web_url  # one port: the admin API, the metrics, the status page
        with urllib.request.urlopen(base + "/status.html", timeout=30) as response:
            assert response.read() == b"OK"
        with pytest.raises(urllib.error.HTTPError) as info:
            urllib.request.urlopen(base + "/admin", timeout=30)
        assert info.value.code == 404
        assert "/admin is not served here" in json.loads(info.value.read())["reason"]


def test_metrics_can_be_turned_off(tmp_path):
    with Broker(data_dir=tmp_path, metricsEnabled=False) as broker:
        assert broker.metrics_url is None and broker.metrics_port == 0


def test_a_taken_metrics_port_fails_the_start_naming_the_key(tmp_path):
    with Broker(data_dir=tmp_path / "a") as first:
        from broker_core.errors import InvalidConfiguration

        with pytest.raises(InvalidConfiguration, match="webServicePort"):
            Broker(data_dir=tmp_path / "b", webServicePort=first.metrics_port).start()


def test_broker_logs_are_one_key_value_line_per_event(broker_process):
    proc = broker_process()
    produce_and_ack(proc.service_url, "logged", produced=2, acked=2, subscription="s")
    assert proc.terminate() == 0
    lines = proc.proc.stderr.read().splitlines()
    assert lines
    pattern = re.compile(r"^ts=\S+Z level=[A-Z]+ logger=\S+ event=\w+( |$)")
    assert all(pattern.match(line) for line in lines), [line for line in lines if not pattern.match(line)]
    events = [line.split(" event=", 1)[1].split(" ", 1)[0] for line in lines]
    assert events[:2] == ["data_dir_locked", "broker_started"] and "broker_stopped" in events
