"""Consumer-side redelivery without a broker: what negative acks, the ack timeout, held batch acks and dead
letters send, and how buffered messages of redelivered entries are skipped. Fakes record the requests; the
trackers get a fake clock and the timer callbacks are run by hand (no sleeping)."""
from __future__ import annotations

import pytest

from connector import MessageId
from connector.client.consumer.dead_letter import LetterOptions
from connector.client.enums import ConsumerType
from connector.client.policies import ConsumerDeadLetterPolicy, RedeliveryOptions
from tests.unit.consumer_fakes import TOPIC, Harness, batch, single


def pb_seek_done(seek_id):
    from connector.client.transport.events import SeekDone
    return SeekDone(seek_id)


def _consumer(ctype=ConsumerType.Shared, queue_size=100, dead_letter_policy=None, batch_index_ack_enabled=False,
              **redelivery):
    redelivery.setdefault("negative_ack_redelivery_delay_ms", 100)
    letters = LetterOptions.parse("sub", dead_letter_policy, TOPIC, ctype, False) if dead_letter_policy else None
    return Harness(ctype, queue_size, RedeliveryOptions(**redelivery), letters=letters,
                   settings={"hold_batch_acks": not batch_index_ack_enabled})


# --- negative acks ------------------------------------------------------------------------------------

def test_shared_nack_asks_for_that_entry_after_the_delay():
    h = _consumer()
    h.deliver(single(5, b"a"), single(6, b"b"))
    a, _ = h.consumer.receive(0), h.consumer.receive(0)
    h.consumer.negative_acknowledge(a)
    h.timer.run("_nack_tick")
    assert h.redelivered() == []  # not due yet
    h.clock.now = 100
    h.timer.run("_nack_tick")
    assert h.redelivered() == [[(5, 6)]]
    assert "_nack_tick" not in h.timer.names()  # nothing left to watch: the timer stops


def test_nacks_due_together_go_in_one_request():
    h = _consumer()
    h.deliver(single(1, b"a"), single(2, b"b"), single(3, b"c"))
    msgs = [h.consumer.receive(0) for _ in range(3)]
    h.consumer.negative_acknowledge(msgs[0])
    h.clock.now = 20
    h.consumer.negative_acknowledge(msgs[2])
    h.clock.now = 133
    h.timer.run("_nack_tick")
    assert h.redelivered() == [[(1, 2), (3, 4)]]


def test_buffered_messages_of_a_nacked_entry_are_skipped_and_their_permits_return():
    h = _consumer(queue_size=4)
    h.deliver(batch(10, [b"m0", b"m1", b"m2"]), single(13, b"other"))
    first = h.consumer.receive(0)
    h.consumer.negative_acknowledge(first)
    h.clock.now = 100
    h.timer.run("_nack_tick")
    assert h.redelivered() == [[(10, 11)]]
    assert [m.data() for m in h.drain()] == [b"other"]  # m1, m2 are coming again
    assert sum(h.flows()) == 4  # all four taken: permits back
    h.consumer.acknowledge(first)  # a held message of the discarded entry still acknowledges (held)
    assert h.acked() == []


def test_exclusive_nack_rewinds_the_partition_and_drops_everything_buffered():
    h = _consumer(ConsumerType.Exclusive)
    h.deliver(single(0, b"a"), single(1, b"b"), single(2, b"c"))
    h.consumer.negative_acknowledge(h.consumer.receive(0))
    h.clock.now = 100
    h.timer.run("_nack_tick")
    assert h.redelivered() == [[]]  # everything unacknowledged
    assert h.drain() == []


def test_a_chunked_message_is_redelivered_with_all_its_chunks():
    h = _consumer()
    h.deliver(*(single(offset, b"abc", uuid="p-0", chunk_id=i, num_chunks_from_msg=3, total_chunk_msg_size=9)
                for i, offset in enumerate((10, 11, 12))))
    assert h.consumer.receive(0).data() == b"abcabcabc"
    h.consumer.negative_acknowledge(MessageId.of(0, 12, -1, topic=TOPIC))
    h.clock.now = 100
    h.timer.run("_nack_tick")
    assert h.redelivered() == [[(10, 11), (11, 12), (12, 13)]]


def test_nack_backoff_uses_the_messages_redelivery_count():
    from connector.client.policies import MultiplierRedeliveryBackoff

    h = _consumer(negative_ack_redelivery_backoff=MultiplierRedeliveryBackoff(100, 1000, 2))
    h.deliver(single(0, b"a", redelivery_count=3))
    h.consumer.negative_acknowledge(h.consumer.receive(0))
    h.clock.now = 799
    h.timer.run("_nack_tick")
    assert h.redelivered() == []
    h.clock.now = 800  # 100 * 2**3
    h.timer.run("_nack_tick")
    assert h.redelivered() == [[(0, 1)]]


# --- ack timeout --------------------------------------------------------------------------------------

def test_without_an_ack_timeout_nothing_is_tracked_or_ticked():
    h = _consumer()
    h.deliver(single(0, b"a"))
    h.consumer.receive(0)
    assert "_ack_timeout_tick" not in h.timer.names()


def test_ack_timeout_redelivers_what_was_received_and_not_acknowledged():
    h = _consumer(unacked_messages_timeout_ms=1000, ack_timeout_tick_time_ms=500)
    h.deliver(single(0, b"a"), single(1, b"b"), single(2, b"c"))
    a, b, c = (h.consumer.receive(0) for _ in range(3))
    h.consumer.acknowledge(a)
    h.consumer.negative_acknowledge(c)  # not under the ack timeout any more
    for _ in range(3):  # ceil(1000/500) + 1 ticks
        assert h.redelivered() == []
        h.timer.run("_ack_timeout_tick")
    assert h.redelivered() == [[(1, 2)]]


def test_cumulative_ack_stops_the_ack_timeout_of_earlier_messages():
    h = _consumer(ConsumerType.Exclusive, unacked_messages_timeout_ms=1000, ack_timeout_tick_time_ms=500)
    h.deliver(single(0, b"a"), single(1, b"b"), single(2, b"c"))
    msgs = [h.consumer.receive(0) for _ in range(3)]
    h.consumer.acknowledge_cumulative(msgs[2])
    for _ in range(3):
        h.timer.run("_ack_timeout_tick")
    assert h.redelivered() == []


# --- held batch acks ----------------------------------------------------------------------------------

def test_batch_acks_are_held_until_the_whole_batch_is_acknowledged():
    h = _consumer()
    h.deliver(batch(20, [b"a", b"b", b"c"]))
    msgs = [h.consumer.receive(0) for _ in range(3)]
    h.consumer.acknowledge(msgs[0])
    h.consumer.acknowledge(msgs[2].message_id())  # by id too
    assert h.acked() == []
    h.consumer.acknowledge(msgs[1])
    assert h.acked() == [20, 21, 22]


def test_with_batch_index_ack_each_message_is_acknowledged_at_once():
    h = _consumer(batch_index_ack_enabled=True)
    h.deliver(batch(20, [b"a", b"b", b"c"]))
    h.consumer.acknowledge(h.consumer.receive(0))
    assert h.acked() == [20]


def test_a_delivery_with_an_ack_set_counts_the_left_out_messages_as_acknowledged():
    h = _consumer()
    h.deliver(batch(30, [b"a", b"b", b"c", b"d"], ack_set=[0b1010]))  # a and c acked before
    b, d = h.consumer.receive(0), h.consumer.receive(0)
    h.consumer.acknowledge(b)
    assert h.acked() == []
    h.consumer.acknowledge(d)
    assert h.acked() == [30, 31, 32, 33]


def test_seek_forgets_held_batch_acks():
    h = _consumer()
    h.deliver(batch(20, [b"a", b"b"]))
    h.consumer.acknowledge(h.consumer.receive(0))
    h.sub.start_seek(MessageId.earliest)
    h.respond(pb_seek_done(1))
    h.sub.finish_seek(0)
    h.deliver(batch(20, [b"a", b"b"]))
    h.consumer.receive(0)
    h.consumer.acknowledge(h.consumer.receive(0))  # b: the batch is not complete any more
    assert h.acked() == []


# --- dead letters -------------------------------------------------------------------------------------

def test_an_entry_at_the_max_redelivery_count_is_dead_lettered_instead_of_redelivered():
    h = _consumer(dead_letter_policy=ConsumerDeadLetterPolicy(2))
    h.deliver(single(7, b"poison", redelivery_count=2))
    msg = h.consumer.receive(0)  # still handed out at the max
    h.consumer.negative_acknowledge(msg)
    h.clock.now = 100
    h.timer.run("_nack_tick")
    h.consumer.close()  # waits for the dead letter worker
    assert h.redelivered() == []
    ((topic, content, options),) = h.produced
    assert (topic, content) == (f"{TOPIC}-sub-DLQ", b"poison")
    assert options["properties"] == {"REAL_TOPIC": TOPIC, "ORIGIN_MESSAGE_ID": "0:7:-1"}
    assert h.acked() == [7]


def test_an_entry_beyond_the_max_is_never_handed_out():
    h = _consumer(dead_letter_policy=ConsumerDeadLetterPolicy(1))
    h.deliver(single(3, b"late", redelivery_count=2), single(4, b"fine"))
    assert [m.data() for m in h.drain()] == [b"fine"]
    h.consumer.close()
    assert [c for _, c, _ in h.produced] == [b"late"]
    assert h.acked() == [3]


def test_acknowledged_messages_of_a_kept_batch_are_not_dead_lettered():
    h = _consumer(dead_letter_policy=ConsumerDeadLetterPolicy(1))
    h.deliver(batch(0, [b"a", b"b", b"c"], redelivery_count=1))
    a, b, c = (h.consumer.receive(0) for _ in range(3))
    h.consumer.acknowledge(a)
    h.consumer.negative_acknowledge(b)
    h.clock.now = 100
    h.timer.run("_nack_tick")
    h.consumer.close()
    assert sorted(c for _, c, _ in h.produced) == [b"b", b"c"]
    assert h.acked() == [0, 1, 2]  # the batch is done: a by the app, b and c by the dead letter


@pytest.mark.parametrize("ctype", [ConsumerType.Exclusive, ConsumerType.Failover])
def test_dead_letters_need_a_shared_type(ctype):
    from broker_core.errors import InvalidConfiguration

    with pytest.raises(InvalidConfiguration):
        LetterOptions.parse("sub", ConsumerDeadLetterPolicy(1), TOPIC, ctype, False)
