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
- :func:`exposition` is one scrape's answer: the families of a snapshot of the stats, the process's own
  (CPU, memory, descriptors), encoded as the scraper asks (Prometheus text or OpenMetrics, gzip). It runs
  on a worker thread; the snapshot itself is taken on the broker's event loop, where topics live.
- ``GET /metrics`` on the web service port (:mod:`broker_core.frontends.http.web`) takes the snapshot and
  waits for :func:`exposition` at most ``metricsServletTimeoutMs``.

Labels, as Pulsar sets them: ``cluster`` (``clusterName``), ``namespace`` (``tenant/namespace``), ``topic``
(the full name, a partition being ``<topic>-partition-<i>``) and, on subscription series, ``subscription``.
With ``exposeTopicLevelMetricsInPrometheus=false`` the topic series are summed per namespace (no ``topic``
label) and there are no subscription series, as in Pulsar.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping, Sequence

from broker_core.types import TopicName

if TYPE_CHECKING:
    from prometheus_client.core import Metric

# prometheus-client is imported by the first scrape, not at the broker's start: it is ~20 ms of a start
# that a client waits for, for an endpoint that may never be scraped.

TOPIC_LABELS = ("cluster", "namespace", "topic")
SUBSCRIPTION_LABELS = (*TOPIC_LABELS, "subscription")

# (metric name, help, stats field) of topic gauges copied from the stats as they are
TOPIC_GAUGES = (
    ("pulsar_storage_size", "Bytes the topic stores (every segment).", "storageSize"),
    ("pulsar_storage_backlog_size", "Estimated bytes not yet acknowledged by the slowest durable "
                                    "subscription.", "backlogSize"),
    ("pulsarlike_storage_damaged_messages", "Messages in damaged stored ranges found so far: reads of them fail,"
                                            " or skip them with autoSkipNonRecoverableData.", "damagedMessages"),
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
# (metric name, help, field of the stats' ``compaction`` section): Pulsar's compaction gauges, of the topics
# compacted since they loaded or holding a compacted ledger
COMPACTION_GAUGES = (
    ("pulsar_compaction_removed_event_count", "Messages compaction removed (runs since the topic loaded).",
     "removedEventCount"),
    ("pulsar_compaction_succeed_count", "Compaction runs that succeeded.", "succeedCount"),
    ("pulsar_compaction_failed_count", "Compaction runs that failed.", "failedCount"),
    ("pulsar_compaction_duration_time_in_mills", "Time spent compacting, in ms.", "durationTimeInMills"),
    ("pulsar_compaction_read_throughput", "Bytes read per second while compacting.", "readThroughput"),
    ("pulsar_compaction_write_throughput", "Bytes written per second while compacting.", "writeThroughput"),
    ("pulsar_compaction_compacted_entries_count", "Entries in the compacted ledger.", "compactedEntriesCount"),
    ("pulsar_compaction_compacted_entries_size", "Bytes of the compacted ledger.", "compactedEntriesSize"),
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
        compaction: Mapping[str, Any] = topic_stats.get("compaction") or {}
        if "succeedCount" in compaction:
            for name, doc, field in COMPACTION_GAUGES:
                gauge(name, doc, TOPIC_LABELS).add_metric((cluster, namespace, topic), float(compaction[field]))
        for sub_name in sorted(subs):
            sub = subs[sub_name]
            labels = (cluster, namespace, topic, sub_name)
            for name, doc, field in SUBSCRIPTION_GAUGES:
                gauge(name, doc, SUBSCRIPTION_LABELS).add_metric(labels, float(sub.get(field) or 0))
            counter("pulsarlike_subscription_nonrecoverable_skipped", "Messages of damaged stored ranges the"
                    " subscription passed over (autoSkipNonRecoverableData).", SUBSCRIPTION_LABELS).add_metric(
                labels, float(sub.get("nonRecoverableMessagesSkipped") or 0))
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
    """A scrape not answered within ``metricsServletTimeoutMs``."""


def exposition(stats: Mapping[str, Mapping[str, Any]], cluster: str, topic_level: bool, accept: str = "",
               accept_encoding: str = "") -> tuple[bytes, dict[str, str]]:
    """One scrape's body and headers: ``stats`` (``{topic: stats}``, a snapshot) as Pulsar's families plus
    the process's, in the format ``accept`` asks for (OpenMetrics or Prometheus text), gzipped when
    ``accept_encoding`` allows it. Thread-safe: each scrape has its own registry."""
    import gzip

    from prometheus_client import CollectorRegistry
    from prometheus_client.exposition import choose_encoder, gzip_accepted
    from prometheus_client.platform_collector import PlatformCollector
    from prometheus_client.process_collector import ProcessCollector

    registry = CollectorRegistry(auto_describe=False)
    registry.register(BrokerCollector(lambda: stats, cluster, topic_level))
    ProcessCollector(registry=registry)
    PlatformCollector(registry=registry)
    encoder, content_type = choose_encoder(accept)
    output = encoder(registry)
    headers = {"Content-Type": content_type}
    if gzip_accepted(accept_encoding):
        output = gzip.compress(output)
        headers["Content-Encoding"] = "gzip"
    return output, headers
