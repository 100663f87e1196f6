"""One persistent topic partition: its log, journal, producers and subscriptions.

This is where a produce request becomes stored entries and where consumers attach to subscriptions.
The broker touches entries, never individual messages: it verifies the entry's CRC, reads its
``MessageMetadata`` (count, publish time, sequence ids), prefixes ``BrokerEntryMetadata`` (broker time and
the index of the entry's last message) and appends the bytes as they are.

Retention and expiry (:mod:`broker_core.core.retention_rules`) run on the event loop: every
``messageExpiryCheckIntervalInMinutes`` the topic acknowledges expired messages on its durable
subscriptions (:meth:`PersistentTopic.expire_messages`); every ``retentionCheckIntervalInSeconds``, and
soon after a segment rolls or cursors are persisted, it detaches the segments retention no longer needs
(:meth:`PersistentTopic.trim`) and unlinks their files on a worker thread, one removal at a time.
"""
from __future__ import annotations

import asyncio
import logging
from concurrent.futures import Executor
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from broker_core.clock import Clock
from broker_core.config import BrokerConfig
from broker_core.errors import (ConsumerBusy, InvalidMessage, MessageTooBig, NotAllowedError, PersistenceError,
                                PulsarLikeError, SubscriptionNotFound, TopicNotFound)
from broker_core.log_limits import LogLimiter
from broker_core.protocol.codec import broker_entry_prefix, check_entry, decode_entry
from broker_core.protocol.entry_limits import FRAME_PADDING
from broker_core.core.access import ProducerAccess
from broker_core.core.persistent.dedup import Deduplication, SequenceKey, discard_snapshot, stored_snapshot_offset
from broker_core.storage.journal import Journal
from broker_core.core.producers import ProducerInfo, TopicProducers
from broker_core.core.rates import TopicRates
from broker_core.core.retention_rules import RetentionPolicy
from broker_core.core.subscription_expiry import SubscriptionActivity
from broker_core.core.termination import Termination
from broker_core.core.persistent.operations import TopicOperations
from broker_core.core.persistent.positions import TopicPositions
from broker_core.core.persistent.stats import topic_stats
from broker_core.core.persistent.recovery import next_offset_after_recovery
from broker_core.core.persistent.retention import TopicRetention
from broker_core.core.write_fault import WriteFault, room_for
from broker_core.storage.cursor import ManagedCursor
from broker_core.storage.cursor_store import CursorStore
from broker_core.storage.files import UNLIMITED, FileBudget
from broker_core.storage.format import HEADER_SIZE
from broker_core.storage.log import ManagedLog, StoredEntry
from broker_core.storage.paths import remove_tree
from broker_core.types import TopicName
from dispatch.consumer import Consumer
from dispatch.shared import DelayedDelivery
from dispatch.subscription import Subscription
from dispatch.types import SubType

log = logging.getLogger(__name__)



@dataclass(frozen=True)
class Accepted:
    """The outcome of one send entry: ``entry`` when stored, ``error`` when refused, ``duplicate`` when
    deduplication dropped it (the send still succeeds)."""

    sequence_id: int
    highest_sequence_id: int
    entry: StoredEntry | None = None
    error: PulsarLikeError | None = None
    duplicate: bool = False


class _ConfirmedSource:
    """The log as dispatch sees it: only entries the journal has confirmed are readable."""

    def __init__(self, managed_log: ManagedLog, journal: Journal) -> None:
        self._log = managed_log
        self._journal = journal
        self.read = managed_log.read

    @property
    def durable_end_offset(self) -> int:
        return self._journal.confirmed_end_offset

    @property
    def start_offset(self) -> int:
        return self._log.start_offset

    @property
    def end_offset(self) -> int:
        return self._journal.confirmed_end_offset


def check_consumer_limit(topic: str, limit: int, consumers: int) -> None:
    """``ConsumerBusy`` when ``consumers`` already reach ``limit`` (0: none) ("Topic reached max consumers
    limit", as Pulsar says)."""
    if limit and consumers >= limit:
        raise ConsumerBusy(f"Topic {topic} reached max consumers limit ({limit}): close a consumer, or raise"
                           " maxConsumersPerTopic (`pulsarlike admin namespaces set-max-consumers-per-topic`,"
                           " `topics set-max-consumers`)", topic=topic, limit=limit)


def deleted(topic: str) -> TopicNotFound:
    """What a deleted topic's clients are told when their sessions are closed. The Pulsar protocol front end
    closes them with CLOSE_PRODUCER/CLOSE_CONSUMER (the official clients reconnect, and may create the topic
    again); the gRPC front end ends their streams with this error."""
    return TopicNotFound(f"topic {topic} was deleted", topic=topic)


def _call_later(delay_s: float, callback: Callable[[], None]) -> asyncio.TimerHandle:
    """The dispatchers' scheduler: topics live on the broker's event loop."""
    return asyncio.get_running_loop().call_later(delay_s, callback)


class PersistentTopic(TopicOperations, TopicProducers, TopicRetention, TopicPositions):
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
        self._config = config
        self._clock = clock
        self._max_entry = config.maxMessageSize + FRAME_PADDING
        self.log = ManagedLog(
            directory,
            max_segment_bytes=config.managedLedgerMaxSizePerLedgerMbytes << 20,
            max_segment_age_ms=config.managedLedgerMaxLedgerRolloverTimeMinutes * 60_000,
            cache_bytes=config.managedLedgerCacheSizeMB << 20,
            max_entry_bytes=self._max_entry + 64,
            clock=clock,
            max_segment_entries=config.managedLedgerMaxEntriesPerLedger,
            files=files,
            name=self.topic,
        )
        self._cursor_store = CursorStore(directory / "cursors")
        cursors = self._cursor_store.load_all()
        next_offset, stale_snapshot = next_offset_after_recovery(
            self.topic, self.log.start_offset, self.log.end_offset, cursors.values(),
            stored_snapshot_offset(directory))
        if stale_snapshot:
            discard_snapshot(directory)
        self.log.skip_to(next_offset)
        self.journal = Journal(self.log, config.journalSyncMode, config.journalSyncIntervalMs,
                               sync_pool or executor, self._on_confirmed)
        self.termination = Termination(directory, self.topic)
        self._source = _ConfirmedSource(self.log, self.journal)
        self.subscriptions: dict[str, Subscription] = {}
        """Durable subscriptions by name (their cursors are stored)."""
        self.readers: dict[str, Subscription] = {}
        """Non-durable subscriptions by name (readers; gone with their last consumer)."""
        self.activity = SubscriptionActivity(clock)
        """Each durable subscription's last activity (subscription expiration)."""
        for cursor in cursors.values():
            self.subscriptions[cursor.name] = self._new_subscription(cursor, durable=True)
            self.activity.loaded(cursor, self._cursor_store.saved_at_ms(cursor.name))
        self.producers: dict[int, ProducerInfo] = {}
        self.access = ProducerAccess(self.topic)
        self.max_producers = config.maxProducersPerTopic
        """Most producers at once (0: no limit); the registry applies namespace and topic policies."""
        self.max_consumers = config.maxConsumersPerTopic
        """Most consumers at once over every subscription, readers included (0: no limit)."""
        self.dedup: Deduplication | None = None
        self.set_deduplication(deduplication)
        self.msg_in_counter = 0
        self.bytes_in_counter = 0
        self._dirty: set[str] = set()
        self._flush_handle: asyncio.TimerHandle | None = None
        self.closed = False
        self.last_used_ms = clock.now_ms()
        """When the registry last handed the topic out or saw clients on it (idle unloading)."""
        self._executor = executor
        self.writes = WriteFault(self.topic, self._room_for, executor, clock, _call_later)
        """Whether the topic can write now (see :mod:`broker_core.core.write_fault`)."""
        self._lines = LogLimiter(log, clock=clock)  # cursor and snapshot saves failing again and again
        self.retention = RetentionPolicy(config.defaultRetentionTimeInMinutes, config.defaultRetentionSizeInMB)
        self.message_ttl_seconds = config.ttlDurationDefaultInSeconds
        self.msg_expired: dict[str, int] = {}  # subscription -> messages expired (totalMsgExpired)
        self.rates = TopicRates(clock)
        """Rates over the last stats interval (see :mod:`broker_core.core.rates`)."""
        self.subscription_expiration_minutes = config.subscriptionExpirationTimeMinutes
        """Delete durable subscriptions without consumers idle this long (0: never); the registry applies
        namespace and topic policies."""
        self._active_ledger = self.log.retention_view()[-1].base_offset
        self._trim_handle: asyncio.Handle | None = None
        self._removing: asyncio.Future | None = None
        self._timers: list[asyncio.TimerHandle] = []
        self._start_checks()

    # ------------------------------------------------------------------ producers
    def last_sequence_id(self, producer_name: str) -> int:
        """The highest sequence id stored for ``producer_name`` (-1: unknown or deduplication off)."""
        return self.dedup.last_sequence_id(producer_name) if self.dedup is not None else -1

    def set_deduplication(self, enabled: bool) -> None:
        """Turn deduplication on (recovering its state from the snapshot and the log) or off."""
        if enabled and self.dedup is None:
            dedup = Deduplication(self.directory, self._config.brokerDeduplicationEntriesInterval)
            dedup.recover(self.log)
            self.dedup = dedup
        elif not enabled and self.dedup is not None:
            self.dedup = None

    def publish(self, producer: ProducerInfo, entries: Sequence, on_done: Callable[[list[Accepted], BaseException | None], None]) -> None:
        """Verify and append ``entries`` (``SendEntry`` messages); ``on_done(results, error)`` runs once
        the stored ones are confirmed per ``journalSyncMode``."""
        if self.closed:
            raise NotAllowedError(f"topic {self.topic} is closing")
        self.termination.refuse()
        now = self._clock.now_ms()
        dedup = self.dedup
        keys: list[SequenceKey] = []
        results: list[Accepted] = []
        to_append: list[tuple[bytes, int, int]] = []
        positions: list[int] = []
        next_offset = self.log.end_offset
        for send in entries:
            data = send.data
            try:
                if len(data) > self._max_entry:
                    raise MessageTooBig(size=len(data), limit=self._config.maxMessageSize)
                metadata, payload = decode_entry(data)
                count = check_entry(metadata, len(payload), self._config.maxMessageSize)
                if send.num_messages and send.num_messages != count:
                    raise InvalidMessage(f"entry declares {send.num_messages} messages but its metadata holds {count}")
            except PulsarLikeError as exc:
                results.append(Accepted(send.sequence_id, send.highest_sequence_id, error=exc))
                continue
            if dedup is not None:
                key = SequenceKey.of(metadata)
                if send.highest_sequence_id > key.highest_sequence_id and key.checked:
                    # a batch whose metadata lacks highest_sequence_id (the C++ client's): its request says it
                    key = key._replace(highest_sequence_id=send.highest_sequence_id)
                if dedup.is_duplicate(key):
                    results.append(Accepted(send.sequence_id, send.highest_sequence_id, duplicate=True))
                    continue
                keys.append(key)
            positions.append(len(results))
            results.append(Accepted(send.sequence_id, send.highest_sequence_id))
            to_append.append((broker_entry_prefix(now, next_offset + count - 1) + data, count,
                              metadata.publish_time))
            next_offset += count
        if not to_append:
            on_done(results, None)
            return
        size = sum(HEADER_SIZE + len(data) for data, _, _ in to_append)
        try:
            stored = self.log.append_many(to_append)
        except PersistenceError as exc:  # this request fails; the producer and the topic go on
            if dedup is not None:
                dedup.failed(keys)
            for pos in positions:
                results[pos] = Accepted(results[pos].sequence_id, results[pos].highest_sequence_id, error=exc)
            self.writes.failed(exc, size)
            on_done(results, None)
            return
        except BaseException:
            if dedup is not None:
                dedup.failed(keys)
            raise
        for pos, entry in zip(positions, stored):
            results[pos] = Accepted(results[pos].sequence_id, results[pos].highest_sequence_id, entry=entry)
            producer.msg_in_counter += entry.num_messages
            producer.bytes_in_counter += len(entry.data)
            self.msg_in_counter += entry.num_messages
            self.bytes_in_counter += len(entry.data)
        end = stored[-1].end_offset
        if stored[-1].ledger_id != self._active_ledger:  # a segment rolled: the old one may be trimmable
            self._active_ledger = stored[-1].ledger_id
            self._request_trim()

        def confirmed(error: BaseException | None) -> None:
            if error is None:
                self.writes.succeeded()
            elif isinstance(error, PersistenceError):
                self.writes.failed(error, size)
            if dedup is not None and error is not None:
                dedup.failed(keys)
            elif dedup is not None and dedup.confirmed(keys, end):
                try:
                    dedup.snapshot(end)
                except OSError as exc:  # the log still holds everything: a restart replays it
                    self._lines.error("dedup_snapshot_failed", "event=dedup_snapshot_failed topic=%s error=%r",
                                      self.topic, exc)
            on_done(results, error)

        self.journal.appended(end, confirmed)

    def _room_for(self, size: int) -> None:
        """The write probe (on a worker thread): raises while the topic could not write ``size`` bytes."""
        if self.journal.fenced is not None:  # only a reload brings a fenced journal back
            raise self.journal.fenced
        room_for(self.directory, size)

    def _on_confirmed(self) -> None:
        for sub in self.all_subscriptions():
            sub.on_new_entries()
        if self.termination.terminated:
            self.check_end_of_topic()

    def all_subscriptions(self) -> list[Subscription]:
        """Durable subscriptions and readers' (non-durable) ones: a name may be used once by each."""
        return [*self.subscriptions.values(), *self.readers.values()]

    # ------------------------------------------------------------------ subscriptions
    def _new_subscription(self, cursor: ManagedCursor, durable: bool) -> Subscription:
        name = cursor.name
        return Subscription(
            name, self.topic, self.partition_index, self._source, cursor, durable=durable,
            max_read_entries=self._config.dispatcherMaxReadBatchSize,
            max_delivery_bytes=self._config.dispatcherMaxDeliveryBytes,
            max_unacked_per_consumer=self._config.maxUnackedMessagesPerConsumer,
            on_cursor_changed=(lambda: self._cursor_changed(name)) if durable else None,
            clock=self._clock, scheduler=_call_later,
            delayed_delivery=DelayedDelivery(self._config.delayedDeliveryEnabled,
                                             self._config.delayedDeliveryTickTimeMillis,
                                             self._config.isDelayedDeliveryDeliverAtTimeStrict),
            key_shared_consistent_hashing=self._config.subscriptionKeySharedUseConsistentHashing,
            batch_index_ack=self._config.acknowledgmentAtBatchIndexLevelEnabled,
        )

    def subscribe(self, subscription: str, sub_type: SubType, consumer: Consumer, *, durable: bool,
                  start_offset: int) -> Subscription:
        """Attach ``consumer``; a new subscription starts so that ``start_offset`` is the first message
        delivered (existing durable subscriptions keep their cursor)."""
        check_consumer_limit(self.topic, self.max_consumers,
                             sum(len(s.consumers) for s in self.all_subscriptions()))
        subs = self.subscriptions if durable else self.readers
        sub = subs.get(subscription)
        if sub is None:
            sub = self._create_subscription(subscription, start_offset, durable)
        try:
            sub.add_consumer(consumer, sub_type)
        except PulsarLikeError:
            if not durable and not sub.consumers:
                del self.readers[subscription]
            raise
        if durable:
            self.touch_subscription(subscription)
        return sub

    def _create_subscription(self, name: str, start_offset: int, durable: bool) -> Subscription:
        start_offset = max(start_offset, self.log.start_offset)
        cursor = ManagedCursor(name, mark_delete_offset=start_offset - 1)
        if durable:
            self.activity.touch(cursor)
            self.activity.stamp(cursor)
            self._cursor_store.save(cursor)
        sub = self._new_subscription(cursor, durable)
        (self.subscriptions if durable else self.readers)[name] = sub
        return sub

    def consumer_left(self, sub: Subscription, consumer: Consumer, *, keep_reader: bool = False) -> None:
        sub.remove_consumer(consumer)
        self.termination.forget(consumer)
        if keep_reader and not sub.durable:
            return  # a seek closed the reader's consumer; it subscribes again (see drop_idle_reader)
        if sub.durable and self.subscriptions.get(sub.name) is sub:
            self.touch_subscription(sub.name)
        if not sub.durable and not sub.consumers and self.readers.get(sub.name) is sub:
            del self.readers[sub.name]
            sub.close()

    def drop_idle_reader(self, sub: Subscription) -> None:
        """Drop reader subscription ``sub`` kept by ``consumer_left(keep_reader=True)`` if no consumer came
        back for it."""
        if not sub.consumers and self.readers.get(sub.name) is sub:
            self.unsubscribe(sub.name, durable=False, force=True)

    def unsubscribe(self, subscription: str, *, requester: Consumer | None = None, force: bool = False,
                    durable: bool = True) -> None:
        subs = self.subscriptions if durable else self.readers
        sub = subs.get(subscription)
        if sub is None:
            raise SubscriptionNotFound(f"subscription {subscription!r} does not exist on {self.topic}")
        others = [c for c in sub.consumers if c is not requester]
        if others and not force:
            raise NotAllowedError(f"subscription {subscription!r} on {self.topic} has {len(others)} other"
                                  " connected consumer(s); close them first")
        del subs[subscription]
        sub.close()
        if sub.durable:
            self._dirty.discard(subscription)
            self.activity.forget(subscription)
            self._cursor_store.delete(subscription)
            self._request_trim()  # what only this subscription held may go now

    def _cursor_changed(self, name: str) -> None:
        self._dirty.add(name)
        if self._flush_handle is None and not self.closed:
            delay = self._config.managedLedgerCursorFlushIntervalMs / 1000.0
            self._flush_handle = asyncio.get_running_loop().call_later(delay, self.flush_cursors)

    def flush_cursors(self) -> None:
        """Persist every changed durable cursor (atomic write each)."""
        self._flush_handle = None
        dirty, self._dirty = self._dirty, set()
        for name in dirty:
            sub = self.subscriptions.get(name)
            if sub is not None and sub.durable:
                try:
                    self.activity.stamp(sub.cursor)
                    self._cursor_store.save(sub.cursor)
                except OSError as exc:
                    self._lines.error("cursor_save_failed", "event=cursor_save_failed topic=%s subscription=%s"
                                      " error=%r", self.topic, name, exc)
                    self._dirty.add(name)
        if dirty:
            self._request_trim()

    # ------------------------------------------------------------------ stats and lifecycle
    @property
    def has_clients(self) -> bool:
        return bool(self.producers) or any(sub.consumers for sub in self.all_subscriptions())

    def stats(self) -> dict:
        """Pulsar's topic stats, rates included."""
        return self.rates.apply(topic_stats(self))

    def raw_stats(self) -> dict:
        """The stats without rates (what :class:`~broker_core.core.rates.StatsUpdater` samples)."""
        return topic_stats(self)

    @property
    def quiescent(self) -> bool:
        """No clients (waiting producers included), no fsync waited for, no segment removal running: the
        topic may be unloaded now (:meth:`unload`), and reloaded from disk on its next use."""
        return (not self.closed and not self.has_clients and not self.access.waiting and self.journal.idle
                and (self._removing is None or self._removing.done()))

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
        if self._removing is not None:
            try:
                await self._removing
            except OSError as exc:  # already logged; the files come back on restart and go again
                log.debug("event=segment_remove_failed topic=%s error=%r", self.topic, exc)
        await self.journal.close()
        self._release_storage()

    def _stop_timers(self) -> None:
        self.closed = True
        self.writes.close()
        if self._flush_handle is not None:
            self._flush_handle.cancel()
        for handle in [*self._timers, self._trim_handle]:
            if handle is not None:
                handle.cancel()

    def _release_storage(self) -> None:
        self._dirty.update(self.activity.unsaved(sub.cursor for sub in self.subscriptions.values()))
        self.flush_cursors()
        if self.dedup is not None and self.dedup.snapshot_offset != self.journal.confirmed_end_offset:
            try:
                self.dedup.snapshot(self.journal.confirmed_end_offset)
            except OSError as exc:
                log.error("event=dedup_snapshot_failed topic=%s error=%r", self.topic, exc)
        for sub in self.all_subscriptions():
            sub.close()
        self.log.close()
        self._lines.flush()

    async def delete(self) -> None:
        """Close every client's session (they reconnect, as Pulsar's do, and find the topic gone), then the
        topic, and remove its folder."""
        self.disconnect_clients(deleted(self.topic))
        await self.close()
        self.subscriptions.clear()
        self.readers.clear()
        remove_tree(self.directory.parent, self.directory)  # the folder topic_dir derived and checked
