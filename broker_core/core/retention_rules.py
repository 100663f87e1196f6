"""Retention and message expiry (TTL): the pure decisions, as Apache Pulsar makes them.

Storage keeps a topic partition as segments (Pulsar's ledgers). Two policies decide what may go:

**Retention** (``retention`` policy, or the broker's ``defaultRetentionTimeInMinutes`` /
``defaultRetentionSizeInMB``; -1 = infinite, 0 = none) keeps *consumed* data. A segment is consumed when
every message in it is at or below the mark-delete offset of every durable subscription (a topic with no
durable subscription has all its data consumed; readers hold nothing). :func:`segments_to_delete` walks
the consumed segments oldest first -- never the active (last) one, never past an unconsumed one -- and
deletes a segment when EITHER limit is exceeded, exactly as Pulsar's ``ManagedLedgerImpl`` trims ledgers:

- over the size quota: ``size_mb >= 0`` and the topic's *total* stored size minus what is being deleted
  (this segment included) is still ``>= size_mb`` MiB (Pulsar measures the whole topic, backlog included);
- expired: ``time_minutes >= 0`` and ``now - segment time > time_minutes`` (the segment time is the
  publish time of its newest message; Pulsar uses the time its ledger was closed).

The walk stops at the first segment that is neither, so retention only ever removes a prefix of the log.

Worked example: segments A, B, C (1 MiB each, A and B consumed, C active), ``size_mb=1``, time -1: total 3
MiB; deleting A leaves 2 >= 1, so A goes; deleting B too leaves 1 >= 1, so B goes; C is active. With
``size_mb=2`` only A goes. With 0/0 (no retention) A and B go; with -1/-1 nothing ever does.

**Expiry** (``messageTTLInSeconds`` policy or ``ttlDurationDefaultInSeconds``; 0 = none): a message whose
publish time is more than the TTL ago (``now > publish_time + ttl``) is acknowledged on every durable
subscription, unacked, delayed or not, by moving the mark-delete offset past it
(:meth:`dispatch.subscription.Subscription.expire_through`). Then retention may delete it. The expiry
point is the first entry that has not expired (whole sealed segments whose newest message expired are
skipped without reading, Pulsar's ledger-closure check); with skewed publish times that expires no
message younger than the TTL (Pulsar binary-searches for the newest expired entry instead).
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple, Protocol

MIB = 1 << 20
INFINITE = -1


class RetentionPolicy(NamedTuple):
    """Pulsar's RetentionPolicies. -1: infinite; 0: keep nothing consumed."""

    time_minutes: int
    """keep consumed data at most this long"""
    size_mb: int
    """keep consumed data while the topic holds at least this many MiB"""

    @classmethod
    def of(cls, policy: dict[str, Any] | None, default_time_minutes: int, default_size_mb: int) -> RetentionPolicy:
        """From a ``retention`` policy value (None: the broker defaults)."""
        if policy is None:
            return cls(default_time_minutes, default_size_mb)
        return cls(int(policy["retentionTimeInMinutes"]), int(policy["retentionSizeInMB"]))

    @property
    def keeps_forever(self) -> bool:
        return self.time_minutes == INFINITE and self.size_mb == INFINITE


class Segment(Protocol):
    """What retention reads of a segment (``ManagedLog.retention_view()`` supplies them lazily)."""

    @property
    def base_offset(self) -> int: ...
    @property
    def end_offset(self) -> int: ...
    @property
    def size(self) -> int: ...
    @property
    def last_publish_ms(self) -> int: ...


class SegmentInfo(NamedTuple):
    """A segment as retention sees it (tests build these by hand)."""

    base_offset: int
    """first offset in the segment"""
    end_offset: int
    """one past its last offset"""
    size: int
    """bytes on disk"""
    last_publish_ms: int
    """publish time of its newest message"""


def consumed_end_offset(mark_delete_offsets: Iterable[int], end_offset: int) -> int:
    """The first offset some durable subscription has not consumed: the slowest mark-delete offset + 1,
    or ``end_offset`` (everything) when there is no durable subscription."""
    return min((md + 1 for md in mark_delete_offsets), default=end_offset)


def segments_to_delete(segments: Sequence[Segment], consumed_end: int, policy: RetentionPolicy,
                       now_ms: int) -> int:
    """How many leading segments to delete (the last, active segment never is).

    ``segments`` in offset order, all of the topic's (the size rule weighs the whole topic);
    ``consumed_end`` from :func:`consumed_end_offset`. ``last_publish_ms`` is read only when the size
    rule alone does not decide, so a lazy segment view scans a file only when needed.
    """
    if policy.keeps_forever or len(segments) < 2:
        return 0
    total = sum(seg.size for seg in segments)
    quota = policy.size_mb * MIB
    max_age_ms = policy.time_minutes * 60_000
    deleting = 0
    count = 0
    for seg in segments[:-1]:
        if seg.end_offset > consumed_end:
            break
        deleting += seg.size
        over_quota = policy.size_mb >= 0 and total - deleting >= quota
        if not over_quota and not (policy.time_minutes >= 0 and now_ms - seg.last_publish_ms > max_age_ms):
            break
        count += 1
    return count


def expiry_cutoff_ms(ttl_seconds: int, now_ms: int) -> int | None:
    """Messages published before this time have expired (None: no TTL). Pulsar: expired when
    ``now > publish_time + ttl``, i.e. ``publish_time < now - ttl``."""
    if ttl_seconds <= 0:
        return None
    return now_ms - ttl_seconds * 1000


def expiry_offset(first_unexpired_offset: int, confirmed_end_offset: int, mark_delete_offset: int) -> int | None:
    """The offset a subscription's messages expire through (None: nothing to do): everything before the
    first unexpired entry, never past what the journal confirmed, never backwards."""
    through = min(first_unexpired_offset, confirmed_end_offset) - 1
    return through if through > mark_delete_offset else None
