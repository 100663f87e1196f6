"""Pulsar's topic stats of a persistent topic partition (``pulsarlike admin topics stats``): counters and
sizes read from the topic, rates from its :class:`~broker_core.service.rates.Rates` (computed by the broker
over the stats interval, never per request)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from broker_core.service.topic import PersistentTopic
    from broker_core.storage.log import ManagedLog


def topic_stats(topic: "PersistentTopic") -> dict[str, Any]:
    subs = {name: sub.stats() for name, sub in topic.subscriptions.items()}
    for name, stats in subs.items():
        stats["totalMsgExpired"] = topic.msg_expired.get(name, 0)
        stats["lastActiveTimestamp"] = topic.activity.last_active_ms(name)
    for name, sub in topic.readers.items():  # a reader named like a durable subscription is listed apart
        subs[name if name not in subs else f"{name} (non-durable)"] = sub.stats()
    oldest = min((sub.cursor.mark_delete_offset + 1 for sub in topic.subscriptions.values() if sub.durable),
                 default=topic.journal.confirmed_end_offset)
    return {
        "msgInCounter": topic.msg_in_counter,
        "bytesInCounter": topic.bytes_in_counter,
        "msgOutCounter": sum(s.get("msgOutCounter", 0) for s in subs.values()),
        "bytesOutCounter": sum(s.get("bytesOutCounter", 0) for s in subs.values()),
        "storageSize": topic.log.size_bytes,
        "backlogSize": bytes_from(topic.log, oldest),
        "publishers": [{"producerName": p.producer_name, "producerId": p.producer_id,
                        "msgInCounter": p.msg_in_counter, "bytesInCounter": p.bytes_in_counter,
                        "metadata": p.properties, "accessMode": p.access_mode.pulsar_name}
                       for p in topic.producers.values()],
        "waitingPublishers": len(topic.access.waiting),
        "deduplicationStatus": "Enabled" if topic.dedup is not None else "Disabled",
        "subscriptions": subs,
        "firstOffset": topic.log.start_offset,
        "lastOffset": topic.journal.confirmed_end_offset - 1,
        "terminated": topic.termination.terminated,
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
