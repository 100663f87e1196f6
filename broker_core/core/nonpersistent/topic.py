"""One non-persistent topic partition (``non-persistent://tenant/ns/topic``): in memory only.

Seed "Non-persistent topics": the broker never writes such a topic's messages anywhere; it hands each
published entry at once to the consumers connected at that moment that have permits, and forgets it.
A consumer that subscribes later never sees earlier messages; nothing survives a broker restart.

How it maps onto this broker (both front ends use this class exactly as they use
:class:`~broker_core.core.persistent.topic.PersistentTopic`):

1. **Publish**: each entry is checked as on a persistent topic (size, CRC, message count; chunks are
   refused: a non-persistent consumer could lose any chunk), given the next offsets of a dense running
   counter and the same ``BrokerEntryMetadata`` prefix, handed to every subscription
   (:class:`~dispatch.non_persistent.NonPersistentSubscription`: deliver or drop), and only then is the
   send receipt released. Its message id is ``(ledger_id, offset)``, ``ledger_id`` being the time (ms) this
   in-memory topic was created, so ids stay ordered across a re-created topic whose offsets start again
   at 0. Deduplication does not apply (as in Pulsar).
2. **Positions**: nothing is stored, so the first and the end offset are both the next offset: the topic
   answers the same position calls as a persistent one (``start_offset``, ``confirmed_end_offset``,
   ``offset_for_timestamp``, ``entry_containing``, ``last_message_id``) with that: earliest, latest, any
   message id and any publish time all mean "from now on"; the last message id is "none"; seeks are
   accepted and do nothing.
3. **Subscriptions**: a durable subscription stays (with its drop counter) after its last consumer
   leaves, and goes on counting drops, as in Pulsar; a reader's (non-durable) subscription goes with its
   consumer.
4. **Lifetime**: the topic lives in the registry's memory while it has producers (or waiting ones) or
   subscriptions. Pulsar deletes such an inactive topic at its next garbage-collection pass
   (``brokerDeleteInactiveTopicsEnabled``, every 60 s by default); this broker deletes it as soon as it
   becomes inactive, so ``list_topics`` shows exactly the topics in use. A topic created through the admin
   API lives until its first clients have come and gone. A partitioned topic's partition count is
   metadata and is kept (Pulsar keeps it too); its partitions live and die like any other topic.
"""
from __future__ import annotations

import logging
from types import MappingProxyType
from typing import Any, Callable, Mapping, Sequence

from broker_core.clock import Clock
from broker_core.config import BrokerConfig
from broker_core.errors import NotAllowedError, PulsarLikeError, SubscriptionNotFound
from broker_core.protocol.codec import broker_entry_prefix
from broker_core.core.access import AccessMode, ProducerAccess
from broker_core.core.rates import TopicRates
from broker_core.core.throttling import TopicThrottling
from broker_core.core.producers import ProducerInfo, TopicProducers
from broker_core.protocol.entry_limits import FRAME_PADDING
from broker_core.core.topic_policies import TopicPolicies, of_config
from broker_core.core.topic_rules import Accepted, check_consumer_limit, checked_entry, deleted
from broker_core.storage.log import StoredEntry
from broker_core.types import NON_PERSISTENT, TopicName
from dispatch.consumer import Consumer
from dispatch.non_persistent import NonPersistentSubscription
from dispatch.types import SubType

log = logging.getLogger(__name__)

CONFIG_KEY = "enableNonPersistentTopics"


def check_enabled(config: BrokerConfig, name: TopicName) -> None:
    """Raise ``NotAllowedError`` when ``name`` is non-persistent and the broker disables such topics."""
    if name.domain == NON_PERSISTENT and not config.enableNonPersistentTopics:
        raise NotAllowedError(f"{name}: non-persistent topics are disabled on this broker"
                              f" ({CONFIG_KEY}=false); use a persistent:// topic or enable them",
                              key=CONFIG_KEY)


def not_stored(topic: str, what: str) -> NotAllowedError:
    """What an operation on stored data is refused with on a non-persistent topic (as Pulsar refuses it)."""
    return NotAllowedError(f"{topic}: {what}", topic=topic)


class NeverTerminated:
    """A non-persistent topic's termination state: never terminated, so no consumer reaches its end."""

    terminated = False
    end_offset = None

    def watch(self, consumer: Consumer, notify: Callable[[], None]) -> None:
        pass

    def forget(self, consumer: Consumer) -> None:
        pass

    def rewound(self, sub: Any) -> None:
        pass

    def refuse(self) -> None:
        pass


NEVER_TERMINATED = NeverTerminated()


class NonPersistentTopic:
    """A non-persistent topic partition; implements :class:`~broker_core.core.topic_protocol.Topic`.
    What needs stored data is refused here, so every front end refuses it alike."""

    persistent = False
    readers = MappingProxyType({})
    """Always empty: a reader's subscription is in ``subscriptions`` (``durable`` False)."""
    termination = NEVER_TERMINATED
    writes = None
    """It never writes, so writing never fails."""

    def __init__(self, name: TopicName, config: BrokerConfig, clock: Clock, *,
                 on_idle: Callable[["NonPersistentTopic"], None] | None = None) -> None:
        if name.domain != NON_PERSISTENT:
            raise ValueError(f"{name} is not a non-persistent topic")
        self.name = name
        self.topic = str(name)
        self.partition_index = name.partition_index
        self._config = config
        self._clock = clock
        self._max_entry = config.maxMessageSize + FRAME_PADDING
        self._on_idle = on_idle
        self.ledger_id = clock.now_ms()
        self.next_offset = 0
        """Offset of the next message published: a dense running counter, never stored."""
        self.subscriptions: dict[str, NonPersistentSubscription] = {}
        self._producers = TopicProducers(self.topic, config.maxProducersPerTopic, lambda: self.closed)
        self.max_consumers = config.maxConsumersPerTopic
        self.policies: TopicPolicies = of_config(config)
        """What the topic enforces (:mod:`broker_core.core.topic_policies`; the unacked limits and delayed
        delivery do not apply: nothing is held for a consumer); the registry sets it."""
        self.dedup = None
        self.msg_in_counter = 0
        self.bytes_in_counter = 0
        self._removed = {"msgOutCounter": 0, "bytesOutCounter": 0, "msgDropCount": 0}
        self.rates = TopicRates(clock)
        """Rates over the last stats interval (see :mod:`broker_core.core.rates`)."""
        self.throttling = TopicThrottling(clock, scheduler=None, publish_rate=self.rates.publish_rate)
        """The rate limits the topic enforces (:mod:`broker_core.core.throttling`; over a dispatch rate entries
        are dropped: nothing waits here); the registry sets them."""
        self.closed = False
        self.last_used_ms = clock.now_ms()
        """When the registry last handed the topic out."""

    # ------------------------------------------------------------------ positions
    @property
    def start_offset(self) -> int:
        """Nothing is stored: the first offset is the next one."""
        return self.next_offset

    @property
    def end_offset(self) -> int:
        return self.next_offset

    @property
    def confirmed_end_offset(self) -> int:
        return self.next_offset

    def offset_for_timestamp(self, publish_time_ms: int) -> int:
        """Every publish time means "from now on": nothing earlier is kept."""
        return self.next_offset

    def entry_containing(self, offset: int) -> None:
        return None

    def last_message_id(self) -> None:
        """None: no message is kept."""
        return None

    def unreadable_at(self, offset: int, entries: int = 1) -> None:
        """None: nothing is stored, so nothing is damaged."""
        return None

    # ------------------------------------------------------------------ producers
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

    def add_producer(self, producer_name: str, properties: dict[str, str],
                     access_mode: AccessMode = AccessMode.SHARED, *,
                     fence: Callable[[PulsarLikeError], None] = lambda error: None,
                     granted: Callable[[], None] = lambda: None) -> tuple[ProducerInfo, bool]:
        return self._producers.add_producer(producer_name, properties, access_mode, fence=fence, granted=granted)

    def remove_producer(self, info: ProducerInfo) -> None:
        self._producers.remove_producer(info)
        self._check_idle()

    def last_sequence_id(self, producer_name: str) -> int:
        return -1  # no deduplication on non-persistent topics

    def set_deduplication(self, enabled: bool) -> None:
        """Ignored: nothing is stored to deduplicate against (Pulsar skips it too)."""

    def publish(self, producer: ProducerInfo, entries: Sequence,
                on_done: Callable[[list[Accepted], BaseException | None], None]) -> None:
        """Check ``entries`` (``SendEntry`` messages), hand the good ones to every subscription, then call
        ``on_done(results, None)``."""
        if self.closed:
            raise NotAllowedError(f"topic {self.topic} is closing")
        now = self._clock.now_ms()
        results: list[Accepted] = []
        stored: list[StoredEntry] = []
        policies = self.policies if self.policies.checks_entries else None
        for send in entries:
            try:
                metadata, count = checked_entry(send, self._max_entry, self._config.maxMessageSize)
                if policies is not None:
                    policies.check_entry(self.topic, metadata, len(send.data))
                if metadata.num_chunks_from_msg > 1:
                    raise NotAllowedError(f"chunked messages are not allowed on non-persistent topic {self.topic}:"
                                          " a consumer could miss any chunk; send them to a persistent topic")
            except PulsarLikeError as exc:
                results.append(Accepted(send.sequence_id, send.highest_sequence_id, error=exc))
                continue
            offset = self.next_offset
            entry = StoredEntry(offset, count, metadata.publish_time, self.ledger_id,
                                broker_entry_prefix(now, offset + count - 1) + send.data)
            self.next_offset = offset + count
            stored.append(entry)
            results.append(Accepted(send.sequence_id, send.highest_sequence_id, entry=entry))
            producer.msg_in_counter += count
            producer.bytes_in_counter += len(entry.data)
            self.msg_in_counter += count
            self.bytes_in_counter += len(entry.data)
        if stored:
            for sub in list(self.subscriptions.values()):
                sub.deliver(stored)
        on_done(results, None)

    # ------------------------------------------------------------------ subscriptions
    def subscribe(self, subscription: str, sub_type: SubType, consumer: Consumer, *, durable: bool,
                  start_offset: int) -> NonPersistentSubscription:
        """Attach ``consumer``; it receives what is published from now on (``start_offset`` is ignored:
        nothing earlier exists)."""
        if self.closed:
            raise NotAllowedError(f"topic {self.topic} is closing")
        check_consumer_limit(self.topic, self.max_consumers,
                             sum(len(s.consumers) for s in self.subscriptions.values()))
        sub = self.subscriptions.get(subscription)
        self.policies.check_subscribe(self.topic, subscription, sub_type, exists=sub is not None, durable=durable,
                                      persistent=False, subscriptions=len(self.subscriptions),
                                      consumers=len(sub.consumers) if sub is not None else 0)
        created = sub is None
        if sub is None:
            sub = NonPersistentSubscription(
                subscription, self.topic, self.partition_index, durable=durable,
                max_delivery_bytes=self._config.dispatcherMaxDeliveryBytes,
                key_shared_consistent_hashing=self._config.subscriptionKeySharedUseConsistentHashing)
            self.throttling.attach(sub)
            self.subscriptions[subscription] = sub
        elif not durable and sub.durable:
            raise NotAllowedError(f"subscription {subscription!r} on {self.topic} is durable;"
                                  " a reader needs its own name")
        try:
            sub.add_consumer(consumer, sub_type)
        except PulsarLikeError:
            if created:
                self._drop_subscription(sub)
                self._check_idle()
            raise
        return sub

    def consumer_left(self, sub: NonPersistentSubscription, consumer: Consumer, *,
                      keep_reader: bool = False) -> None:
        """``keep_reader`` is moot: a reader here sees only what comes next, so its subscription goes with
        its last consumer."""
        sub.remove_consumer(consumer)
        if not sub.durable and not sub.consumers and self.subscriptions.get(sub.name) is sub:
            self._drop_subscription(sub)
        self._check_idle()

    def drop_idle_reader(self, sub: NonPersistentSubscription) -> None:
        """Nothing to do: ``consumer_left`` never keeps a reader's subscription."""

    def create_subscription(self, name: str, start_offset: int) -> None:
        raise not_stored(self.topic, "non-persistent topics have no stored subscriptions")

    def durable_subscription(self, name: str) -> NonPersistentSubscription:
        raise not_stored(self.topic, "non-persistent topics have no stored subscriptions")

    def acknowledge_up_to(self, name: str, end_offset: int) -> int:
        raise not_stored(self.topic, "non-persistent topics have no stored subscriptions")

    def touch_subscription(self, name: str) -> None:
        """Nothing to record: no subscription of a non-persistent topic expires (nothing is stored)."""

    # ------------------------------------------------------------------ termination
    def terminate(self) -> int:
        raise not_stored(self.topic, "terminate: the topic is non-persistent: it stores nothing")

    def check_end_of_topic(self) -> None:
        """Nothing to do: the topic is never terminated."""

    def unsubscribe(self, subscription: str, *, requester: Consumer | None = None, force: bool = False,
                    durable: bool = True) -> None:
        sub = self.subscriptions.get(subscription)
        if sub is None:
            raise SubscriptionNotFound(f"subscription {subscription!r} does not exist on {self.topic}")
        others = [c for c in sub.consumers if c is not requester]
        if others and not force:
            raise NotAllowedError(f"subscription {subscription!r} on {self.topic} has {len(others)} other"
                                  " connected consumer(s); close them first")
        self._drop_subscription(sub)
        self._check_idle()

    def _drop_subscription(self, sub: NonPersistentSubscription) -> None:
        del self.subscriptions[sub.name]
        sub.close()
        removed = self._removed  # the topic's out and drop counters keep what removed subscriptions counted
        removed["msgOutCounter"] += sub.msg_out_counter
        removed["bytesOutCounter"] += sub.bytes_out_counter
        removed["msgDropCount"] += sub.msg_drop_count

    # ------------------------------------------------------------------ stats and lifecycle
    @property
    def has_clients(self) -> bool:
        return bool(self.producers) or any(sub.consumers for sub in self.subscriptions.values())

    @property
    def is_idle(self) -> bool:
        """No producer (connected or waiting) and no subscription: Pulsar's inactive topic."""
        return not self.producers and not self.access.waiting and not self.subscriptions

    def _check_idle(self) -> None:
        if self.is_idle and not self.closed and self._on_idle is not None:
            log.info("event=non_persistent_topic_idle topic=%s", self.topic)
            self.closed = True
            self._on_idle(self)

    def stats(self) -> dict:
        """Pulsar's ``NonPersistentTopicStats`` fields, rates included."""
        return self.rates.apply(self.raw_stats())

    def raw_stats(self) -> dict:
        """The stats without rates: counters (drops too) and sizes."""
        subs = {name: sub.stats() for name, sub in self.subscriptions.items()}
        removed = self._removed
        return {
            "msgInCounter": self.msg_in_counter,
            "bytesInCounter": self.bytes_in_counter,
            "msgOutCounter": removed["msgOutCounter"] + sum(s["msgOutCounter"] for s in subs.values()),
            "bytesOutCounter": removed["bytesOutCounter"] + sum(s["bytesOutCounter"] for s in subs.values()),
            "msgDropCount": removed["msgDropCount"] + sum(s["msgDropCount"] for s in subs.values()),
            "storageSize": 0,
            "backlogSize": 0,
            "publishers": self._producers.stats(),
            "waitingPublishers": len(self.access.waiting),
            "deduplicationStatus": "Disabled",
            "publishRateLimitedTimes": self.throttling.limited_times,
            "subscriptions": subs,
            "isPersistent": False,
        }

    async def close(self) -> None:
        self.closed = True
        self.throttling.close()
        for sub in self.subscriptions.values():
            sub.close()

    async def delete(self) -> None:
        """Close every client's session (they reconnect, as Pulsar's do), then the topic."""
        error = deleted(self.topic)
        self._producers.disconnect_all(error)
        for sub in list(self.subscriptions.values()):
            for consumer in sub.consumers:
                consumer.fail(error)
        await self.close()
        self.subscriptions.clear()
