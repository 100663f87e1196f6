"""Dispatch rate limits (Pulsar's DispatchRate) with a fake clock and a fake timer: what each period lets
through, what is owed after an overshoot, shared limits, the read budget, and the timer that resumes."""
import pytest

from broker_core.clock import FakeClock
from dispatch import Subscription, SubType
from dispatch.non_persistent import NonPersistentSubscription
from dispatch.testing import MemoryEntrySource, RecordingConsumer, entry_bytes, make_cursor
from dispatch.throttle import DispatchThrottle, RateLimit


class Timers:
    """A fake ``call_later``: the test fires what is due after moving the clock."""

    def __init__(self, clock):
        self.clock = clock
        self.pending = []

    def __call__(self, delay_s, callback):
        handle = _Handle(self.clock.monotonic_ms() + delay_s * 1000, callback)
        self.pending.append(handle)
        return handle

    def advance(self, ms):
        self.clock.advance(ms)
        due = [h for h in self.pending if h.at <= self.clock.monotonic_ms() and not h.cancelled]
        self.pending = [h for h in self.pending if h not in due]
        for handle in due:
            handle.callback()


class _Handle:
    def __init__(self, at, callback):
        self.at, self.callback, self.cancelled = at, callback, False

    def cancel(self):
        self.cancelled = True


def throttled_sub(clock, timers, *limits, sub_type=SubType.EXCLUSIVE, entries=100, messages=1, permits=10_000):
    source = MemoryEntrySource()
    sub = Subscription("sub", "persistent://public/default/t", -1, source, make_cursor(), clock=clock,
                       scheduler=timers)
    sub.throttle = DispatchThrottle(tuple(limits), timers)
    consumer = RecordingConsumer(1, permits=permits)
    sub.add_consumer(consumer, sub_type)
    for i in range(entries):
        source.append(messages, entry_bytes(f"k{i}") if sub_type is SubType.KEY_SHARED else None)
    sub.on_new_entries()
    return sub, consumer


def messages(consumer):
    return sum(d.messages for d in consumer.deliveries())


def test_a_rate_limit_lets_its_rate_through_per_period_and_renews():
    clock = FakeClock()
    limit = RateLimit(10, 0, 1, clock=clock)
    assert limit.available() == (10, None)
    limit.consume(4, 400)
    assert limit.available() == (6, None)
    clock.advance(999)
    assert limit.available() == (6, None)
    clock.advance(1)
    assert limit.available() == (10, None)


def test_what_is_sent_beyond_a_budget_is_owed_by_the_next_period():
    clock = FakeClock()
    limit = RateLimit(10, 0, 1, clock=clock)
    limit.consume(11, 0)
    clock.advance(1000)
    assert limit.available() == (9, None)


def test_time_without_traffic_saves_nothing_up():
    clock = FakeClock()
    limit = RateLimit(10, 100, 2, clock=clock)
    clock.advance(60_000)
    assert limit.available() == (10, 100)


def test_a_rate_period_of_zero_is_refused():
    with pytest.raises(ValueError, match="ratePeriodInSecond"):
        RateLimit(10, 0, 0)


@pytest.mark.parametrize("sub_type", [SubType.EXCLUSIVE, SubType.FAILOVER, SubType.SHARED, SubType.KEY_SHARED])
def test_dispatch_sends_the_rate_per_period_then_waits_for_the_renewal(sub_type):
    clock = FakeClock()
    timers = Timers(clock)
    sub, consumer = throttled_sub(clock, timers, RateLimit(10, 0, 1, clock=clock), sub_type=sub_type)
    assert messages(consumer) == 10
    assert len(timers.pending) == 1
    for period in range(2, 6):
        timers.advance(1001)
        assert messages(consumer) == 10 * period
    assert sub.throttle.throttled >= 5


def test_batches_are_sent_whole_and_the_overshoot_is_owed():
    clock = FakeClock()
    timers = Timers(clock)
    sub, consumer = throttled_sub(clock, timers, RateLimit(10, 0, 1, clock=clock), messages=4, entries=50)
    first = messages(consumer)
    assert first in (12, 16)  # one entry, then as many as the messages left allow: over by less than an entry
    sent = first
    for _ in range(9):
        timers.advance(1001)
        sent = messages(consumer)
    # over ten periods the rate holds to within one entry per period
    assert 10 * 10 <= sent <= 10 * 10 + 4 * 2


def test_a_byte_rate_limits_the_bytes_read_per_period():
    clock = FakeClock()
    timers = Timers(clock)
    _, consumer = throttled_sub(clock, timers, RateLimit(0, 35, 1, clock=clock))  # entries of 10 bytes
    assert len(consumer.received()) == 4  # the read stops at the budget; a started entry goes whole
    timers.advance(1001)
    assert len(consumer.received()) == 7  # 35 - 5 owed = 30: three entries


def test_a_longer_period_waits_longer():
    clock = FakeClock()
    timers = Timers(clock)
    _, consumer = throttled_sub(clock, timers, RateLimit(5, 0, 3, clock=clock))
    assert messages(consumer) == 5
    timers.advance(2000)
    assert messages(consumer) == 5
    timers.advance(1001)
    assert messages(consumer) == 10


def test_a_topic_limit_is_shared_by_its_subscriptions_and_each_keeps_its_own():
    clock = FakeClock()
    timers = Timers(clock)
    topic_limit = RateLimit(12, 0, 1, clock=clock)
    a, ca = throttled_sub(clock, timers, topic_limit, RateLimit(8, 0, 1, clock=clock))
    b, cb = throttled_sub(clock, timers, topic_limit)
    assert messages(ca) == 8
    assert messages(cb) == 4  # what the topic's limit had left
    timers.advance(1001)
    assert messages(ca) + messages(cb) <= 24


def test_no_throttle_reads_the_subscriptions_whole_read_size():
    source = MemoryEntrySource()
    sub = Subscription("sub", "t", -1, source, make_cursor(), max_read_entries=100)
    consumer = RecordingConsumer(1, permits=1000)
    sub.add_consumer(consumer, SubType.EXCLUSIVE)
    source.append_many(250)
    sub.on_new_entries()
    assert len(consumer.received()) == 250 and source.reads == 3


def test_closing_a_throttled_subscription_cancels_its_timer():
    clock = FakeClock()
    timers = Timers(clock)
    sub, _ = throttled_sub(clock, timers, RateLimit(1, 0, 1, clock=clock))
    assert timers.pending
    sub.close()
    assert all(h.cancelled for h in timers.pending)


def test_a_non_persistent_subscription_drops_what_comes_while_its_budget_is_spent():
    clock = FakeClock()
    sub = NonPersistentSubscription("s", "non-persistent://public/default/t", -1)
    sub.throttle = DispatchThrottle((RateLimit(3, 0, 1, clock=clock),), None)
    consumer = RecordingConsumer(1, permits=100)
    sub.add_consumer(consumer, SubType.SHARED)
    source = MemoryEntrySource()
    for _ in range(5):
        sub.deliver([source.append(1)])
    assert len(consumer.received()) == 3 and sub.msg_drop_count == 2
    clock.advance(1000)
    sub.deliver([source.append(1)])
    assert len(consumer.received()) == 4


def test_a_relative_rate_adds_the_publish_rate_at_each_renewal():
    clock = FakeClock()
    publish = [(0.0, 0.0)]
    limit = RateLimit(10, 0, 1, clock=clock, relative_to=lambda: publish[0])
    assert limit.available() == (10, None)
    publish[0] = (50.0, 5000.0)
    clock.advance(1000)
    assert limit.available() == (60, None)
