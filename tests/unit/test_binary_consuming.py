"""ConsumeAdapter (the Consume stream over Pulsar's binary protocol) against a fake PulsarConnection: what the
core's requests (:mod:`connector.client.transport.events`) become as Pulsar commands, and what the broker's frames become
as the client's events."""
from __future__ import annotations

import pytest

from broker_core import errors
from broker_core.protocol import pulsar_api_pb2
from broker_core.protocol import pulsar_commands_pb2 as cmd
from broker_core.protocol.ack_set import from_words
from broker_core.protocol.codec.entries import broker_entry_prefix, encode_entry
from connector.client import entries
from connector.client.transport.binary.consuming import ConsumeAdapter, num_messages, stored_bytes
from connector.client.transport.binary.positions import PackedPositions
from connector.client.enums import ConsumerType, InitialPosition
from connector.client.transport.events import (
    EARLIEST, LATEST, Ack, AckCumulative, ActiveChanged, Closed, ConsumerSpec, Delivery, EndOfTopic, Flow,
    KeySharedSpec, Position, Redeliver, Seek, SeekDone, Subscribed, Unsubscribe)
from connector.client.transport import DENSE
from tests.waiting import wait_until

T = cmd.BaseCommand
TOPIC = "persistent://public/default/t"
LEDGER = 5000


class FakeConnection:
    """Records commands; answers requests as told (``answers``: command type -> error or None)."""

    address = "fake:6650"

    def __init__(self) -> None:
        self.sent: list[T] = []
        self.handlers: dict[int, object] = {}
        self.pending: dict[int, tuple[T, object]] = {}
        self.auto_answer = True
        self.refuse: dict[int, errors.PulsarLikeError] = {}
        self._ids = iter(range(1, 10_000))
        self._consumers = iter(range(1, 10_000))

    def next_request_id(self) -> int:
        return next(self._ids)

    def next_consumer_id(self) -> int:
        return next(self._consumers)

    def send(self, command: T, payload=None) -> None:
        self.sent.append(command)

    def request_async(self, command: T, callback) -> int:
        self.sent.append(command)
        request_id = next(v for _, v in command.ListFields() if hasattr(v, "request_id")).request_id
        if self.auto_answer:
            self.answer(command, callback)
        else:
            self.pending[command.type] = (command, callback)
        return request_id

    def answer(self, command: T, callback) -> None:
        error = self.refuse.pop(command.type, None)
        callback(None, error) if error is not None else callback(T(type=T.SUCCESS), None)

    def answer_pending(self, kind: int) -> None:
        command, callback = self.pending.pop(kind)
        self.answer(command, callback)

    def register_consumer(self, consumer_id, handler) -> None:
        self.handlers[consumer_id] = handler

    def unregister_consumer(self, consumer_id) -> None:
        self.handlers.pop(consumer_id, None)

    def of(self, kind: int) -> list[T]:
        return [c for c in self.sent if c.type == kind]


class FakeTransport:
    operation_timeout_s = 5.0

    def __init__(self, positions=DENSE) -> None:
        self.conn = FakeConnection()
        self.positions = positions

    def connection_for(self, topic, timeout_s=None):
        return self.conn


class Stream:
    """An adapter with its events collected: ``responses`` (all but the end), ``ends`` (the Closed ones' errors)."""

    def __init__(self, spec: ConsumerSpec, positions=DENSE, reconnecting: bool = False) -> None:
        self.transport = FakeTransport(positions)
        self.conn = self.transport.conn
        self.responses: list = []
        self.ends: list = []
        self.spec = spec
        self.adapter = ConsumeAdapter(self.transport, spec, self._on_event, "test", reconnecting=reconnecting)

    def _on_event(self, event) -> None:
        if isinstance(event, Closed):
            self.ends.append(event.error)
        else:
            self.responses.append(event)

    def start(self) -> "Stream":
        self.adapter.start()
        wait_until(lambda: self.kinds() or self.ends, timeout_s=5)
        if "Subscribed" in self.kinds() and self.spec.initial_permits:  # its FLOW follows on the I/O thread
            wait_until(lambda: self.conn.of(T.FLOW), timeout_s=5)
        return self

    def kinds(self) -> list[str]:
        return [type(r).__name__ for r in self.responses]

    def deliver(self, ledger: int, entry: int, data: bytes, redelivery_count: int = 0, ack_set=()) -> None:
        command = T(type=T.MESSAGE)
        command.message.consumer_id = self.adapter.consumer_id
        command.message.message_id.ledgerId = ledger
        command.message.message_id.entryId = entry
        command.message.redelivery_count = redelivery_count
        command.message.ack_set.extend(ack_set)
        self.conn.handlers[self.adapter.consumer_id].on_frame(command, memoryview(data))

    def entries(self) -> list:
        return [e for r in self.responses if isinstance(r, Delivery) for e in r.entries]

    def request(self, request) -> None:
        self.adapter.send(request)


def entry(count: int = 1, payload: bytes = b"x") -> bytes:
    meta = pulsar_api_pb2.MessageMetadata(producer_name="p", sequence_id=1, publish_time=1)
    if count > 1:
        meta.num_messages_in_batch = count
    return encode_entry(meta, payload)


def subscribe(**fields) -> ConsumerSpec:
    base = dict(topic=TOPIC, subscription="s", sub_type=ConsumerType.Shared, durable=True, partition=-1,
                initial_permits=100)
    base.update(fields)
    return ConsumerSpec(**base)


def test_subscribe_is_sent_as_subscribe_then_subscribed_and_the_first_permits():
    stream = Stream(subscribe(sub_type=ConsumerType.KeyShared, consumer_name="c1", priority_level=2,
                              initial_position=InitialPosition.Earliest, read_compacted=True,
                              key_shared=KeySharedSpec(sticky=True, ranges=((0, 99),))))
    stream.start()
    sub = stream.conn.of(T.SUBSCRIBE)[0].subscribe
    assert (sub.topic, sub.subscription, sub.subType, sub.consumer_name, sub.priority_level, sub.durable) == \
        (TOPIC, "s", cmd.CommandSubscribe.Key_Shared, "c1", 2, True)
    assert sub.initialPosition == cmd.CommandSubscribe.Earliest and sub.read_compacted
    assert sub.keySharedMeta.keySharedMode == cmd.STICKY
    assert [(r.start, r.end) for r in sub.keySharedMeta.hashRanges] == [(0, 99)]
    assert not sub.HasField("start_message_id")
    assert stream.responses == [Subscribed(TOPIC, "c1", -1)]
    assert [c.flow.messagePermits for c in stream.conn.of(T.FLOW)] == [100]
    assert stream.adapter.alive


@pytest.mark.parametrize("topic, reconnecting, creates", [
    (TOPIC, False, True), (TOPIC, True, False), ("non-persistent://public/default/t", True, True)])
def test_a_resubscription_to_a_persistent_topic_does_not_create_it_again(topic, reconnecting, creates):
    # a force-deleted topic then ends the stream with TopicNotFound, as the gRPC broker ends it
    stream = Stream(subscribe(topic=topic), reconnecting=reconnecting).start()
    assert stream.conn.of(T.SUBSCRIBE)[0].subscribe.force_topic_creation is creates


def test_a_refused_subscribe_ends_the_stream_with_its_typed_error():
    stream = Stream(subscribe())
    stream.conn.refuse[T.SUBSCRIBE] = errors.ConsumerBusy("exclusive")
    stream.start()
    assert isinstance(stream.ends[0], errors.ConsumerBusy)
    assert stream.kinds() == [] and not stream.adapter.alive


def test_a_message_is_delivered_as_the_entry_the_core_decodes():
    stream = Stream(subscribe()).start()
    stored = broker_entry_prefix(1, 12) + entry(3, b"abc")
    stream.deliver(7, 10, stored, redelivery_count=2, ack_set=[0b101])
    (delivered,) = stream.entries()
    assert delivered.data == stored
    assert (delivered.ledger_id, delivered.entry_id, delivered.num_messages, delivered.redelivery_count,
            list(delivered.ack_set)) == (7, 10, 3, 2, [0b101])


def test_a_payload_without_magic_and_checksum_gets_them_and_decodes():
    with_crc = entry(1, b"hello")
    bare = with_crc[6:]  # pulsar-lite sends [metadata size][metadata][payload]
    assert stored_bytes(memoryview(bare)) == with_crc
    prefix = broker_entry_prefix(1, 0)
    assert stored_bytes(memoryview(prefix + bare)) == prefix + with_crc
    metadata, payload, _ = entries.open_entry(stored_bytes(memoryview(bare)))
    assert bytes(payload) == b"hello"


def test_an_unreadable_entry_counts_as_one_message_for_the_core_to_report():
    assert num_messages(b"\x0e\x01garbage") == 1
    assert num_messages(entry(4)) == 4


def test_the_batch_count_is_found_among_any_metadata_fields():
    meta = pulsar_api_pb2.MessageMetadata(producer_name="p", sequence_id=2**40, publish_time=1, partition_key="k",
                                          event_time=5, uuid="u-1", num_chunks_from_msg=1, highest_sequence_id=9)
    meta.properties.add(key="a", value="b")
    assert num_messages(encode_entry(meta, b"x")) == 1
    meta.num_messages_in_batch = 300  # a two-byte varint
    assert num_messages(broker_entry_prefix(1, 2) + encode_entry(meta, b"x")) == 300


def test_packed_positions_number_the_entries_of_another_broker():
    positions = PackedPositions()
    stream = Stream(subscribe(), positions).start()
    stream.deliver(LEDGER, 3, entry(2))
    (delivered,) = stream.entries()
    assert delivered.entry_id == positions.pack(LEDGER, 3, 0)
    mid = positions.message_id(delivered.ledger_id, delivered.entry_id, -1, 1, 2)
    assert (mid.ledger_id(), mid.entry_id(), mid.batch_index()) == (LEDGER, 3, 1)


def test_acks_name_the_entries_delivered():
    positions = PackedPositions()
    stream = Stream(subscribe(sub_type=ConsumerType.Exclusive), positions).start()
    stream.deliver(LEDGER, 3, entry(4))
    stream.deliver(LEDGER, 4, entry(1))
    first, single = positions.pack(LEDGER, 3, 0), positions.pack(LEDGER, 4, 0)
    stream.request(Ack(((first + 1, first + 2), (single, single + 1))))
    stream.request(AckCumulative(single))
    individual, cumulative = stream.conn.of(T.ACK)
    assert individual.ack.ack_type == cmd.CommandAck.Individual
    assert [(m.ledgerId, m.entryId, from_words(m.ack_set)) for m in individual.ack.message_id] == \
        [(LEDGER, 3, 0b1101), (LEDGER, 4, 0)]
    assert cumulative.ack.ack_type == cmd.CommandAck.Cumulative
    assert [(m.ledgerId, m.entryId) for m in cumulative.ack.message_id] == [(LEDGER, 4)]


def test_a_redelivery_names_the_entries_and_an_empty_one_asks_for_all():
    stream = Stream(subscribe()).start()
    stream.deliver(0, 10, entry(3))
    stream.request(Redeliver(((10, 11),)))
    stream.request(Redeliver())
    some, everything = stream.conn.of(T.REDELIVER_UNACKNOWLEDGED_MESSAGES)
    assert [m.entryId for m in some.redeliverUnacknowledgedMessages.message_ids] == [10]
    assert not everything.redeliverUnacknowledgedMessages.message_ids


def test_a_reader_starts_at_the_real_id_and_entries_before_its_position_are_dropped_with_their_permits():
    positions = PackedPositions(base_ledger=LEDGER)
    start = positions.pack(LEDGER, 3, 0) + 1  # exclusive of the unbatched message (LEDGER, 3)
    stream = Stream(subscribe(durable=False, sub_type=ConsumerType.Exclusive, start=Position(start),
                              start_inclusive=True), positions).start()
    start_id = stream.conn.of(T.SUBSCRIBE)[0].subscribe.start_message_id
    assert (start_id.ledgerId, start_id.entryId, start_id.batch_index) == (LEDGER, 3, 1)
    stream.deliver(LEDGER, 3, entry(1))  # the broker starts at the entry: the client skips it
    stream.deliver(LEDGER, 4, entry(1))
    assert [e.entry_id for e in stream.entries()] == [positions.pack(LEDGER, 4, 0)]
    assert [c.flow.messagePermits for c in stream.conn.of(T.FLOW)] == [100, 1]


@pytest.mark.parametrize("position,expected", [(EARLIEST, (2**64 - 1, 2**64 - 1)), (LATEST, (2**63 - 1, 2**63 - 1))])
def test_a_reader_from_earliest_or_latest_sends_pulsars_sentinel_ids(position, expected):
    stream = Stream(subscribe(durable=False, start=position)).start()
    start_id = stream.conn.of(T.SUBSCRIBE)[0].subscribe.start_message_id
    assert (start_id.ledgerId, start_id.entryId) == expected


def test_a_seek_resubscribes_after_the_broker_closed_the_consumer_then_answers():
    stream = Stream(subscribe(durable=False, start=EARLIEST)).start()
    conn = stream.conn
    conn.auto_answer = False
    first_id = stream.adapter.consumer_id
    stream.request(Seek(1, Position(42)))
    assert conn.of(T.SEEK)[0].seek.message_id.entryId == 42
    close = T(type=T.CLOSE_CONSUMER, close_consumer=cmd.CommandCloseConsumer(consumer_id=first_id, request_id=0))
    conn.handlers[first_id].on_frame(close, None)  # Pulsar's order: the consumers are closed, then SEEK answered
    stream.request(Ack(((40, 41),)))  # held until subscribed again
    conn.answer_pending(T.SEEK)
    resubscribe = conn.of(T.SUBSCRIBE)[1].subscribe
    assert resubscribe.start_message_id.entryId == 42 and resubscribe.consumer_id != first_id
    assert stream.kinds() == ["Subscribed"]
    conn.answer_pending(T.SUBSCRIBE)
    assert stream.responses[1:] == [SeekDone(1)]
    assert conn.of(T.ACK)[0].ack.consumer_id == resubscribe.consumer_id
    assert stream.ends == [] and len(conn.of(T.FLOW)) == 1  # the core sends the new window's permits


def test_a_refused_seek_answers_with_its_error_and_the_stream_goes_on():
    stream = Stream(subscribe()).start()
    stream.conn.refuse[T.SEEK] = errors.NotAllowedError("no seek here")
    stream.request(Seek(3, publish_time_ms=1000))
    assert stream.conn.of(T.SEEK)[0].seek.message_publish_time == 1000
    done = stream.responses[-1]
    assert done.seek_id == 3 and isinstance(done.error, errors.NotAllowedError)
    assert stream.adapter.alive


def test_the_broker_closing_the_consumer_ends_the_stream_as_a_lost_connection():
    stream = Stream(subscribe()).start()
    consumer_id = stream.adapter.consumer_id
    stream.conn.handlers[consumer_id].on_frame(T(type=T.CLOSE_CONSUMER, close_consumer=cmd.CommandCloseConsumer(
        consumer_id=consumer_id, request_id=0)), None)
    assert isinstance(stream.ends[0], errors.ConnectError)
    assert consumer_id not in stream.conn.handlers


def test_a_lost_connection_ends_the_stream_once_with_connect_error():
    stream = Stream(subscribe()).start()
    stream.adapter.on_connection_lost(errors.ConnectError("gone"))
    stream.adapter.on_connection_lost(errors.Timeout("again"))
    assert len(stream.ends) == 1 and isinstance(stream.ends[0], errors.ConnectError)


def test_active_changes_end_of_topic_and_unsubscribe_become_events():
    stream = Stream(subscribe(sub_type=ConsumerType.Failover)).start()
    handler = stream.conn.handlers[stream.adapter.consumer_id]
    handler.on_frame(T(type=T.ACTIVE_CONSUMER_CHANGE, active_consumer_change=cmd.CommandActiveConsumerChange(
        consumer_id=stream.adapter.consumer_id, is_active=True)), None)
    handler.on_frame(T(type=T.REACHED_END_OF_TOPIC, reachedEndOfTopic=cmd.CommandReachedEndOfTopic(
        consumer_id=stream.adapter.consumer_id)), None)
    stream.conn.refuse[T.UNSUBSCRIBE] = errors.NotAllowedError("others are connected")
    stream.request(Unsubscribe(77))
    assert stream.kinds() == ["Subscribed", "ActiveChanged", "EndOfTopic", "Unsubscribed"]
    assert stream.responses[1:3] == [ActiveChanged(True), EndOfTopic()]
    done = stream.responses[3]
    assert done.request_id == 77 and isinstance(done.error, errors.NotAllowedError)


def test_close_sends_close_consumer_and_ends_with_none():
    stream = Stream(subscribe()).start()
    stream.adapter.close(wait_s=1)
    assert len(stream.conn.of(T.CLOSE_CONSUMER)) == 1
    assert stream.ends == [None] and not stream.adapter.alive
    stream.adapter.close()
    assert stream.ends == [None]


def test_a_close_while_subscribing_closes_the_consumer_once_subscribed():
    stream = Stream(subscribe())
    stream.conn.auto_answer = False
    stream.adapter.start()
    wait_until(lambda: T.SUBSCRIBE in stream.conn.pending, timeout_s=5)
    stream.adapter.close(wait_s=0)
    stream.conn.answer_pending(T.SUBSCRIBE)
    assert stream.kinds() == [] and stream.ends == [None]
    assert len(stream.conn.of(T.CLOSE_CONSUMER)) == 1


def test_requests_made_before_the_subscription_is_answered_go_out_after_it():
    stream = Stream(subscribe())
    stream.conn.auto_answer = False
    stream.adapter.start()
    wait_until(lambda: T.SUBSCRIBE in stream.conn.pending, timeout_s=5)
    stream.request(Flow(5))
    assert stream.conn.of(T.FLOW) == []
    stream.conn.answer_pending(T.SUBSCRIBE)
    assert [c.flow.messagePermits for c in stream.conn.of(T.FLOW)] == [5, 100]


@pytest.mark.parametrize("ledger,entry_id,count,field", [(LEDGER + (1 << 30), 0, 1, "ledger_id"),
                                                         (LEDGER, 1 << 24, 1, "entry_id"),
                                                         (LEDGER, 3, (1 << 17) + 1, "num_messages_in_batch")])
def test_an_entry_beyond_packed_positions_is_acknowledged_by_its_real_id_reported_once_and_passed_over(
        ledger, entry_id, count, field):
    stream = Stream(subscribe(), PackedPositions(base_ledger=LEDGER)).start()
    stream.deliver(ledger, entry_id, entry(count, payload=b""))
    stream.deliver(LEDGER, 7, entry(1))
    assert stream.ends == [] and stream.conn.of(T.CLOSE_CONSUMER) == []
    assert stream.kinds() == ["Subscribed", "Unreadable", "Delivery"]
    (ack,) = stream.conn.of(T.ACK)
    assert ack.ack.ack_type == cmd.CommandAck.Individual
    assert [(m.ledgerId, m.entryId, list(m.ack_set)) for m in ack.ack.message_id] == [(ledger, entry_id, [])]
    assert [c.flow.messagePermits for c in stream.conn.of(T.FLOW)] == [100, count]
    error = stream.responses[1].error
    assert isinstance(error, errors.MessageDecodeError)
    assert (error.field, error.topic, error.ledger_id, error.entry_id) == (field, TOPIC, ledger, entry_id)
    assert error.value > error.limit and str(error.limit) in error.message
    assert [e.entry_id for e in stream.entries()] == [stream.transport.positions.pack(LEDGER, 7, 0)]

