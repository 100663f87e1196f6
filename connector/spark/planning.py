"""Driver-side decisions on offsets, as pure functions: where a query starts, where a batch read ends, how
much one trigger admits (``maxMessagesPerTrigger``, ``maxBytesPerTrigger``), and which offsets are lost.

Admission worked example: start ``{a: 0, b: 0}``, latest ``{a: 90, b: 10}``, ``maxMessagesPerTrigger=20``.
Each partition gets its share of the limit in proportion to what it has waiting: ``a`` 20*90/100 = 18,
``b`` 20*10/100 = 2; remainders of the integer division go to the partitions in order, so the batch holds
exactly 20 messages whenever at least 20 are waiting.
"""
from __future__ import annotations

from typing import Any, Mapping

from connector.spark.source_admin import Bounds
from connector.spark.message_id_offsets import IdOffset
from connector.spark.offsets import EARLIEST, LATEST, Offsets, TopicPartition


class OffsetOutOfRange(ValueError):
    """User-given offsets beyond what a partition holds."""


def resolve_user_offsets(option: str, given: Offsets, bounds: Mapping[TopicPartition, Bounds],
                         default_earliest: bool) -> Offsets:
    """Concrete offsets for every partition in ``bounds`` from a user's JSON offsets: ``-2``/``-1`` become
    the partition's first stored offset / end; a partition the JSON does not name starts at its earliest
    (``default_earliest``) or ends at its latest. Offsets past a partition's end, and partitions that do
    not exist, raise :class:`OffsetOutOfRange` naming them."""
    missing = sorted(str(tp) for tp in given if tp not in bounds)
    if missing:
        raise OffsetOutOfRange(f"option {option} names {', '.join(missing)}, which does not exist; name "
                               "existing partitions (partition -1 for a non-partitioned topic)")
    out: Offsets = {}
    for tp, b in bounds.items():
        value = given.get(tp, EARLIEST if default_earliest else LATEST)
        if isinstance(value, IdOffset):
            # pulsarlike's message ids name dense offsets: the boundary after message (entry + batch index);
            # batch -1 names an unbatched message (pulsar-spark's ids of one)
            value = value.entry + max(value.batch, 0) + 1
        if value == EARLIEST:
            value = b.start
        elif value == LATEST:
            value = b.end
        elif value > b.end:
            raise OffsetOutOfRange(
                f"option {option}: offset {value} of {tp.topic} partition {tp.partition} is beyond its end "
                f"({b.end}, the next offset to be published); use an offset <= {b.end}, or -1 for latest")
        out[tp] = value
    return out


def admit(start: Offsets, latest: Offsets, max_messages: int | None, max_bytes: int | None = None,
          average_sizes: Mapping[TopicPartition, float] | None = None) -> Offsets:
    """End offsets for one trigger: ``latest`` capped so the batch holds at most ``max_messages`` messages
    and, by each partition's average stored message size, about ``max_bytes`` bytes (at least one message
    when anything waits). Partitions in ``latest`` but not in ``start`` are returned as given."""
    waiting = {tp: max(0, latest[tp] - start[tp]) for tp in sorted(latest) if tp in start}
    total = sum(waiting.values())
    cap = total
    if max_messages is not None:
        cap = min(cap, max_messages)
    if max_bytes is not None and total:
        sizes = average_sizes or {}
        total_bytes = sum(n * max(sizes.get(tp, 0.0), 1.0) for tp, n in waiting.items())
        if total_bytes > max_bytes:
            cap = min(cap, max(1, int(total * max_bytes / total_bytes)))
    end = dict(latest)
    if cap >= total:
        return end
    for tp, share in share_out(waiting, cap).items():
        end[tp] = start[tp] + share
    return end


def share_out(waiting: Mapping[TopicPartition, int], cap: int) -> dict[TopicPartition, int]:
    """``cap`` messages shared among partitions in proportion to what each has ``waiting`` (never more than
    it has); remainders go to the partitions in sorted order, so the shares add up to ``min(cap, total)``."""
    total = sum(waiting.values())
    if cap >= total:
        return dict(waiting)
    shares = {tp: waiting[tp] * cap // total for tp in sorted(waiting)}
    left = cap - sum(shares.values())
    for tp in sorted(waiting):
        if left <= 0:
            break
        if shares[tp] < waiting[tp]:
            shares[tp] += 1
            left -= 1
    return shares


def lost_ranges(start: Offsets, bounds: Mapping[TopicPartition, Bounds]) -> list[tuple[TopicPartition, int, int]]:
    """``(partition, first, end)`` of messages after ``start`` already deleted by retention."""
    return [(tp, offset, bounds[tp].start) for tp, offset in sorted(start.items())
            if tp in bounds and offset < bounds[tp].start]


def skip_lost(start: Offsets, bounds: Mapping[TopicPartition, Bounds]) -> Offsets:
    """``start`` moved past deleted messages, to each partition's first stored offset (failOnDataLoss=false):
    admission then counts only messages that can still be read."""
    return {tp: max(offset, bounds[tp].start) if tp in bounds else offset for tp, offset in start.items()}


def why_lost(stats: Mapping[str, Any] | None, subscription: str | None) -> str:
    """Why retention was allowed to delete messages a read wanted, and what to do, from the partition's
    stats (``TopicStats``) and the query's subscription (None for a batch read): a subscription that is gone
    held nothing; a message TTL acknowledges old messages on every subscription; otherwise no subscription
    held them (the read starts before them, or they were acknowledged)."""
    subs = (stats or {}).get("subscriptions") or {}
    skip = "set option failOnDataLoss=false to go on from the first stored message"
    if subscription is not None and stats is not None and subscription not in subs:
        return (f"the query's subscription {subscription} no longer exists (deleted, or expired after "
                f"subscriptionExpirationTimeMinutes), so it no longer held them; {skip}")
    expired = (subs.get(subscription) or {}).get("totalMsgExpired", 0) if subscription else \
        max([sub.get("totalMsgExpired", 0) for sub in subs.values()] or [0])
    if expired:
        return (f"the topic's message TTL expired them ({expired} messages expired so far: a TTL acknowledges "
                "old messages on every subscription, this query's too); raise or remove the message TTL "
                f"(messageTTLInSeconds) of the topic or namespace, or {skip}")
    return ("no subscription held them (the read starts before them, or they were acknowledged); keep them "
            "longer with a retention policy (`pulsarlike admin namespaces set-retention`), or " + skip)
