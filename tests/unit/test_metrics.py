"""Metrics from topic stats: Pulsar's names and labels, the broker's own rates (from the stats, whoever
scrapes), the namespace-level form, and the stats gathered on the broker's loop with a timeout."""
from __future__ import annotations

import asyncio
import threading

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from broker_core.frontends.http.metrics import BrokerCollector, MetricsTimeout, call_on_loop, metric_families

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


def test_stats_are_gathered_on_the_loop_thread():
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        assert call_on_loop(loop, threading.current_thread, timeout_s=30) is thread
        with pytest.raises(ZeroDivisionError):
            call_on_loop(loop, lambda: 1 // 0, timeout_s=30)
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join()
        loop.close()


def test_a_loop_that_does_not_answer_in_time_fails_the_scrape_and_never_runs_it_late():
    loop = asyncio.new_event_loop()  # never run: as busy as a loop can be
    ran = []
    try:
        with pytest.raises(MetricsTimeout):
            call_on_loop(loop, lambda: ran.append(1), timeout_s=0.05)
        loop.call_soon(loop.stop)
        loop.run_forever()  # runs the queued callback now: it sees the cancelled future and does nothing
        assert ran == []
    finally:
        loop.close()


def test_a_closed_loop_fails_the_scrape():
    loop = asyncio.new_event_loop()
    loop.close()
    with pytest.raises(MetricsTimeout, match="stopping"):
        call_on_loop(loop, dict, timeout_s=1)


def test_the_metrics_server_starts_and_answers_without_reverse_dns(monkeypatch):
    import socket
    import urllib.request

    from broker_core.frontends.http.metrics import MetricsServer

    def no_resolver(*_args):
        raise AssertionError("the metrics server looked its address up in DNS")
    monkeypatch.setattr(socket, "getfqdn", no_resolver)
    server = MetricsServer(BrokerCollector(dict, "standalone"), "127.0.0.1", 0)
    port = server.start()
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as reply:
            assert b"pulsar_topics_count" in reply.read()
    finally:
        server.stop()


def test_the_metrics_server_imports_its_http_server_at_the_first_connection_not_at_start():
    import subprocess
    import sys

    script = """
import sys, urllib.request
from broker_core.frontends.http.metrics import BrokerCollector, MetricsServer
server = MetricsServer(BrokerCollector(dict, "standalone"), "127.0.0.1", 0)
port = server.start()
before = "wsgiref.simple_server" in sys.modules
with urllib.request.urlopen(f"http://127.0.0.1:{port}/status.html", timeout=10) as reply:
    body = reply.read()
server.stop()
print(before, body == b"OK", "wsgiref.simple_server" in sys.modules)
"""
    found = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert found.stdout.split() == ["False", "True", "True"], found.stderr


def test_a_metrics_server_stopped_before_any_connection_closes_its_port():
    import socket

    from broker_core.frontends.http.metrics import MetricsServer

    server = MetricsServer(BrokerCollector(dict, "standalone"), "127.0.0.1", 0)
    port = server.start()
    server.stop()
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
