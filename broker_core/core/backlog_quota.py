"""Backlog quotas (Pulsar's ``backlogQuota`` namespace policy): how large and how old a topic partition's
backlog may grow, and what the broker does when it grows past that.

A quota map is stored under the policy ``backlogQuota`` (:mod:`broker_core.core.policies`), one quota per
type, as Pulsar's ``backlog_quota_map``::

    {"destination_storage": {"limitSize": 10485760, "limitTime": -1, "policy": "producer_exception"},
     "message_age": {"limitSize": -1, "limitTime": 3600, "policy": "consumer_backlog_eviction"}}

- ``destination_storage``: ``limitSize`` bytes of backlog, the bytes from the slowest durable
  subscription's first unacknowledged entry to the end of the topic (estimated from segment sizes, as
  Pulsar estimates it from ledger sizes); -1 none.
- ``message_age``: ``limitTime`` seconds, the age of the slowest durable subscription's oldest unacknowledged
  message; -1 none.

Policies, as Pulsar's ``RetentionPolicy``:

- ``producer_exception``: new producers are refused with
  :class:`~broker_core.errors.ProducerBlockedQuotaExceededException` and connected ones closed with it (a
  client's pending sends fail with it), until consumers catch up;
- ``producer_request_hold``: the same with :class:`~broker_core.errors.ProducerBlockedQuotaExceededError`,
  which Pulsar's clients retry (they hold their sends and reconnect);
- ``consumer_backlog_eviction``: the oldest backlog is acknowledged on every durable subscription behind the
  limit, so the backlog fits again (readers are not counted, as in Pulsar).

A producer is checked when it is created (:func:`refusal`); the broker checks every loaded topic every
``backlogQuotaCheckIntervalInSeconds`` and when a quota is set (:func:`enforce`). Quotas without a policy
limit set (both -1) do nothing. The broker has no default quota (Pulsar's ``backlogQuotaDefaultLimitBytes``
is -1 by default too): only namespaces that set one are limited.
"""
from __future__ import annotations

import asyncio
import functools
import logging
from typing import Any, Callable, NamedTuple

from broker_core.clock import Clock
from broker_core.config import BrokerConfig
from broker_core.errors import (InvalidConfiguration, ProducerBlockedQuotaExceededError,
                                ProducerBlockedQuotaExceededException)

from broker_core.core.topic_protocol import StoredTopic, Topic, stored
from broker_core.types import TopicName

log = logging.getLogger(__name__)

STORAGE, AGE = "destination_storage", "message_age"
QUOTA_TYPES = (STORAGE, AGE)
HOLD, EXCEPTION, EVICTION = "producer_request_hold", "producer_exception", "consumer_backlog_eviction"
QUOTA_POLICIES = (HOLD, EXCEPTION, EVICTION)
LIMIT_SIZE, LIMIT_TIME, POLICY = "limitSize", "limitTime", "policy"


def _limit(field: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not -1 <= value < 1 << 62:
        raise InvalidConfiguration(f"{field} takes -1 (no limit) or an integer >= 0, not {value!r}", key=field)
    return value


def check_quota(field: str, value: Any) -> dict[str, Any]:
    """One quota as stored: ``limitSize`` (bytes), ``limitTime`` (seconds), ``policy``. Pulsar's deprecated
    ``limit`` is read as ``limitSize``; a missing limit is -1."""
    if not isinstance(value, dict):
        raise InvalidConfiguration(f"{field} takes {{{LIMIT_SIZE!r}: int, {LIMIT_TIME!r}: int, {POLICY!r}:"
                                   f" one of {', '.join(QUOTA_POLICIES)}}}, not {value!r}"[:300], key=field)
    unknown = set(value) - {LIMIT_SIZE, LIMIT_TIME, POLICY, "limit"}
    if unknown:
        raise InvalidConfiguration(f"{field}: unknown fields {sorted(map(str, unknown))[:5]}", key=field)
    policy = value.get(POLICY)
    if policy not in QUOTA_POLICIES:
        raise InvalidConfiguration(f"{field}.{POLICY} takes one of {', '.join(QUOTA_POLICIES)}, not"
                                   f" {policy!r}"[:300], key=field)
    size = value.get(LIMIT_SIZE, value.get("limit", -1))
    return {LIMIT_SIZE: _limit(f"{field}.{LIMIT_SIZE}", size),
            LIMIT_TIME: _limit(f"{field}.{LIMIT_TIME}", value.get(LIMIT_TIME, -1)), POLICY: policy}


def check_quota_map(key: str, value: Any) -> dict[str, dict[str, Any]]:
    """The ``backlogQuota`` policy: quota type -> quota (:func:`check_quota`)."""
    if not isinstance(value, dict) or not value:
        raise InvalidConfiguration(f"policy {key} takes a non-empty map of {', '.join(QUOTA_TYPES)} to quotas,"
                                   f" not {value!r}"[:300], key=key)
    for quota_type in value:
        check_type(quota_type)
    return {quota_type: check_quota(f"{key}.{quota_type}", quota) for quota_type, quota in value.items()}


def check_type(quota_type: Any) -> str:
    if quota_type not in QUOTA_TYPES:
        raise InvalidConfiguration(f"backlogQuotaType takes {' or '.join(QUOTA_TYPES)}, not {quota_type!r}"[:200],
                                   key="backlogQuotaType")
    return quota_type


def as_pulsar(quota: dict[str, Any]) -> dict[str, Any]:
    """A stored quota as Pulsar's admin API shows it (with the deprecated ``limit`` beside ``limitSize``)."""
    return {"limit": quota[LIMIT_SIZE], **quota}


def quotas_in_force(policies: Any, topic: TopicName) -> dict[str, dict[str, Any]] | None:
    """Each quota type's quota in force on ``topic``, as Pulsar resolves a topic's backlog quota map type by
    type: the topic partition's own, else its partitioned topic's, else its namespace's (None: none at all).
    ``policies`` is the broker's :class:`~broker_core.core.policies.PoliciesStore`."""
    from broker_core.core.policies import BACKLOG_QUOTA, NAMESPACE, TOPIC  # policies imports this module
    found: dict[str, dict[str, Any]] = {}
    for scope, name in ((NAMESPACE, topic.namespace_name), (TOPIC, str(topic.partitioned_base)), (TOPIC, str(topic))):
        found.update(policies.get(scope, name).get(BACKLOG_QUOTA) or {})
    return found or None


# ------------------------------------------------------------------ measuring a topic's backlog
def _slowest(topic: StoredTopic) -> int | None:
    """The first offset some durable subscription has not acknowledged; None without durable ones."""
    return min((sub.cursor.mark_delete_offset + 1 for sub in topic.subscriptions.values()), default=None)


def backlog_bytes(topic: StoredTopic) -> int:
    """The bytes from the slowest durable subscription's first unacknowledged entry to the end, with the
    segment holding it counted pro rata of its entries."""
    start = _slowest(topic)
    if start is None:
        return 0
    total = 0
    for seg in topic.log.retention_view():
        if seg.end_offset <= start:
            continue
        entries = seg.end_offset - seg.base_offset
        if seg.base_offset >= start or entries <= 0:
            total += seg.size
        else:
            total += seg.size * (seg.end_offset - start) // entries
    return total


def _size_target(topic: StoredTopic, limit: int) -> int:
    """The first offset from which the rest of the topic fits in ``limit`` bytes (segments pro rata)."""
    kept = 0
    for seg in reversed(topic.log.retention_view()):
        entries = seg.end_offset - seg.base_offset
        if kept + seg.size <= limit or entries <= 0:
            kept += seg.size
            continue
        per_entry = max(1, seg.size // entries)
        return seg.end_offset - (limit - kept) // per_entry
    return topic.start_offset


def _age_target(topic: StoredTopic, limit_s: int, start: int, now_ms: int) -> int:
    """The first offset published ``limit_s`` seconds before ``now_ms`` or later, searched from ``start``."""
    return topic.log.offset_for_timestamp(now_ms - limit_s * 1000, from_offset=start)


class Exceeded(NamedTuple):
    quota_type: str
    policy: str
    limit: int
    target: int
    """The first offset the slowest subscription should be at for the backlog to fit."""


def exceeded(topic: StoredTopic, quotas: dict[str, dict[str, Any]] | None, now_ms: int) -> list[Exceeded]:
    """The quotas ``topic``'s backlog is over."""
    start = _slowest(topic) if quotas else None
    if start is None:
        return []
    end = topic.confirmed_end_offset
    found = []
    storage, age = quotas.get(STORAGE), quotas.get(AGE)
    if storage is not None and storage[LIMIT_SIZE] >= 0 and backlog_bytes(topic) > storage[LIMIT_SIZE]:
        target = min(_size_target(topic, storage[LIMIT_SIZE]), end)
        found.append(Exceeded(STORAGE, storage[POLICY], storage[LIMIT_SIZE], max(target, start)))
    if age is not None and age[LIMIT_TIME] >= 0 and start < end:
        target = min(_age_target(topic, age[LIMIT_TIME], start, now_ms), end)
        if target > start:
            found.append(Exceeded(AGE, age[POLICY], age[LIMIT_TIME], target))
    return found


def _error(topic: str, over: Exceeded) -> ProducerBlockedQuotaExceededException:
    unit = "bytes" if over.quota_type == STORAGE else "seconds"
    cls = ProducerBlockedQuotaExceededError if over.policy == HOLD else ProducerBlockedQuotaExceededException
    return cls(f"Cannot create producer on topic {topic}: its backlog is over the {over.quota_type} quota of"
               f" {over.limit} {unit} ({over.policy}); acknowledge the backlog, or raise the quota"
               " (POST .../backlogQuota)", topic=topic, quota=over.quota_type, limit=over.limit)


def refusal(topic: StoredTopic, quotas: dict[str, dict[str, Any]] | None,
            now_ms: int) -> ProducerBlockedQuotaExceededException | None:
    """The error a new producer on ``topic`` is refused with now (None: it is admitted)."""
    for over in exceeded(topic, quotas, now_ms):
        if over.policy != EVICTION:
            return _error(topic.topic, over)
    return None


def enforce(topic: StoredTopic, quotas: dict[str, dict[str, Any]] | None, now_ms: int) -> int:
    """Apply each exceeded quota's policy: evict the oldest backlog, or close the producers. Returns the
    messages evicted plus the producers closed."""
    done = 0
    for over in exceeded(topic, quotas, now_ms):
        if over.policy == EVICTION:
            for sub in list(topic.subscriptions.values()):
                if sub.cursor.mark_delete_offset + 1 < over.target:
                    done += sub.expire_through(over.target - 1)
            log.info("event=backlog_evicted topic=%s quota=%s limit=%d through=%d", topic.topic,
                     over.quota_type, over.limit, over.target - 1)
        elif topic.producers:
            closed = topic.disconnect_clients(_error(topic.topic, over), consumers=False)
            done += closed
            log.info("event=backlog_quota_exceeded topic=%s quota=%s limit=%d policy=%s producers_closed=%d",
                     topic.topic, over.quota_type, over.limit, over.policy, closed)
    return done


class QuotaChecks:
    """The broker's backlog quota checks over its loaded ``topics``: ``quotas_of(name)`` is a topic's
    effective ``backlogQuota`` policy (None: none). Runs on the event loop."""

    def __init__(self, topics: dict[str, Topic], quotas_of: Callable[[TopicName], dict | None], config: BrokerConfig,
                 clock: Clock) -> None:
        self._topics = topics
        self._quotas_of = quotas_of
        self._config = config
        self._clock = clock
        self._handle: asyncio.TimerHandle | None = None

    def attach(self, topic: StoredTopic) -> None:
        """Check ``topic``'s backlog quota at each producer's creation."""
        topic.producer_check = functools.partial(self._check_producer, topic)

    def _check_producer(self, topic: StoredTopic) -> None:
        error = refusal(topic, self._quotas_of(topic.name), self._clock.now_ms())
        if error is not None:
            raise error

    def check(self, namespace: str | None = None) -> int:
        """Enforce every loaded persistent topic's quota (of ``namespace`` only when given); returns the
        messages evicted plus the producers closed."""
        done = 0
        now = self._clock.now_ms()
        for topic in list(self._topics.values()):
            if not topic.persistent or topic.closed or (namespace and topic.name.namespace_name != namespace):
                continue
            quotas = self._quotas_of(topic.name)
            if quotas:
                try:
                    done += enforce(stored(topic, "backlog quota"), quotas, now)
                except Exception:  # one topic's failure must not stop the others' checks
                    log.exception("event=backlog_quota_check_failed topic=%s", topic.topic)
        return done

    def start(self) -> None:
        """Check every ``backlogQuotaCheckIntervalInSeconds`` on the running loop."""
        self._handle = asyncio.get_running_loop().call_later(self._config.backlogQuotaCheckIntervalInSeconds,
                                                             self._round)

    def _round(self) -> None:
        self.check()
        self.start()

    def stop(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
