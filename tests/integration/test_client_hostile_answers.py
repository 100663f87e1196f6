"""No hostile broker answer makes a client call outlive its timeout or wedge a consumer (issue 30, items 6 and 7).

Against scripted brokers (tests/hostile_broker.py) over both transports: an absurd partition count is refused at
once, before anything is made per partition; a broker answering each partition slowly ends create_producer,
subscribe and create_reader at operation_timeout_seconds as a whole, with what was opened closed; and on the
binary transport (the one whose positions pack a broker's ids) a 70,000-message batch is served, while an entry
the client cannot position is raised once, acknowledged by its real id and passed over.
"""
from __future__ import annotations

import re
import threading
import time

import pytest

from connector import Client, MessageDecodeError, MessageId, NotSupported, Timeout
from tests.hostile_broker import HostileBroker, HostileGrpcBroker, Scripted, batch, single
from tests.waiting import wait_until

TOPIC = "persistent://public/default/t"
OPERATION_TIMEOUT_S = 2.0
MARGIN_S = 1.5
"""What a call may take beyond operation_timeout_seconds: closing what it opened (CLOSE_WAIT_S, 1 s) and
scheduling."""


@pytest.fixture
def hostile():
    """A scripted broker for a transport (``"binary"``: Pulsar's protocol, ``"grpc"``: pulsarlike's service) and a
    client on it."""
    made: list = []

    def make(transport: str, partitions: int = 0, delay_s: float = 0.0, topics: list[str] | None = None,
             **client_options) -> tuple[object, Client]:
        if transport == "binary":
            broker = HostileBroker(partitions=partitions, lookup_delay_s=delay_s, topics=topics)
        else:
            broker = HostileGrpcBroker(partitions=partitions, open_delay_s=delay_s, topics=topics)
        client = Client(broker.service_url, transport=transport,
                        operation_timeout_seconds=client_options.pop("operation_timeout_seconds",
                                                                     OPERATION_TIMEOUT_S), **client_options)
        made.append((broker, client))
        return broker, client
    yield make
    for broker, client in made:
        client.close()
        broker.close()


def timed(call):
    """``(outcome, seconds)``: what ``call()`` returned or raised, and how long it took."""
    start = time.monotonic()
    try:
        outcome = call()
    except Exception as exc:  # noqa: BLE001 -- the outcome is what the test checks
        outcome = exc
    return outcome, time.monotonic() - start


def opened(broker) -> int:
    """Producers and consumers the broker holds open."""
    if isinstance(broker, HostileBroker):
        return broker.open_producers() + broker.open_consumers()
    return broker.open_streams()


CALLS = {
    "create_producer": lambda client, topic: client.create_producer(topic),
    "subscribe": lambda client, topic: client.subscribe(topic, "s"),
    "create_reader": lambda client, topic: client.create_reader(topic, MessageId.earliest),
}


# --- partition counts ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("transport", ["binary", "grpc"])
@pytest.mark.parametrize("call", sorted(CALLS))
def test_a_partition_count_of_2_31_minus_1_is_refused_at_once_naming_topic_count_and_limit(hostile, transport, call):
    broker, client = hostile(transport, partitions=2**31 - 1)
    outcome, took = timed(lambda: CALLS[call](client, "t"))
    assert isinstance(outcome, NotSupported), outcome
    assert (outcome.topic, outcome.partitions, outcome.limit) == (TOPIC, 2**31 - 1, 10_000)
    assert "2147483647 partitions" in outcome.message and "10000" in outcome.message
    assert took < OPERATION_TIMEOUT_S, took
    assert opened(broker) == 0
    if transport == "binary":
        assert broker.count("LOOKUP") == 0 and broker.count("PRODUCER") == broker.count("SUBSCRIBE") == 0


@pytest.mark.parametrize("transport", ["binary", "grpc"])
def test_100_000_partitions_are_refused_and_the_limit_is_the_clients_option(hostile, transport):
    _, client = hostile(transport, partitions=100_000)
    with pytest.raises(NotSupported, match="100000 partitions"):
        client.subscribe("t", "s")
    broker, lower = hostile(transport, partitions=30, max_partitions_per_topic=20)
    with pytest.raises(NotSupported, match="above the 20 ") as refused:
        lower.create_producer("t")
    assert (refused.value.partitions, refused.value.limit) == (30, 20)
    broker, higher = hostile(transport, partitions=30, max_partitions_per_topic=30)
    producer = higher.create_producer("t")
    assert opened(broker) == 30
    producer.close()


def test_a_bad_partition_limit_option_is_refused():
    with pytest.raises(ValueError, match="max_partitions_per_topic=0"):
        Client("pulsar://127.0.0.1:9", max_partitions_per_topic=0)


def test_a_pattern_subscription_refuses_a_matched_topic_with_too_many_partitions(hostile):
    _, client = hostile("binary", partitions=2**31 - 1, topics=[TOPIC])
    outcome, took = timed(lambda: client.subscribe(re.compile("persistent://public/default/.*"), "s"))
    assert isinstance(outcome, NotSupported) and outcome.partitions == 2**31 - 1, outcome
    assert took < OPERATION_TIMEOUT_S


# --- one deadline for the whole call -------------------------------------------------------------------------
@pytest.mark.parametrize("transport", ["binary", "grpc"])
@pytest.mark.parametrize("call", sorted(CALLS))
def test_slow_partitions_end_the_call_at_the_operation_timeout_and_what_was_opened_is_closed(hostile, transport,
                                                                                             call):
    broker, client = hostile(transport, partitions=100, delay_s=0.5)
    outcome, took = timed(lambda: CALLS[call](client, "t"))
    assert isinstance(outcome, Timeout), outcome
    assert OPERATION_TIMEOUT_S - 0.1 <= took <= OPERATION_TIMEOUT_S + MARGIN_S, took
    assert outcome.partitions == 100 and 0 < outcome.opened < 100, outcome
    assert f"{outcome.opened} of 100 partitions" in outcome.message and call in outcome.message
    # the openings in flight at the deadline complete within their own timeout, then are closed too
    assert wait_until(broker.settled, timeout_s=OPERATION_TIMEOUT_S + 5), opened(broker)


@pytest.mark.parametrize("transport", ["binary", "grpc"])
def test_a_multi_topic_subscribe_has_one_deadline_for_all_its_topics(hostile, transport):
    topics = [f"{TOPIC}-{i}" for i in range(60)]
    broker, client = hostile(transport, partitions=0, delay_s=0.5)
    outcome, took = timed(lambda: client.subscribe(topics, "s"))
    assert isinstance(outcome, Timeout) and outcome.partitions == 60, outcome
    assert took <= OPERATION_TIMEOUT_S + MARGIN_S, took
    assert wait_until(broker.settled, timeout_s=OPERATION_TIMEOUT_S + 5), opened(broker)


def test_a_pattern_subscribe_has_one_deadline_for_all_its_topics(hostile):
    topics = [f"{TOPIC}-{i}" for i in range(60)]
    broker, client = hostile("binary", partitions=0, delay_s=0.5, topics=topics)
    outcome, took = timed(lambda: client.subscribe(re.compile("persistent://public/default/t-.*"), "s"))
    assert isinstance(outcome, Timeout) and outcome.partitions == 60, outcome
    assert took <= OPERATION_TIMEOUT_S + MARGIN_S, took
    assert wait_until(broker.settled, timeout_s=OPERATION_TIMEOUT_S + 5), opened(broker)


@pytest.mark.parametrize("transport", ["binary", "grpc"])
def test_partitions_are_opened_several_at_a_time(hostile, transport):
    """32 partitions of 0.5 s each: serially 16 s; 16 at a time about 1.5 s (the first alone: it names the
    producer)."""
    broker, client = hostile(transport, partitions=32, delay_s=0.5, operation_timeout_seconds=10)
    producer, took = timed(lambda: client.create_producer("t"))
    assert not isinstance(producer, Exception), producer
    assert took < 4, took
    assert opened(broker) == 32
    consumer, took = timed(lambda: client.subscribe("t", "s"))
    assert not isinstance(consumer, Exception) and took < 4, (consumer, took)


# --- entries the client cannot position (binary transport: packed positions) -------------------------------
def receive_all(consumer, timeout_ms: int = 1000) -> tuple[list[bytes], list[Exception]]:
    """Every message until none comes within ``timeout_ms``, and every error raised meanwhile."""
    got: list[bytes] = []
    raised: list[Exception] = []
    while True:
        try:
            got.append(consumer.receive(timeout_ms).data())
        except Timeout:
            return got, raised
        except Exception as exc:  # noqa: BLE001 -- what receive raises is what the test checks
            raised.append(exc)


def scripted_consumer(hostile, messages: list[Scripted]):
    broker, client = hostile("binary")
    broker.messages = messages
    return broker, client.subscribe("t", "s")


def test_a_valid_batch_of_70_000_messages_is_received_whole(hostile):
    payloads = [b"m%d" % i for i in range(70_000)]
    broker, consumer = scripted_consumer(hostile, [Scripted(7, 0, batch(payloads)), Scripted(7, 1, single(b"next"))])
    got, raised = receive_all(consumer)
    assert raised == [] and got == payloads + [b"next"]


@pytest.mark.parametrize("ledger,entry,data,field", [
    (7 + (1 << 30), 0, single(b"far"), "ledger_id"),              # a ledger far from the first one seen
    (7, 1 << 24, single(b"high"), "entry_id"),                   # an entry id beyond 24 bits
    (7, 3, batch([b""] * 140_000), "num_messages_in_batch"),     # a batch beyond 131,072 messages
], ids=["ledger", "entry", "batch"])
def test_an_entry_the_client_cannot_position_is_raised_once_acknowledged_by_its_real_id_and_passed_over(
        hostile, ledger, entry, data, field):
    broker, consumer = scripted_consumer(hostile, [Scripted(7, 0, single(b"before")), Scripted(ledger, entry, data),
                                                   Scripted(7, 5, single(b"after"))])
    got, raised = receive_all(consumer)
    assert got == [b"before", b"after"]
    assert len(raised) == 1 and isinstance(raised[0], MessageDecodeError), raised
    error = raised[0]
    assert (error.field, error.ledger_id, error.entry_id, error.topic) == (field, ledger, entry, TOPIC)
    assert error.value > error.limit and str(error.limit) in error.message
    assert wait_until(lambda: (ledger, entry) in broker.acked()), broker.acked()
    assert broker.count("CLOSE_CONSUMER") == 0 and broker.count("SUBSCRIBE") == 1  # never resubscribed


def test_a_listener_passes_over_an_entry_the_client_cannot_position(hostile):
    broker, client = hostile("binary")
    broker.messages = [Scripted(7, 0, single(b"before")), Scripted(7 + (1 << 30), 0, single(b"far")),
                       Scripted(7, 1, single(b"after"))]
    got: list[bytes] = []
    done = threading.Event()

    def listener(consumer, msg):
        got.append(msg.data())
        if len(got) == 2:
            done.set()
    client.subscribe("t", "s", message_listener=listener)
    assert done.wait(10) and got == [b"before", b"after"]
    assert (7 + (1 << 30), 0) in broker.acked()


def test_a_reader_raises_an_entry_it_cannot_position_once_and_reads_on(hostile):
    broker, client = hostile("binary")
    broker.messages = [Scripted(7, 0, single(b"before")), Scripted(7, 1 << 24, single(b"high")),
                       Scripted(7, 5, single(b"after"))]
    reader = client.create_reader("t", MessageId.earliest)
    assert reader.read_next(5000).data() == b"before"
    with pytest.raises(MessageDecodeError, match="entry id 16777216"):
        reader.read_next(5000)
    assert reader.read_next(5000).data() == b"after"
