"""Metrics from topic stats: Pulsar's names and labels, the broker's own rates (from the stats, whoever
scrapes), the namespace-level form, and one scrape's answer encoded as the scraper asks (text, OpenMetrics,
gzip)."""
from __future__ import annotations

import gzip

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from broker_core.frontends.http.metrics import BrokerCollector, exposition, metric_families

TOPIC = "persistent://public/default/orders"
OTHER = "persistent://acme/billing/invoices-partition-1"


def topic_stats(msg_in=0, bytes_in=0, msg_out=0, bytes_out=0, subs=None, publishers=1, storage=0, backlog=0):
    return {"msgInCounter": msg_in, "bytesInCounter": bytes_in, "msgOutCounter": msg_out,
            "bytesOutCounter": bytes_out, "storageSize": storage, "backlogSize": backlog,
            "publishers": [{"producerName": f"p{i}"} for i in range(publishers)], "subscriptions": subs or {}}


def sub_stats(backlog=0, unacked=0, out=0, out_bytes=0, consumers=1, **extra):
    return {"msgBacklog": backlog, "unackedMessages": unacked, "msgOutCounter": out, "bytesOutCounter": out_bytes,
            "consumers": [{"consumerName": f"c{i}"} for i in range(consumers)], **extra}


def scrape(collector) -> dict[tuple[str, tuple], float]:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector)
    text = generate_latest(registry).decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def labels(topic=TOPIC, namespace="public/default", **more):
    return tuple(sorted({"cluster": "standalone", "namespace": namespace, "topic": topic, **more}.items()))


def test_topic_and_subscription_metrics_carry_pulsars_names_and_labels():
    stats = {TOPIC: topic_stats(msg_in=10, bytes_in=1000, msg_out=4, bytes_out=400, storage=1234, backlog=600,
                                subs={"sub": sub_stats(backlog=6, unacked=2, out=4, out_bytes=400, msgDelayed=1,
                                                       totalMsgExpired=3)})}
    collector = BrokerCollector(lambda: stats, "standalone")
    values = scrape(collector)
    assert values[("pulsar_subscription_back_log", labels(subscription="sub"))] == 6
    assert values[("pulsar_subscription_unacked_messages", labels(subscription="sub"))] == 2
    assert values[("pulsar_subscription_delayed", labels(subscription="sub"))] == 1
    assert values[("pulsar_subscription_total_msg_expired", labels(subscription="sub"))] == 3
    assert values[("pulsar_msg_backlog", labels())] == 6
    assert values[("pulsar_storage_size", labels())] == 1234
    assert values[("pulsar_storage_backlog_size", labels())] == 600
    assert values[("pulsar_subscriptions_count", labels())] == 1
    assert values[("pulsar_producers_count", labels())] == 1
    assert values[("pulsar_consumers_count", labels())] == 1
    assert values[("pulsar_in_messages_total", labels())] == 10
    assert values[("pulsar_in_bytes_total", labels())] == 1000
    assert values[("pulsar_out_messages_total", labels())] == 4
    assert values[("pulsar_out_bytes_total", labels())] == 400
    assert values[("pulsar_topics_count", (("cluster", "standalone"), ("namespace", "public/default")))] == 1
    for name in ("pulsar_rate_in", "pulsar_rate_out", "pulsar_throughput_in", "pulsar_throughput_out"):
        assert values[(name, labels())] == 0.0  # the stats have no rates yet


def test_rates_are_the_brokers_from_the_stats_however_often_one_scrapes():
    stats = {TOPIC: {**topic_stats(msg_in=110), "msgRateIn": 10.0, "msgThroughputIn": 1000.0, "msgRateOut": 5.0,
                     "msgThroughputOut": 500.0,
                     "subscriptions": {"sub": sub_stats(out=50, msgRateOut=5.0, msgThroughputOut=500.0,
                                                        msgRateRedeliver=1.5)}}}
    collector = BrokerCollector(lambda: stats, "standalone")
    assert scrape(collector) == scrape(collector)
    values = scrape(collector)
    assert values[("pulsar_rate_in", labels())] == 10.0
    assert values[("pulsar_throughput_in", labels())] == 1000.0
    assert values[("pulsar_rate_out", labels())] == 5.0
    assert values[("pulsar_throughput_out", labels())] == 500.0
    assert values[("pulsar_subscription_msg_rate_out", labels(subscription="sub"))] == 5.0
    assert values[("pulsar_subscription_msg_throughput_out", labels(subscription="sub"))] == 500.0
    assert values[("pulsar_subscription_msg_rate_redeliver", labels(subscription="sub"))] == 1.5


def test_non_persistent_subscriptions_report_a_drop_rate():
    stats = {"non-persistent://public/default/np": topic_stats(subs={"s": sub_stats(msgDropCount=30,
                                                                                  msgDropRate=10.0)})}
    values = scrape(BrokerCollector(lambda: stats, "standalone"))
    key = labels(topic="non-persistent://public/default/np", subscription="s")
    assert values[("pulsar_subscription_msg_drop_rate", key)] == 10.0


def test_without_topic_level_metrics_series_are_summed_per_namespace():
    stats = {TOPIC: topic_stats(msg_in=5, storage=100, subs={"a": sub_stats(backlog=2), "b": sub_stats(backlog=3)}),
             "persistent://public/default/other": topic_stats(msg_in=7, storage=50),
             OTHER: topic_stats(msg_in=1, storage=10)}
    families = metric_families(stats, "east", topic_level=False)
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value for f in families for s in f.samples}
    ns = (("cluster", "east"), ("namespace", "public/default"))
    assert samples[("pulsar_in_messages_total", ns)] == 12
    assert samples[("pulsar_storage_size", ns)] == 150
    assert samples[("pulsar_msg_backlog", ns)] == 5
    assert samples[("pulsar_topics_count", ns)] == 2
    assert samples[("pulsar_storage_size", (("cluster", "east"), ("namespace", "acme/billing")))] == 10
    assert not any(name.startswith("pulsar_subscription_") for name, _ in samples)
    assert not any(dict(key).get("topic") for _, key in samples)


def test_a_scrape_is_prometheus_text_with_the_process_metrics_by_default():
    body, headers = exposition({TOPIC: topic_stats(msg_in=3)}, "standalone", True)
    assert headers == {"Content-Type": "text/plain; version=0.0.4; charset=utf-8"}
    names = {f.name for f in text_string_to_metric_families(body.decode())}
    assert {"pulsar_in_messages", "pulsar_topics_count", "process_cpu_seconds"} <= names


def test_a_scrape_answers_openmetrics_gzipped_when_asked():
    body, headers = exposition({TOPIC: topic_stats(msg_in=3)}, "standalone", True,
                               accept="application/openmetrics-text; version=1.0.0", accept_encoding="gzip")
    assert headers["Content-Type"].startswith("application/openmetrics-text")
    assert headers["Content-Encoding"] == "gzip"
    text = gzip.decompress(body).decode()
    assert "pulsar_in_messages_total{" in text and text.endswith("# EOF\n")
