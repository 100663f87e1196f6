"""The subscriptions of a persistent topic partition (a helper the
:class:`~broker_core.core.persistent.topic.PersistentTopic` owns and delegates to): durable ones (their
cursors stored in the topic's :class:`~broker_core.storage.cursor_store.CursorStore`, saved
``managedLedgerCursorFlushIntervalMs`` after they change) and readers' non-durable ones, which go with their
last consumer. Durable subscriptions can be handled without a consumer too (create, acknowledge up to,
activity for subscription expiration). A consumer reading compacted (``read_compacted``) has its subscription
read a :class:`~dispatch.compacted.CompactedSource` over the topic's ``compacted`` ledger and the log; where
those subscriptions (and the compacted readers that left lately) are decides which tombstones compaction keeps
(:meth:`TopicSubscriptions.compacted_positions`)."""
from __future__ import annotations

import asyncio
from typing import Callable, Iterable

from broker_core.clock import Clock
from broker_core.config import BrokerConfig
from broker_core.errors import NotAllowedError, PulsarLikeError, SubscriptionAlreadyExists, SubscriptionNotFound
from broker_core.log_limits import LogLimiter
from broker_core.core.persistent.compacted_readers import GoneReaders
from broker_core.core.persistent.positions import ConfirmedSource
from broker_core.core.subscription_expiry import SubscriptionActivity
from broker_core.core.termination import Termination
from broker_core.core.topic_policies import TopicPolicies, of_config
from broker_core.core.topic_rules import check_consumer_limit
from broker_core.storage.cursor import ManagedCursor
from broker_core.storage.cursor_store import CursorStore
from dispatch.compacted import CompactedLedger, CompactedSource
from dispatch.consumer import Consumer
from dispatch.source import EntrySource
from dispatch.subscription import Subscription
from dispatch.types import SubType


def call_later(delay_s: float, callback: Callable[[], None]) -> asyncio.TimerHandle:
    """The dispatchers' scheduler: topics live on the broker's event loop."""
    return asyncio.get_running_loop().call_later(delay_s, callback)


class TopicSubscriptions:
    """``subscriptions`` (durable) and ``readers`` (non-durable) of one partition, read from ``source``;
    ``cursors`` are the durable ones loaded from ``cursor_store``. ``on_trimmable`` runs when retention may
    remove more (a cursor saved, a durable subscription deleted); ``is_closed`` tells whether the topic is
    closing; ``on_created(sub)`` runs for each subscription made (the topic's rate limits are set on it)."""

    def __init__(self, topic: str, partition_index: int, config: BrokerConfig, clock: Clock, source: ConfirmedSource,
                 cursor_store: CursorStore, cursors: Iterable[ManagedCursor], termination: Termination,
                 lines: LogLimiter, *, is_closed: Callable[[], bool], on_trimmable: Callable[[], None],
                 on_created: Callable[[Subscription], None] | None = None) -> None:
        self.topic = topic
        self._partition_index = partition_index
        self._config = config
        self._clock = clock
        self._source = source
        self._cursor_store = cursor_store
        self._termination = termination
        self._lines = lines
        self._is_closed = is_closed
        self._on_trimmable = on_trimmable
        self._on_created = on_created
        self.subscriptions: dict[str, Subscription] = {}
        """Durable subscriptions by name (their cursors are stored)."""
        self.readers: dict[str, Subscription] = {}
        """Non-durable subscriptions by name (readers; gone with their last consumer)."""
        self.activity = SubscriptionActivity(clock)
        """Each durable subscription's last activity (subscription expiration)."""
        self._policies = of_config(config)
        self.gone_readers = GoneReaders(clock, config.compactionTombstoneRetentionSeconds * 1000)
        """Where the compacted readers that left lately were (they may come back there)."""
        for cursor in cursors:
            self.subscriptions[cursor.name] = self._new_subscription(cursor, durable=True)
            self.activity.loaded(cursor, cursor_store.saved_at_ms(cursor.name))
        self.max_consumers = config.maxConsumersPerTopic
        """Most consumers at once over every subscription, readers included (0: no limit)."""
        self._dirty: set[str] = set()
        self._flush_handle: asyncio.TimerHandle | None = None

    def all(self) -> list[Subscription]:
        """Durable subscriptions and readers' (non-durable) ones: a name may be used once by each."""
        return [*self.subscriptions.values(), *self.readers.values()]

    @property
    def has_consumers(self) -> bool:
        return any(sub.consumers for sub in self.all())

    def _new_subscription(self, cursor: ManagedCursor, durable: bool) -> Subscription:
        name = cursor.name
        config = self._config
        sub = Subscription(
            name, self.topic, self._partition_index, self._source, cursor, durable=durable,
            max_read_entries=config.dispatcherMaxReadBatchSize,
            max_delivery_bytes=config.dispatcherMaxDeliveryBytes,
            max_unacked_per_consumer=self._policies.max_unacked_per_consumer,
            max_unacked_per_subscription=self._policies.max_unacked_per_subscription,
            on_cursor_changed=(lambda: self.cursor_changed(name)) if durable else None,
            clock=self._clock, scheduler=call_later, delayed_delivery=self._policies.delayed_delivery,
            key_shared_consistent_hashing=config.subscriptionKeySharedUseConsistentHashing,
            batch_index_ack=config.acknowledgmentAtBatchIndexLevelEnabled,
            skip_damaged=config.autoSkipNonRecoverableData,
        )
        if self._on_created is not None:
            self._on_created(sub)
        return sub

    @property
    def policies(self) -> TopicPolicies:
        """What the topic enforces (:mod:`broker_core.core.topic_policies`); set when a policy changes, the
        subscriptions' unacked limits and delayed delivery follow."""
        return self._policies

    @policies.setter
    def policies(self, policies: TopicPolicies) -> None:
        self._policies = policies
        for sub in self.all():
            sub.set_limits(policies.max_unacked_per_consumer, policies.max_unacked_per_subscription,
                           policies.delayed_delivery)

    # ------------------------------------------------------------------ consumers
    def subscribe(self, subscription: str, sub_type: SubType, consumer: Consumer, *, durable: bool,
                  start_offset: int,
                  compacted: Callable[[], CompactedLedger | None] | None = None) -> Subscription:
        """Attach ``consumer``; a new subscription starts so that ``start_offset`` is the first message
        delivered (existing durable subscriptions keep their cursor). ``compacted`` (the topic's current
        compacted ledger) makes the subscription read the compacted view; the consumer that finds the
        subscription without consumers decides which view it reads (Pulsar decides per active consumer)."""
        check_consumer_limit(self.topic, self.max_consumers, sum(len(s.consumers) for s in self.all()))
        subs = self.subscriptions if durable else self.readers
        sub = subs.get(subscription)
        self._policies.check_subscribe(self.topic, subscription, sub_type, exists=sub is not None, durable=durable,
                                       persistent=True, subscriptions=len(self.subscriptions) + len(self.readers),
                                       consumers=len(sub.consumers) if sub is not None else 0)
        source = CompactedSource(self._source, compacted) if compacted is not None else self._source
        if sub is None:
            sub = self._create(subscription, start_offset, durable, source)
        elif not sub.consumers:
            self._read_from(sub, source)
        try:
            sub.add_consumer(consumer, sub_type)
        except PulsarLikeError:
            if not durable and not sub.consumers:
                del self.readers[subscription]
            raise
        if durable:
            self.touch(subscription)
        elif compacted is not None:
            self.gone_readers.back(subscription)
        return sub

    def _create(self, name: str, start_offset: int, durable: bool, source: EntrySource | None = None) -> Subscription:
        source = source or self._source
        start_offset = max(start_offset, source.start_offset)
        cursor = ManagedCursor(name, mark_delete_offset=start_offset - 1)
        if durable:
            self.activity.touch(cursor)
            self.activity.stamp(cursor)
            self._cursor_store.save(cursor)
        sub = self._new_subscription(cursor, durable)
        self._read_from(sub, source)
        (self.subscriptions if durable else self.readers)[name] = sub
        return sub

    def _read_from(self, sub: Subscription, source: EntrySource) -> None:
        sub.source = source
        if isinstance(source, CompactedSource):
            source.on_skipped = lambda start, end: self._compacted_away(sub, start, end)

    def _compacted_away(self, sub: Subscription, start: int, end: int) -> None:
        """Offsets a compacted read passed over: never delivered to this subscription, so acknowledged. On a
        terminated topic that may leave nothing to deliver (compacted-away messages last): the end is checked
        here too, not only after a delivery (which comes before the read passing over the tail)."""
        if sub.cursor.ack(start, end) and sub.durable:
            self.cursor_changed(sub.name)
        if self._termination.terminated:
            self._termination.check((sub,), self._source.durable_end_offset)

    def consumer_left(self, sub: Subscription, consumer: Consumer, *, keep_reader: bool = False) -> None:
        sub.remove_consumer(consumer)
        self._termination.forget(consumer)
        if keep_reader and not sub.durable:
            return  # a seek closed the reader's consumer; it subscribes again (see drop_idle_reader)
        if sub.durable and self.subscriptions.get(sub.name) is sub:
            self.touch(sub.name)
        if not sub.durable and not sub.consumers and self.readers.get(sub.name) is sub:
            self._reader_gone(sub)
            del self.readers[sub.name]
            sub.close()

    def _reader_gone(self, sub: Subscription) -> None:
        if isinstance(sub.source, CompactedSource):
            self.gone_readers.left(sub.name, sub.first_unacked_offset())

    def compacted_positions(self) -> list[int]:
        """The first unacknowledged offset of each subscription that reads the compacted view (readers, durable
        subscriptions whose consumers read it, connected or not) or may (a durable subscription no consumer
        attached to since the topic loaded), and where the compacted readers that left lately were: compaction
        keeps the tombstones from the lowest on (:mod:`~broker_core.core.persistent.compacted_readers`)."""
        positions = [sub.first_unacked_offset() for sub in self.readers.values()
                     if isinstance(sub.source, CompactedSource)]
        positions.extend(sub.first_unacked_offset() for sub in self.subscriptions.values()
                         if isinstance(sub.source, CompactedSource) or sub.sub_type is None)
        positions.extend(self.gone_readers.positions())
        return positions

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
        if not durable:
            self._reader_gone(sub)
        del subs[subscription]
        sub.close()
        if sub.durable:
            self._dirty.discard(subscription)
            self.activity.forget(subscription)
            self._cursor_store.delete(subscription)
            self._on_trimmable()  # what only this subscription held may go now

    # ------------------------------------------------------------------ durable subscriptions without consumers
    def durable_subscription(self, name: str) -> Subscription:
        sub = self.subscriptions.get(name)
        if sub is None:
            raise SubscriptionNotFound(f"subscription {name!r} does not exist on {self.topic}")
        return sub

    def create_subscription(self, name: str, start_offset: int) -> None:
        """A durable subscription whose first message is ``start_offset`` (pulsar-admin
        create-subscription); ``SubscriptionAlreadyExists`` when it exists."""
        if name in self.subscriptions:
            raise SubscriptionAlreadyExists(f"subscription {name[:64]!r} already exists on {self.topic}",
                                            topic=self.topic, subscription=name[:64])
        self._create(name, min(start_offset, self._source.end_offset), True)

    def acknowledge_up_to(self, name: str, end_offset: int) -> int:
        """Acknowledge every message below ``end_offset`` on durable subscription ``name`` (created there
        when missing); never moves the subscription back. Returns its new mark-delete offset + 1."""
        end_offset = min(end_offset, self._source.end_offset)
        sub = self.subscriptions.get(name)
        if sub is None:
            sub = self._create(name, end_offset, True)
        else:
            if end_offset - 1 > sub.cursor.mark_delete_offset:
                sub.expire_through(end_offset - 1)
            self.touch(name)  # even when nothing moved: a client keeping its subscription alive
        return sub.cursor.mark_delete_offset + 1

    def touch(self, name: str) -> None:
        """Record activity on durable subscription ``name`` (see :mod:`.subscription_expiry`)."""
        sub = self.subscriptions.get(name)
        if sub is not None and self.activity.touch(sub.cursor) and not self._is_closed():
            self.cursor_changed(name)

    # ------------------------------------------------------------------ saving cursors
    def cursor_changed(self, name: str) -> None:
        """Save durable cursor ``name`` at the next flush (``managedLedgerCursorFlushIntervalMs``)."""
        self._dirty.add(name)
        if self._flush_handle is None and not self._is_closed():
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
            self._on_trimmable()

    def stop_flushing(self) -> None:
        """The topic is closing: no timed flush any more (:meth:`save` saves what is left)."""
        if self._flush_handle is not None:
            self._flush_handle.cancel()

    def save(self) -> None:
        """Save every changed cursor, and those whose activity was never saved."""
        self._dirty.update(self.activity.unsaved(sub.cursor for sub in self.subscriptions.values()))
        self.flush_cursors()

    def close(self) -> None:
        """Stop every subscription's dispatching."""
        for sub in self.all():
            sub.close()

    def clear(self) -> None:
        """Forget every subscription (the topic was deleted)."""
        self.subscriptions.clear()
        self.readers.clear()
        self.gone_readers.clear()
