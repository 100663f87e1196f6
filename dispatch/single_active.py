"""Exclusive and Failover: one active consumer per subscription (Pulsar's "single active consumer").

Active consumer selection (seed: Failover):

1. Candidates are the consumers with the highest priority, i.e. the lowest ``priority_level`` number.
2. A partition of a partitioned topic (``partition_index >= 0``) sorts the candidates by consumer name and
   picks ``candidates[partition_index % len(candidates)]``. With consumers A, B, C, D and 2 partitions,
   P0 -> A and P1 -> B; without A and B, P0 -> C and P1 -> D. With 3 consumers and 9 partitions,
   A gets P0, P3, P6, B gets P1, P4, P7 and C gets P2, P5, P8.
3. A non-partitioned topic picks the first candidate in subscribe order.

When the active consumer changes, every consumer is told whether it is active (Failover only), the old
active consumer's pending list is dropped and reading restarts at the first unacknowledged message: if A
read 0..7 and acknowledged 0..3, the new active consumer receives 4..7 onwards. The same rewind happens
when an Exclusive consumer leaves, so whoever subscribes next receives every unacknowledged message.

As in Pulsar, ``max_unacked_per_consumer`` does not apply here (only to Shared and Key_Shared): the active
consumer receives as far as its permits go, however much it has left unacknowledged. A consumer acknowledging
cumulatively every 1,000 messages of a batched topic would otherwise stop whenever an ack falls behind.
Nothing here needs the consumer's pending list to redeliver (a redelivery rewinds to the cursor's first
unacknowledged message, as Pulsar's mark-delete rewind), so it is kept for what it speeds up -- resolving
acks without a storage read, redelivery counts, stats -- and bounded: past :data:`MAX_TRACKED_ENTRIES`
entries (~200 B each) the oldest are forgotten, and stay unacknowledged on the cursor. A consumer that never
acknowledges (a reader) thus costs at most ~20 MB.
"""
from __future__ import annotations

import bisect
import logging
from typing import TYPE_CHECKING

import mmh3

from broker_core.errors import ConsumerBusy
from dispatch.consumer import Consumer, Delivery
from dispatch.dispatcher import Dispatcher
from dispatch.types import SubType

if TYPE_CHECKING:
    from dispatch.subscription import Subscription

log = logging.getLogger(__name__)


HASH_RING_POINTS = 100
MAX_TRACKED_ENTRIES = 100_000
"""Most entries the active consumer's pending list tracks (see the module's doc)."""


def pick_active(consumers: list[Consumer], partition_index: int, topic: str = "") -> Consumer | None:
    """The active consumer among ``consumers`` (in subscribe order) for this partition (-1: none).

    A non-partitioned topic that the candidates subscribed to as one of several topics is placed on a
    hash ring instead (seed: "a consumer is selected based on consumer name hash and topic name hash"):
    each candidate puts ``HASH_RING_POINTS`` points at Murmur3(name + i), and the topic goes to the first
    point at or after Murmur3(topic), wrapping around.
    """
    if not consumers:
        return None
    best = min(c.priority_level for c in consumers)
    candidates = [c for c in consumers if c.priority_level == best]
    if partition_index < 0:
        if topic and all(c.multi_topic for c in candidates):
            return _ring_pick(candidates, topic)
        return candidates[0]
    candidates.sort(key=lambda c: c.consumer_name)
    return candidates[partition_index % len(candidates)]


def _ring_pick(candidates: list[Consumer], topic: str) -> Consumer:
    ring = sorted((mmh3.hash(f"{c.consumer_name}{i}", signed=False), n)
                  for n, c in enumerate(candidates) for i in range(HASH_RING_POINTS))
    at = bisect.bisect_left(ring, (mmh3.hash(topic, signed=False), -1))
    return candidates[ring[at % len(ring)][1]]


class SingleActiveDispatcher(Dispatcher):
    def __init__(self, subscription: "Subscription", sub_type: SubType) -> None:
        if sub_type not in (SubType.EXCLUSIVE, SubType.FAILOVER):
            raise ValueError(f"SingleActiveDispatcher serves Exclusive and Failover, not {sub_type}")
        super().__init__(subscription, sub_type)
        self.active: Consumer | None = None
        self.read_offset = subscription.first_unacked_offset()
        self._epoch = 0  # bumped on every rewind, so a round interrupted by one stops

    def active_consumer(self) -> Consumer | None:
        return self.active

    def add_consumer(self, consumer: Consumer) -> None:
        if self.sub_type is SubType.EXCLUSIVE and self.consumers:
            raise ConsumerBusy(
                f"subscription {self.subscription.name} is Exclusive and already has consumer"
                f" {self.consumers[0].consumer_name!r}; use a Failover or Shared subscription to attach"
                " several consumers", subscription=self.subscription.name)
        self.consumers.append(consumer)
        if not self._update_active() and self.sub_type is SubType.FAILOVER:
            consumer.notify_active(consumer is self.active)
        self.dispatch()

    def remove_consumer(self, consumer: Consumer) -> None:
        if consumer not in self.consumers:
            return
        self.consumers.remove(consumer)
        if consumer is self.active:
            self.drop_pending(consumer)
        else:
            consumer.pending.clear()
        self._update_active()
        self.dispatch()

    def redeliver_unacknowledged(self, consumer: Consumer) -> None:
        if consumer is not self.active:
            return
        self.drop_pending(consumer)
        self._rewind(self.subscription.first_unacked_offset())
        self.dispatch()

    def on_seek(self, offset: int) -> None:
        self._rewind(offset)
        self.dispatch()

    def send(self, consumer: Consumer, deliveries: list[Delivery]) -> None:
        super().send(consumer, deliveries)
        over = len(consumer.pending) - MAX_TRACKED_ENTRIES
        if over > 0:
            consumer.pending.forget_oldest(over)

    def close(self) -> None:
        self.active = None
        super().close()

    def _update_active(self) -> bool:
        """Re-pick the active consumer; returns True when it changed (and rewinds, notifies)."""
        new = pick_active(self.consumers, self.subscription.partition_index, self.subscription.topic)
        old = self.active
        if new is old:
            return False
        self.active = new
        if old is not None:
            self.drop_pending(old)
        self._rewind(self.subscription.first_unacked_offset())
        log.debug("event=active_consumer_changed subscription=%s old=%s new=%s read_offset=%d",
                  self.subscription.name, getattr(old, "consumer_name", None), getattr(new, "consumer_name", None),
                  self.read_offset)
        if self.sub_type is SubType.FAILOVER:
            for c in list(self.consumers):
                c.notify_active(c is new)
        return True

    def _rewind(self, offset: int) -> None:
        self.read_offset = offset
        self._epoch += 1

    def _dispatch_rounds(self) -> None:
        sub = self.subscription
        source = sub.source
        max_bytes = sub.max_delivery_bytes
        while True:
            consumer = self.active
            if consumer is None or consumer.permits <= 0 or sub.closed:
                return
            end = source.durable_end_offset
            if self.read_offset < source.start_offset:
                self.read_offset = source.start_offset
            if self.read_offset >= end:
                return
            budget = self.read_budget()
            if budget is None:
                return  # a dispatch rate's budget is spent: dispatch resumes when it renews
            entries = source.read(self.read_offset, budget[0], budget[1], end)
            if not entries:
                return
            epoch = self._epoch
            batch: list[Delivery] = []
            nbytes = 0
            for entry in entries:
                if consumer.permits <= 0 or entry.offset >= end:
                    break
                delivery = self.prepare(entry)
                if delivery is not None:
                    size = len(entry.data)
                    if batch and nbytes + size > max_bytes:
                        self.send(consumer, batch)
                        if self._epoch != epoch or consumer is not self.active:
                            return  # the sink rewound or changed consumers; dispatch() goes again
                        batch = []
                        nbytes = 0
                    batch.append(delivery)
                    nbytes += size
                    consumer.permits -= delivery.messages
                self.read_offset = entry.end_offset
            if batch:
                self.send(consumer, batch)
                if self._epoch != epoch:
                    return
