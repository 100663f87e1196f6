"""Shared subscriptions (seed "Shared"): round robin by permits, each message to one consumer, a leaving
consumer's unacknowledged messages to the others, priorities, the unacked limit, negative acks, and
delayed delivery with a fake clock."""
import pytest

from broker_core.clock import FakeClock
from broker_core.errors import CumulativeAcknowledgementNotAllowedError
from dispatch import Subscription, SubType
from dispatch.shared import DelayedDelivery
from dispatch.testing import MemoryEntrySource, RecordingConsumer, entry_bytes, make_cursor


class FakeScheduler:
    def __init__(self):
        self.calls = []

    def __call__(self, delay_s, callback):
        handle = _Handle(delay_s, callback)
        self.calls.append(handle)
        return handle


class _Handle:
    def __init__(self, delay_s, callback):
        self.delay_s, self.callback, self.cancelled = delay_s, callback, False

    def cancel(self):
        self.cancelled = True


def make_sub(**kwargs):
    source = MemoryEntrySource()
    sub = Subscription("sub", "persistent://public/default/t", -1, source, make_cursor(), **kwargs)
    return sub, source


def test_messages_are_spread_round_robin_and_each_goes_to_one_consumer():
    sub, source = make_sub()
    a, b = RecordingConsumer(1, permits=2), RecordingConsumer(2, permits=2)
    sub.add_consumer(a, SubType.SHARED)
    sub.add_consumer(b, SubType.SHARED)
    source.append_many(5)
    sub.on_new_entries()
    got_a, got_b = a.received(), b.received()
    assert len(got_a) == 2 and len(got_b) == 2
    assert sorted(got_a + got_b) == [0, 1, 2, 3] and not set(got_a) & set(got_b)
    sub.flow(a, 1)
    assert sorted(a.received() + b.received()) == [0, 1, 2, 3, 4]


def test_a_consumer_without_permits_gets_nothing():
    sub, source = make_sub()
    a, b = RecordingConsumer(1, permits=10), RecordingConsumer(2, permits=0)
    sub.add_consumer(a, SubType.SHARED)
    sub.add_consumer(b, SubType.SHARED)
    source.append_many(4)
    sub.on_new_entries()
    assert a.received() == [0, 1, 2, 3] and b.received() == []


def test_a_closing_consumers_unacked_messages_go_to_the_others_first():
    sub, source = make_sub()
    a, b = RecordingConsumer(1, permits=2), RecordingConsumer(2, permits=0)
    sub.add_consumer(a, SubType.SHARED)
    sub.add_consumer(b, SubType.SHARED)
    source.append_many(4)
    sub.on_new_entries()
    assert a.take() == [0, 1]
    sub.acknowledge(a, [(0, 1)])
    sub.remove_consumer(a)
    sub.flow(b, 10)
    deliveries = b.deliveries()
    assert [d.entry.offset for d in deliveries] == [1, 2, 3]  # the returned one first, then new ones
    assert deliveries[0].redelivery_count == 1 and deliveries[1].redelivery_count == 0


def test_cumulative_acknowledgment_is_rejected():
    sub, source = make_sub()
    a = RecordingConsumer(1, permits=5)
    sub.add_consumer(a, SubType.SHARED)
    source.append_many(2)
    sub.on_new_entries()
    with pytest.raises(CumulativeAcknowledgementNotAllowedError):
        sub.acknowledge_cumulative(a, 1)
    assert sub.cursor.mark_delete_offset == -1


def test_higher_priority_consumers_are_served_first():
    sub, source = make_sub()
    low = RecordingConsumer(1, priority_level=1, permits=10)
    high = RecordingConsumer(2, priority_level=0, permits=2)
    sub.add_consumer(low, SubType.SHARED)
    sub.add_consumer(high, SubType.SHARED)
    source.append_many(5)
    sub.on_new_entries()
    assert high.received() == [0, 1]  # until its permits run out
    assert low.received() == [2, 3, 4]


def test_a_consumer_at_its_unacked_limit_is_skipped_until_it_acks():
    sub, source = make_sub(max_unacked_per_consumer=2)
    a = RecordingConsumer(1, permits=10)
    sub.add_consumer(a, SubType.SHARED)
    source.append_many(4)
    sub.on_new_entries()
    assert a.take() == [0, 1]
    assert sub.stats()["consumers"][0]["blockedConsumerOnUnackedMsgs"] is True
    sub.acknowledge(a, [(0, 2)])
    assert a.take() == [2, 3]


def test_negative_acks_redeliver_only_the_named_messages():
    sub, source = make_sub()
    a = RecordingConsumer(1, permits=10)
    sub.add_consumer(a, SubType.SHARED)
    source.append_many(3)
    sub.on_new_entries()
    assert a.take() == [0, 1, 2]
    sub.redeliver(a, [(1, 2)])
    deliveries = a.deliveries()
    assert [(d.entry.offset, d.redelivery_count) for d in deliveries] == [(1, 1)]


def test_redeliver_unacknowledged_sends_everything_held_again():
    sub, source = make_sub()
    a = RecordingConsumer(1, permits=10)
    sub.add_consumer(a, SubType.SHARED)
    source.append_many(3)
    sub.on_new_entries()
    a.take()
    sub.acknowledge(a, [(1, 2)])
    sub.redeliver_unacknowledged(a)
    assert a.take() == [0, 2]


def test_an_entry_acked_while_waiting_for_redelivery_is_not_sent_again():
    sub, source = make_sub()
    a, b = RecordingConsumer(1, permits=1), RecordingConsumer(2, permits=0)
    sub.add_consumer(a, SubType.SHARED)
    sub.add_consumer(b, SubType.SHARED)
    source.append_many(1)
    sub.on_new_entries()
    sub.redeliver(a, [(0, 1)])  # a has no permits left: it waits in the replay set
    assert a.take() == [0]
    sub.cursor.ack(0, 1)  # acknowledged meanwhile (e.g. by the consumer that held it)
    sub.flow(b, 5)
    assert b.received() == []


def delayed_sub(clock, strict=False, tick_ms=1000):
    scheduler = FakeScheduler()
    sub, source = make_sub(clock=clock, scheduler=scheduler,
                           delayed_delivery=DelayedDelivery(True, tick_ms, strict))
    return sub, source, scheduler


def test_delayed_messages_wait_until_their_time_and_others_flow_meanwhile():
    clock = FakeClock(1_000_000)
    sub, source, scheduler = delayed_sub(clock, strict=True)
    a = RecordingConsumer(1, permits=10)
    sub.add_consumer(a, SubType.SHARED)
    source.append(1, entry_bytes(deliver_at=1_005_000))
    source.append(1, entry_bytes())
    sub.on_new_entries()
    assert a.take() == [1]
    assert sub.stats()["msgDelayed"] == 1
    assert scheduler.calls and scheduler.calls[-1].delay_s > 0
    clock.advance(4_000)
    scheduler.calls[-1].callback()
    assert a.take() == []  # strict: not before deliver-at
    clock.advance(1_000)  # at deliver-at; strict delivery may take up to a tick more
    while not a.received():
        assert clock.now_ms() <= 1_005_000 + 1_000
        scheduler.calls[-1].callback()
        clock.advance(100)
    assert a.take() == [0]


def test_a_deliver_at_in_the_past_is_delivered_now():
    clock = FakeClock(1_000_000)
    sub, source, _ = delayed_sub(clock)
    a = RecordingConsumer(1, permits=10)
    sub.add_consumer(a, SubType.SHARED)
    source.append(1, entry_bytes(deliver_at=5))
    sub.on_new_entries()
    assert a.take() == [0]


def test_delayed_delivery_disabled_delivers_at_once():
    clock = FakeClock(1_000_000)
    sub, source = make_sub(clock=clock, delayed_delivery=DelayedDelivery(enabled=False))
    a = RecordingConsumer(1, permits=10)
    sub.add_consumer(a, SubType.SHARED)
    source.append(1, entry_bytes(deliver_at=2_000_000))
    sub.on_new_entries()
    assert a.take() == [0]


def test_exclusive_subscriptions_ignore_deliver_at():
    clock = FakeClock(1_000_000)
    sub, source, _ = delayed_sub(clock)
    a = RecordingConsumer(1, permits=10)
    sub.add_consumer(a, SubType.EXCLUSIVE)
    source.append(1, entry_bytes(deliver_at=2_000_000))
    sub.on_new_entries()
    assert a.take() == [0]
