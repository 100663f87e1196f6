"""Key_Shared: like Shared, but all messages of one key go to one consumer (seed "Key_Shared").

An entry's *sticky key* is its ordering key, else its partition key, else ``NONE_KEY`` (a key-based batch
carries its key in the entry metadata; with default batching a batch goes by the batch metadata's key,
which is why Key_Shared producers should use key-based batching or none). The key's hash picks the
consumer through a selector (:mod:`dispatch.selectors`):

- ``AUTO_SPLIT`` (default): hash ranges split as consumers join
  (:class:`~dispatch.selectors.HashRangeAutoSplitSelector`), or a consistent-hashing ring when the broker
  sets ``subscriptionKeySharedUseConsistentHashing``;
- ``STICKY``: each consumer brings its ranges (:class:`~dispatch.selectors.HashRangeExclusiveSelector`);
  missing or overlapping ranges are refused with ``ConsumerAssignError``.

**Ordering** (Pulsar 4.0, PIP-379). An entry waits (joins the replay set) when its consumer has no
permits or holds too many unacknowledged messages, when a hash range gap leaves it without a consumer
(STICKY), or when its hash is *draining*: the hash moved to another consumer while the previous one still
holds unacknowledged messages of it (:class:`~dispatch.draining.DrainingHashesTracker`). Once one entry
of a hash waits, every later entry of that hash waits behind it, so a key's messages leave in order; other
hashes keep flowing. ``allow_out_of_order_delivery`` turns both draining and this queueing off.

Reading ahead while entries wait is bounded (``lookahead``, Pulsar's
``keySharedLookAheadMsgInReplayThresholdPerSubscription``): beyond it, new entries are read only once the
waiting ones leave.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from broker_core.errors import ConsumerBusy
from broker_core.protocol.entry import read_metadata
from dispatch.consumer import Consumer
from dispatch.draining import DrainingHashesTracker
from dispatch.selectors import (ConsistentHashingSelector, HashRangeAutoSplitSelector,
                                HashRangeExclusiveSelector, StickyKeyConsumerSelector)
from dispatch.shared import STUCK, SharedDispatcher
from dispatch.sticky_key import sticky_key_of
from dispatch.types import SubType

if TYPE_CHECKING:
    from broker_core.storage.stored_entry import StoredEntry
    from dispatch.subscription import Subscription

AUTO_SPLIT, STICKY = "AUTO_SPLIT", "STICKY"
LOOKAHEAD = 20_000
"""Most entries waiting in the replay set before new entries stop being read (Pulsar's
``keySharedLookAheadMsgInReplayThresholdPerSubscription``)..."""
LOOKAHEAD_PER_CONSUMER = 2_000
"""... and per consumer (``keySharedLookAheadMsgInReplayThresholdPerConsumer``)."""


@dataclass(frozen=True)
class KeySharedPolicy:
    """A Key_Shared consumer's wishes (``ConsumerKeySharedPolicy`` on the client)."""

    mode: str = AUTO_SPLIT
    allow_out_of_order_delivery: bool = False
    sticky_ranges: tuple[tuple[int, int], ...] = field(default=())


def make_selector(policy: KeySharedPolicy, consistent_hashing: bool) -> StickyKeyConsumerSelector:
    """The selector of a Key_Shared subscription: STICKY ranges, else AUTO_SPLIT by hash ranges or (broker
    ``subscriptionKeySharedUseConsistentHashing``) a consistent-hashing ring."""
    if policy.mode == STICKY:
        return HashRangeExclusiveSelector()
    if consistent_hashing:
        return ConsistentHashingSelector()
    return HashRangeAutoSplitSelector()


def entry_hash_key(entry: "StoredEntry") -> bytes:
    metadata = read_metadata(entry.data)
    return sticky_key_of(metadata)


class KeySharedDispatcher(SharedDispatcher):
    def __init__(self, subscription: "Subscription", policy: KeySharedPolicy,
                 consistent_hashing: bool = False) -> None:
        super().__init__(subscription, SubType.KEY_SHARED)
        self.policy = policy
        self.selector = make_selector(policy, consistent_hashing)
        self.draining = DrainingHashesTracker()
        self._ordered = not policy.allow_out_of_order_delivery
        self._drains = self._ordered and policy.mode == AUTO_SPLIT
        self._hashes: dict[int, int] = {}  # entry offset -> sticky key hash (entries pending or waiting)
        self._holder: dict[int, Consumer] = {}  # entry offset -> the consumer holding it unacked
        self._waiting_hashes: set[int] = set()  # hashes with an entry left waiting in this pass
        self._replay_hashes: dict[int, int] = {}  # hash -> entries of it in the replay set
        self._replay_hash_of: dict[int, int] = {}  # replay entry offset -> its counted hash
        self._replay_owner: dict[int, Consumer] = {}
        """Waiting entry -> the consumer it waits on for room (cleared when consumers come or go)."""

    # -- membership ----------------------------------------------------------------------------------

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
            changes = self.selector.add_consumer(consumer, policy.sticky_ranges)  # ConsumerAssignError
        else:
            changes = self.selector.add_consumer(consumer)
        if self._drains:
            self.draining.owners_changed(changes, skip=consumer)
        self._replay_owner.clear()
        super().add_consumer(consumer)

    def remove_consumer(self, consumer: Consumer) -> None:
        if consumer not in self.consumers:
            return
        self.consumers.remove(consumer)
        self._blocked.discard(consumer)
        self._return_pending(consumer, None)
        self.draining.consumer_removed(consumer)
        changes = self.selector.remove_consumer(consumer)
        self._replay_owner.clear()
        if self._drains:
            self.draining.owners_changed(changes, skip=consumer)
        if not self.consumers:
            self.draining.clear()
        self.dispatch()

    def entries_returned(self, consumer: Consumer, starts: list[int]) -> None:
        for s in starts:
            self._release(consumer, s)

    def entries_done(self, consumer: Consumer, starts: list[int]) -> None:
        """The entries at ``starts`` were fully acknowledged by ``consumer``."""
        for s in starts:
            self._release(consumer, s)
            self._hashes.pop(s, None)

    def _release(self, consumer: Consumer, start: int) -> None:
        holder = self._holder.pop(start, None)
        h = self._hashes.get(start)
        if holder is not None and h is not None and self.draining.remove_entry(holder, h, 1):
            self._wake = True  # a hash that held entries back is free

    def _replay_add(self, offset: int, entry: "StoredEntry | None" = None) -> None:
        super()._replay_add(offset, entry)
        h = self._hashes.get(offset)
        if h is None and entry is not None:
            h = self._hashes[offset] = self.selector.make_hash(entry_hash_key(entry))
        if h is not None and offset not in self._replay_hash_of:
            self._replay_hash_of[offset] = h
            self._replay_hashes[h] = self._replay_hashes.get(h, 0) + 1

    def waits_for_permits(self, offset: int) -> bool:
        owner = self._replay_owner.get(offset)
        return owner is not None and owner not in self._ready

    def _replay_remove(self, offset: int) -> None:
        super()._replay_remove(offset)
        self._replay_owner.pop(offset, None)
        h = self._replay_hash_of.pop(offset, None)
        if h is not None:
            left = self._replay_hashes[h] - 1
            if left:
                self._replay_hashes[h] = left
            else:
                del self._replay_hashes[h]
        if offset not in self._holder:
            self._hashes.pop(offset, None)

    def on_seek(self, offset: int) -> None:
        self._hashes.clear()
        self._holder.clear()
        self._replay_hashes.clear()
        self._replay_hash_of.clear()
        self._replay_owner.clear()
        self.draining.clear()
        super().on_seek(offset)

    # -- choosing ----------------------------------------------------------------------------------------

    def may_read_ahead(self) -> bool:
        return len(self._replay_entries) < min(LOOKAHEAD, LOOKAHEAD_PER_CONSUMER * max(1, len(self.consumers)))

    def _dispatch_rounds(self) -> None:
        self._waiting_hashes.clear()  # as long as the replay scan: one dispatch
        super()._dispatch_rounds()

    def _available(self) -> list[Consumer]:
        """Every consumer with room: a key's consumer is fixed by its hash, priorities do not apply."""
        return [c for c in self.consumers if c.permits > 0 and not self._is_blocked(c)]

    def choose(self, entry: "StoredEntry", replay: bool) -> Any:
        if not self._ready:
            return None
        h = self._hashes.get(entry.offset)
        if h is None:
            h = self._hashes[entry.offset] = self.selector.make_hash(entry_hash_key(entry))
        # A key's entries leave in offset order: behind one still waiting (this pass, or anywhere in the
        # replay set for a new entry), the others wait too.
        if self._ordered and (h in self._waiting_hashes or (not replay and h in self._replay_hashes)):
            self._waiting_hashes.add(h)
            consumer = self.selector.select(h)
            if consumer is not None and consumer not in self._ready:
                # it waits for that consumer's room too: skipped without a look until it has some (the
                # entries of a key behind a full consumer were most of the replay set's scans)
                self._replay_owner[entry.offset] = consumer
            return STUCK
        consumer = self.selector.select(h)
        if consumer is not None and consumer not in self._ready:
            self._replay_owner[entry.offset] = consumer  # looked at again once it has room
            self._waiting_hashes.add(h)
            return STUCK
        if consumer is None or (self._drains and self.draining.should_block(consumer, h)):
            self._waiting_hashes.add(h)
            return STUCK
        return consumer

    def assigned(self, consumer: Consumer, entry: "StoredEntry") -> None:
        self._holder[entry.offset] = consumer
        self.draining.add_entry(consumer, self._hashes[entry.offset], 1)

    # -- stats -------------------------------------------------------------------------------------------

    def consumer_stats(self, consumer: Consumer) -> dict[str, object]:
        stats = super().consumer_stats(consumer)
        ranges = self.selector.key_hash_ranges().get(consumer, [])
        stats["keyHashRangeArrays"] = [[s, e] for s, e in ranges]
        stats.update(self.draining.stats(consumer))
        return stats

    def stats(self) -> dict[str, object]:
        stats = super().stats()
        stats["keySharedMode"] = self.policy.mode
        stats["allowOutOfOrderDelivery"] = self.policy.allow_out_of_order_delivery
        return stats
