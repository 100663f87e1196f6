"""The core's ConsumerSession, without a transport: where a subscription starts, permits behind the gate,
cumulative acks anywhere, seek in Pulsar's order with redelivery count 0, and the end of a terminated topic.

The topic is a small one over the real dispatch ``Subscription``, ``ManagedCursor`` and ``Termination``:
entries of 2 messages each, published at 1000 ms + their offset."""
from __future__ import annotations

import pytest

from broker_core.core.consumer_session import (EARLIEST, LAST_MESSAGE, LATEST, MAX_PERMITS, ConsumerSession,
                                               Start, key_shared_policy)
from broker_core.core.termination import Termination
from broker_core.core.throttling import TopicThrottling
from broker_core.clock import FakeClock
from broker_core.errors import ConsumerBusy, InvalidMessage
from broker_core.storage.cursor import ManagedCursor
from broker_core.storage.log import StoredEntry
from dispatch.selectors.sticky import MAX_STICKY_RANGES
from dispatch.subscription import Subscription
from dispatch.types import SubType


class Log:
    """An in-memory log of entries of ``size`` messages each."""

    def __init__(self, entries: int, size: int = 2) -> None:
        self.entries = [StoredEntry(offset=i * size, num_messages=size, publish_time=1000 + i * size, ledger_id=0,
                                    data=b"x") for i in range(entries)]
        self.start_offset = 0

    @property
    def end_offset(self) -> int:
        last = self.entries[-1] if self.entries else None
        return last.offset + last.num_messages if last else 0

    durable_end_offset = end_offset

    def read(self, start_offset, max_entries, max_bytes, end_offset=None):
        end = self.durable_end_offset if end_offset is None else end_offset
        found = [e for e in self.entries if e.offset + e.num_messages > start_offset and e.offset < end]
        return found[:max_entries]


class SmallTopic:
    """What the session uses of the Topic protocol, over real subscriptions."""

    topic = "persistent://public/default/t"
    partition_index = -1
    persistent = True

    def __init__(self, tmp_path, entries: int = 3) -> None:
        self.log = Log(entries)
        self.termination = Termination(tmp_path, self.topic)
        self.subscriptions: dict[str, Subscription] = {}
        self.readers: dict[str, Subscription] = {}
        self.dropped: list[str] = []
        self.throttling = TopicThrottling(FakeClock(), scheduler=None)

    @property
    def start_offset(self) -> int:
        return self.log.start_offset

    @property
    def confirmed_end_offset(self) -> int:
        return self.log.end_offset

    def offset_for_timestamp(self, publish_time_ms: int) -> int:
        return next((e.offset for e in self.log.entries if e.publish_time >= publish_time_ms), self.log.end_offset)

    def subscribe(self, name, sub_type, consumer, *, durable, start_offset):
        subs = self.subscriptions if durable else self.readers
        sub = subs.get(name)
        if sub is None:
            start = max(start_offset, self.start_offset)
            sub = subs[name] = Subscription(name, self.topic, -1, self.log, ManagedCursor(name, start - 1),
                                            durable=durable, delayed_delivery=None)
        sub.add_consumer(consumer, sub_type)
        return sub

    def consumer_left(self, sub, consumer, *, keep_reader=False):
        sub.remove_consumer(consumer)
        self.termination.forget(consumer)

    def drop_idle_reader(self, sub):
        self.dropped.append(sub.name)

    def unsubscribe(self, name, *, requester=None, force=False, durable=True):
        (self.subscriptions if durable else self.readers).pop(name).close()

    def check_end_of_topic(self):
        self.termination.check([*self.subscriptions.values(), *self.readers.values()], self.confirmed_end_offset)


class Recorder:
    """The session's events, in order."""

    def __init__(self) -> None:
        self.events: list[tuple] = []

    def subscribed(self):
        self.events.append(("subscribed",))

    def deliver(self, deliveries):
        self.events.extend(("message", d.entry.offset, d.redelivery_count) for d in deliveries)

    def active_changed(self, active):
        self.events.append(("active", active))

    def reached_end_of_topic(self):
        self.events.append(("end",))

    def error(self, exc):
        self.events.append(("error", exc))

    def ended(self):
        self.events.append(("ended",))

    def messages(self) -> list[int]:
        return [e[1] for e in self.events if e[0] == "message"]


@pytest.fixture
def topic(tmp_path):
    return SmallTopic(tmp_path)


def consume(topic, start=EARLIEST, *, permits=100, sub_type=SubType.EXCLUSIVE, durable=True, peers=None,
            later=None, name="s"):
    events = Recorder()
    session = ConsumerSession(events, peer="test", peers=peers, later=later)
    session.subscribe(topic, name, sub_type, start, consumer_id=id(events), consumer_name="c", durable=durable,
                      permits=permits)
    return session, events


@pytest.mark.parametrize("start, first", [(EARLIEST, 0), (LATEST, None), (LAST_MESSAGE, 4), (Start.at(2), 2),
                                          (Start.at(99), None), (Start.published(1003), 4)],
                         ids=["earliest", "latest", "inclusive-latest", "offset", "past-the-end", "publish-time"])
def test_a_new_subscription_starts_where_it_was_asked_to(topic, start, first):
    session, events = consume(topic, start, durable=False)
    assert events.events[0] == ("subscribed",)
    assert (events.messages() or [None])[0] == first


def test_an_inclusive_reader_at_latest_gets_the_last_message_first(topic):
    assert LAST_MESSAGE.offset(topic) == topic.confirmed_end_offset - 1 == 5
    session, events = consume(topic, LAST_MESSAGE, durable=False)
    assert events.messages() == [4]  # the entry holding the last message: the client skips what is before it


def test_what_subscribing_dispatches_is_reported_after_subscribed_and_nothing_when_it_fails(topic):
    session, events = consume(topic)
    assert events.events[:2] == [("subscribed",), ("message", 0, 0)]
    with pytest.raises(ConsumerBusy):
        consume(topic)  # a second consumer on an Exclusive subscription
    assert len(topic.subscriptions["s"].consumers) == 1


def test_permits_are_withheld_while_paused_and_given_back_on_resume(topic):
    session, events = consume(topic, permits=0)
    session.pause()
    session.flow(2)
    assert events.messages() == []
    session.resume()
    assert events.messages() == [0]


def test_more_permits_than_an_int32_are_refused_and_change_nothing(topic):
    session, events = consume(topic, permits=0)
    with pytest.raises(InvalidMessage):
        session.flow(MAX_PERMITS + 1)
    assert session.consumer.permits == 0 and events.messages() == []


def test_a_cumulative_ack_inside_an_entry_acknowledges_up_to_that_message(topic):
    session, events = consume(topic)
    sub = topic.subscriptions["s"]
    session.acknowledge_cumulative(2)  # the first message of entry [2, 4): entry [0, 2) and offset 2
    assert sub.cursor.mark_delete_offset == 2
    session.acknowledge_cumulative(1)  # below the mark-delete point: nothing changes, nothing is refused
    assert sub.cursor.mark_delete_offset == 2
    assert sub.backlog == 3


def test_a_seek_closes_the_subscriptions_consumers_then_moves_then_answers(topic):
    peers: dict = {}
    session, events = consume(topic, peers=peers)
    other, other_events = consume(topic, sub_type=SubType.FAILOVER, peers=peers, name="f")
    session.seek(2, lambda: events.events.append(("answered",)), close_consumers=True)
    assert events.events[-2:] == [("ended",), ("answered",)]
    assert session.closed and not other.closed  # only the consumers of the subscription sought
    assert topic.subscriptions["s"].cursor.mark_delete_offset == 1
    again, again_events = consume(topic, peers=peers)
    assert again_events.messages() == [2, 4]
    assert all(e[2] == 0 for e in again_events.events if e[0] == "message")


def test_a_seek_that_keeps_the_consumer_resets_its_permits_and_replays_with_redelivery_count_0(topic):
    session, events = consume(topic)
    session.seek(0, lambda: events.events.append(("answered",)), close_consumers=False)
    assert events.events[-1] == ("answered",) and session.consumer.permits == 0
    session.flow(10)
    replayed = events.events[events.events.index(("answered",)) + 1:]
    assert replayed == [("message", 0, 0), ("message", 2, 0), ("message", 4, 0)]


def test_a_readers_subscription_sought_is_kept_for_its_consumer_to_come_back(topic):
    scheduled = []
    session, events = consume(topic, durable=False, peers={}, later=lambda delay, fn, *args: scheduled.append(delay))
    session.seek(0, lambda: None, close_consumers=True)
    assert scheduled == [60.0] and "s" in topic.readers


def test_a_terminated_topic_reports_its_end_once_everything_was_delivered_and_again_after_a_seek(topic):
    topic.termination.terminate(topic.confirmed_end_offset)
    session, events = consume(topic, permits=2)
    assert ("end",) not in events.events
    session.flow(10)
    assert events.events[-1] == ("end",)
    session.seek(0, lambda: events.events.append(("answered",)), close_consumers=False)
    session.flow(10)
    assert events.events[-4:] == [("message", 0, 0), ("message", 2, 0), ("message", 4, 0), ("end",)]


def test_unsubscribe_deletes_the_subscription_and_leaves_it(topic):
    session, events = consume(topic)
    session.unsubscribe()
    assert "s" not in topic.subscriptions and session.closed


def test_a_key_shared_policy_keeps_one_range_more_than_a_consumer_may_hold():
    policy = key_shared_policy(True, False, ((i, i) for i in range(1_000_000)))
    assert policy.mode == "STICKY" and len(policy.sticky_ranges) == MAX_STICKY_RANGES + 1


def test_redelivering_named_entries_sends_again_only_those_the_consumer_holds(topic):
    session, events = consume(topic, sub_type=SubType.SHARED)
    session.redeliver_entries([2, 3, 99])  # 3 is inside entry [2, 4), 99 was never sent: both are ignored
    assert events.events[-1] == ("message", 2, 1)
