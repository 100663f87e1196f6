"""Retention and expiry of a persistent topic partition (a helper the
:class:`~broker_core.core.persistent.topic.PersistentTopic` owns and delegates to; it works on the topic's
log, journal and subscriptions, and owns the policies, the timers and the segment removal running).

- **Retention** (:meth:`trim`): the leading segments every durable subscription consumed and the retention
  policy no longer keeps are detached on the event loop and unlinked on a worker thread (the rule is
  :func:`~broker_core.core.retention_rules.segments_to_delete`). Runs every
  ``retentionCheckIntervalInSeconds``, and soon after a segment rolls, a cursor is saved, a durable
  subscription is deleted or the policy changes.
- **Message TTL** (:meth:`expire_messages`): messages published more than the TTL ago are acknowledged on
  every durable subscription; runs every ``messageExpiryCheckIntervalInMinutes`` (or ``...InSeconds``).
- **Subscription expiration** (:meth:`expire_subscriptions`): durable subscriptions without consumers and
  unused for ``subscriptionExpirationTimeMinutes`` are deleted; runs every
  ``subscriptionExpiryCheckIntervalInMinutes`` (or ``...InSeconds``) and when the topic is loaded (the rule
  is :mod:`~broker_core.core.subscription_expiry`'s).

- **Truncate** (:meth:`truncate`, the admin API's ``truncate``): every subscription acknowledges everything
  and every segment but the active one goes, whatever the retention policy.

See docs/retention-and-ttl.md.
"""
from __future__ import annotations

import asyncio
import logging
from concurrent.futures import Executor
from typing import Callable

from broker_core.clock import Clock
from broker_core.config import BrokerConfig
from broker_core.log_limits import LogLimiter
from broker_core.core.persistent.subscriptions import TopicSubscriptions
from broker_core.core.retention_rules import (RetentionPolicy, consumed_end_offset, expiry_cutoff_ms,
                                              expiry_offset, segments_to_delete)
from broker_core.storage.journal import Journal
from broker_core.storage.log import ManagedLog

log = logging.getLogger("broker_core.core.persistent.topic")
_FAILURES = LogLimiter(log, every_ms=600_000)
"""A check that fails fails again at every interval (a damaged segment's publish times cannot be read):
one line (with its traceback) per topic and check every 10 minutes, with the count."""


class TopicRetention:
    """Runs retention and expiry on ``managed_log`` for ``subscriptions``: ``retention``,
    ``message_ttl_seconds`` and ``subscription_expiration_minutes`` are the effective policies (the registry
    sets them), ``msg_expired`` counts expired messages per subscription (``totalMsgExpired``). ``executor``
    unlinks removed segments; ``is_closed`` tells whether the topic is closing; ``held_from`` the first offset
    compaction holds as a durable cursor would (Pulsar's ``__compaction`` cursor; None: none held)."""

    def __init__(self, topic: str, config: BrokerConfig, clock: Clock, managed_log: ManagedLog, journal: Journal,
                 subscriptions: TopicSubscriptions, executor: Executor, *, is_closed: Callable[[], bool],
                 held_from: Callable[[], int | None] = lambda: None) -> None:
        self.topic = topic
        self._config = config
        self._clock = clock
        self._log = managed_log
        self._journal = journal
        self._subs = subscriptions
        self._executor = executor
        self._is_closed = is_closed
        self._held_from = held_from
        self.retention = RetentionPolicy(config.defaultRetentionTimeInMinutes, config.defaultRetentionSizeInMB)
        self.message_ttl_seconds = config.ttlDurationDefaultInSeconds
        self.msg_expired: dict[str, int] = {}  # subscription -> messages expired (totalMsgExpired)
        self.subscription_expiration_minutes = config.subscriptionExpirationTimeMinutes
        """Delete durable subscriptions without consumers idle this long (0: never); the registry applies
        namespace and topic policies."""
        self._trim_handle: asyncio.Handle | None = None
        self._removing: asyncio.Future | None = None
        self._timers: list[asyncio.TimerHandle] = []

    def set_retention_policies(self, retention: RetentionPolicy, message_ttl_seconds: int) -> None:
        """Apply the effective ``retention`` and ``messageTTLInSeconds`` (resolved by the registry)."""
        changed = (retention, message_ttl_seconds) != (self.retention, self.message_ttl_seconds)
        self.retention, self.message_ttl_seconds = retention, message_ttl_seconds
        if changed:
            self.request_trim()

    def start_checks(self) -> None:
        """Run the checks at their intervals, on the running loop (none when there is none)."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # built outside the broker's loop (tools, tests): checks run when called
            return
        config = self._config
        expiry_s = (config.messageExpiryCheckIntervalInSeconds
                    or config.messageExpiryCheckIntervalInMinutes * 60)
        self._timers = [loop.call_later(config.retentionCheckIntervalInSeconds, self._every,
                                        config.retentionCheckIntervalInSeconds, self.trim, 0),
                        loop.call_later(expiry_s, self._every, expiry_s, self.expire_messages, 1)]
        subs_s = config.subscription_expiry_check_s()
        self._timers.append(loop.call_later(subs_s, self._every, subs_s, self.expire_subscriptions, 2))

    def _every(self, interval_s: float, check: Callable[[], object], slot: int) -> None:
        if self._is_closed():
            return
        try:
            check()
        except Exception:  # a failed check must not stop the next ones
            _FAILURES.log(logging.ERROR, f"{self.topic} {check.__name__}", "event=topic_check_failed topic=%s "
                          "check=%s", self.topic, check.__name__, exc_info=True)
        self._timers[slot] = asyncio.get_running_loop().call_later(interval_s, self._every, interval_s,
                                                                     check, slot)

    def request_trim(self) -> None:
        """Trim soon (once, however often asked before it runs)."""
        if self._trim_handle is None and not self._is_closed():
            try:
                self._trim_handle = asyncio.get_running_loop().call_soon(self._trim_soon)
            except RuntimeError:
                pass

    def _trim_soon(self) -> None:
        self._trim_handle = None
        try:
            self.trim()
        except Exception:
            _FAILURES.log(logging.ERROR, f"{self.topic} trim", "event=topic_check_failed topic=%s check=trim",
                          self.topic, exc_info=True)

    def expire_messages(self) -> int:
        """Message TTL: acknowledge, on every durable subscription, the messages published more than
        ``message_ttl_seconds`` ago (unacked or delayed alike); returns how many were expired."""
        cutoff = expiry_cutoff_ms(self.message_ttl_seconds, self._clock.now_ms())
        if cutoff is None or self._is_closed():
            return 0
        confirmed = self._journal.confirmed_end_offset
        behind = [sub for sub in self._subs.subscriptions.values()
                  if sub.durable and sub.cursor.mark_delete_offset + 1 < confirmed]
        if not behind:
            return 0
        slowest = max(min(sub.cursor.mark_delete_offset + 1 for sub in behind), self._log.start_offset)
        first_unexpired = self._log.offset_for_timestamp(cutoff, from_offset=slowest)
        total = 0
        for sub in behind:
            through = expiry_offset(first_unexpired, confirmed, sub.cursor.mark_delete_offset)
            if through is not None:
                n = sub.expire_through(through)
                if n:
                    self.msg_expired[sub.name] = self.msg_expired.get(sub.name, 0) + n
                    total += n
                    log.info("event=messages_expired topic=%s subscription=%s through=%d messages=%d ttl_s=%d",
                             self.topic, sub.name, through, n, self.message_ttl_seconds)
        return total

    def expire_subscriptions(self) -> list[str]:
        """Delete the durable subscriptions without consumers whose last activity is more than
        ``subscription_expiration_minutes`` ago; returns their names."""
        if self._is_closed():
            return []
        limit = self.subscription_expiration_minutes
        expired = self._subs.activity.expired(self._subs.subscriptions, limit)
        for name, idle_ms in expired:
            self._subs.unsubscribe(name)
            log.info("event=subscription_expired topic=%s subscription=%s idle_minutes=%d limit_minutes=%d"
                     " loaded=true", self.topic, name, idle_ms // 60_000, limit)
        return [name for name, _ in expired]

    def trim(self) -> int:
        """Retention: detach the leading segments every durable subscription consumed and the retention
        policy no longer keeps, and unlink them on a worker thread; returns how many were detached."""
        if self._is_closed() or self.retention.keeps_forever or (self._removing is not None
                                                           and not self._removing.done()):
            return 0
        confirmed = self._journal.confirmed_end_offset
        consumed_end = consumed_end_offset(
            (sub.cursor.mark_delete_offset for sub in self._subs.subscriptions.values() if sub.durable), confirmed)
        held = self._held_from()
        if held is not None:  # not compacted yet: kept as the __compaction cursor's backlog
            consumed_end = min(consumed_end, held)
        view = self._log.retention_view()
        count = segments_to_delete(view, min(consumed_end, confirmed), self.retention, self._clock.now_ms())
        if not count:
            return 0
        detached = self._log.detach_segments_before(view[count].base_offset)
        start = self._log.start_offset
        for sub in list(self._subs.readers.values()):  # readers hold nothing: move them past the hole
            if sub.cursor.mark_delete_offset < start - 1:
                sub.expire_through(start - 1)
        log.info("event=segments_trimmed topic=%s segments=%d start_offset=%d bytes=%d", self.topic,
                 len(detached), start, sum(seg.size for seg in detached))
        try:
            self._removing = asyncio.get_running_loop().run_in_executor(
                self._executor, self._log.remove_segments, detached)
            self._removing.add_done_callback(self._removed)
        except RuntimeError:  # no loop: remove here
            self._log.remove_segments(detached)
        return len(detached)

    async def truncate(self) -> int:
        """Pulsar's truncate: acknowledge everything confirmed on every subscription (durable and readers'),
        then detach every segment but the active one whatever the retention policy, and unlink them on the
        executor (after the removal running, if any: one removal at a time per log). Returns how many
        segments were removed."""
        await self.removed()
        if self._is_closed():
            return 0
        confirmed = self._journal.confirmed_end_offset
        for sub in self._subs.all():
            if confirmed > 0:
                sub.expire_through(confirmed - 1)
        detached = self._log.detach_segments_before(confirmed)
        for sub in self._subs.all():  # an unconfirmed tail stays; nothing before the new start remains
            if sub.cursor.mark_delete_offset < self._log.start_offset - 1:
                sub.expire_through(self._log.start_offset - 1)
        log.info("event=topic_truncated topic=%s segments=%d start_offset=%d bytes=%d", self.topic,
                 len(detached), self._log.start_offset, sum(seg.size for seg in detached))
        if detached:
            self._removing = asyncio.get_running_loop().run_in_executor(
                self._executor, self._log.remove_segments, detached)
            self._removing.add_done_callback(self._removed)
            await self._removing
        return len(detached)

    def _removed(self, future: asyncio.Future) -> None:
        if not future.cancelled() and future.exception() is not None:
            log.error("event=segment_remove_failed topic=%s error=%r", self.topic, future.exception())
        self.request_trim()  # a request made while this removal ran was dropped


    @property
    def removing(self) -> bool:
        """A segment removal is running on the executor."""
        return self._removing is not None and not self._removing.done()

    def stop(self) -> None:
        """The topic is closing: cancel the checks and any trim asked for."""
        for handle in [*self._timers, self._trim_handle]:
            if handle is not None:
                handle.cancel()

    async def removed(self) -> None:
        """Wait for the segment removal running, if any."""
        if self._removing is not None:
            await self._removing
