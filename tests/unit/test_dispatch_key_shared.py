"""Key_Shared subscriptions (seed "Key_Shared", Pulsar 4.0 ordering): one consumer per key, draining
hashes when a consumer joins while another holds unacknowledged messages of a moved key, STICKY ranges."""
import pytest

from broker_core.errors import ConsumerAssignError, ConsumerBusy
from dispatch import Subscription, SubType
from dispatch.key_shared import STICKY, KeySharedPolicy
from dispatch.selectors import HashRangeAutoSplitSelector
from dispatch.sticky_key import NON_KEY
from dispatch.testing import MemoryEntrySource, RecordingConsumer, entry_bytes, make_cursor

HASH = HashRangeAutoSplitSelector().make_hash


def key_with_hash(low: bool) -> str:
    """A key whose AUTO_SPLIT hash lies in the lower (0..32768) or upper half."""
    for i in range(1000):
        key = f"key-{i}"
        if (HASH(key.encode()) <= 32768) == low:
            return key
    raise AssertionError("no key found")


LOW, HIGH = key_with_hash(True), key_with_hash(False)


def make_sub():
    source = MemoryEntrySource()
    return Subscription("sub", "persistent://public/default/t", -1, source, make_cursor()), source


def add(source, *keys):
    return [source.append(1, entry_bytes(key)).offset for key in keys]


def test_messages_of_one_key_go_to_one_consumer():
    sub, source = make_sub()
    c1, c2 = RecordingConsumer(1, permits=100), RecordingConsumer(2, permits=100)
    sub.add_consumer(c1, SubType.KEY_SHARED)
    sub.add_consumer(c2, SubType.KEY_SHARED)  # c2: 0..32768, c1: 32769..65536
    add(source, LOW, HIGH, LOW, HIGH, LOW)
    sub.on_new_entries()
    assert c2.received() == [0, 2, 4] and c1.received() == [1, 3]


def test_keyless_messages_share_the_none_key():
    sub, source = make_sub()
    c1, c2 = RecordingConsumer(1, permits=100), RecordingConsumer(2, permits=100)
    sub.add_consumer(c1, SubType.KEY_SHARED)
    sub.add_consumer(c2, SubType.KEY_SHARED)
    add(source, None, None, None)
    sub.on_new_entries()
    owner = c2 if HASH(NON_KEY) <= 32768 else c1
    assert owner.received() == [0, 1, 2]


def test_a_consumer_without_permits_holds_back_only_its_keys():
    sub, source = make_sub()
    c1, c2 = RecordingConsumer(1, permits=100), RecordingConsumer(2, permits=1)
    sub.add_consumer(c1, SubType.KEY_SHARED)
    sub.add_consumer(c2, SubType.KEY_SHARED)
    add(source, LOW, LOW, HIGH, LOW, HIGH)
    sub.on_new_entries()
    assert c2.take() == [0] and c1.take() == [2, 4]
    sub.flow(c2, 10)
    assert c2.take() == [1, 3]  # in order


def test_new_consumer_gets_nothing_for_a_moved_key_until_the_old_owner_acks():
    """Issue 4: a consumer joins while the first holds unacked messages of a key it takes over."""
    sub, source = make_sub()
    c1 = RecordingConsumer(1, permits=100)
    sub.add_consumer(c1, SubType.KEY_SHARED)
    add(source, LOW, LOW)
    sub.on_new_entries()
    assert c1.take() == [0, 1]
    c2 = RecordingConsumer(2, permits=100)
    sub.add_consumer(c2, SubType.KEY_SHARED)  # takes 0..32768: LOW moves to c2 and drains on c1
    add(source, LOW, HIGH, LOW)
    sub.on_new_entries()
    assert c2.take() == [] and c1.take() == [3]  # HIGH still flows to c1; LOW waits
    stats = {c["consumerName"]: c for c in sub.stats()["consumers"]}
    assert stats["c1"]["drainingHashesCount"] == 1
    assert stats["c1"]["drainingHashes"][0]["hash"] == HASH(LOW.encode())
    assert stats["c1"]["drainingHashes"][0]["unackMsgs"] == 2
    assert stats["c1"]["drainingHashes"][0]["blockedAttempts"] >= 1
    assert stats["c2"]["keyHashRangeArrays"] == [[0, 32768]]
    sub.acknowledge(c1, [(0, 1)])
    assert c2.take() == []  # one still unacked on c1
    sub.acknowledge(c1, [(1, 2)])
    assert c2.take() == [2, 4]  # in order
    stats = {c["consumerName"]: c for c in sub.stats()["consumers"]}
    assert stats["c1"]["drainingHashesCount"] == 0 and stats["c1"]["drainingHashesClearedTotal"] == 1


def test_a_moved_key_goes_over_when_the_old_owner_leaves_unacked_first():
    sub, source = make_sub()
    c1 = RecordingConsumer(1, permits=100)
    sub.add_consumer(c1, SubType.KEY_SHARED)
    add(source, LOW, LOW)
    sub.on_new_entries()
    c1.take()
    c2 = RecordingConsumer(2, permits=100)
    sub.add_consumer(c2, SubType.KEY_SHARED)
    add(source, LOW)
    sub.on_new_entries()
    assert c2.take() == []
    sub.remove_consumer(c1)
    assert c2.take() == [0, 1, 2]  # the returned ones first, then the waiting one: the key's order


def test_allow_out_of_order_delivery_does_not_drain():
    sub, source = make_sub()
    policy = KeySharedPolicy(allow_out_of_order_delivery=True)
    c1 = RecordingConsumer(1, permits=100, key_shared=policy)
    sub.add_consumer(c1, SubType.KEY_SHARED)
    add(source, LOW)
    sub.on_new_entries()
    c2 = RecordingConsumer(2, permits=100, key_shared=policy)
    sub.add_consumer(c2, SubType.KEY_SHARED)
    add(source, LOW)
    sub.on_new_entries()
    assert c2.take() == [1]


def test_sticky_ranges_route_by_the_consumers_own_ranges():
    sub, source = make_sub()
    c1 = RecordingConsumer(1, permits=100, key_shared=KeySharedPolicy(STICKY, sticky_ranges=((0, 32768),)))
    c2 = RecordingConsumer(2, permits=100, key_shared=KeySharedPolicy(STICKY, sticky_ranges=((32769, 65535),)))
    sub.add_consumer(c1, SubType.KEY_SHARED)
    sub.add_consumer(c2, SubType.KEY_SHARED)
    add(source, LOW, HIGH)
    sub.on_new_entries()
    assert c1.received() == [0] and c2.received() == [1]


def test_overlapping_sticky_ranges_are_refused_and_the_consumer_is_not_added():
    sub, _ = make_sub()
    c1 = RecordingConsumer(1, key_shared=KeySharedPolicy(STICKY, sticky_ranges=((0, 100),)))
    sub.add_consumer(c1, SubType.KEY_SHARED)
    c2 = RecordingConsumer(2, key_shared=KeySharedPolicy(STICKY, sticky_ranges=((50, 200),)))
    with pytest.raises(ConsumerAssignError):
        sub.add_consumer(c2, SubType.KEY_SHARED)
    c3 = RecordingConsumer(3, key_shared=KeySharedPolicy(STICKY, sticky_ranges=((60000, 70000),)))
    with pytest.raises(ConsumerAssignError):
        sub.add_consumer(c3, SubType.KEY_SHARED)
    assert sub.consumers == [c1]


def test_a_hash_in_no_sticky_range_waits():
    sub, source = make_sub()
    c1 = RecordingConsumer(1, permits=100, key_shared=KeySharedPolicy(STICKY, sticky_ranges=((0, 10),)))
    sub.add_consumer(c1, SubType.KEY_SHARED)
    add(source, HIGH)
    sub.on_new_entries()
    assert c1.received() == [] and sub.stats()["msgInReplay"] == 1


def test_a_consumer_asking_for_another_key_shared_mode_is_refused():
    sub, _ = make_sub()
    sub.add_consumer(RecordingConsumer(1), SubType.KEY_SHARED)
    other = RecordingConsumer(2, key_shared=KeySharedPolicy(STICKY, sticky_ranges=((0, 10),)))
    with pytest.raises(ConsumerBusy, match="AUTO_SPLIT"):
        sub.add_consumer(other, SubType.KEY_SHARED)


def test_a_subscription_with_consumers_cannot_change_type():
    sub, _ = make_sub()
    sub.add_consumer(RecordingConsumer(1), SubType.SHARED)
    with pytest.raises(ConsumerBusy):
        sub.add_consumer(RecordingConsumer(2), SubType.KEY_SHARED)


def test_a_keys_order_holds_when_more_entries_wait_than_one_read_holds():
    source = MemoryEntrySource()
    sub = Subscription("sub", "persistent://public/default/t", -1, source, make_cursor(), max_read_entries=10)
    c1, c2 = RecordingConsumer(1, permits=100), RecordingConsumer(2, permits=0)
    sub.add_consumer(c1, SubType.KEY_SHARED)
    sub.add_consumer(c2, SubType.KEY_SHARED)
    add(source, *[LOW] * 30)
    sub.on_new_entries()
    assert c2.received() == [] and sub.stats()["msgInReplay"] == 30
    sub.flow(c2, 5)
    assert c2.take() == [0, 1, 2, 3, 4]
    add(source, *[LOW] * 10, HIGH)  # new entries of a waiting key queue behind the waiting ones
    sub.on_new_entries()
    assert c2.take() == [] and c1.take() == [40]
    sub.flow(c2, 100)
    assert c2.take() == list(range(5, 40))


def test_entries_of_a_key_waiting_behind_a_full_consumer_are_not_looked_at_until_it_has_room():
    """Issue 35: every entry of a key queued behind its full consumer's first one waits for that consumer's
    room too, so a dispatch for another consumer skips them without deciding them again."""
    sub, source = make_sub()
    c1, c2 = RecordingConsumer(1, permits=100), RecordingConsumer(2, permits=0)
    sub.add_consumer(c1, SubType.KEY_SHARED)
    sub.add_consumer(c2, SubType.KEY_SHARED)  # c2 holds the LOW keys, and has no room
    add(source, *[LOW] * 20)
    sub.on_new_entries()
    dispatcher = sub._dispatcher
    looked_at = []
    choose = dispatcher.choose
    dispatcher.choose = lambda entry, replay: looked_at.append(entry.offset) or choose(entry, replay)
    add(source, HIGH)
    sub.on_new_entries()
    assert c1.take() == [20] and looked_at == [20]
    sub.flow(c2, 100)
    assert c2.take() == list(range(20))
