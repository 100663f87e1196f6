"""The transport-free ProducerSession: registration under the access modes, fencing, WaitForExclusive, the
write fault, receipts in publish order, leaving the topic. The topic is a real non-persistent topic's
producer bookkeeping behind a publish whose confirmations the test completes, in any order."""
from __future__ import annotations

from typing import Any, Callable, NamedTuple

import pytest

from broker_core.clock import FakeClock
from broker_core.config import BrokerConfig
from broker_core.core.access import AccessMode
from broker_core.core.nonpersistent.topic import NonPersistentTopic
from broker_core.core.producer_session import ProducerSession, Receipt, WriteFaults
from broker_core.core.producers import ProducerNames
from broker_core.core.write_fault import WriteFault
from broker_core.errors import (NotAllowedError, PersistenceError, ProducerBusy, ProducerFenced,
                                ServiceNotReady, TopicTerminated)
from broker_core.types import TopicName


class Send(NamedTuple):
    data: bytes
    sequence_id: int
    highest_sequence_id: int
    num_messages: int = 1


class Stored(NamedTuple):
    ledger_id: int
    offset: int


class Result(NamedTuple):
    sequence_id: int
    highest_sequence_id: int
    entry: Any = None
    error: Any = None
    duplicate: bool = False


class FakeTopic:
    """A topic whose producers are a real topic's and whose publishes wait for :meth:`confirm`."""

    def __init__(self, clock: FakeClock) -> None:
        self._real = NonPersistentTopic(TopicName.parse("non-persistent://public/default/t"), BrokerConfig(), clock)
        self.topic = "persistent://public/default/t"
        self.pending: list[tuple[list, Callable]] = []
        self.refusal: Exception | None = None
        self.stored_sequence_ids: dict[str, int] = {}
        self.scheduled: list = []
        self.writes = WriteFault(self.topic, lambda size: None, executor=None, clock=clock,
                                 scheduler=lambda delay, callback: self.scheduled.append(callback))
        self.throttling = self._real.throttling

    def add_producer(self, name, properties, access_mode=AccessMode.SHARED, *, fence, granted):
        return self._real.add_producer(name, properties, access_mode, fence=fence, granted=granted)

    def remove_producer(self, info) -> None:
        self._real.remove_producer(info)

    @property
    def producers(self):
        return self._real.producers

    def last_sequence_id(self, producer_name: str) -> int:
        return self.stored_sequence_ids.get(producer_name, -1)

    def publish(self, producer, entries, on_done) -> None:
        if self.refusal is not None:
            raise self.refusal
        self.pending.append((list(entries), on_done))

    def confirm(self, index: int, error: Exception | None = None) -> None:
        entries, on_done = self.pending[index]
        on_done([Result(e.sequence_id, e.highest_sequence_id, entry=Stored(7, e.sequence_id)) for e in entries],
                error)


class Events:
    def __init__(self) -> None:
        self.seen: list[tuple] = []

    def opened(self, last_sequence_id: int, ready: bool) -> None:
        self.seen.append(("opened", last_sequence_id, ready))

    def ended(self, error) -> None:
        self.seen.append(("ended", error))

    def receipts(self, receipts: list[Receipt]) -> None:
        self.seen.append(("receipts", [(r.sequence_id, type(r.failure).__name__ if r.failure else "ok")
                                       for r in receipts]))

    def throttled(self, paused: bool) -> None:
        self.seen.append(("throttled", paused))


@pytest.fixture
def topic() -> FakeTopic:
    return FakeTopic(FakeClock())


def session(topic: FakeTopic, name: str = "p", mode: AccessMode = AccessMode.SHARED, **kwargs):
    events = Events()
    return ProducerSession(topic, name, ProducerNames("c"), events, access_mode=mode, **kwargs), events


def sends(*ids: int) -> list[Send]:
    return [Send(b"x", i, i) for i in ids]


def test_an_opened_producer_is_told_its_stored_last_sequence_id_and_is_ready(topic):
    topic.stored_sequence_ids["p"] = 41
    producer, events = session(topic)
    assert producer.open() is True
    assert events.seen == [("opened", 41, True)] and producer.ready


def test_a_producer_without_a_name_gets_one_from_the_names(topic):
    producer, _ = session(topic, name="")
    assert producer.name.startswith("c-") and producer.name.endswith("-0")


def test_a_second_producer_with_the_same_name_is_refused_and_may_try_again_later(topic):
    first, _ = session(topic)
    first.open()
    second, events = session(topic)
    with pytest.raises(ProducerBusy):
        second.open()
    first.close()
    assert second.open() is True and events.seen == [("opened", -1, True)]


def test_an_exclusive_with_fencing_producer_ends_the_one_before_it(topic):
    old, old_events = session(topic, "old", AccessMode.EXCLUSIVE)
    old.open()
    new, _ = session(topic, "new", AccessMode.EXCLUSIVE_WITH_FENCING)
    new.open()
    assert old.ended and not old.ready
    assert [kind for kind, *_ in old_events.seen] == ["opened", "ended"]
    assert isinstance(old_events.seen[-1][1], ProducerFenced)


def test_a_wait_for_exclusive_producer_opens_once_the_exclusive_one_leaves(topic):
    holder, _ = session(topic, "holder", AccessMode.EXCLUSIVE)
    holder.open()
    waiter, events = session(topic, "waiter", AccessMode.WAIT_FOR_EXCLUSIVE)
    assert waiter.open() is False
    assert events.seen == [("opened", -1, False)] and not waiter.ready
    holder.close()
    assert events.seen[-1] == ("opened", -1, True) and waiter.ready


def test_a_waiting_producer_ended_by_the_topic_is_never_opened(topic):
    holder, _ = session(topic, "holder", AccessMode.EXCLUSIVE)
    holder.open()
    waiter, events = session(topic, "waiter", AccessMode.WAIT_FOR_EXCLUSIVE)
    waiter.open()
    topic._real.access.drop_waiting(TopicTerminated("terminated"))
    holder.close()
    assert [kind for kind, *_ in events.seen] == ["opened", "ended"] and not waiter.ready


def test_receipts_leave_in_publish_order_when_publishes_complete_out_of_order(topic):
    producer, events = session(topic)
    producer.open()
    producer.publish(sends(1))
    producer.publish(sends(2, 3))
    producer.publish(sends(4))
    topic.confirm(2)
    topic.confirm(1)
    assert [e for e in events.seen if e[0] == "receipts"] == []
    topic.confirm(0)
    assert [e[1] for e in events.seen if e[0] == "receipts"] == [[(1, "ok")], [(2, "ok"), (3, "ok")], [(4, "ok")]]


def test_a_refused_publish_owes_no_receipt_and_refuse_answers_in_order(topic):
    producer, events = session(topic)
    producer.open()
    producer.publish(sends(1))
    topic.refusal = NotAllowedError("closing")
    with pytest.raises(NotAllowedError):
        producer.publish(sends(2))
    assert producer.owed == 1
    producer.refuse(sends(2), NotAllowedError("closing"))
    topic.confirm(0)
    assert [e[1] for e in events.seen if e[0] == "receipts"] == [[(1, "ok")], [(2, "NotAllowedError")]]


def test_when_drained_waits_for_every_owed_receipt(topic):
    producer, _ = session(topic)
    producer.open()
    producer.publish(sends(1))
    drained = []
    producer.when_drained(lambda: drained.append(True))
    assert drained == []
    topic.confirm(0)
    assert drained == [True]


def test_failing_sends_is_the_default_when_the_topic_cannot_store(topic):
    producer, events = session(topic)
    producer.open()
    producer.publish(sends(1))
    topic.confirm(0, PersistenceError("disk full"))
    assert events.seen[-1] == ("receipts", [(1, "PersistenceError")]) and not producer.ended


def test_closing_the_producer_on_a_write_fault_comes_after_the_receipts_owed_before_it(topic):
    producer, events = session(topic, write_faults=WriteFaults.CLOSE_PRODUCER)
    producer.open()
    producer.publish(sends(1))
    producer.publish(sends(2))
    topic.confirm(1, PersistenceError("disk full"))
    assert producer.closing and not producer.ended
    topic.confirm(0)
    assert events.seen[1:] == [("receipts", [(1, "ok")]), ("receipts", []), ("ended", None)]


def test_a_new_producer_is_refused_while_its_topic_cannot_write(topic):
    topic.writes.failed(PersistenceError("disk full"), 100)
    producer, _ = session(topic, write_faults=WriteFaults.CLOSE_PRODUCER)
    with pytest.raises(ServiceNotReady, match="disk full"):
        producer.open()
    assert not topic.producers


def test_a_reconnecting_producer_is_held_until_its_topic_can_write_again(topic):
    topic.writes.failed(PersistenceError("disk full"), 100)
    producer, events = session(topic, write_faults=WriteFaults.CLOSE_PRODUCER, reconnecting=True)
    assert producer.open() is False
    assert events.seen == [("opened", -1, False)] and not producer.ready
    topic.writes.succeeded()
    assert events.seen[-1] == ("opened", -1, True) and producer.ready


def test_a_held_producer_that_closes_is_not_opened_later(topic):
    topic.writes.failed(PersistenceError("disk full"), 100)
    producer, events = session(topic, write_faults=WriteFaults.CLOSE_PRODUCER, reconnecting=True)
    producer.open()
    producer.close()
    topic.writes.succeeded()
    assert events.seen == [("opened", -1, False)]


def test_closing_removes_the_producer_from_its_topic_once(topic):
    producer, _ = session(topic)
    producer.open()
    assert len(topic.producers) == 1
    producer.close()
    producer.close()
    assert not topic.producers and producer.closed


def test_a_failing_registered_hook_takes_the_producer_off_the_topic(topic):
    producer, events = session(topic)

    def registered() -> None:
        raise NotAllowedError("no initial subscription")
    with pytest.raises(NotAllowedError):
        producer.open(registered)
    assert not topic.producers and events.seen == []
