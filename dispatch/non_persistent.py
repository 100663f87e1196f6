"""Non-persistent subscriptions: an entry goes at once to a connected consumer with permits, or is dropped.

A non-persistent topic keeps nothing (seed "Non-persistent topics"): each published entry is handed once
to every subscription of the topic and forgotten. A :class:`NonPersistentSubscription` therefore has no
cursor, no backlog, no pending acknowledgments and no redelivery -- the persistent machinery
(:mod:`dispatch.subscription`, replay sets, draining hashes) does not apply. Who may receive an entry
follows the persistent rules, reusing their pure parts:

- **Exclusive / Failover**: the active consumer, chosen by :func:`~dispatch.single_active.pick_active`
  (priority, then partition index over names sorted, or subscribe order). An active-consumer change moves
  nothing: there is nothing to rewind to.
- **Shared**: round robin among the consumers with permits, the highest priority (lowest
  ``priority_level``) first -- the rule of :class:`~dispatch.shared.SharedDispatcher`.
- **Key_Shared**: the consumer owning the entry's sticky key hash in the selector of the subscription's
  mode (:mod:`dispatch.selectors`: AUTO_SPLIT ranges, consistent hashing, STICKY ranges). There is no
  draining: without unacknowledged messages there is nothing to wait for.

**Drops.** An entry is delivered when its consumer has at least one permit (its messages are then taken
from the permits, which may go negative, as in Pulsar). Otherwise -- no consumer connected, the active
consumer or the key's owner without permits, every Shared consumer without permits, a STICKY hash nobody
owns -- the entry is dropped and its messages counted in ``msgDropCount``: on the subscription, and on the
consumer when the entry was meant for one (the active consumer, the key's owner). Pulsar reports the same
events as ``msgDropRate``; this broker keeps counters.

Example: consumers A and B share a subscription, A with 2 permits and B with none. Entries 0, 1, 2 arrive:
A gets 0 and 1, entry 2 is dropped (``msgDropCount`` 1). B's later flow brings nothing back.

**Dispatch rate limits** (:mod:`dispatch.throttle`, ``NonPersistentSubscription.throttle``): nothing waits
on a non-persistent topic, so an entry published while the subscription's budget is spent is dropped (counted
in ``msgDropCount``) instead of held back; what is delivered is charged as on a persistent subscription.

**Acknowledgments** are accepted and ignored, except that cumulative ones are still refused on Shared and
Key_Shared (as on persistent subscriptions); ``redeliver*`` and ``seek`` do nothing (Pulsar's
``NonPersistentSubscription`` has the same no-ops). Delayed delivery is not honoured: a delayed message is
delivered at once, like Pulsar's non-persistent dispatchers do.

Pure and synchronous: the service calls it from one thread; deliveries leave through ``Consumer.sink``.
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Iterable, Sequence

from broker_core.errors import AlreadyClosed, ConsumerBusy, CumulativeAcknowledgementNotAllowedError
from dispatch.consumer import Consumer, Delivery
from dispatch.dispatcher import split_by_bytes
from dispatch.key_shared import KeySharedPolicy, entry_hash_key, make_selector
from dispatch.selectors import HashRangeExclusiveSelector
from dispatch.single_active import pick_active
from dispatch.throttle import DispatchThrottle
from dispatch.types import SubType

if TYPE_CHECKING:
    from broker_core.storage.stored_entry import StoredEntry

log = logging.getLogger(__name__)


class NonPersistentDispatcher:
    """Chooses the consumer of each entry (:meth:`target`) and sends or drops it (:meth:`send`)."""

    allows_cumulative_ack = True

    def __init__(self, subscription: "NonPersistentSubscription", sub_type: SubType) -> None:
        self.subscription = subscription
        self.sub_type = sub_type
        self.consumers: list[Consumer] = []
        self.dropped: dict[Consumer, int] = {}
        """Messages dropped while meant for a consumer (its ``msgDropCount``)."""

    def add_consumer(self, consumer: Consumer) -> None:
        self.consumers.append(consumer)

    def remove_consumer(self, consumer: Consumer) -> None:
        if consumer in self.consumers:
            self.consumers.remove(consumer)
        self.dropped.pop(consumer, None)

    def active_consumer(self) -> Consumer | None:
        return None

    def target(self, entry: "StoredEntry") -> Consumer | None:
        """The consumer ``entry`` is meant for (None: nobody); it gets it only if it has permits."""
        raise NotImplementedError

    def send(self, entries: Sequence["StoredEntry"]) -> int:
        """Deliver or drop each of ``entries``; returns the number of messages dropped."""
        batches: dict[Consumer, list[Delivery]] = {}
        dropped = 0
        for entry in entries:
            consumer = self.target(entry)
            n = entry.num_messages
            if consumer is None or consumer.permits <= 0:
                dropped += n
                if consumer is not None:
                    self.dropped[consumer] = self.dropped.get(consumer, 0) + n
                continue
            consumer.permits -= n
            batches.setdefault(consumer, []).append(Delivery(entry, 0, None, n))
        limit = self.subscription.max_delivery_bytes
        for consumer, deliveries in batches.items():
            for group in split_by_bytes(deliveries, limit):
                self._hand_over(consumer, group)
        return dropped

    def _hand_over(self, consumer: Consumer, deliveries: list[Delivery]) -> None:
        messages = sum(d.messages for d in deliveries)
        nbytes = sum(len(d.entry.data) for d in deliveries)
        consumer.msg_out_counter += messages
        consumer.bytes_out_counter += nbytes
        sub = self.subscription
        sub.msg_out_counter += messages
        sub.bytes_out_counter += nbytes
        if sub.throttle is not None:
            sub.throttle.charge(messages, nbytes, len(deliveries))
        consumer.sink(deliveries)

    def stats(self) -> dict[str, object]:
        return {}

    def consumer_stats(self, consumer: Consumer) -> dict[str, object]:
        return {"msgDropCount": self.dropped.get(consumer, 0)}

    def close(self) -> None:
        self.consumers.clear()


class SingleActiveNonPersistentDispatcher(NonPersistentDispatcher):
    """Exclusive and Failover: everything to the active consumer, or dropped."""

    def __init__(self, subscription: "NonPersistentSubscription", sub_type: SubType) -> None:
        if sub_type not in (SubType.EXCLUSIVE, SubType.FAILOVER):
            raise ValueError(f"SingleActiveNonPersistentDispatcher serves Exclusive and Failover, not {sub_type}")
        super().__init__(subscription, sub_type)
        self.active: Consumer | None = None

    def add_consumer(self, consumer: Consumer) -> None:
        if self.sub_type is SubType.EXCLUSIVE and self.consumers:
            raise ConsumerBusy(
                f"subscription {self.subscription.name} is Exclusive and already has consumer"
                f" {self.consumers[0].consumer_name!r}; use a Failover or Shared subscription to attach"
                " several consumers", subscription=self.subscription.name)
        super().add_consumer(consumer)
        if not self._update_active() and self.sub_type is SubType.FAILOVER:
            consumer.notify_active(consumer is self.active)

    def remove_consumer(self, consumer: Consumer) -> None:
        super().remove_consumer(consumer)
        self._update_active()

    def active_consumer(self) -> Consumer | None:
        return self.active

    def _update_active(self) -> bool:
        sub = self.subscription
        new = pick_active(self.consumers, sub.partition_index, sub.topic)
        if new is self.active:
            return False
        self.active = new
        if self.sub_type is SubType.FAILOVER:
            for c in list(self.consumers):
                c.notify_active(c is new)
        return True

    def target(self, entry: "StoredEntry") -> Consumer | None:
        return self.active

    def close(self) -> None:
        self.active = None
        super().close()


class SharedNonPersistentDispatcher(NonPersistentDispatcher):
    """Shared: round robin over the consumers with permits, highest priority first."""

    allows_cumulative_ack = False

    def __init__(self, subscription: "NonPersistentSubscription") -> None:
        super().__init__(subscription, SubType.SHARED)
        self._turn = 0

    def target(self, entry: "StoredEntry") -> Consumer | None:
        ready = [c for c in self.consumers if c.permits > 0]
        if not ready:
            return None
        if len(ready) > 1:
            best = min(c.priority_level for c in ready)
            ready = [c for c in ready if c.priority_level == best]
        self._turn += 1
        return ready[self._turn % len(ready)]


class KeySharedNonPersistentDispatcher(NonPersistentDispatcher):
    """Key_Shared: the owner of the entry's sticky key hash, or dropped (never sent to another consumer)."""

    allows_cumulative_ack = False

    def __init__(self, subscription: "NonPersistentSubscription", policy: KeySharedPolicy,
                 consistent_hashing: bool = False) -> None:
        super().__init__(subscription, SubType.KEY_SHARED)
        self.policy = policy
        self.selector = make_selector(policy, consistent_hashing)

    def add_consumer(self, consumer: Consumer) -> None:
        policy = getattr(consumer, "key_shared", None) or KeySharedPolicy()
        if policy.mode != self.policy.mode or (
                policy.allow_out_of_order_delivery != self.policy.allow_out_of_order_delivery):
            raise ConsumerBusy(
                f"subscription {self.subscription.name} is Key_Shared in mode {self.policy.mode}"
                f" (allow_out_of_order_delivery={self.policy.allow_out_of_order_delivery}); consumer"
                f" {consumer.consumer_name!r} asked for {policy.mode}"
                f" (allow_out_of_order_delivery={policy.allow_out_of_order_delivery})",
                subscription=self.subscription.name)
        if isinstance(self.selector, HashRangeExclusiveSelector):
            self.selector.add_consumer(consumer, policy.sticky_ranges)  # ConsumerAssignError: not added
        else:
            self.selector.add_consumer(consumer)
        super().add_consumer(consumer)

    def remove_consumer(self, consumer: Consumer) -> None:
        if consumer in self.consumers:
            self.selector.remove_consumer(consumer)
        super().remove_consumer(consumer)

    def target(self, entry: "StoredEntry") -> Consumer | None:
        if not self.consumers:
            return None
        selector = self.selector
        return selector.select(selector.make_hash(entry_hash_key(entry)))

    def stats(self) -> dict[str, object]:
        return {"keySharedMode": self.policy.mode,
                "allowOutOfOrderDelivery": self.policy.allow_out_of_order_delivery}

    def consumer_stats(self, consumer: Consumer) -> dict[str, object]:
        stats = super().consumer_stats(consumer)
        stats["keyHashRangeArrays"] = [[s, e] for s, e in self.selector.key_hash_ranges().get(consumer, [])]
        return stats


def _nothing() -> None:
    """Nothing waits for a non-persistent subscription's budget to renew."""


class NonPersistentSubscription:
    """One subscription of a non-persistent topic partition: its consumers, its dispatcher, its counters.

    The interface is the part of :class:`~dispatch.subscription.Subscription` the service uses, so the
    service treats both alike; :meth:`deliver` replaces ``on_new_entries`` (entries come with the call).
    """

    def __init__(self, name: str, topic: str, partition_index: int, *, durable: bool = True,
                 max_delivery_bytes: int = 8 << 20, key_shared_consistent_hashing: bool = False) -> None:
        self.name = name
        self.topic = topic
        self.partition_index = partition_index
        self.durable = durable
        """False for a reader's subscription: it goes away with its consumer."""
        self.max_delivery_bytes = max_delivery_bytes
        self.key_shared_consistent_hashing = key_shared_consistent_hashing
        self.msg_out_counter = 0
        self.bytes_out_counter = 0
        self.msg_drop_count = 0
        self.throttle: DispatchThrottle | None = None
        """The dispatch rate limits it obeys (None: none); over them entries are dropped."""
        self.properties: dict[str, str] = {}
        """Pulsar's subscription properties (in memory, as the subscription)."""
        self.closed = False
        self._dispatcher: NonPersistentDispatcher | None = None
        self._sub_type: SubType | None = None

    # -- consumers ---------------------------------------------------------------------------------

    @property
    def sub_type(self) -> SubType | None:
        return self._sub_type

    @property
    def consumers(self) -> list[Consumer]:
        return list(self._dispatcher.consumers) if self._dispatcher is not None else []

    @property
    def active_consumer(self) -> Consumer | None:
        return self._dispatcher.active_consumer() if self._dispatcher is not None else None

    def replace_properties(self, properties: dict[str, str]) -> None:
        """Replace every subscription property."""
        self.properties = dict(properties)

    def add_consumer(self, consumer: Consumer, sub_type: SubType | str) -> None:
        """Attach ``consumer``; the same refusals as a persistent subscription (``ConsumerBusy``,
        ``ConsumerAssignError``, ``AlreadyClosed``)."""
        if self.closed:
            raise AlreadyClosed(f"subscription {self.name} on {self.topic} is closed")
        sub_type = SubType(sub_type)
        dispatcher = self._dispatcher
        if dispatcher is not None and dispatcher.consumers:
            if dispatcher.sub_type is not sub_type:
                raise ConsumerBusy(
                    f"subscription {self.name} is of type {dispatcher.sub_type}; a {sub_type} consumer cannot"
                    f" join it while its {len(dispatcher.consumers)} consumer(s) are connected: use the same"
                    " subscription type, or another subscription name",
                    subscription=self.name, sub_type=str(dispatcher.sub_type))
        else:  # nobody connected: the newcomer sets the type (and Key_Shared mode)
            if dispatcher is not None:
                dispatcher.close()
            dispatcher = self._dispatcher = self._new_dispatcher(sub_type, consumer)
        dispatcher.add_consumer(consumer)
        self._sub_type = sub_type

    def _new_dispatcher(self, sub_type: SubType, consumer: Consumer) -> NonPersistentDispatcher:
        if sub_type in (SubType.EXCLUSIVE, SubType.FAILOVER):
            return SingleActiveNonPersistentDispatcher(self, sub_type)
        if sub_type is SubType.SHARED:
            return SharedNonPersistentDispatcher(self)
        policy = getattr(consumer, "key_shared", None) or KeySharedPolicy()
        return KeySharedNonPersistentDispatcher(self, policy, self.key_shared_consistent_hashing)

    def remove_consumer(self, consumer: Consumer) -> None:
        if self._dispatcher is not None:
            self._dispatcher.remove_consumer(consumer)

    def flow(self, consumer: Consumer, permits: int) -> None:
        """``consumer`` has room for ``permits`` more messages (nothing waits for them: later entries use them)."""
        if self._dispatcher is not None and consumer in self._dispatcher.consumers:
            consumer.permits += permits

    # -- entries -----------------------------------------------------------------------------------

    def deliver(self, entries: Sequence["StoredEntry"]) -> int:
        """Send ``entries`` (just published) to the consumers that can take them now; returns the number
        of messages dropped."""
        if self.closed or not entries:
            return 0
        throttle = self.throttle
        if self._dispatcher is None or (throttle is not None and throttle.read_budget(
                len(entries), self.max_delivery_bytes, _nothing) is None):
            dropped = sum(e.num_messages for e in entries)
        else:
            dropped = self._dispatcher.send(entries)
        self.msg_drop_count += dropped
        return dropped

    # -- acknowledgments and positions: nothing is kept ---------------------------------------------

    def acknowledge(self, consumer: Consumer, ranges: Iterable[tuple[int, int]]) -> int:
        """Accepted and ignored (there is nothing to redeliver); returns 0."""
        return 0

    def acknowledge_cumulative(self, consumer: Consumer, offset: int) -> int:
        """Ignored, but refused on Shared and Key_Shared as on a persistent subscription; returns 0."""
        dispatcher = self._dispatcher
        if dispatcher is not None and not dispatcher.allows_cumulative_ack:
            raise CumulativeAcknowledgementNotAllowedError(
                f"cumulative acknowledgment is not allowed on {dispatcher.sub_type} subscription"
                f" {self.name}; acknowledge messages individually", subscription=self.name)
        return 0

    def redeliver(self, consumer: Consumer, ranges: Iterable[tuple[int, int]]) -> None:
        """No-op: a non-persistent topic never redelivers."""

    def redeliver_unacknowledged(self, consumer: Consumer) -> None:
        """No-op: a non-persistent topic never redelivers."""

    def seek(self, offset: int) -> None:
        """No-op: nothing is stored to go back to (Pulsar's non-persistent ``resetCursor``)."""

    @property
    def backlog(self) -> int:
        return 0

    @property
    def unacked_messages(self) -> int:
        return 0

    # -- lifecycle and stats ---------------------------------------------------------------------------

    def close(self) -> None:
        """Stop delivering and detach every consumer (without notifying them)."""
        self.closed = True
        if self._dispatcher is not None:
            self._dispatcher.close()

    def stats(self) -> dict[str, object]:
        """The subscription part of Pulsar's non-persistent topic stats (drops as a counter)."""
        dispatcher = self._dispatcher
        active = self.active_consumer
        consumers = []
        for c in self.consumers:
            stats = c.stats()
            if dispatcher is not None:
                stats.update(dispatcher.consumer_stats(c))
            consumers.append(stats)
        return {
            "msgBacklog": 0,
            "unackedMessages": 0,
            "type": str(self._sub_type) if self._sub_type is not None else None,
            "msgOutCounter": self.msg_out_counter,
            "bytesOutCounter": self.bytes_out_counter,
            "msgDropCount": self.msg_drop_count,
            "consumers": consumers,
            "activeConsumerName": active.consumer_name if active is not None else None,
            "isDurable": self.durable,
            "subscriptionProperties": dict(self.properties),
            **(dispatcher.stats() if dispatcher is not None else {}),
        }

    def __repr__(self) -> str:
        return f"NonPersistentSubscription({self.name!r}, {self.topic!r}, type={self._sub_type})"
