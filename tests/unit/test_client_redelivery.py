"""Client redelivery trackers (negative acks, ack timeout) with a fake clock: no sleeping."""
from __future__ import annotations

import pytest

from connector.client.policies import MultiplierRedeliveryBackoff
from connector.client.consumer.trackers import NegativeAcksTracker, UnAckedMessageTracker


class FakeClock:
    def __init__(self, now: float = 0.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


# --- negative acks ------------------------------------------------------------------------------------

def test_a_nacked_message_is_due_after_the_redelivery_delay():
    clock = FakeClock()
    nacks = NegativeAcksTracker(clock, 1000)
    nacks.add("m1")
    clock.now = 999
    assert nacks.pop_due() == []
    clock.now = 1000
    assert nacks.pop_due() == ["m1"]
    assert len(nacks) == 0


def test_nacks_close_together_are_redelivered_in_one_tick():
    clock = FakeClock()
    nacks = NegativeAcksTracker(clock, 300)
    assert nacks.tick_ms == 100
    nacks.add("a")
    clock.now = 50
    nacks.add("b")
    clock.now = 400  # the first tick at or after both are due
    assert sorted(nacks.pop_due()) == ["a", "b"]


def test_the_nack_delay_is_at_least_100_ms_as_in_pulsar():
    clock = FakeClock()
    nacks = NegativeAcksTracker(clock, 0)
    nacks.add("m")
    clock.now = 99
    assert nacks.pop_due() == []
    clock.now = 100
    assert nacks.pop_due() == ["m"]
    assert nacks.tick_ms == pytest.approx(100 / 3)


def test_nacking_again_rearms_the_message():
    clock = FakeClock()
    nacks = NegativeAcksTracker(clock, 1000)
    nacks.add("m")
    clock.now = 900
    nacks.add("m")
    clock.now = 1000
    assert nacks.pop_due() == []
    clock.now = 1900
    assert nacks.pop_due() == ["m"]


def test_nack_backoff_follows_the_seeds_table():
    """Seed "Negative acknowledgment": redelivery 1 after 1 s, 2 after 2 s, 3 after 4 s ... 60 s."""
    clock = FakeClock()
    nacks = NegativeAcksTracker(clock, 60_000, MultiplierRedeliveryBackoff(1000, 60_000, 2))
    expected = [1, 2, 4, 8, 16, 32, 60, 60]
    for count, seconds in enumerate(expected):  # the message was delivered `count` times before
        start = clock.now
        nacks.add("m", redelivery_count=count)
        clock.now = start + seconds * 1000 - 1
        assert nacks.pop_due() == [], f"redelivery {count + 1} too early"
        clock.now = start + seconds * 1000
        assert nacks.pop_due() == ["m"], f"redelivery {count + 1} not after {seconds} s"


def test_nack_tick_with_a_backoff_is_a_third_of_its_first_delay():
    nacks = NegativeAcksTracker(FakeClock(), 60_000, MultiplierRedeliveryBackoff(900, 60_000, 2))
    assert nacks.tick_ms == 300


def test_removed_nacks_are_not_redelivered():
    clock = FakeClock()
    nacks = NegativeAcksTracker(clock, 100)
    for key in [("s1", 1), ("s1", 2), ("s2", 1)]:
        nacks.add(key)
    nacks.remove(("s1", 1))
    nacks.remove_if(lambda key: key[0] == "s2")
    clock.now = 100
    assert nacks.pop_due() == [("s1", 2)]


# --- ack timeout --------------------------------------------------------------------------------------

def test_an_unacked_message_expires_between_timeout_and_timeout_plus_one_tick():
    unacked = UnAckedMessageTracker(timeout_ms=2000, tick_ms=1000)
    unacked.add("m")  # just after a tick: in the newest of ceil(2000/1000)+1 = 3 buckets
    assert unacked.tick() == []  # t = 1 s
    assert unacked.tick() == []  # t = 2 s
    assert unacked.tick() == ["m"]  # t = 3 s = timeout + one tick
    assert len(unacked) == 0


def test_an_acknowledged_message_never_expires():
    unacked = UnAckedMessageTracker(timeout_ms=1000, tick_ms=500)
    unacked.add("a")
    unacked.add("b")
    assert unacked.remove("a") is True
    assert unacked.remove("a") is False
    expired = []
    for _ in range(5):
        expired += unacked.tick()
    assert expired == ["b"]


def test_receiving_a_message_again_restarts_its_ack_timeout():
    unacked = UnAckedMessageTracker(timeout_ms=1000, tick_ms=500)
    unacked.add("m")
    unacked.tick()
    unacked.add("m")  # redelivered and received again
    assert unacked.tick() == []
    assert unacked.tick() == []
    assert unacked.tick() == ["m"]


def test_the_tick_is_never_longer_than_the_timeout():
    assert UnAckedMessageTracker(timeout_ms=1000, tick_ms=5000).tick_ms == 1000


def test_ack_timeout_backoff_follows_the_seeds_table():
    """Seed "Acknowledgment timeout": 10 s timeout and backoff(1 s, 60 s, 2): 10+1, 10+2, 10+4 ... 10+60 s."""
    clock = FakeClock()
    unacked = UnAckedMessageTracker(10_000, 1000, clock, MultiplierRedeliveryBackoff(1000, 60_000, 2))
    expected = [11, 12, 14, 18, 26, 42, 70, 70]
    for count, seconds in enumerate(expected):
        start = clock.now
        unacked.add("m", redelivery_count=count)
        redelivered_at = None
        while redelivered_at is None:
            clock.now += 1000
            if unacked.tick():
                redelivered_at = clock.now - start
        # the ring adds up to one tick to the timeout, the backoff wait up to one more
        assert seconds * 1000 <= redelivered_at <= (seconds + 1) * 1000, (count, redelivered_at)


def test_cumulative_removal_forgets_every_earlier_message_of_a_partition():
    unacked = UnAckedMessageTracker(timeout_ms=1000, tick_ms=1000)
    for offset in range(5):
        unacked.add(("p0", offset, offset))
    unacked.add(("p1", 0, 0))
    assert unacked.remove_if(lambda key: key[0] == "p0" and key[2] <= 3) == 4
    assert sorted(unacked.keys()) == [("p0", 4, 4), ("p1", 0, 0)]


def test_clear_forgets_everything():
    clock = FakeClock()
    unacked = UnAckedMessageTracker(1000, 1000, clock, MultiplierRedeliveryBackoff(1000, 2000, 2))
    unacked.add("a")
    unacked.tick()
    unacked.tick()  # "a" now waits for its backoff
    unacked.add("b")
    assert len(unacked) == 2
    unacked.clear()
    assert len(unacked) == 0 and "a" not in unacked
    clock.now = 10_000
    assert unacked.tick() == [] and unacked.tick() == []
