"""Our client against a broker that is not ours: pulsar-lite (a Rust Pulsar-compatible broker), spoken to over
Pulsar's binary protocol (issue 23). ``transport="auto"`` must pick the binary protocol by itself (pulsar-lite
serves nothing else), the message ids are pulsar-lite's own (one ledger per topic, entry ids from 0), and what
pulsar-lite lacks (a seek that resets a live consumer) the client makes up for, and what breaks it (a seek to
earliest) ends in a typed error -- never a hang.

pulsar-lite 0.2's gaps shape the tests: counts stay below the receiver queue
(it re-delivers entries when a backlog exceeds the consumer's permits), negative acks are tested on a Shared
subscription (it ignores redelivery requests on the others), and acknowledged messages are checked through a
new consumer on the same subscription."""
from __future__ import annotations

import threading
import time
import uuid

import pytest

pulsar = pytest.importorskip("pulsar")

from connector import Client, ConsumerType, InitialPosition, MessageId, PulsarLikeError  # noqa: E402
from connector.client import schema as ours  # noqa: E402

OPERATION_TIMEOUT_S = 5
"""Short: pulsar-lite leaves some commands unanswered (schema look-ups), and a test must end."""


@pytest.fixture(scope="module")
def lite_client(pulsar_lite_broker):
    """Our client on the module's pulsar-lite, as users build it (``transport="auto"``)."""
    client = Client(pulsar_lite_broker.service_url, operation_timeout_seconds=OPERATION_TIMEOUT_S)
    yield client
    client.close()


@pytest.fixture(scope="module")
def lite_official(pulsar_lite_broker):
    # 2 s: its Avro consumer asks pulsar-lite for the writer's schema (never answered), then decodes by its own
    client = pulsar.Client(pulsar_lite_broker.service_url, operation_timeout_seconds=2,
                           logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    yield client
    client.close()


@pytest.fixture
def topic():
    return f"persistent://public/default/lite-{uuid.uuid4().hex[:12]}"


def _produce(client, topic, count, prefix="m"):
    producer = client.create_producer(topic)
    ids = [producer.send(f"{prefix}{i}".encode()) for i in range(count)]
    producer.close()
    return ids


def _drain(consumer, timeout_ms=500):
    """Every message the consumer (or reader) gets until none comes for ``timeout_ms``."""
    got = []
    take = consumer.read_next if hasattr(consumer, "read_next") else consumer.receive
    while True:
        try:
            got.append(take(timeout_ms))
        except PulsarLikeError:
            return got


# ------------------------------------------------------------------------------------------------ producing
@pytest.mark.parametrize("transport", ["auto", "binary"])
def test_sync_sends_get_pulsar_lites_own_message_ids(pulsar_lite_broker, lite_official, topic, transport):
    with_transport = Client(pulsar_lite_broker.service_url, operation_timeout_seconds=OPERATION_TIMEOUT_S,
                            transport=transport)
    try:
        ids = _produce(with_transport, topic, 3)
    finally:
        with_transport.close()
    assert [i.entry_id() for i in ids] == [0, 1, 2]  # a new topic's entries, one ledger for all
    assert len({i.ledger_id() for i in ids}) == 1 and all(i.batch_index() == -1 for i in ids)
    # the ids are the broker's: the official client reads the same messages under the same ids
    reader = lite_official.create_reader(topic, pulsar.MessageId.earliest)
    theirs = [reader.read_next(5000) for _ in range(3)]
    assert [m.data() for m in theirs] == [b"m0", b"m1", b"m2"]
    assert [(m.message_id().ledger_id(), m.message_id().entry_id()) for m in theirs] == \
        [(i.ledger_id(), i.entry_id()) for i in ids]
    reader.close()


def test_async_batched_sends_arrive_in_order_with_batch_indexes(lite_client, lite_official, topic):
    producer = lite_client.create_producer(topic, batching_enabled=True, batching_max_messages=10,
                                           batching_max_publish_delay_ms=1000)
    results, done = [], threading.Event()

    def sent(result, message_id):
        results.append((result, message_id))
        if len(results) == 25:
            done.set()
    for i in range(25):
        producer.send_async(f"b{i}".encode(), sent)
    producer.flush()
    assert done.wait(10)
    ids = [mid for _, mid in results]
    assert ids == sorted(ids) and len({(i.ledger_id(), i.entry_id()) for i in ids}) == 3  # 10 + 10 + 5
    assert [i.batch_index() for i in ids[:10]] == list(range(10))
    consumer = lite_official.subscribe(topic, "s", initial_position=pulsar.InitialPosition.Earliest)
    assert [consumer.receive(5000).data() for _ in range(25)] == [f"b{i}".encode() for i in range(25)]
    consumer.close()


# ------------------------------------------------------------------------------------------------ consuming
def test_exclusive_consumer_gets_every_message_and_a_new_one_only_the_unacknowledged(lite_client, topic):
    _produce(lite_client, topic, 6)
    consumer = lite_client.subscribe(topic, "s", initial_position=InitialPosition.Earliest)
    got = [consumer.receive(5000) for _ in range(6)]
    assert [m.data() for m in got] == [f"m{i}".encode() for i in range(6)]
    for m in got:
        if m.data() not in (b"m2", b"m4"):
            consumer.acknowledge(m)
    consumer.close()  # flushes the acknowledgments
    again = lite_client.subscribe(topic, "s")
    assert [m.data() for m in _drain(again)] == [b"m2", b"m4"]
    again.close()


def test_cumulative_ack_covers_everything_up_to_the_message(lite_client, topic):
    _produce(lite_client, topic, 6)
    consumer = lite_client.subscribe(topic, "s", initial_position=InitialPosition.Earliest)
    got = [consumer.receive(5000) for _ in range(6)]
    consumer.acknowledge_cumulative(got[3])
    consumer.close()
    again = lite_client.subscribe(topic, "s")
    assert [m.data() for m in _drain(again)] == [b"m4", b"m5"]
    again.close()


def test_shared_consumers_share_the_messages_and_a_nacked_one_comes_back(lite_client, topic):
    _produce(lite_client, topic, 8)
    shared = dict(consumer_type=ConsumerType.Shared, receiver_queue_size=4, negative_ack_redelivery_delay_ms=50)
    first = lite_client.subscribe(topic, "shared", initial_position=InitialPosition.Earliest, **shared)
    second = lite_client.subscribe(topic, "shared", **shared)
    got: set = set()  # pulsar-lite 0.2.0 may deliver a message twice when the backlog exceeds the receiver queue
    while len(got) < 8:
        before = len(got)
        for consumer in (first, second):
            for m in _drain(consumer, 200):
                got.add(m.data())
                consumer.acknowledge(m)
        if len(got) == before:
            break
    assert got == {f"m{i}".encode() for i in range(8)}
    # a negative ack on a Shared subscription: the message comes back, counted as redelivered
    _produce(lite_client, topic, 1, prefix="n")
    [(holder, nacked)] = [(c, m) for c in (first, second) for m in _drain(c, 300) if m.data() == b"n0"]
    holder.negative_acknowledge(nacked)
    deadline = time.monotonic() + 10
    back = []
    while not back and time.monotonic() < deadline:
        back = [m for c in (first, second) for m in _drain(c, 200) if m.data() == b"n0"]
    assert back and back[0].redelivery_count() >= 1
    first.close()
    second.close()


# ------------------------------------------------------------------------------------------------ readers
def test_reader_from_earliest_and_from_a_message_id(lite_client, topic):
    ids = _produce(lite_client, topic, 5)
    reader = lite_client.create_reader(topic, MessageId.earliest)
    assert [reader.read_next(5000).data() for _ in range(5)] == [f"m{i}".encode() for i in range(5)]
    reader.close()
    after = lite_client.create_reader(topic, ids[2])
    assert [m.data() for m in _drain(after)] == [b"m3", b"m4"]
    after.close()
    inclusive = lite_client.create_reader(topic, ids[2], start_message_id_inclusive=True)
    assert [m.data() for m in _drain(inclusive)] == [b"m2", b"m3", b"m4"]
    inclusive.close()


def test_reader_from_a_message_id_inside_a_batch(lite_client, topic):
    producer = lite_client.create_producer(topic, batching_enabled=True, batching_max_messages=4,
                                           batching_max_publish_delay_ms=1000)
    ids = []
    for i in range(8):
        producer.send_async(f"b{i}".encode(), lambda res, mid: ids.append(mid))
    producer.flush()
    ids.sort()
    reader = lite_client.create_reader(topic, ids[5])  # the second batch's index 1
    assert [m.data() for m in _drain(reader)] == [b"b6", b"b7"]
    reader.close()


def test_seek_to_a_message_id_replays_after_it(lite_client, topic):
    """pulsar-lite answers SEEK without resetting its live consumer (it moves the subscription's cursor): the
    client subscribes again, so the seek is real."""
    ids = _produce(lite_client, topic, 3)
    consumer = lite_client.subscribe(topic, "s", initial_position=InitialPosition.Earliest)
    for m in [consumer.receive(5000) for _ in range(3)]:
        consumer.acknowledge(m)
    consumer.seek(ids[1])  # not inclusive (pulsar-client's default): the messages after it
    assert [m.data() for m in _drain(consumer)] == [b"m2"]
    consumer.close()


def test_seek_to_earliest_ends_in_a_typed_error_or_seeks_never_hangs(lite_client, topic):
    """pulsar-lite 0.2 closes the connection on a SEEK to Pulsar's earliest id (-1, -1) (and its subscription
    delivers nothing after): the client says so with a typed error within its operation timeout, or seeks."""
    _produce(lite_client, topic, 3)
    consumer = lite_client.subscribe(topic, "s", initial_position=InitialPosition.Earliest)
    for m in [consumer.receive(5000) for _ in range(3)]:
        consumer.acknowledge(m)
    started = time.monotonic()
    try:
        consumer.seek(MessageId.earliest)
    except PulsarLikeError as exc:
        assert type(exc) is not PulsarLikeError and str(exc)  # a specific error that says why
    else:
        assert [m.data() for m in _drain(consumer, 2000)] == [b"m0", b"m1", b"m2"]
    assert time.monotonic() - started < OPERATION_TIMEOUT_S + 5
    consumer.close()


# ------------------------------------------------------------------------------------------------ schemas
class Point(ours.Record):
    x = ours.Integer(required=True)
    label = ours.String()


class OfficialPoint(pulsar.schema.Record):
    x = pulsar.schema.Integer(required=True)
    label = pulsar.schema.String()


OfficialPoint.__name__ = "Point"  # the definitions are compared by record name
KINDS = {"json": (ours.JsonSchema, pulsar.schema.JsonSchema), "avro": (ours.AvroSchema, pulsar.schema.AvroSchema)}


@pytest.mark.parametrize("kind", KINDS)
def test_records_round_trip_between_our_client_and_the_official_one(lite_client, lite_official, topic, kind):
    mine, theirs = KINDS[kind]
    our_producer = lite_client.create_producer(topic, schema=mine(Point))
    their_consumer = lite_official.subscribe(topic, "theirs", schema=theirs(OfficialPoint),
                                             initial_position=pulsar.InitialPosition.Earliest)
    our_consumer = lite_client.subscribe(topic, "ours", schema=mine(Point), initial_position=InitialPosition.Earliest)
    our_producer.send(Point(x=1, label="ours"))
    their_producer = lite_official.create_producer(topic, schema=theirs(OfficialPoint))
    their_producer.send(OfficialPoint(x=2, label="theirs"))
    got = [their_consumer.receive(10000).value() for _ in range(2)]
    assert [(p.x, p.label) for p in got] == [(1, "ours"), (2, "theirs")]
    mine_got = [our_consumer.receive(10000).value() for _ in range(2)]
    assert all(isinstance(p, Point) for p in mine_got)
    assert [(p.x, p.label) for p in mine_got] == [(1, "ours"), (2, "theirs")]
    for closing in (our_producer, their_producer, their_consumer, our_consumer):
        closing.close()
