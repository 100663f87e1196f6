"""Prometheus metrics of the broker: Pulsar's metric names and labels, computed from the topics' stats when
scraped.

Pieces, each with one job:

- Rates (``pulsar_rate_in`` ...) are the broker's own, from the stats (``msgRateIn`` ...): per-second
  averages over the last ``statsUpdateFrequencyInSecs`` interval, as Pulsar's (see
  :mod:`broker_core.core.rates`), whoever scrapes and however often.
- :func:`metric_families` maps ``{topic: stats}`` (the dicts ``topic.stats()`` returns, Pulsar's field
  names) to Prometheus metric families. A pure function.
- :class:`BrokerCollector` is the prometheus-client custom collector: on each scrape it takes a snapshot of
  the stats through ``snapshot()`` and yields the families.
- :func:`call_on_loop` runs a function on the broker's event loop from another thread and waits for it
  with a timeout: topics live on the loop and are only ever touched there.
- :class:`MetricsServer` serves ``/metrics`` (Prometheus text format) and ``/status.html`` over HTTP on
  its own threads (over HTTPS on ``webServicePortTls``: the TLS handshake happens on the request's thread,
  so a slow client holds up no one else). It binds its port at start; the HTTP server itself
  (:mod:`broker_core.frontends.http.server`) is built by the port's first connection.

Labels, as Pulsar sets them: ``cluster`` (``clusterName``), ``namespace`` (``tenant/namespace``), ``topic``
(the full name, a partition being ``<topic>-partition-<i>``) and, on subscription series, ``subscription``.
With ``exposeTopicLevelMetricsInPrometheus=false`` the topic series are summed per namespace (no ``topic``
label) and there are no subscription series, as in Pulsar.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import select
import socket
import ssl
import threading
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Mapping, Sequence

from broker_core.errors import InvalidConfiguration
from broker_core.types import TopicName

if TYPE_CHECKING:
    from prometheus_client.core import Metric

    from broker_core.frontends.http.server import _Server

# prometheus-client is imported by the first scrape, not at the broker's start: it is ~20 ms of a start
# that a client waits for, for an endpoint that may never be scraped.

log = logging.getLogger(__name__)

TOPIC_LABELS = ("cluster", "namespace", "topic")
SUBSCRIPTION_LABELS = (*TOPIC_LABELS, "subscription")

# (metric name, help, stats field) of topic gauges copied from the stats as they are
TOPIC_GAUGES = (
    ("pulsar_storage_size", "Bytes the topic stores (every segment).", "storageSize"),
    ("pulsar_storage_backlog_size", "Estimated bytes not yet acknowledged by the slowest durable "
                                    "subscription.", "backlogSize"),
)
# (metric name, help, stats field) of topic counters; prometheus-client appends "_total"
TOPIC_COUNTERS = (
    ("pulsar_in_messages", "Messages published to the topic since it was loaded.", "msgInCounter"),
    ("pulsar_in_bytes", "Bytes published to the topic since it was loaded.", "bytesInCounter"),
    ("pulsar_out_messages", "Messages dispatched to consumers since the topic was loaded.", "msgOutCounter"),
    ("pulsar_out_bytes", "Bytes dispatched to consumers since the topic was loaded.", "bytesOutCounter"),
)
# (metric name, help, stats field) of the topic's rate gauges
TOPIC_RATES = (
    ("pulsar_rate_in", "Messages published per second.", "msgRateIn"),
    ("pulsar_throughput_in", "Bytes published per second.", "msgThroughputIn"),
    ("pulsar_rate_out", "Messages dispatched per second.", "msgRateOut"),
    ("pulsar_throughput_out", "Bytes dispatched per second.", "msgThroughputOut"),
)
SUBSCRIPTION_GAUGES = (
    ("pulsar_subscription_back_log", "Messages of the subscription not yet acknowledged.", "msgBacklog"),
    ("pulsar_subscription_unacked_messages", "Messages delivered to consumers and not yet acknowledged.",
     "unackedMessages"),
    ("pulsar_subscription_delayed", "Messages held back for delayed delivery.", "msgDelayed"),
    ("pulsar_subscription_total_msg_expired", "Messages acknowledged by the message TTL.", "totalMsgExpired"),
)


def metric_families(stats: Mapping[str, Mapping[str, Any]], cluster: str,
                    topic_level: bool = True) -> list[Metric]:
    """Pulsar's metric families from ``{topic name: topic stats}``."""
    from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

    topics_count = GaugeMetricFamily("pulsar_topics_count", "Topics loaded by this broker.",
                                     labels=("cluster", "namespace"))
    families: dict[str, Metric] = {}

    def gauge(name: str, doc: str, labels: Sequence[str]) -> Metric:
        return families.setdefault(name, GaugeMetricFamily(name, doc, labels=labels))

    def counter(name: str, doc: str, labels: Sequence[str]) -> Metric:
        return families.setdefault(name, CounterMetricFamily(name, doc, labels=labels))

    per_namespace: dict[str, list[float]] = {}
    namespaces: dict[str, int] = {}
    for topic in sorted(stats):
        topic_stats = stats[topic]
        namespace = TopicName.parse(topic).namespace_name
        namespaces[namespace] = namespaces.get(namespace, 0) + 1
        subs: Mapping[str, Mapping[str, Any]] = topic_stats.get("subscriptions") or {}
        counters = tuple(int(topic_stats.get(field) or 0) for _, _, field in TOPIC_COUNTERS)
        rates = tuple(float(topic_stats.get(field) or 0.0) for _, _, field in TOPIC_RATES)
        values = [
            float(len(subs)),
            float(len(topic_stats.get("publishers") or ())),
            float(sum(len(s.get("consumers") or ()) for s in subs.values())),
            float(sum(int(s.get("msgBacklog") or 0) for s in subs.values())),
            *(float(topic_stats.get(field) or 0) for _, _, field in TOPIC_GAUGES),
            *rates,
            *(float(c) for c in counters),
        ]
        if not topic_level:
            total = per_namespace.setdefault(namespace, [0.0] * len(values))
            for i, value in enumerate(values):
                total[i] += value
            continue
        _add_topic_series(gauge, counter, (cluster, namespace, topic), values)
        for sub_name in sorted(subs):
            sub = subs[sub_name]
            labels = (cluster, namespace, topic, sub_name)
            for name, doc, field in SUBSCRIPTION_GAUGES:
                gauge(name, doc, SUBSCRIPTION_LABELS).add_metric(labels, float(sub.get(field) or 0))
            gauge("pulsar_subscription_msg_rate_out", "Messages dispatched per second.",
                  SUBSCRIPTION_LABELS).add_metric(labels, float(sub.get("msgRateOut") or 0.0))
            gauge("pulsar_subscription_msg_throughput_out", "Bytes dispatched per second.",
                  SUBSCRIPTION_LABELS).add_metric(labels, float(sub.get("msgThroughputOut") or 0.0))
            gauge("pulsar_subscription_msg_rate_redeliver", "Messages dispatched again per second.",
                  SUBSCRIPTION_LABELS).add_metric(labels, float(sub.get("msgRateRedeliver") or 0.0))
            if "msgDropCount" in sub:
                gauge("pulsar_subscription_msg_drop_rate", "Messages of a non-persistent topic dropped per "
                      "second (no consumer with permits).", SUBSCRIPTION_LABELS).add_metric(
                    labels, float(sub.get("msgDropRate") or 0.0))
    for namespace, total in sorted(per_namespace.items()):
        _add_topic_series(gauge, counter, (cluster, namespace), total)
    for namespace, count in sorted(namespaces.items()):
        topics_count.add_metric((cluster, namespace), float(count))
    return [topics_count, *families.values()]


def _add_topic_series(gauge: Callable[..., Metric], counter: Callable[..., Metric], labels: tuple[str, ...],
                      values: Sequence[float]) -> None:
    names = TOPIC_LABELS[:len(labels)]
    it = iter(values)
    gauge("pulsar_subscriptions_count", "Subscriptions of the topic.", names).add_metric(labels, next(it))
    gauge("pulsar_producers_count", "Producers connected to the topic.", names).add_metric(labels, next(it))
    gauge("pulsar_consumers_count", "Consumers connected to the topic.", names).add_metric(labels, next(it))
    gauge("pulsar_msg_backlog", "Messages not yet acknowledged, summed over the topic's subscriptions.",
          names).add_metric(labels, next(it))
    for name, doc, _ in TOPIC_GAUGES:
        gauge(name, doc, names).add_metric(labels, next(it))
    for name, doc, _ in TOPIC_RATES:
        gauge(name, doc, names).add_metric(labels, next(it))
    for name, doc, _ in TOPIC_COUNTERS:
        counter(name, doc, names).add_metric(labels, next(it))


class BrokerCollector:
    """A prometheus-client collector: ``snapshot()`` returns ``{topic: stats}`` taken on the broker's loop."""

    def __init__(self, snapshot: Callable[[], Mapping[str, Mapping[str, Any]]], cluster: str,
                 topic_level: bool = True) -> None:
        self._snapshot = snapshot
        self._cluster = cluster
        self._topic_level = topic_level

    def describe(self) -> list[Metric]:
        return []  # registering must not take a snapshot

    def collect(self) -> Iterator[Metric]:
        yield from metric_families(self._snapshot(), self._cluster, self._topic_level)


class MetricsTimeout(Exception):
    """The broker's event loop did not gather the stats within ``metricsServletTimeoutMs``."""


def call_on_loop(loop: asyncio.AbstractEventLoop, fn: Callable[[], Any], timeout_s: float) -> Any:
    """Run ``fn()`` on ``loop`` (from another thread) and return its result; :class:`MetricsTimeout` when
    the loop has not run it within ``timeout_s`` (it is then not run at all, if it has not started)."""
    future: concurrent.futures.Future[Any] = concurrent.futures.Future()

    def run() -> None:
        if not future.set_running_or_notify_cancel():
            return
        try:
            future.set_result(fn())
        except BaseException as exc:  # handed to the waiting thread
            future.set_exception(exc)

    try:
        loop.call_soon_threadsafe(run)
    except RuntimeError:  # the loop is closed: the broker is stopping
        raise MetricsTimeout("the broker is stopping") from None
    try:
        return future.result(timeout=timeout_s)
    except concurrent.futures.TimeoutError:
        future.cancel()
        raise MetricsTimeout(f"the broker did not gather its stats within {timeout_s:g}s") from None


POLL_INTERVAL_S = 0.2
"""How often the serving thread looks whether it is to stop (the standard library's server polls too)."""
LISTEN_BACKLOG = 128


class MetricsServer:
    """``GET /metrics`` (Prometheus text format, or OpenMetrics when asked) and ``GET /status.html``
    (``OK``, as Pulsar's broker answers load balancers), served on daemon threads."""

    def __init__(self, collector: BrokerCollector, host: str, port: int, tls: ssl.SSLContext | None = None,
                 port_key: str = "webServicePort") -> None:
        self._collector = collector
        self._metrics_app: Callable[..., Iterable[bytes]] | None = None
        self._metrics_app_lock = threading.Lock()
        self._host = host
        self._requested_port = port
        self._tls = tls
        self._port_key = port_key
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self.port = 0

    def start(self) -> int:
        """Bind and listen (``InvalidConfiguration`` when the port is taken or the address not local); the
        bound port. The port accepts from now on; its first connection builds the HTTP server."""
        family = socket.AF_INET6 if ":" in self._host else socket.AF_INET
        listening = socket.socket(family, socket.SOCK_STREAM)
        try:
            listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            listening.bind((self._host, self._requested_port))
            listening.listen(LISTEN_BACKLOG)
        except OSError as exc:
            listening.close()
            raise InvalidConfiguration(f"cannot bind {self._host}:{self._requested_port} for metrics "
                                       f"({self._port_key}): {exc.strerror}", key=self._port_key) from None
        self.port = listening.getsockname()[1]
        self._thread = threading.Thread(target=self._serve, args=(listening,), name="pulsarlike-metrics",
                                        daemon=True)
        self._thread.start()
        return self.port

    def _serve(self, listening: socket.socket) -> None:
        try:
            while not self._stopping.is_set():
                if select.select([listening], [], [], POLL_INTERVAL_S)[0]:
                    break
            else:
                listening.close()
                return
            from broker_core.frontends.http.server import http_server

            httpd = http_server(listening, self._app, self._tls)
        except Exception as exc:  # noqa: BLE001 - the broker serves on without metrics; said once
            log.error("event=metrics_server_failed error=%r", exc, exc_info=True)
            listening.close()
            return
        with self._lock:
            if self._stopping.is_set():
                httpd.server_close()
                return
            self._httpd = httpd
        httpd.serve_forever(poll_interval=POLL_INTERVAL_S)

    def stop(self) -> None:
        """Blocking: waits for the serving thread to notice (at most a poll interval)."""
        with self._lock:
            self._stopping.set()
            httpd, thread = self._httpd, self._thread
            self._httpd = self._thread = None
        if httpd is not None:
            httpd.shutdown()
            httpd.server_close()
        if thread is not None:
            thread.join(timeout=5)

    def _prometheus_app(self) -> Callable[..., Iterable[bytes]]:
        """prometheus-client's WSGI app over the broker's collector and the process's, made by the first
        scrape (requests are served on several threads)."""
        with self._metrics_app_lock:
            if self._metrics_app is None:
                from prometheus_client import CollectorRegistry, make_wsgi_app
                from prometheus_client.platform_collector import PlatformCollector
                from prometheus_client.process_collector import ProcessCollector

                registry = CollectorRegistry(auto_describe=False)
                registry.register(self._collector)
                ProcessCollector(registry=registry)
                PlatformCollector(registry=registry)
                self._metrics_app = make_wsgi_app(registry)
            return self._metrics_app

    def _app(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        path = environ.get("PATH_INFO") or "/"
        if path in ("/metrics", "/metrics/"):
            try:
                return self._prometheus_app()(environ, start_response)
            except MetricsTimeout as exc:
                log.warning("event=metrics_scrape_failed reason=timeout error=%r", str(exc))
                return _plain(start_response, "503 Service Unavailable", f"{exc}\n")
            except Exception as exc:  # noqa: BLE001 - a scrape must not take the server down
                log.error("event=metrics_scrape_failed error=%r", exc, exc_info=True)
                return _plain(start_response, "500 Internal Server Error", f"{type(exc).__name__}: {exc}\n")
        if path == "/status.html":
            return _plain(start_response, "200 OK", "OK")
        return _plain(start_response, "404 Not Found", "not found; try /metrics or /status.html\n")


def _plain(start_response: Callable[..., Any], status: str, body: str) -> list[bytes]:
    data = body.encode()
    start_response(status, [("Content-Type", "text/plain; charset=utf-8"), ("Content-Length", str(len(data)))])
    return [data]
