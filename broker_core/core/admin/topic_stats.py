"""Pulsar's stats views of a topic, built once for REST (``stats``, ``partitioned-stats``, ``internalStats``,
``partitioned-internalStats``) and gRPC (``TopicStats``, ``TopicInternalStats``):

- ``TopicStats`` of a topic partition: the topic's own figures and rates (``Topic.stats()``), and once it was
  compacted its compaction's subscription ``__compaction`` (Pulsar's ``Compactor.COMPACTION_SUBSCRIPTION``:
  backlog = the messages after the compaction horizon), as Pulsar lists it;
- ``PartitionedTopicStats``: the partitions' figures and rates summed, publishers and consumers listed, each
  partition's stats under ``partitions`` (:func:`merged`);
- what :class:`StatsOptions` asks (Pulsar's ``GetStatsOptions``, the REST query parameters
  ``getPreciseBacklog``, ``subscriptionBacklogSize``, ``getEarliestTimeInBacklog``): each subscription's
  ``backlogSize`` (bytes from its mark-delete position to the end, as ``topics get-backlog-size`` measures
  them; -1 when not asked) and ``earliestMsgPublishTimeInBacklog`` (publish time of the entry holding its
  first unacknowledged message; -1 when its backlog is empty, 0 when not asked), the topic's
  ``earliestMsgPublishTimeInBacklogs`` (the same of its slowest durable subscription). The backlog counts are
  always exact here, so ``getPreciseBacklog`` changes nothing;
- ``PersistentTopicInternalStats`` (:mod:`broker_core.core.admin.internal_stats`), of a partitioned topic each
  partition's under ``partitions`` with ``metadata.partitions``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping

from broker_core.core.admin import targets
from broker_core.core.admin.internal_stats import COMPACTION_CURSOR, internal_stats
from broker_core.core.persistent.stats import bytes_from
from broker_core.core.rates import average_size
from broker_core.core.topic_protocol import Topic, stored
from broker_core.errors import NotAllowedError
from broker_core.types import NON_PERSISTENT, TopicName

if TYPE_CHECKING:
    from broker_core.core.registry import TopicRegistry

SUMMED = ("msgInCounter", "bytesInCounter", "msgOutCounter", "bytesOutCounter", "storageSize", "backlogSize",
          "damagedMessages", "msgRateIn", "msgThroughputIn", "msgRateOut", "msgThroughputOut",
          "publishRateLimitedTimes")
SUBSCRIPTION_SUMMED = ("msgBacklog", "totalMsgExpired", "unackedMessages", "msgOutCounter", "msgRateOut",
                       "msgThroughputOut", "msgRateRedeliver", "msgRateExpired", "nonRecoverableMessagesSkipped")


@dataclass(frozen=True)
class StatsOptions:
    """Pulsar's ``GetStatsOptions``: what a stats request asks beyond the counters (Pulsar's defaults)."""

    get_precise_backlog: bool = False
    """``getPreciseBacklog``: accepted; the backlog counts here are always exact."""
    subscription_backlog_size: bool = True
    """``subscriptionBacklogSize``: each subscription's ``backlogSize`` in bytes (-1 without)."""
    get_earliest_time_in_backlog: bool = False
    """``getEarliestTimeInBacklog``: the publish time of the first unacknowledged message (0 without)."""


def topic_stats(topic: Topic, options: StatsOptions = StatsOptions()) -> dict[str, Any]:
    """``TopicStats`` of one topic partition (``__compaction`` among its subscriptions once compacted)."""
    found = topic.stats()
    if topic.persistent:
        kept = stored(topic, "stats")
        compaction = compaction_subscription(kept)
        if compaction is not None:
            found["subscriptions"][COMPACTION_CURSOR] = compaction
        add_backlog_figures(kept, found, options)
    return found


def add_backlog_figures(topic: Any, found: dict[str, Any], options: StatsOptions) -> None:
    """Fill ``backlogSize`` and ``earliestMsgPublishTimeInBacklog`` of each subscription of ``found`` (a stored
    topic partition's stats) and the topic's ``earliestMsgPublishTimeInBacklogs``, as ``options`` asks."""
    end = topic.confirmed_end_offset
    for sub in found["subscriptions"].values():
        first = max(sub["markDeleteOffset"] + 1, topic.start_offset)
        sub["backlogSize"] = bytes_from(topic.log, first) if options.subscription_backlog_size else -1
        sub["earliestMsgPublishTimeInBacklog"] = (
            _publish_time_at(topic, first, end) if options.get_earliest_time_in_backlog else 0)
    found["earliestMsgPublishTimeInBacklogs"] = 0
    if options.get_earliest_time_in_backlog and found.get("backlogSize"):
        durable = [s for s in found["subscriptions"].values() if s.get("isDurable")]
        if durable:
            oldest = min(max(s["markDeleteOffset"] + 1, topic.start_offset) for s in durable)
            found["earliestMsgPublishTimeInBacklogs"] = _publish_time_at(topic, oldest, end)


def _publish_time_at(topic: Any, offset: int, end: int) -> int:
    """Publish time of the entry holding ``offset`` (-1: nothing stored there, an empty backlog)."""
    entry = topic.entry_containing(offset) if offset < end else None
    return -1 if entry is None else entry.publish_time


def compaction_subscription(topic: Any) -> dict[str, Any] | None:
    """The ``SubscriptionStats`` of the compaction's subscription (None: never compacted). The compactor reads
    as an Exclusive subscription without a lasting consumer; what it has not compacted yet is its backlog."""
    ledger = topic.compacted
    if ledger is None:
        return None
    succeeded = topic.compaction.record.last_succeed_ms
    return {"msgRateOut": 0.0, "msgThroughputOut": 0.0, "bytesOutCounter": 0, "msgOutCounter": 0,
            "msgRateRedeliver": 0.0, "msgRateExpired": 0.0, "totalMsgExpired": 0,
            "msgBacklog": max(topic.confirmed_end_offset - ledger.horizon, 0), "unackedMessages": 0,
            "type": "Exclusive", "activeConsumerName": None, "lastConsumedTimestamp": succeeded,
            "lastAckedTimestamp": succeeded, "consumers": [], "isDurable": True, "isReplicated": False,
            "markDeleteOffset": ledger.horizon - 1, "subscriptionProperties": {}}


def stats(registry: "TopicRegistry", name: TopicName, options: StatsOptions = StatsOptions()) -> dict[str, Any]:
    """``TopicStats`` of a topic partition, or ``PartitionedTopicStats`` of a partitioned topic."""
    n = registry.partitions_of(name)
    if not n:
        return topic_stats(registry.get(name, create=False), options)
    per = {str(p): topic_stats(registry.get(p, create=True), options) for p in targets.partitions(registry, name)}
    return merged(per, name.domain == NON_PERSISTENT)


def partitioned_stats(registry: "TopicRegistry", name: TopicName, per_partition: bool = True,
                      options: StatsOptions = StatsOptions()) -> dict[str, Any]:
    """``PartitionedTopicStats`` (``TopicNotFound`` for a topic that is not partitioned); without
    ``per_partition`` the partitions' own stats are left out."""
    targets.partitioned(registry, name)
    found = stats(registry, name, options)
    if not per_partition:
        found.pop("partitions", None)
    return found


def merged(per: Mapping[str, Mapping[str, Any]], non_persistent: bool) -> dict[str, Any]:
    """A partitioned topic's stats from its partitions' (``per``, by partition name): figures and rates summed,
    publishers and consumers listed, each partition's stats under ``partitions``."""
    total: dict[str, Any] = {"metadata": {"partitions": len(per)}, "partitions": dict(per), "publishers": [],
                             "subscriptions": {}}
    for key in SUMMED:
        total[key] = sum(p.get(key) or 0 for p in per.values())
    total["averageMsgSize"] = average_size(total)
    summed_sub = SUBSCRIPTION_SUMMED + (("msgDropCount", "msgDropRate") if non_persistent else ())
    for p in per.values():
        total["publishers"].extend(p["publishers"])
        for sub_name, sub in p["subscriptions"].items():
            agg = total["subscriptions"].setdefault(sub_name, {"type": sub.get("type"), "consumers": []})
            for key in summed_sub:
                agg[key] = agg.get(key, 0) + (sub.get(key) or 0)
            for key in ("lastConsumedTimestamp", "lastAckedTimestamp"):
                agg[key] = max(agg.get(key, 0), sub.get(key) or 0)
            if "backlogSize" in sub:
                size = sub["backlogSize"]
                agg["backlogSize"] = size if size < 0 else max(agg.get("backlogSize", 0), 0) + size
                agg["earliestMsgPublishTimeInBacklog"] = _earliest(agg.get("earliestMsgPublishTimeInBacklog"),
                                                                   sub["earliestMsgPublishTimeInBacklog"])
            agg["consumers"].extend(sub.get("consumers", []))
    for p in per.values():
        if "earliestMsgPublishTimeInBacklogs" in p:
            total["earliestMsgPublishTimeInBacklogs"] = _earliest(total.get("earliestMsgPublishTimeInBacklogs"),
                                                                  p["earliestMsgPublishTimeInBacklogs"])
    if non_persistent:
        total["msgDropCount"] = sum(p.get("msgDropCount", 0) for p in per.values())
    return total


def _earliest(a: int | None, b: int) -> int:
    """Two partitions' earliest publish times as one (``a`` None: the first): the earliest time either has;
    -1 (an empty backlog) only when neither has one, 0 (not asked) when neither was asked."""
    if a is None:
        return b
    times = [t for t in (a, b) if t > 0]
    return min(times) if times else min(a, b)


def topic_internal_stats(registry: "TopicRegistry", name: TopicName) -> dict[str, Any]:
    """``stats-internal``: the managed-ledger view (segments, cursors) of a topic partition; of a partitioned
    topic, each partition's under ``partitions`` (Pulsar's partitioned-stats-internal)."""
    n = registry.partitions_of(name)
    if n:
        return {"metadata": {"partitions": n},
                "partitions": {str(p): topic_internal_stats(registry, p)
                               for p in targets.partitions(registry, name) if registry.exists(p)}}
    topic = registry.get(name, create=False)
    if not topic.persistent:
        raise NotAllowedError(f"{name}: a non-persistent topic stores nothing, so it has no internal stats; use"
                              " `topics stats`", topic=str(name))
    return internal_stats(stored(topic, "stats-internal"))


def partitioned_internal_stats(registry: "TopicRegistry", name: TopicName) -> dict[str, Any]:
    """``partitioned-internalStats`` (``TopicNotFound`` for a topic that is not partitioned)."""
    targets.partitioned(registry, name)
    return topic_internal_stats(registry, name)
