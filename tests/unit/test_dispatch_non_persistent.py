"""Non-persistent subscriptions (seed "Non-persistent topics"): entries go at once to connected consumers
with permits or are dropped and counted; the four subscription types choose consumers as persistent ones
do; acknowledgments, redelivery and seeks change nothing."""
import pytest

from broker_core.errors import ConsumerAssignError, ConsumerBusy, CumulativeAcknowledgementNotAllowedError
from broker_core.storage.stored_entry import StoredEntry
from dispatch.key_shared import STICKY, KeySharedPolicy
from dispatch.non_persistent import NonPersistentSubscription
from dispatch.sticky_key import sticky_key_hash
from dispatch.testing import RecordingConsumer, entry_bytes
from dispatch.types import SubType


class Publisher:
    """Hands entries with dense offsets to subscriptions, as the topic does."""

    def __init__(self):
        self.next_offset = 0

    def entries(self, count=1, *, num_messages=1, key=None):
        out = []
        for _ in range(count):
            out.append(StoredEntry(self.next_offset, num_messages, 0, 0, entry_bytes(key, num_messages=num_messages)))
            self.next_offset += num_messages
        return out


def make_sub(name="sub", partition_index=-1, **kwargs):
    return NonPersistentSubscription(name, "non-persistent://public/default/t", partition_index, **kwargs)


def key_with_hash(low: bool) -> str:
    """A key whose AUTO_SPLIT hash lies in the lower (0..32768) or upper half."""
    for i in range(1000):
        key = f"key-{i}"
        if (sticky_key_hash(key.encode()) <= 32768) == low:
            return key
    raise AssertionError("no key found")


LOW, HIGH = key_with_hash(True), key_with_hash(False)


# -- delivery and drops ---------------------------------------------------------------------------------

def test_entries_without_any_consumer_are_dropped_and_counted():
    sub, pub = make_sub(), Publisher()
    assert sub.deliver(pub.entries(3, num_messages=2)) == 6
    assert sub.stats()["msgDropCount"] == 6 and sub.stats()["msgOutCounter"] == 0


def test_a_consumer_gets_only_entries_published_while_it_is_connected():
    sub, pub = make_sub(), Publisher()
    sub.deliver(pub.entries(2))
    c = RecordingConsumer(1, permits=10)
    sub.add_consumer(c, SubType.EXCLUSIVE)
    sub.deliver(pub.entries(2))
    assert c.received() == [2, 3]


def test_a_consumer_without_permits_drops_and_later_permits_bring_nothing_back():
    sub, pub = make_sub(), Publisher()
    c = RecordingConsumer(1, permits=2)
    sub.add_consumer(c, SubType.EXCLUSIVE)
    assert sub.deliver(pub.entries(5)) == 3
    assert c.received() == [0, 1]
    sub.flow(c, 10)
    assert c.received() == [0, 1]
    sub.deliver(pub.entries(1))
    assert c.received() == [0, 1, 5]
    stats = sub.stats()
    assert stats["msgDropCount"] == 3 and stats["msgOutCounter"] == 3
    assert stats["consumers"][0]["msgDropCount"] == 3


def test_one_permit_takes_a_whole_batch_and_permits_go_negative():
    sub, pub = make_sub(), Publisher()
    c = RecordingConsumer(1, permits=1)
    sub.add_consumer(c, SubType.EXCLUSIVE)
    sub.deliver(pub.entries(1, num_messages=10))
    assert c.received() == [0] and c.permits == -9
    assert sub.deliver(pub.entries(1)) == 1


def test_deliveries_carry_no_redelivery_count_and_no_ack_set():
    sub, pub = make_sub(), Publisher()
    c = RecordingConsumer(1, permits=10)
    sub.add_consumer(c, SubType.SHARED)
    sub.deliver(pub.entries(1, num_messages=3))
    (d,) = c.deliveries()
    assert (d.redelivery_count, d.ack_set, d.messages) == (0, None, 3)


def test_deliveries_to_one_consumer_are_split_by_max_delivery_bytes():
    sub, pub = make_sub(max_delivery_bytes=1), Publisher()
    c = RecordingConsumer(1, permits=10)
    sub.add_consumer(c, SubType.EXCLUSIVE)
    sub.deliver(pub.entries(3))
    assert [len(b) for b in c.batches] == [1, 1, 1]


def test_a_closed_subscription_delivers_nothing():
    sub, pub = make_sub(), Publisher()
    c = RecordingConsumer(1, permits=10)
    sub.add_consumer(c, SubType.EXCLUSIVE)
    sub.close()
    sub.deliver(pub.entries(1))
    assert c.received() == [] and sub.consumers == []


# -- acknowledgments, redelivery, seek -----------------------------------------------------------------

def test_acks_are_accepted_and_ignored_and_nothing_is_redelivered():
    sub, pub = make_sub(), Publisher()
    c = RecordingConsumer(1, permits=10)
    sub.add_consumer(c, SubType.FAILOVER)
    sub.deliver(pub.entries(3))
    assert sub.acknowledge(c, [(0, 1)]) == 0
    assert sub.acknowledge(c, [(100, 200)]) == 0  # never sent: still ignored
    assert sub.acknowledge_cumulative(c, 2) == 0
    sub.redeliver(c, [(1, 2)])
    sub.redeliver_unacknowledged(c)
    sub.seek(0)
    assert c.received() == [0, 1, 2]
    assert sub.backlog == 0 and sub.unacked_messages == 0


@pytest.mark.parametrize("sub_type", [SubType.SHARED, SubType.KEY_SHARED])
def test_cumulative_ack_is_refused_on_shared_types(sub_type):
    sub = make_sub()
    c = RecordingConsumer(1, permits=1)
    sub.add_consumer(c, sub_type)
    with pytest.raises(CumulativeAcknowledgementNotAllowedError):
        sub.acknowledge_cumulative(c, 0)


def test_a_leaving_consumer_takes_nothing_with_it():
    sub, pub = make_sub(), Publisher()
    a, b = RecordingConsumer(1, permits=10), RecordingConsumer(2, permits=10)
    sub.add_consumer(a, SubType.SHARED)
    sub.add_consumer(b, SubType.SHARED)
    sub.deliver(pub.entries(4))
    sub.remove_consumer(a)
    sub.deliver(pub.entries(2))
    assert sorted(a.received()) == [0, 2] or sorted(a.received()) == [1, 3]
    assert b.received()[-2:] == [4, 5] and len(b.received()) == 4


# -- Exclusive and Failover -------------------------------------------------------------------------------

def test_second_exclusive_consumer_is_rejected():
    sub = make_sub()
    sub.add_consumer(RecordingConsumer(1), SubType.EXCLUSIVE)
    with pytest.raises(ConsumerBusy):
        sub.add_consumer(RecordingConsumer(2), SubType.EXCLUSIVE)
    assert len(sub.consumers) == 1


def test_another_type_cannot_join_while_consumers_are_connected_but_may_after():
    sub = make_sub()
    a = RecordingConsumer(1)
    sub.add_consumer(a, SubType.SHARED)
    with pytest.raises(ConsumerBusy):
        sub.add_consumer(RecordingConsumer(2), SubType.FAILOVER)
    sub.remove_consumer(a)
    sub.add_consumer(RecordingConsumer(3), SubType.FAILOVER)
    assert sub.sub_type is SubType.FAILOVER


def test_failover_sends_only_to_the_active_consumer_and_switches_when_it_leaves():
    sub, pub = make_sub(), Publisher()
    a, b = RecordingConsumer(1, "a", permits=10), RecordingConsumer(2, "b", permits=10)
    sub.add_consumer(a, SubType.FAILOVER)
    sub.add_consumer(b, SubType.FAILOVER)
    assert a.active == [True] and b.active == [False]
    sub.deliver(pub.entries(2))
    sub.remove_consumer(a)
    assert b.active == [False, True]
    sub.deliver(pub.entries(2))
    assert a.received() == [0, 1] and b.received() == [2, 3]


def test_failover_standby_with_permits_does_not_take_what_the_active_one_cannot():
    sub, pub = make_sub(), Publisher()
    a, b = RecordingConsumer(1, "a", permits=0), RecordingConsumer(2, "b", permits=10)
    sub.add_consumer(a, SubType.FAILOVER)
    sub.add_consumer(b, SubType.FAILOVER)
    assert sub.deliver(pub.entries(2)) == 2
    assert b.received() == []
    assert sub.stats()["activeConsumerName"] == "a"


def test_failover_on_a_partition_picks_by_sorted_name_and_priority():
    sub = make_sub(partition_index=1)
    consumers = [RecordingConsumer(i, name, permits=1) for i, name in enumerate("dcba")]
    for c in consumers:
        sub.add_consumer(c, SubType.FAILOVER)
    assert sub.active_consumer.consumer_name == "b"  # sorted a, b, c, d: partition 1 -> b
    high = RecordingConsumer(9, "z", priority_level=-1)
    sub.add_consumer(high, SubType.FAILOVER)
    assert sub.active_consumer is high


# -- Shared ----------------------------------------------------------------------------------------------

def test_shared_spreads_round_robin_over_consumers_with_permits():
    sub, pub = make_sub(), Publisher()
    a, b = RecordingConsumer(1, permits=2), RecordingConsumer(2, permits=2)
    sub.add_consumer(a, SubType.SHARED)
    sub.add_consumer(b, SubType.SHARED)
    assert sub.deliver(pub.entries(5)) == 1
    got_a, got_b = a.received(), b.received()
    assert len(got_a) == 2 and len(got_b) == 2 and not set(got_a) & set(got_b)
    assert sub.stats()["msgDropCount"] == 1
    assert all(c["msgDropCount"] == 0 for c in sub.stats()["consumers"])  # meant for nobody in particular


def test_shared_skips_a_consumer_without_permits():
    sub, pub = make_sub(), Publisher()
    a, b = RecordingConsumer(1, permits=10), RecordingConsumer(2, permits=0)
    sub.add_consumer(a, SubType.SHARED)
    sub.add_consumer(b, SubType.SHARED)
    sub.deliver(pub.entries(4))
    assert a.received() == [0, 1, 2, 3] and b.received() == []


def test_shared_prefers_the_highest_priority_while_it_has_permits():
    sub, pub = make_sub(), Publisher()
    high, low = RecordingConsumer(1, priority_level=0, permits=2), RecordingConsumer(2, priority_level=1, permits=9)
    sub.add_consumer(low, SubType.SHARED)
    sub.add_consumer(high, SubType.SHARED)
    sub.deliver(pub.entries(4))
    assert high.received() == [0, 1] and low.received() == [2, 3]


# -- Key_Shared ------------------------------------------------------------------------------------------

def test_key_shared_sends_each_key_to_its_owner():
    sub, pub = make_sub(), Publisher()
    a, b = RecordingConsumer(1, "a", permits=10), RecordingConsumer(2, "b", permits=10)
    sub.add_consumer(a, SubType.KEY_SHARED)
    sub.add_consumer(b, SubType.KEY_SHARED)  # AUTO_SPLIT: b takes the lower half
    sub.deliver(pub.entries(1, key=LOW) + pub.entries(1, key=HIGH) + pub.entries(1, key=LOW))
    assert b.received() == [0, 2] and a.received() == [1]


def test_key_shared_drops_a_key_whose_owner_has_no_permits_even_if_others_have_some():
    sub, pub = make_sub(), Publisher()
    a, b = RecordingConsumer(1, "a", permits=10), RecordingConsumer(2, "b", permits=0)
    sub.add_consumer(a, SubType.KEY_SHARED)
    sub.add_consumer(b, SubType.KEY_SHARED)
    assert sub.deliver(pub.entries(2, key=LOW) + pub.entries(1, key=HIGH)) == 2
    assert a.received() == [2] and b.received() == []
    drops = {c["consumerName"]: c["msgDropCount"] for c in sub.stats()["consumers"]}
    assert drops == {"a": 0, "b": 2}


def test_key_shared_sticky_gaps_drop_and_bad_ranges_are_refused():
    sub, pub = make_sub(), Publisher()
    low_only = RecordingConsumer(1, "low", permits=10, key_shared=KeySharedPolicy(STICKY, False, ((0, 32768),)))
    sub.add_consumer(low_only, SubType.KEY_SHARED)
    assert sub.deliver(pub.entries(1, key=LOW) + pub.entries(1, key=HIGH)) == 1
    assert low_only.received() == [0]
    overlapping = RecordingConsumer(2, "x", key_shared=KeySharedPolicy(STICKY, False, ((100, 200),)))
    with pytest.raises(ConsumerAssignError):
        sub.add_consumer(overlapping, SubType.KEY_SHARED)
    assert sub.consumers == [low_only]
    assert sub.stats()["consumers"][0]["keyHashRangeArrays"] == [[0, 32768]]


def test_key_shared_mode_must_match_while_consumers_are_connected():
    sub = make_sub()
    sub.add_consumer(RecordingConsumer(1), SubType.KEY_SHARED)
    sticky = RecordingConsumer(2, key_shared=KeySharedPolicy(STICKY, False, ((0, 10),)))
    with pytest.raises(ConsumerBusy):
        sub.add_consumer(sticky, SubType.KEY_SHARED)
    assert sub.stats()["keySharedMode"] == "AUTO_SPLIT"


def test_key_shared_with_consistent_hashing_keeps_a_key_on_one_consumer():
    sub, pub = make_sub(key_shared_consistent_hashing=True), Publisher()
    consumers = [RecordingConsumer(i, f"c{i}", permits=100) for i in range(3)]
    for c in consumers:
        sub.add_consumer(c, SubType.KEY_SHARED)
    for _ in range(5):
        sub.deliver(pub.entries(1, key="k1") + pub.entries(1, key="k2"))
    owners = {}
    for c in consumers:
        for d in c.deliveries():
            owners.setdefault(d.entry.offset % 2, set()).add(c.consumer_name)
    assert all(len(names) == 1 for names in owners.values())


# -- stats ----------------------------------------------------------------------------------------------

def test_stats_use_pulsars_names_and_have_no_backlog():
    sub, pub = make_sub(durable=False), Publisher()
    c = RecordingConsumer(1, "me", permits=1)
    sub.add_consumer(c, SubType.EXCLUSIVE)
    sub.deliver(pub.entries(2))
    stats = sub.stats()
    assert stats["type"] == "Exclusive" and stats["msgBacklog"] == 0 and stats["isDurable"] is False
    assert stats["msgOutCounter"] == 1 and stats["bytesOutCounter"] > 0 and stats["msgDropCount"] == 1
    assert stats["consumers"][0]["consumerName"] == "me"
    assert stats["consumers"][0]["availablePermits"] == 0
