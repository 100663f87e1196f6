"""ACK on the Pulsar binary front end: ids -> acknowledged ranges, with what one ACK may cost bounded."""
from __future__ import annotations

from types import SimpleNamespace

from broker_core.protocol import pulsar_api_pb2 as wire
from broker_core.protocol import pulsar_commands_pb2 as cmd
from broker_core.core.consumer_session import ConsumerSession
from broker_core.frontends.pulsar.acknowledgments import MAX_ACK_LOOKUPS, MAX_ACK_RANGES, acknowledge
from broker_core.storage.cursor import ManagedCursor
from dispatch.consumer import PendingAcks

INDIVIDUAL, CUMULATIVE = cmd.CommandAck.Individual, cmd.CommandAck.Cumulative


class RecordingSubscription:
    def __init__(self, topic_end: int) -> None:
        self.cursor = ManagedCursor("s")
        self.source = SimpleNamespace(durable_end_offset=topic_end)
        self.acked: list[tuple[int, int]] = []
        self.cumulative: list[int] = []

    def acknowledge(self, consumer, ranges) -> int:
        self.acked.extend(ranges)
        return 0

    def acknowledge_cumulative(self, consumer, offset: int) -> int:
        self.cumulative.append(offset)
        return 0


def session(held: list[tuple[int, int]], topic_end: int, stored: dict[int, int] | None = None):
    """A consumer holding the entries ``held`` (start, end) of a topic whose durable end is ``topic_end``;
    the topic stores the entries ``stored`` (start -> messages) and counts its reads."""
    pending = PendingAcks()
    for start, end in held:
        pending.add(start, end, end - start)
    reads: list[int] = []

    def entry_containing(offset: int):
        reads.append(offset)
        count = (stored or {}).get(offset)
        return SimpleNamespace(offset=offset, num_messages=count) if count else None
    topic = SimpleNamespace(topic="t", persistent=True, entry_containing=entry_containing, reads=reads)
    consumer = SimpleNamespace(pending=pending)
    core = ConsumerSession(None)  # the core session the Pulsar front end acknowledges through
    core.topic, core.sub, core.consumer = topic, RecordingSubscription(topic_end), consumer
    return core


def ids(*entries: int, ack_set: list[int] | None = None) -> list[wire.MessageIdData]:
    return [wire.MessageIdData(ledgerId=0, entryId=e, ack_set=ack_set or []) for e in entries]


def test_a_held_entry_is_acknowledged_whole_or_by_the_clear_bits_of_its_ack_set():
    s = session(held=[(0, 4), (4, 5)], topic_end=5)
    assert acknowledge(s, INDIVIDUAL, ids(4) + ids(0, ack_set=[0b1001])).count == 0
    assert s.sub.acked == [(4, 5), (1, 3)]


def test_ids_past_the_topics_end_are_refused_and_counted_without_a_read():
    s = session(held=[(0, 4)], topic_end=4)
    refusals = acknowledge(s, INDIVIDUAL, ids(*range(100, 10_100)))
    assert refusals.count == 10_000 and s.topic.reads == [] and s.sub.acked == []
    error = refusals.as_error("t")
    assert "entry 100" in error.message and "10000 ids" in error.message and "the topic ends before it" in error.message


def test_an_id_the_consumer_was_not_sent_yet_is_applied():
    # re-sent by a client right after a reconnect, before the broker sent it the message again
    s = session(held=[], topic_end=10, stored={6: 1, 7: 3})
    assert acknowledge(s, INDIVIDUAL, ids(6, 7)).count == 0
    assert s.sub.acked == [(6, 7), (7, 10)] and s.topic.reads == [6, 7]
    assert acknowledge(s, CUMULATIVE, ids(6)).count == 0 and s.sub.cumulative == [6]


def test_an_individual_id_inside_an_entry_acknowledges_that_one_message():
    s = session(held=[(0, 4)], topic_end=4)
    assert acknowledge(s, INDIVIDUAL, ids(2)).count == 0
    assert s.sub.acked == [(2, 3)] and s.topic.reads == []


def test_a_cumulative_ack_of_entry_id_minus_one_acknowledges_everything_before_the_next_batch():
    # the client's "everything before the batch at 4": (ledger, 4 - 1, batch_index -1), inside the entry [0, 4)
    s = session(held=[(0, 4), (4, 8)], topic_end=8)
    assert acknowledge(s, CUMULATIVE, ids(3)).count == 0
    assert s.sub.cumulative == [3]


def test_a_cumulative_ack_inside_an_entry_the_consumer_no_longer_holds_is_looked_up():
    s = session(held=[], topic_end=8, stored={0: 4})
    s.topic.entry_containing = lambda offset: SimpleNamespace(offset=0, num_messages=4)
    assert acknowledge(s, CUMULATIVE, ids(2)).count == 0
    assert s.sub.cumulative == [2]


def test_an_entry_the_consumer_no_longer_holds_is_read_once_and_at_most_so_many_per_ack():
    stored = {e: 1 for e in range(1000)}
    s = session(held=[], topic_end=1000, stored=stored)
    refusals = acknowledge(s, INDIVIDUAL, ids(7, 7, 7) + ids(*range(100, 100 + 2 * MAX_ACK_LOOKUPS)))
    assert s.topic.reads.count(7) == 1 and len(s.topic.reads) == MAX_ACK_LOOKUPS
    assert refusals.count == MAX_ACK_LOOKUPS + 1


def test_an_entry_acknowledged_already_is_skipped_without_a_read():
    s = session(held=[], topic_end=10)
    s.sub.cursor.ack(0, 5)
    assert acknowledge(s, INDIVIDUAL, ids(3)).count == 0 and s.topic.reads == []


def test_one_ack_acknowledges_at_most_so_many_ranges():
    size = 4 * MAX_ACK_RANGES
    s = session(held=[(0, size)], topic_end=size)
    alternate = [0x5555555555555555] * (size // 64)  # every other message acknowledged: size / 2 ranges
    refusals = acknowledge(s, INDIVIDUAL, ids(0, ack_set=alternate))
    assert refusals.count == 1 and s.sub.acked == [] and "at most" in refusals.reason


def test_a_cumulative_ack_names_exactly_one_id():
    s = session(held=[(0, 1), (1, 2)], topic_end=2)
    assert acknowledge(s, CUMULATIVE, ids(0, 1)).count == 2 and s.sub.cumulative == []
    assert acknowledge(s, CUMULATIVE, ids(1)).count == 0 and s.sub.cumulative == [1]
