"""One deadline for a call that opens many partitions (connector.client.opening), and the partition-count bound
of the lookups (connector.client.lookup)."""
from __future__ import annotations

import threading
import time

import pytest

from broker_core import errors
from connector.client.lookup import DEFAULT_MAX_PARTITIONS, Lookup, check_partition_count
from connector.client.opening import OPEN_CONCURRENCY, Deadline, open_all
from tests.waiting import wait_until


class Opener:
    """``open_one`` that records what it opened and closed; items in ``hold`` wait for ``release``, items in
    ``refuse`` raise."""

    def __init__(self, hold=(), refuse=()) -> None:
        self.hold, self.refuse = set(hold), set(refuse)
        self.release = threading.Event()
        self.lock = threading.Lock()
        self.started: list[int] = []
        self.opened: list[int] = []
        self.closed: list[int] = []
        self.in_flight = 0
        self.most_in_flight = 0

    def open(self, item: int) -> int:
        with self.lock:
            self.started.append(item)
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            if item in self.hold:
                self.release.wait(10)
            if item in self.refuse:
                raise errors.TopicNotFound(f"no topic {item}")
            with self.lock:
                self.opened.append(item)
            return item
        finally:
            with self.lock:
                self.in_flight -= 1

    def close(self, item: int) -> None:
        with self.lock:
            self.closed.append(item)


def test_everything_is_opened_in_the_order_asked_several_at_a_time():
    opener = Opener(hold=range(40))
    done = []
    threading.Thread(target=lambda: done.append(open_all(list(range(40)), opener.open, opener.close, Deadline(10),
                                                         "call"))).start()
    assert wait_until(lambda: opener.in_flight == OPEN_CONCURRENCY)
    opener.release.set()
    assert wait_until(lambda: done) == [list(range(40))]
    assert opener.most_in_flight == OPEN_CONCURRENCY and opener.closed == []


def test_a_lead_item_is_opened_alone_before_the_others():
    opener = Opener(hold=[0])
    done = []
    threading.Thread(target=lambda: done.append(open_all(list(range(5)), opener.open, opener.close, None, "call",
                                                         lead=True))).start()
    assert wait_until(lambda: opener.started == [0])
    assert opener.started == [0]  # the others wait for it
    opener.release.set()
    assert wait_until(lambda: done) == [[0, 1, 2, 3, 4]]


def test_a_refusal_closes_what_was_opened_and_starts_nothing_more():
    opener = Opener(refuse=[3])
    with pytest.raises(errors.TopicNotFound, match="no topic 3"):
        open_all(list(range(1000)), opener.open, opener.close, Deadline(10), "call", concurrency=1)
    assert opener.started == [0, 1, 2, 3] and sorted(opener.closed) == [0, 1, 2]


def test_past_the_deadline_timeout_names_how_many_of_how_many_were_opened_and_late_ones_are_closed_too():
    opener = Opener(hold=[4, 5])
    with pytest.raises(errors.Timeout, match="call on t: 4 of 6 partitions opened within operation_timeout_seconds="
                                             "0.2") as timed_out:
        open_all(list(range(6)), opener.open, opener.close, Deadline(0.2), "call on t")
    assert (timed_out.value.opened, timed_out.value.partitions) == (4, 6)
    assert sorted(opener.closed) == [0, 1, 2, 3]
    opener.release.set()  # the two in flight complete after the call gave up: their workers close them
    assert wait_until(lambda: sorted(opener.closed) == list(range(6))), opener.closed


def test_a_single_item_opens_on_the_calling_thread_when_the_lookups_left_the_whole_timeout():
    callers = []
    assert open_all([7], lambda item: callers.append(threading.current_thread()) or item, Opener().close,
                    Deadline(5), "call") == [7]
    assert callers == [threading.current_thread()]


def test_a_single_item_after_slow_lookups_has_only_what_is_left_and_past_it_a_timeout_that_says_so():
    opener = Opener(hold=[0])
    skew = [0.0]
    deadline = Deadline(5, clock=lambda: time.monotonic() + skew[0])
    skew[0] = 4.8  # the lookups took 4.8 s of the 5
    with pytest.raises(errors.Timeout, match="not opened within operation_timeout_seconds=5"):
        open_all([0], opener.open, opener.close, deadline, "subscribe on t")
    opener.release.set()
    assert wait_until(lambda: opener.closed == [0])


def test_nothing_to_open_starts_nothing():
    assert open_all([], Opener().open, Opener().close, Deadline(0), "call") == []


def test_a_deadline_says_what_could_not_start_once_it_passed():
    now = [100.0]
    deadline = Deadline(5, clock=lambda: now[0])
    assert deadline.remaining("the lookup") == 5
    now[0] = 105.0
    with pytest.raises(errors.Timeout, match="the lookup: operation_timeout_seconds=5 passed"):
        deadline.remaining("the lookup")


# --- partition counts -------------------------------------------------------------------------------------
class CountingConnection:
    operation_timeout_s = 5.0

    def __init__(self, partitions: int) -> None:
        self.count = partitions
        self.calls: list[tuple[str, float | None]] = []

    def partitions(self, topic, timeout_s=None, retry=False):
        self.calls.append(("partitions", timeout_s))
        return self.count


def test_a_partition_count_above_the_limit_is_refused_naming_topic_count_and_limit():
    with pytest.raises(errors.NotSupported, match="t has 10001 partitions .* above the 10000") as refused:
        check_partition_count("t", 10_001, DEFAULT_MAX_PARTITIONS)
    assert (refused.value.topic, refused.value.partitions, refused.value.limit) == ("t", 10_001, 10_000)
    assert check_partition_count("t", 10_000, DEFAULT_MAX_PARTITIONS) == 10_000


def test_expanding_a_topic_with_an_absurd_count_is_refused_before_anything_per_partition():
    lookup = Lookup(CountingConnection(2**31 - 1))  # type: ignore[arg-type]
    with pytest.raises(errors.NotSupported):
        lookup.expand(["persistent://public/default/t"])
    three = Lookup(CountingConnection(3), max_partitions=3)  # type: ignore[arg-type]
    assert three.expand(["persistent://public/default/t"]) == [
        (f"persistent://public/default/t-partition-{i}", i) for i in range(3)]


def test_lookups_take_what_is_left_of_the_calls_deadline_and_none_once_it_passed():
    connection = CountingConnection(0)
    now = [0.0]
    deadline = Deadline(5, clock=lambda: now[0])
    lookup = Lookup(connection)  # type: ignore[arg-type]
    now[0] = 3.0
    lookup.partitions("t", deadline)
    assert connection.calls == [("partitions", 2.0)]
    now[0] = 5.0
    with pytest.raises(errors.Timeout):
        lookup.expand(["t"], deadline)
    assert len(connection.calls) == 1
