"""Pulsar's stats views of a topic, built once for REST (``stats``, ``partitioned-stats``, ``internalStats``,
``partitioned-internalStats``) and gRPC (``TopicStats``, ``TopicInternalStats``):

- ``TopicStats`` of a topic partition: the topic's own figures and rates (``Topic.stats()``), and once it was
  compacted its compaction's subscription ``__compaction`` (Pulsar's ``Compactor.COMPACTION_SUBSCRIPTION``:
  backlog = the messages after the compaction horizon), as Pulsar lists it;
- ``PartitionedTopicStats``: the partitions' figures and rates summed, publishers and consumers listed, each
  partition's stats under ``partitions`` (:func:`merged`);
- ``PersistentTopicInternalStats`` (:mod:`broker_core.core.admin.internal_stats`), of a partitioned topic each
  partition's under ``partitions`` with ``metadata.partitions``.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

from broker_core.core.admin import targets
from broker_core.core.admin.internal_stats import COMPACTION_CURSOR, internal_stats
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


def topic_stats(topic: Topic) -> dict[str, Any]:
    """``TopicStats`` of one topic partition (``__compaction`` among its subscriptions once compacted)."""
    found = topic.stats()
    if topic.persistent:
        compaction = compaction_subscription(stored(topic, "stats"))
        if compaction is not None:
            found["subscriptions"][COMPACTION_CURSOR] = compaction
    return found


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


def stats(registry: "TopicRegistry", name: TopicName) -> dict[str, Any]:
    """``TopicStats`` of a topic partition, or ``PartitionedTopicStats`` of a partitioned topic."""
    n = registry.partitions_of(name)
    if not n:
        return topic_stats(registry.get(name, create=False))
    per = {str(p): topic_stats(registry.get(p, create=True)) for p in targets.partitions(registry, name)}
    return merged(per, name.domain == NON_PERSISTENT)


def partitioned_stats(registry: "TopicRegistry", name: TopicName, per_partition: bool = True) -> dict[str, Any]:
    """``PartitionedTopicStats`` (``TopicNotFound`` for a topic that is not partitioned); without
    ``per_partition`` the partitions' own stats are left out."""
    targets.partitioned(registry, name)
    found = stats(registry, name)
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
            agg["consumers"].extend(sub.get("consumers", []))
    if non_persistent:
        total["msgDropCount"] = sum(p.get("msgDropCount", 0) for p in per.values())
    return total


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
