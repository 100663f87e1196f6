"""Pulsar's topic stats (``pulsarlike admin topics stats``): of a persistent topic partition, counters and
sizes read from the topic's helpers (:class:`TopicStats`; its rates are added by
:class:`~broker_core.core.rates.TopicRates`, computed by the broker over the stats interval, never per
request); of a partitioned topic, its partitions' summed."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

from broker_core.core.rates import average_size

if TYPE_CHECKING:
    from broker_core.core.persistent.compaction_runs import CompactionRecord
    from broker_core.core.persistent.dedup import DeduplicationSwitch
    from broker_core.core.persistent.publishing import Publisher
    from broker_core.core.persistent.retention import TopicRetention
    from broker_core.core.persistent.subscriptions import TopicSubscriptions
    from broker_core.core.producers import TopicProducers
    from broker_core.core.termination import Termination
    from broker_core.storage.journal import Journal
    from broker_core.storage.log import ManagedLog


class TopicStats:
    """The stats of the partition stored in ``managed_log``, read from the helpers that keep each figure."""

    def __init__(self, managed_log: "ManagedLog", journal: "Journal", subscriptions: "TopicSubscriptions",
                 retention: "TopicRetention", publisher: "Publisher", producers: "TopicProducers",
                 dedup: "DeduplicationSwitch", termination: "Termination",
                 compaction: "CompactionRecord | None" = None) -> None:
        self._log = managed_log
        self._journal = journal
        self._subs = subscriptions
        self._retention = retention
        self._publisher = publisher
        self._producers = producers
        self._dedup = dedup
        self._termination = termination
        self._compaction = compaction

    def raw(self) -> dict[str, Any]:
        """The stats without rates."""
        durable = self._subs.subscriptions
        subs = {name: sub.stats() for name, sub in durable.items()}
        for name, stats in subs.items():
            stats["totalMsgExpired"] = self._retention.msg_expired.get(name, 0)
            stats["lastActiveTimestamp"] = self._subs.activity.last_active_ms(name)
        for name, sub in self._subs.readers.items():  # a reader named like a durable subscription is listed apart
            subs[name if name not in subs else f"{name} (non-durable)"] = sub.stats()
        oldest = min((sub.cursor.mark_delete_offset + 1 for sub in durable.values() if sub.durable),
                     default=self._journal.confirmed_end_offset)
        return {
            "msgInCounter": self._publisher.msg_in_counter,
            "bytesInCounter": self._publisher.bytes_in_counter,
            "msgOutCounter": sum(s.get("msgOutCounter", 0) for s in subs.values()),
            "bytesOutCounter": sum(s.get("bytesOutCounter", 0) for s in subs.values()),
            "storageSize": self._log.size_bytes,
            "backlogSize": bytes_from(self._log, oldest),
            "damagedMessages": self._log.damaged_messages,
            "publishers": self._producers.stats(),
            "waitingPublishers": len(self._producers.access.waiting),
            "deduplicationStatus": "Enabled" if self._dedup.current is not None else "Disabled",
            "subscriptions": subs,
            "firstOffset": self._log.start_offset,
            "lastOffset": self._journal.confirmed_end_offset - 1,
            "terminated": self._termination.terminated,
            **({"compaction": self._compaction.stats()} if self._compaction is not None else {}),
        }


def bytes_from(log: "ManagedLog", offset: int) -> int:
    """Estimated stored bytes at and after ``offset`` (whole segments, pro rata for the first)."""
    total = 0
    for seg in log.segments():
        first, last, size = seg["firstOffset"], seg["lastOffset"], seg["size"]
        if last < offset or size == 0:
            continue
        if first >= offset:
            total += size
        else:
            total += size * (last - offset + 1) // max(1, last - first + 1)
    return total


SUMMED = ("msgInCounter", "bytesInCounter", "msgOutCounter", "bytesOutCounter", "storageSize", "backlogSize",
          "damagedMessages", "msgRateIn", "msgThroughputIn", "msgRateOut", "msgThroughputOut")
SUBSCRIPTION_SUMMED = ("msgBacklog", "totalMsgExpired", "unackedMessages", "msgOutCounter", "msgRateOut",
                       "msgThroughputOut", "msgRateRedeliver", "msgRateExpired", "nonRecoverableMessagesSkipped")


def partitioned_stats(per: Mapping[str, Mapping[str, Any]], non_persistent: bool) -> dict[str, Any]:
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
