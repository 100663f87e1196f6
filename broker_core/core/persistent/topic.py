"""One persistent topic partition: its log, journal, producers and subscriptions.

This is where a produce request becomes stored entries and where consumers attach to subscriptions. The
topic is composed of helpers, each owning its state and given what it needs when the topic builds it; the
topic implements :class:`~broker_core.core.topic_protocol.Topic` by delegating to them:

- :func:`~broker_core.core.persistent.recovery.open_log`: the log and cursors, checked against each other;
- :class:`~broker_core.core.persistent.positions.TopicPositions`: offsets, entries, the last message id;
- :class:`~broker_core.core.persistent.publishing.Publisher` (with the
  :class:`~broker_core.core.persistent.dedup.DeduplicationSwitch`): entries checked, deduplicated, appended;
- :class:`~broker_core.core.producers.TopicProducers`: producers under the access modes and the limit;
- :class:`~broker_core.core.persistent.subscriptions.TopicSubscriptions`: durable subscriptions and readers,
  cursor saving and subscription activity;
- :class:`~broker_core.core.persistent.retention.TopicRetention`: retention and expiry (:mod:`~broker_core.core.
  retention_rules`) on the event loop: every ``messageExpiryCheckIntervalInMinutes`` the topic acknowledges
  expired messages on its durable subscriptions (:meth:`PersistentTopic.expire_messages`); every
  ``retentionCheckIntervalInSeconds``, and soon after a segment rolls or cursors are persisted, it detaches
  the segments retention no longer needs (:meth:`PersistentTopic.trim`) and unlinks their files on a worker
  thread, one removal at a time;
- :class:`~broker_core.core.persistent.operations.TopicOperations`: termination, ending every session;
- :class:`~broker_core.core.persistent.stats.TopicStats`: Pulsar's topic stats;
- :class:`~broker_core.core.persistent.compaction_runs.TopicCompaction`: compaction runs (admin or
  ``compactionThreshold``) off the event loop, the current compacted ledger (:attr:`PersistentTopic.compacted`)
  and the raw messages retention keeps for it.
"""
from __future__ import annotations

import asyncio
import logging
from concurrent.futures import Executor
from pathlib import Path
from typing import Callable, Mapping, Sequence

from broker_core.clock import Clock
from broker_core.config import BrokerConfig
from broker_core.errors import DataLost, PulsarLikeError
from broker_core.log_limits import LogLimiter
from broker_core.core.access import AccessMode, ProducerAccess
from broker_core.core.persistent.compaction import CompactedLedger
from broker_core.core.persistent.compaction_runs import TopicCompaction
from broker_core.core.persistent.dedup import Deduplication, DeduplicationSwitch
from broker_core.core.persistent.operations import TopicOperations
from broker_core.core.persistent.positions import ConfirmedSource, TopicPositions
from broker_core.core.persistent.publishing import Publisher
from broker_core.core.persistent.recovery import open_log
from broker_core.core.persistent.retention import TopicRetention
from broker_core.core.persistent.stats import TopicStats, bytes_from
from broker_core.core.persistent.subscriptions import TopicSubscriptions, call_later
from broker_core.core.producers import ProducerInfo, TopicProducers
from broker_core.core.rates import TopicRates
from broker_core.core.retention_rules import RetentionPolicy
from broker_core.core.subscription_expiry import SubscriptionActivity
from broker_core.core.termination import Termination
from broker_core.core.throttling import TopicThrottling
from broker_core.core.topic_policies import TopicPolicies
from broker_core.core.topic_rules import Accepted, check_consumer_limit, deleted
from broker_core.core.write_fault import WriteFault, room_for
from broker_core.storage.files import UNLIMITED, FileBudget
from broker_core.storage.journal import Journal
from broker_core.storage.log import StoredEntry
from broker_core.storage.paths import remove_tree
from broker_core.types import MessageId, TopicName
from dispatch.consumer import Consumer
from dispatch.subscription import Subscription
from dispatch.types import SubType

__all__ = ["Accepted", "PersistentTopic", "check_consumer_limit", "deleted"]

log = logging.getLogger(__name__)


def _admit() -> None:
    """The default :attr:`PersistentTopic.producer_check`: every producer is admitted."""


class PersistentTopic:
    """A persistent topic partition; implements :class:`~broker_core.core.topic_protocol.Topic`."""

    persistent = True

    def __init__(self, name: TopicName, directory: Path, config: BrokerConfig, executor: Executor,
                 clock: Clock, *, deduplication: bool = False, sync_pool: Executor | None = None,
                 files: FileBudget = UNLIMITED) -> None:
        """``executor`` runs slow file work (segment removal); ``sync_pool`` the journal's fsyncs (the
        broker's shared pool; ``executor`` when not given); ``files`` is the broker's open-file budget."""
        self.name = name
        self.topic = str(name)
        self.directory = directory
        self.partition_index = name.partition_index
        self.closed = False
        is_closed = self._is_closed
        self.log, cursor_store, cursors = open_log(self.topic, directory, config, clock, files)
        self.journal = Journal(self.log, config.journalSyncMode, config.journalSyncIntervalMs,
                               sync_pool or executor, self._on_confirmed)
        self.termination = Termination(directory, self.topic)
        self._positions = TopicPositions(self.log, self.journal, self.partition_index)
        self._lines = LogLimiter(log, clock=clock)  # cursor and snapshot saves failing again and again
        self.throttling = TopicThrottling(clock, publish_rate=lambda: self.rates.publish_rate())
        """The rate limits the topic enforces (see :mod:`broker_core.core.throttling`); the registry sets them."""
        self._subs = TopicSubscriptions(self.topic, self.partition_index, config, clock,
                                        ConfirmedSource(self.log, self.journal), cursor_store, cursors.values(),
                                        self.termination, self._lines, is_closed=is_closed,
                                        on_trimmable=self._request_trim, on_created=self.throttling.attach)
        self.producer_check: Callable[[], None] = _admit
        """Runs before a producer is admitted, after the termination check (the registry sets it: a backlog
        quota's refusal, see :mod:`broker_core.core.backlog_quota`)."""
        self._producers = TopicProducers(self.topic, config.maxProducersPerTopic, is_closed,
                                         refuse=self._refuse_producer)
        self._dedup = DeduplicationSwitch(directory, config.brokerDeduplicationEntriesInterval, self.log,
                                          snapshot_seconds=config.brokerDeduplicationSnapshotIntervalSeconds,
                                          clock=clock)
        self._dedup.set_enabled(deduplication)
        self.last_used_ms = clock.now_ms()
        """When the registry last handed the topic out or saw clients on it (idle unloading)."""
        self.writes = WriteFault(self.topic, self._room_for, executor, clock, call_later)
        """Whether the topic can write now (see :mod:`broker_core.core.write_fault`)."""
        self._publisher = Publisher(self.topic, config, clock, self.log, self.journal, self.termination,
                                    self.writes, self._dedup, self._lines, is_closed=is_closed,
                                    on_segment_rolled=self._request_trim)
        self.compaction = TopicCompaction(
            self.topic, directory, config, clock, lambda start, end: self.log.read(start, 1000, 4 << 20, end),
            lambda: self.journal.confirmed_end_offset, lambda offset: bytes_from(self.log, offset),
            self._slowest_durable, is_closed, self._subs.compacted_positions)
        self._retention = TopicRetention(self.topic, config, clock, self.log, self.journal, self._subs, executor,
                                         is_closed=is_closed, held_from=self.compaction.held_from)
        self._operations = TopicOperations(self.topic, self.log, self.journal, self.termination, self._producers,
                                           self._subs)
        self._stats = TopicStats(self.log, self.journal, self._subs, self._retention, self._publisher,
                                 self._producers, self._dedup, self.termination, self.compaction.record)
        self.rates = TopicRates(clock)
        """Rates over the last stats interval (see :mod:`broker_core.core.rates`)."""
        self._retention.start_checks()
        self.compaction.start_checks()
        self._verify_last_segment(executor)

    def _is_closed(self) -> bool:
        return self.closed

    def _verify_last_segment(self, executor: Executor) -> None:
        """Recovery step 3: a reloaded last segment too big to verify before its first append is verified on
        ``executor``; what it finds is recorded on the event loop (:meth:`ManagedLog.background_check`)."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # built outside the broker's loop (tools, tests): reads verify it lazily
            return
        check = self.log.background_check()
        if check is not None:
            loop.run_in_executor(executor, check.scan).add_done_callback(
                lambda done: done.cancelled() or check.merge(done.result()))

    def _refuse_producer(self) -> None:
        self.termination.refuse()
        self.producer_check()

    def _slowest_durable(self) -> int | None:
        marks = [sub.cursor.mark_delete_offset for sub in self._subs.subscriptions.values() if sub.durable]
        return min(marks) + 1 if marks else None

    @property
    def compacted(self) -> CompactedLedger | None:
        """The current compacted ledger (None: never compacted); replaced whole after each run."""
        return self.compaction.compacted

    def _request_trim(self) -> None:
        self._retention.request_trim()

    def _room_for(self, size: int) -> None:
        """The write probe (on a worker thread): raises while the topic could not write ``size`` bytes."""
        if self.journal.fenced is not None:  # only a reload brings a fenced journal back
            raise self.journal.fenced
        room_for(self.directory, size)

    def _on_confirmed(self) -> None:
        for sub in self._subs.all():
            sub.on_new_entries()
        if self.termination.terminated:
            self.check_end_of_topic()

    # ------------------------------------------------------------------ state the front ends read
    @property
    def subscriptions(self) -> Mapping[str, Subscription]:
        """Durable subscriptions by name (their cursors are stored)."""
        return self._subs.subscriptions

    @property
    def readers(self) -> Mapping[str, Subscription]:
        """Non-durable subscriptions by name (readers; gone with their last consumer)."""
        return self._subs.readers

    @property
    def activity(self) -> SubscriptionActivity:
        """Each durable subscription's last activity (subscription expiration)."""
        return self._subs.activity

    @property
    def producers(self) -> Mapping[int, ProducerInfo]:
        return self._producers.producers

    @property
    def access(self) -> ProducerAccess:
        return self._producers.access

    @property
    def max_producers(self) -> int:
        """Most producers at once (0: no limit); the registry applies namespace and topic policies."""
        return self._producers.max_producers

    @max_producers.setter
    def max_producers(self, value: int) -> None:
        self._producers.max_producers = value

    @property
    def max_consumers(self) -> int:
        """Most consumers at once over every subscription, readers included (0: no limit)."""
        return self._subs.max_consumers

    @max_consumers.setter
    def max_consumers(self, value: int) -> None:
        self._subs.max_consumers = value

    @property
    def policies(self) -> TopicPolicies:
        """What the topic enforces (:mod:`broker_core.core.topic_policies`); the registry sets it."""
        return self._subs.policies

    @policies.setter
    def policies(self, policies: TopicPolicies) -> None:
        self._subs.policies = policies
        self._publisher.policies = policies

    @property
    def dedup(self) -> Deduplication | None:
        """The deduplication state, None while deduplication is off."""
        return self._dedup.current

    @property
    def msg_in_counter(self) -> int:
        return self._publisher.msg_in_counter

    @property
    def bytes_in_counter(self) -> int:
        return self._publisher.bytes_in_counter

    @property
    def has_clients(self) -> bool:
        return bool(self._producers.producers) or self._subs.has_consumers

    # ------------------------------------------------------------------ positions
    @property
    def start_offset(self) -> int:
        return self._positions.start_offset

    @property
    def end_offset(self) -> int:
        return self._positions.end_offset

    @property
    def confirmed_end_offset(self) -> int:
        return self._positions.confirmed_end_offset

    @property
    def size_bytes(self) -> int:
        return self._positions.size_bytes

    def offset_for_timestamp(self, publish_time_ms: int) -> int:
        return self._positions.offset_for_timestamp(publish_time_ms)

    def entry_containing(self, offset: int) -> StoredEntry | None:
        return self._positions.entry_containing(offset)

    def read(self, start_offset: int, max_entries: int, end_offset: int) -> list[StoredEntry]:
        return self._positions.read(start_offset, max_entries, end_offset)

    def segments(self) -> list[dict]:
        return self._positions.segments()

    def last_message_id(self) -> MessageId | None:
        return self._positions.last_message_id()

    def unreadable_at(self, offset: int, entries: int = 1) -> DataLost | None:
        return self._positions.unreadable_at(offset, entries)

    # ------------------------------------------------------------------ producers and publishing
    def add_producer(self, producer_name: str, properties: dict[str, str],
                     access_mode: AccessMode = AccessMode.SHARED, *,
                     fence: Callable[[PulsarLikeError], None] = lambda error: None,
                     granted: Callable[[], None] = lambda: None) -> tuple[ProducerInfo, bool]:
        return self._producers.add_producer(producer_name, properties, access_mode, fence=fence, granted=granted)

    def remove_producer(self, info: ProducerInfo) -> None:
        self._producers.remove_producer(info)

    def last_sequence_id(self, producer_name: str) -> int:
        """The highest sequence id stored for ``producer_name`` (-1: unknown or deduplication off)."""
        return self._dedup.last_sequence_id(producer_name)

    def set_deduplication(self, enabled: bool) -> None:
        """Turn deduplication on (recovering its state from the snapshot and the log) or off."""
        self._dedup.set_enabled(enabled)

    @property
    def deduplication_snapshot_seconds(self) -> int:
        """Deduplication state is snapshotted by time too (0: by entries only); the registry applies the
        namespace's ``deduplicationSnapshotInterval``."""
        return self._dedup.snapshot_seconds

    @deduplication_snapshot_seconds.setter
    def deduplication_snapshot_seconds(self, seconds: int) -> None:
        self._dedup.snapshot_seconds = seconds

    def publish(self, producer: ProducerInfo, entries: Sequence,
                on_done: Callable[[list[Accepted], BaseException | None], None]) -> None:
        self._publisher.publish(producer, entries, on_done)

    # ------------------------------------------------------------------ subscriptions
    def all_subscriptions(self) -> list[Subscription]:
        """Durable subscriptions and readers' (non-durable) ones: a name may be used once by each."""
        return self._subs.all()

    def subscribe(self, subscription: str, sub_type: SubType, consumer: Consumer, *, durable: bool,
                  start_offset: int, read_compacted: bool = False) -> Subscription:
        compacted = (lambda: self.compacted) if read_compacted else None
        return self._subs.subscribe(subscription, sub_type, consumer, durable=durable, start_offset=start_offset,
                                    compacted=compacted)

    def consumer_left(self, sub: Subscription, consumer: Consumer, *, keep_reader: bool = False) -> None:
        self._subs.consumer_left(sub, consumer, keep_reader=keep_reader)

    def drop_idle_reader(self, sub: Subscription) -> None:
        self._subs.drop_idle_reader(sub)

    def unsubscribe(self, subscription: str, *, requester: Consumer | None = None, force: bool = False,
                    durable: bool = True) -> None:
        self._subs.unsubscribe(subscription, requester=requester, force=force, durable=durable)

    def create_subscription(self, name: str, start_offset: int) -> None:
        self._subs.create_subscription(name, start_offset)

    def durable_subscription(self, name: str) -> Subscription:
        return self._subs.durable_subscription(name)

    def acknowledge_up_to(self, name: str, end_offset: int) -> int:
        return self._subs.acknowledge_up_to(name, end_offset)

    def touch_subscription(self, name: str) -> None:
        self._subs.touch(name)

    def cursor_changed(self, name: str) -> None:
        """Save durable cursor ``name`` at the next flush (after a change made on the cursor itself)."""
        self._subs.cursor_changed(name)

    def flush_cursors(self) -> None:
        """Persist every changed durable cursor (atomic write each)."""
        self._subs.flush_cursors()

    # ------------------------------------------------------------------ retention and expiry
    @property
    def retention(self) -> RetentionPolicy:
        return self._retention.retention

    @property
    def message_ttl_seconds(self) -> int:
        return self._retention.message_ttl_seconds

    @property
    def msg_expired(self) -> dict[str, int]:
        """Messages expired per subscription (``totalMsgExpired``); admin expiry counts there too."""
        return self._retention.msg_expired

    @property
    def subscription_expiration_minutes(self) -> int:
        """Delete durable subscriptions without consumers idle this long (0: never)."""
        return self._retention.subscription_expiration_minutes

    @subscription_expiration_minutes.setter
    def subscription_expiration_minutes(self, value: int) -> None:
        self._retention.subscription_expiration_minutes = value

    def set_retention_policies(self, retention: RetentionPolicy, message_ttl_seconds: int) -> None:
        """Apply the effective ``retention`` and ``messageTTLInSeconds`` (resolved by the registry)."""
        self._retention.set_retention_policies(retention, message_ttl_seconds)

    def trim(self) -> int:
        return self._retention.trim()

    def expire_messages(self) -> int:
        return self._retention.expire_messages()

    async def truncate(self) -> int:
        """Pulsar's truncate: every subscription acknowledges everything, then every segment but the active
        one is removed, whatever the retention policy; returns how many were removed."""
        return await self._retention.truncate()

    def expire_subscriptions(self) -> list[str]:
        return self._retention.expire_subscriptions()

    # ------------------------------------------------------------------ termination and clients
    def terminate(self) -> int:
        return self._operations.terminate()

    def check_end_of_topic(self) -> None:
        self._operations.check_end_of_topic()

    def disconnect_clients(self, error: PulsarLikeError, *, consumers: bool = True) -> int:
        return self._operations.disconnect_clients(error, consumers=consumers)

    # ------------------------------------------------------------------ stats and lifecycle
    def stats(self) -> dict:
        """Pulsar's topic stats, rates included."""
        return self.rates.apply(self.raw_stats())

    def raw_stats(self) -> dict:
        """The stats without rates (what :class:`~broker_core.core.rates.StatsUpdater` samples)."""
        stats = self._stats.raw()
        stats["publishRateLimitedTimes"] = self.throttling.limited_times
        return stats

    @property
    def quiescent(self) -> bool:
        """No clients (waiting producers included), no fsync waited for, no segment removal running: the
        topic may be unloaded now (:meth:`unload`), and reloaded from disk on its next use."""
        return (not self.closed and not self.has_clients and not self.access.waiting and self.journal.idle
                and not self._retention.removing and not self.compaction.running)

    def unload(self) -> bool:
        """Close a quiescent topic at once (False, and nothing done, when it is not quiescent): cursors
        and deduplication state are saved, the log is synced and its files closed."""
        if not self.quiescent:
            return False
        self._stop_timers()
        self._release_storage()
        return True

    async def close(self) -> None:
        if self.closed:
            return
        self._stop_timers()
        try:
            await self._retention.removed()
        except OSError as exc:  # already logged; the files come back on restart and go again
            log.debug("event=segment_remove_failed topic=%s error=%r", self.topic, exc)
        await self.compaction.stopped()  # it stops at its next read: the topic is closed
        await self.journal.close()
        self._release_storage()

    def _stop_timers(self) -> None:
        self.closed = True
        self.throttling.close()
        self.writes.close()
        self._subs.stop_flushing()
        self._retention.stop()
        self.compaction.stop()

    def _release_storage(self) -> None:
        self._subs.save()
        dedup = self._dedup.current
        if dedup is not None and dedup.snapshot_offset != self.journal.confirmed_end_offset:
            try:
                dedup.snapshot(self.journal.confirmed_end_offset)
            except OSError as exc:
                log.error("event=dedup_snapshot_failed topic=%s error=%r", self.topic, exc)
        self._subs.close()
        self.compaction.close()
        self.log.close()
        self._lines.flush()

    async def delete(self) -> None:
        """Close every client's session (they reconnect, as Pulsar's do, and find the topic gone), then the
        topic, and remove its folder."""
        self.disconnect_clients(deleted(self.topic))
        await self.close()
        self._subs.clear()
        remove_tree(self.directory.parent, self.directory)  # the folder topic_dir derived and checked
