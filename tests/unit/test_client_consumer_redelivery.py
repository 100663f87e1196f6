"""Consumer-side redelivery without a broker: what negative acks, the ack timeout, held batch acks and dead
letters send, and how buffered messages of redelivered entries are skipped. Fakes record the requests; the
trackers get a fake clock and the timer callbacks are run by hand (no sleeping)."""
from __future__ import annotations

import threading

import pytest

from broker_core.protocol import broker_pb2, codec, pulsar_api_pb2
from broker_core.types import MessageId
from connector.client.consumer import Consumer
from connector.client.dead_letter import DeadLetters
from connector.client.enums import ConsumerType
from connector.client.partition_consumer import PartitionConsumer
from connector.client.policies import ConsumerDeadLetterPolicy

TOPIC = "persistent://public/default/t"


class FakeStream:
    def __init__(self):
        self.sent = []

    def send(self, request):
        self.sent.append(request)


class FakeTimer:
    def __init__(self):
        self.calls = []

    def call_later(self, delay, fn, *args):
        self.calls.append((delay, fn, args))

    def run(self, name):
        """Run (and forget) the pending calls of the function called ``name``."""
        due = [c for c in self.calls if c[1].__name__ == name]
        self.calls = [c for c in self.calls if c[1].__name__ != name]
        for _, fn, args in due:
            fn(*args)


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


class FakeProducer:
    def __init__(self, topic, sent):
        self.topic, self._sent = topic, sent

    def send(self, content, **options):
        self._sent.append((self.topic, content, options))

    def close(self):
        pass


class FakeClient:
    def __init__(self):
        self._timer = FakeTimer()
        self.produced = []

    def create_producer(self, topic, **options):
        return FakeProducer(topic, self.produced)


def _consumer(ctype=ConsumerType.Shared, queue_size=100, dead_letter_policy=None, **options):
    client = FakeClient()
    dead = DeadLetters(client, "sub", dead_letter_policy, TOPIC, ctype, False) if dead_letter_policy else None
    consumer = Consumer(client, TOPIC, "sub", ctype, None, 100, dead_letters=dead, **options)
    clock = FakeClock()
    consumer._nacks._clock = clock
    if consumer._unacked is not None:
        consumer._unacked._clock = clock
    sub = PartitionConsumer.__new__(PartitionConsumer)
    sub.owner, sub.topic, sub.partition, sub.consumer_name = consumer, TOPIC, -1, "c"
    sub._timer, sub._stream = client._timer, FakeStream()
    sub._queue_size, sub._refill_every = queue_size, max(1, queue_size // 2)
    sub._lock = threading.Lock()
    sub._acks, sub._seeking, sub.max_received_offset, sub.closed, sub.error = [], 0, -1, False, None
    sub._reset_permits()
    if dead is not None:
        sub._parse_entry = sub._parse_entry_with_dead_letters
    consumer._attach([sub])
    return consumer, sub, clock


def _batch(entry_id, payloads, redelivery_count=0, ack_set=()):
    meta = pulsar_api_pb2.MessageMetadata(producer_name="p", sequence_id=0, publish_time=1,
                                          num_messages_in_batch=len(payloads))
    data = codec.broker_entry_prefix(1, entry_id + len(payloads) - 1) + \
        codec.encode_entry(meta, codec.encode_batch(payloads))
    return broker_pb2.DeliveredEntry(data=data, entry_id=entry_id, num_messages=len(payloads),
                                     redelivery_count=redelivery_count, ack_set=list(ack_set))


def _single(entry_id, payload, redelivery_count=0):
    meta = pulsar_api_pb2.MessageMetadata(producer_name="p", sequence_id=0, publish_time=1)
    data = codec.broker_entry_prefix(1, entry_id) + codec.encode_entry(meta, payload)
    return broker_pb2.DeliveredEntry(data=data, entry_id=entry_id, num_messages=1,
                                     redelivery_count=redelivery_count)


def _deliver(sub, *entries):
    sub._on_response(broker_pb2.ConsumeResponse(deliveries=broker_pb2.Deliveries(entries=list(entries))))


def _sent(sub, kind):
    return [getattr(r, kind) for r in sub._stream.sent if r.WhichOneof("request") == kind]


def _redelivered(sub):
    return [[(r.start, r.end) for r in req.ranges] for req in _sent(sub, "redeliver")]


def _acked(sub):
    sub.flush_acks()
    return sorted(o for ack in _sent(sub, "ack") for r in ack.ranges for o in range(r.start, r.end))


def _drain(consumer):
    out = []
    while consumer._queue:
        try:
            out.append(consumer.receive(0))
        except Exception:
            break
    return out


# --- negative acks ------------------------------------------------------------------------------------

def test_shared_nack_asks_for_that_entry_after_the_delay():
    consumer, sub, clock = _consumer()
    _deliver(sub, _single(5, b"a"), _single(6, b"b"))
    a, _ = consumer.receive(0), consumer.receive(0)
    consumer.negative_acknowledge(a)
    sub._timer.run("_nack_tick")
    assert _redelivered(sub) == []  # not due yet
    clock.now = 100
    sub._timer.run("_nack_tick")
    assert _redelivered(sub) == [[(5, 6)]]
    assert sub._timer.calls == []  # nothing left to watch: the timer stops


def test_nacks_due_together_go_in_one_request():
    consumer, sub, clock = _consumer()
    _deliver(sub, _single(1, b"a"), _single(2, b"b"), _single(3, b"c"))
    msgs = [consumer.receive(0) for _ in range(3)]
    consumer.negative_acknowledge(msgs[0])
    clock.now = 20
    consumer.negative_acknowledge(msgs[2])
    clock.now = 133
    sub._timer.run("_nack_tick")
    assert _redelivered(sub) == [[(1, 2), (3, 4)]]


def test_buffered_messages_of_a_nacked_entry_are_skipped_and_their_permits_return():
    consumer, sub, clock = _consumer(queue_size=4)
    _deliver(sub, _batch(10, [b"m0", b"m1", b"m2"]), _single(13, b"other"))
    first = consumer.receive(0)
    consumer.negative_acknowledge(first)
    clock.now = 100
    sub._timer.run("_nack_tick")
    assert _redelivered(sub) == [[(10, 11)]]
    assert [m.data() for m in _drain(consumer)] == [b"other"]  # m1, m2 are coming again
    assert sum(f.permits for f in _sent(sub, "flow")) == 4  # all four taken: permits back
    consumer.acknowledge(first)  # a held message of the discarded entry still acknowledges
    assert sub._batch_masks == {10: 0b001}


def test_exclusive_nack_rewinds_the_partition_and_drops_everything_buffered():
    consumer, sub, clock = _consumer(ConsumerType.Exclusive)
    _deliver(sub, _single(0, b"a"), _single(1, b"b"), _single(2, b"c"))
    consumer.negative_acknowledge(consumer.receive(0))
    clock.now = 100
    sub._timer.run("_nack_tick")
    assert _redelivered(sub) == [[]]  # everything unacknowledged
    assert _drain(consumer) == []


def test_a_chunked_message_is_redelivered_with_all_its_chunks():
    consumer, sub, clock = _consumer()
    sub._chunk_acks = {12: (10, 11, 12)}
    consumer.negative_acknowledge(MessageId(0, 12, -1, -1, topic=TOPIC))
    clock.now = 100
    sub._timer.run("_nack_tick")
    assert _redelivered(sub) == [[(10, 11), (11, 12), (12, 13)]]


def test_nack_backoff_uses_the_messages_redelivery_count():
    from connector.client.policies import MultiplierRedeliveryBackoff

    consumer, sub, clock = _consumer(negative_ack_redelivery_backoff=MultiplierRedeliveryBackoff(100, 1000, 2))
    _deliver(sub, _single(0, b"a", redelivery_count=3))
    consumer.negative_acknowledge(consumer.receive(0))
    clock.now = 799
    sub._timer.run("_nack_tick")
    assert _redelivered(sub) == []
    clock.now = 800  # 100 * 2**3
    sub._timer.run("_nack_tick")
    assert _redelivered(sub) == [[(0, 1)]]


# --- ack timeout --------------------------------------------------------------------------------------

def test_receive_does_not_track_without_an_ack_timeout():
    consumer, _, _ = _consumer()
    assert "receive" not in vars(consumer) and consumer._unacked is None


def test_ack_timeout_redelivers_what_was_received_and_not_acknowledged():
    consumer, sub, _ = _consumer(unacked_messages_timeout_ms=1000, ack_timeout_tick_time_ms=500)
    _deliver(sub, _single(0, b"a"), _single(1, b"b"), _single(2, b"c"))
    a, b, c = (consumer.receive(0) for _ in range(3))
    consumer.acknowledge(a)
    consumer.negative_acknowledge(c)  # not under the ack timeout any more
    for _ in range(3):  # ceil(1000/500) + 1 ticks
        assert _redelivered(sub) == []
        sub._timer.run("_ack_timeout_tick")
    assert _redelivered(sub) == [[(1, 2)]]


def test_cumulative_ack_stops_the_ack_timeout_of_earlier_messages():
    consumer, sub, _ = _consumer(ConsumerType.Exclusive, unacked_messages_timeout_ms=1000)
    _deliver(sub, _single(0, b"a"), _single(1, b"b"), _single(2, b"c"))
    msgs = [consumer.receive(0) for _ in range(3)]
    consumer.acknowledge_cumulative(msgs[1])
    assert [key[2] for key in consumer._unacked.keys()] == [2]


# --- held batch acks ----------------------------------------------------------------------------------

def test_batch_acks_are_held_until_the_whole_batch_is_acknowledged():
    consumer, sub, _ = _consumer()
    _deliver(sub, _batch(20, [b"a", b"b", b"c"]))
    msgs = [consumer.receive(0) for _ in range(3)]
    consumer.acknowledge(msgs[0])
    consumer.acknowledge(msgs[2].message_id())  # by id too
    assert _acked(sub) == []
    consumer.acknowledge(msgs[1])
    assert _acked(sub) == [20, 21, 22]
    assert sub._batch_masks == {}


def test_with_batch_index_ack_each_message_is_acknowledged_at_once():
    consumer, sub, _ = _consumer(batch_index_ack_enabled=True)
    _deliver(sub, _batch(20, [b"a", b"b", b"c"]))
    consumer.acknowledge(consumer.receive(0))
    assert _acked(sub) == [20]


def test_a_delivery_with_an_ack_set_counts_the_left_out_messages_as_acknowledged():
    consumer, sub, _ = _consumer()
    _deliver(sub, _batch(30, [b"a", b"b", b"c", b"d"], ack_set=[0b1010]))  # a and c acked before
    b, d = consumer.receive(0), consumer.receive(0)
    consumer.acknowledge(b)
    assert _acked(sub) == []
    consumer.acknowledge(d)
    assert _acked(sub) == [30, 31, 32, 33]


def test_seek_forgets_held_batch_acks():
    consumer, sub, _ = _consumer()
    _deliver(sub, _batch(20, [b"a", b"b"]))
    consumer.acknowledge(consumer.receive(0))
    sub._seek_id, sub._seek_done = 0, threading.Event()
    sub.start_seek(MessageId.earliest)
    assert not sub._batch_masks


# --- dead letters -------------------------------------------------------------------------------------

def test_an_entry_at_the_max_redelivery_count_is_dead_lettered_instead_of_redelivered():
    consumer, sub, clock = _consumer(dead_letter_policy=ConsumerDeadLetterPolicy(2))
    _deliver(sub, _single(7, b"poison", redelivery_count=2))
    msg = consumer.receive(0)  # still handed out at the max
    consumer.negative_acknowledge(msg)
    clock.now = 100
    sub._timer.run("_nack_tick")
    consumer._dead_letters.close()  # waits for the worker
    assert _redelivered(sub) == []
    ((topic, content, options),) = consumer._client.produced
    assert (topic, content) == (f"{TOPIC}-sub-DLQ", b"poison")
    assert options["properties"] == {"REAL_TOPIC": TOPIC, "ORIGIN_MESSAGE_ID": "0:7:-1"}
    assert _acked(sub) == [7]


def test_an_entry_beyond_the_max_is_never_handed_out():
    consumer, sub, _ = _consumer(dead_letter_policy=ConsumerDeadLetterPolicy(1))
    _deliver(sub, _single(3, b"late", redelivery_count=2), _single(4, b"fine"))
    assert [m.data() for m in _drain(consumer)] == [b"fine"]
    consumer._dead_letters.close()
    assert [c for _, c, _ in consumer._client.produced] == [b"late"]
    assert _acked(sub) == [3]


def test_acknowledged_messages_of_a_kept_batch_are_not_dead_lettered():
    consumer, sub, clock = _consumer(dead_letter_policy=ConsumerDeadLetterPolicy(1))
    _deliver(sub, _batch(0, [b"a", b"b", b"c"], redelivery_count=1))
    a, b, c = (consumer.receive(0) for _ in range(3))
    consumer.acknowledge(a)
    consumer.negative_acknowledge(b)
    clock.now = 100
    sub._timer.run("_nack_tick")
    consumer._dead_letters.close()
    assert sorted(c for _, c, _ in consumer._client.produced) == [b"b", b"c"]
    assert _acked(sub) == [0, 1, 2]  # the batch is done: a by the app, b and c by the dead letter


@pytest.mark.parametrize("ctype", [ConsumerType.Exclusive, ConsumerType.Failover])
def test_dead_letters_need_a_shared_type(ctype):
    from broker_core.errors import InvalidConfiguration

    with pytest.raises(InvalidConfiguration):
        DeadLetters(FakeClient(), "sub", ConsumerDeadLetterPolicy(1), TOPIC, ctype, False)
