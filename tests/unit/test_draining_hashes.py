"""Key_Shared ordering by key with draining hashes (seed 003: "Preserving order of message delivery by
key", Pulsar 4.0 / PIP-379; issue 4 item 2)."""
from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from dispatch.draining import DrainingHashesTracker, PendingHashes
from dispatch.selectors import (
    ConsistentHashingSelector,
    HashRangeAutoSplitSelector,
    OwnerChange,
    StickyKeyConsumerSelector,
)


class C:
    """A stand-in consumer: identity-hashed, with a name."""

    def __init__(self, name: str) -> None:
        self.consumer_name = name

    def __repr__(self) -> str:
        return self.consumer_name


K = b"Order-3459134"  # hash 6067: in the half an AUTO_SPLIT newcomer takes
STAYS = b"key-0"  # hash 63679: stays with the first consumer when a second joins


@dataclass
class Msg:
    offset: int
    key: bytes
    hash: int


@dataclass
class KeySharedModel:
    """The dispatcher protocol of dispatch.draining in miniature: entries in offset order, one hash each;
    a hash held back once is held back for the rest of the pass, so order by key is kept."""

    selector: StickyKeyConsumerSelector = field(default_factory=HashRangeAutoSplitSelector)
    tracker: DrainingHashesTracker = field(default_factory=DrainingHashesTracker)
    waiting: list[Msg] = field(default_factory=list)
    unacked: dict[C, list[Msg]] = field(default_factory=dict)
    received: dict[C, list[tuple[bytes, int]]] = field(default_factory=dict)
    next_offset: int = 0

    def join(self, consumer: C) -> None:
        self.unacked[consumer], self.received[consumer] = [], []
        self.tracker.owners_changed(self.selector.add_consumer(consumer), skip=consumer)

    def leave(self, consumer: C) -> None:
        changes = self.selector.remove_consumer(consumer)
        self.tracker.consumer_removed(consumer)
        self.waiting = sorted(self.waiting + self.unacked.pop(consumer), key=lambda m: m.offset)
        self.tracker.owners_changed(changes, skip=consumer)

    def publish(self, key: bytes, count: int = 1) -> None:
        for _ in range(count):
            self.waiting.append(Msg(self.next_offset, key, self.selector.make_hash(key)))
            self.next_offset += 1

    def dispatch(self) -> None:
        held: set[int] = set()
        for msg in list(self.waiting):
            if msg.hash in held:
                continue
            owner = self.selector.select(msg.hash)
            if owner is None or self.tracker.should_block(owner, msg.hash):
                held.add(msg.hash)
                continue
            self.tracker.add_entry(owner, msg.hash)
            self.waiting.remove(msg)
            self.unacked[owner].append(msg)
            self.received[owner].append((msg.key, msg.offset))

    def ack_all(self, consumer: C, key: bytes | None = None) -> bool:
        unblocked = False
        for msg in [m for m in self.unacked[consumer] if key is None or m.key == key]:
            self.unacked[consumer].remove(msg)
            unblocked |= self.tracker.remove_entry(consumer, msg.hash)
        return unblocked


def test_new_consumer_gets_nothing_for_a_key_until_the_first_consumer_acks_it_then_in_order() -> None:
    model, c1, c2 = KeySharedModel(), C("c1"), C("c2")
    model.join(c1)
    model.publish(K, 2)
    model.dispatch()
    assert model.received[c1] == [(K, 0), (K, 1)]
    model.join(c2)  # takes 0..32768, K's hash among them
    assert model.selector.select(model.selector.make_hash(K)) is c2
    model.publish(K, 3)
    model.dispatch()
    model.dispatch()
    assert model.received[c2] == []
    assert model.ack_all(c1) is True
    model.dispatch()
    assert model.received[c2] == [(K, 2), (K, 3), (K, 4)]


def test_new_consumer_gets_the_key_when_the_first_consumer_leaves_redeliveries_first() -> None:
    model, c1, c2 = KeySharedModel(), C("c1"), C("c2")
    model.join(c1)
    model.publish(K, 2)
    model.dispatch()
    model.join(c2)
    model.publish(K, 2)
    model.dispatch()
    assert model.received[c2] == []
    model.leave(c1)
    model.dispatch()
    assert model.received[c2] == [(K, 0), (K, 1), (K, 2), (K, 3)]


def test_hashes_whose_owner_did_not_change_are_never_blocked() -> None:
    model, c1, c2 = KeySharedModel(), C("c1"), C("c2")
    model.join(c1)
    model.publish(K)
    model.publish(STAYS)
    model.dispatch()
    model.join(c2)
    model.publish(STAYS, 2)
    model.publish(K)
    model.dispatch()
    assert model.received[c1] == [(K, 0), (STAYS, 1), (STAYS, 2), (STAYS, 3)]
    assert model.tracker.stats(c1)["drainingHashes"] == [
        {"hash": model.selector.make_hash(K), "unackMsgs": 1, "blockedAttempts": 1}]


def test_a_moved_hash_without_unacked_messages_goes_to_its_new_owner_at_once() -> None:
    model, c1, c2 = KeySharedModel(), C("c1"), C("c2")
    model.join(c1)
    model.publish(K)
    model.dispatch()
    model.ack_all(c1)
    model.join(c2)
    assert len(model.tracker) == 0
    model.publish(K)
    model.dispatch()
    assert model.received[c2] == [(K, 1)]


def test_only_the_draining_hash_waits_other_keys_of_the_new_owner_flow() -> None:
    model, c1, c2 = KeySharedModel(), C("c1"), C("c2")
    model.join(c1)
    model.publish(K)
    model.dispatch()
    model.join(c2)
    other = b"key-1"  # hash 5536: also moved to c2, but c1 held nothing of it
    model.publish(K)
    model.publish(other)
    model.dispatch()
    assert model.received[c2] == [(other, 2)]


def test_draining_stats_have_the_seeds_fields() -> None:
    model, c1, c2 = KeySharedModel(), C("c1"), C("c2")
    model.join(c1)
    model.publish(K, 2)
    model.dispatch()
    model.join(c2)
    model.publish(K)
    for _ in range(3):
        model.dispatch()
    h = model.selector.make_hash(K)
    assert model.tracker.stats(c1) == {
        "drainingHashesCount": 1,
        "drainingHashesClearedTotal": 0,
        "drainingHashesUnackedMessages": 2,
        "drainingHashes": [{"hash": h, "unackMsgs": 2, "blockedAttempts": 3}],
    }
    assert model.tracker.stats(c2)["drainingHashesCount"] == 0
    model.ack_all(c1)
    assert model.tracker.stats(c1) == {"drainingHashesCount": 0, "drainingHashesClearedTotal": 1,
                                       "drainingHashesUnackedMessages": 0, "drainingHashes": []}


def test_a_partial_ack_keeps_the_hash_draining() -> None:
    tracker, c1, c2 = DrainingHashesTracker(), C("c1"), C("c2")
    tracker.add_entry(c1, 7, messages=10)  # a key-based batch of 10 messages: one hash
    tracker.owners_changed([OwnerChange(0, 100, c1, c2)])
    assert tracker.remove_entry(c1, 7, messages=4) is False
    assert tracker.should_block(c2, 7)
    assert tracker.stats(c1)["drainingHashesUnackedMessages"] == 6
    assert tracker.remove_entry(c1, 7, messages=6) is True
    assert not tracker.should_block(c2, 7)


def test_remove_entry_reports_unblocking_only_if_the_hash_blocked_something() -> None:
    tracker, c1, c2 = DrainingHashesTracker(), C("c1"), C("c2")
    tracker.add_entry(c1, 7)
    tracker.add_entry(c1, 8)
    assert tracker.owners_changed([OwnerChange(0, 100, c1, c2)]) == [7, 8]
    assert tracker.should_block(c2, 8)
    assert tracker.remove_entry(c1, 7) is False  # drained, but nobody was waiting for it
    assert tracker.remove_entry(c1, 8) is True
    assert tracker.stats(c1)["drainingHashesClearedTotal"] == 2


def test_a_hash_that_moves_back_to_its_draining_consumer_stops_draining() -> None:
    model, c1, c2 = KeySharedModel(), C("c1"), C("c2")
    model.join(c1)
    model.publish(K)
    model.dispatch()
    model.join(c2)
    model.publish(K)
    model.dispatch()
    model.leave(c2)  # K's hash is c1's again, c1 still holding K's first message
    model.dispatch()
    assert model.received[c1] == [(K, 0), (K, 1)]
    assert len(model.tracker) == 0
    assert model.tracker.stats(c1)["drainingHashesClearedTotal"] == 1


def test_releasing_a_consumers_unacked_messages_clears_its_draining_hashes() -> None:
    tracker, c1, c2 = DrainingHashesTracker(), C("c1"), C("c2")
    tracker.add_entry(c1, 7, 3)
    tracker.add_entry(c1, 9, 1)
    tracker.owners_changed([OwnerChange(0, 100, c1, c2)])
    tracker.should_block(c2, 9)
    assert tracker.release_consumer(c1) == [9]
    assert len(tracker) == 0 and tracker.pending.hashes(c1) == {}
    assert tracker.stats(c1)["drainingHashesClearedTotal"] == 2
    tracker.consumer_removed(c1)
    assert tracker.stats(c1)["drainingHashesClearedTotal"] == 0


def test_the_joining_or_leaving_consumer_itself_is_skipped() -> None:
    tracker, c1, c2 = DrainingHashesTracker(), C("c1"), C("c2")
    tracker.add_entry(c1, 7)
    assert tracker.owners_changed([OwnerChange(0, 100, c1, c2)], skip=c1) == []
    assert not tracker.is_draining(7)


def test_only_hashes_inside_the_lost_ranges_start_draining() -> None:
    tracker, c1, c2 = DrainingHashesTracker(), C("c1"), C("c2")
    for h in (5, 10, 11, 50, 60, 61):
        tracker.add_entry(c1, h)
    changes = [OwnerChange(10, 50, c1, c2), OwnerChange(60, 60, c1, None), OwnerChange(70, 80, None, c2)]
    assert tracker.owners_changed(changes) == [10, 11, 50, 60]
    assert tracker.draining_consumer(10) is c1 and tracker.draining_consumer(5) is None


def test_dispatching_a_draining_hash_to_another_consumer_is_a_dispatcher_bug() -> None:
    tracker, c1, c2 = DrainingHashesTracker(), C("c1"), C("c2")
    tracker.add_entry(c1, 7)
    tracker.owners_changed([OwnerChange(0, 100, c1, c2)])
    with pytest.raises(ValueError, match="draining on consumer 'c1'"):
        tracker.add_entry(c2, 7)
    tracker.add_entry(c1, 7)  # the draining consumer itself (a redelivery) is fine
    assert tracker.stats(c1)["drainingHashesUnackedMessages"] == 2


def test_a_hash_already_draining_elsewhere_is_not_drained_twice() -> None:
    tracker, c1, c2, c3 = DrainingHashesTracker(), C("c1"), C("c2"), C("c3")
    tracker.add_entry(c1, 7)
    tracker.owners_changed([OwnerChange(0, 100, c1, c2)])
    tracker.pending.add(c3, 7)  # only possible if a dispatcher broke the invariant
    assert tracker.start_draining(7, c3) is False
    assert tracker.draining_consumer(7) is c1


def test_with_consistent_hashing_a_newcomer_drains_exactly_the_pending_hashes_it_took() -> None:
    selector, tracker = ConsistentHashingSelector(), DrainingHashesTracker()
    old = [C(f"consumer-{i}") for i in range(4)]
    for c in old:
        selector.add_consumer(c)
    for i in range(2000):
        h = selector.make_hash(f"key-{i}".encode())
        tracker.add_entry(selector.select(h), h)
    before = {c: set(tracker.pending.hashes(c)) for c in old}
    newcomer = C("newcomer")
    started = tracker.owners_changed(selector.add_consumer(newcomer), skip=newcomer)
    moved = {h for hs in before.values() for h in hs if selector.select(h) is newcomer}
    assert started == sorted(moved) and 0 < len(moved) < 2000 * 0.4
    for c in old:
        for h in before[c]:
            assert tracker.should_block(newcomer, h) == (h in moved)
            assert not tracker.should_block(c, h) or h in moved


def test_clear_forgets_everything() -> None:
    tracker, c1, c2 = DrainingHashesTracker(), C("c1"), C("c2")
    tracker.add_entry(c1, 7)
    tracker.owners_changed([OwnerChange(0, 100, c1, c2)])
    tracker.clear()
    assert len(tracker) == 0 and tracker.pending.count(c1, 7) == 0 and not tracker.should_block(c2, 7)


def test_pending_hashes_count_per_consumer_and_never_go_negative() -> None:
    pending, c1, c2 = PendingHashes(), C("c1"), C("c2")
    pending.add(c1, 7, 3)
    pending.add(c2, 7)
    assert pending.remove(c1, 7, 2) == 1
    assert pending.remove(c1, 7, 5) == 0 and pending.count(c1, 7) == 0
    assert pending.remove(C("unknown"), 7) == 0
    assert pending.hashes(c2) == {7: 1}
    assert pending.pop(c2) == {7: 1} and pending.hashes(c2) == {}
