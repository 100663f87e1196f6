"""ProduceAdapter (connector/client/transport/binary/producing.py): the Produce stream of the client core as Pulsar
commands, against a fake PulsarConnection that records what is sent and lets the test answer."""
from __future__ import annotations

import threading

import pytest

from broker_core import errors
from broker_core.protocol import pulsar_api_pb2
from broker_core.protocol import pulsar_commands_pb2 as cmd
from broker_core.protocol.codec.entries import encode_entry

from connector.client.producer.batching import PendingEntry
from connector.client.transport.binary import producing
from connector.client.transport.binary.producing import NO_ID, ProduceAdapter
from connector.client.enums import ProducerAccessMode
from connector.client.transport.events import Closed, ProducerReady, ProducerSpec, Receipt, SendFailed
from tests.waiting import wait_until

T = cmd.BaseCommand
TOPIC = "persistent://public/default/t"


class FakeConnection:
    max_message_size = 1_000_000
    closed = False

    def __init__(self) -> None:
        self.frames: list[tuple[cmd.BaseCommand, bytes | None]] = []
        self.writes = 0
        self.requests: list[tuple[cmd.BaseCommand, object]] = []
        self.producers: dict[int, object] = {}
        self._ids = 0

    def _next(self) -> int:
        self._ids += 1
        return self._ids

    next_request_id = next_producer_id = _next

    def send(self, command, payload=None) -> None:
        self.frames.append((command, payload))
        self.writes += 1

    def send_many(self, frames) -> None:
        self.frames.extend(frames)
        self.writes += 1

    def request_async(self, command, callback) -> None:
        self.requests.append((command, callback))

    def register_producer(self, producer_id, handler) -> None:
        self.producers[producer_id] = handler

    def unregister_producer(self, producer_id) -> None:
        self.producers.pop(producer_id, None)

    def sends(self) -> list[tuple[cmd.CommandSend, bytes | None]]:
        return [(c.send, p) for c, p in self.frames if c.type == T.SEND]


class FakeTransport:
    operation_timeout_s = 5.0

    def __init__(self, conn: FakeConnection | None = None, failure: errors.PulsarLikeError | None = None) -> None:
        self.conn = conn or FakeConnection()
        self.failure = failure
        self.forgotten: list[str] = []

    def forget(self, topic):
        self.forgotten.append(topic)

    def connection_for(self, topic, timeout_s):
        if self.failure is not None:
            raise self.failure
        return self.conn


class Recorder:
    """The events the adapter reports: ``responses`` (all but the last, ``Closed``) and ``ends`` (its errors)."""

    def __init__(self) -> None:
        self.responses: list = []
        self.ends: list[errors.PulsarLikeError | None] = []
        self.on_opened = None

    def on_event(self, event) -> None:
        if type(event) is Closed:
            self.ends.append(event.error)
            return
        self.responses.append(event)
        if type(event) is ProducerReady and self.on_opened is not None:
            self.on_opened()


def open_spec(name: str = "", access=ProducerAccessMode.Shared, **properties) -> ProducerSpec:
    return ProducerSpec(TOPIC, name, access, properties, -1)


def started(name: str = "", transport: FakeTransport | None = None, **kw) -> tuple[ProduceAdapter, FakeTransport,
                                                                                  Recorder]:
    transport = transport or FakeTransport()
    rec = Recorder()
    adapter = ProduceAdapter(transport, open_spec(name, **kw), rec.on_event, "producer-t")
    adapter.start()
    assert wait_until(lambda: transport.conn.requests or rec.ends, 5)
    return adapter, transport, rec


def answer_producer(conn: FakeConnection, name="p-1", last=-1, ready=True, index=0) -> None:
    command, callback = conn.requests[index]
    callback(T(type=T.PRODUCER_SUCCESS, producer_success=cmd.CommandProducerSuccess(
        request_id=command.producer.request_id, producer_name=name, last_sequence_id=last, producer_ready=ready)),
        None)


def opened(name: str = "", **kw) -> tuple[ProduceAdapter, FakeConnection, Recorder]:
    adapter, transport, rec = started(name, **kw)
    answer_producer(transport.conn, name or "p-1")
    return adapter, transport.conn, rec


def entry(seq: int, n: int = 1, payload: bytes = b"x", **meta) -> PendingEntry:
    data = encode_entry(pulsar_api_pb2.MessageMetadata(producer_name="p", sequence_id=seq, publish_time=1, **meta),
                        payload)
    return PendingEntry(seq, seq + n - 1, n, n > 1, data, [])


def frame_to(conn: FakeConnection, command: cmd.BaseCommand) -> None:
    for handler in list(conn.producers.values()):
        handler.on_frame(command, None)


def receipt(seq: int, ledger: int, entry_id: int, highest: int | None = None) -> cmd.BaseCommand:
    r = cmd.CommandSendReceipt(producer_id=1, sequence_id=seq,
                               message_id=pulsar_api_pb2.MessageIdData(ledgerId=ledger, entryId=entry_id))
    if highest is not None:
        r.highest_sequence_id = highest
    return T(type=T.SEND_RECEIPT, send_receipt=r)


@pytest.fixture(autouse=True)
def fresh_epochs():
    producing._epochs.clear()
    yield
    producing._epochs.clear()


# --- opening -------------------------------------------------------------------------------------------
def test_start_sends_producer_with_the_open_requests_name_access_mode_and_properties():
    adapter, transport, _ = started("named", access=ProducerAccessMode.WaitForExclusive, team="a")
    producer = transport.conn.requests[0][0].producer
    assert (producer.topic, producer.producer_name, producer.user_provided_producer_name) == (TOPIC, "named", True)
    assert producer.producer_access_mode == cmd.WaitForExclusive
    assert [(kv.key, kv.value) for kv in producer.metadata] == [("team", "a")]
    assert producer.epoch == 0
    # frames for the producer id are routed to it before the broker answers
    assert transport.conn.producers == {producer.producer_id: adapter}


def test_a_producer_without_a_name_lets_the_broker_name_it():
    _, transport, _ = started()
    producer = transport.conn.requests[0][0].producer
    assert not producer.HasField("producer_name") and producer.user_provided_producer_name is False


def test_producer_success_is_reported_as_opened_with_the_connections_max_message_size():
    _, _, rec = opened()
    assert rec.responses == [ProducerReady(
        producer_name="p-1", last_sequence_id=-1, max_message_size=1_000_000, topic=TOPIC)]


def test_a_producer_not_ready_yet_opens_at_the_second_answer():
    _, transport, rec = started("x", access=ProducerAccessMode.WaitForExclusive)
    answer_producer(transport.conn, "x", ready=False)
    assert rec.responses == [] and rec.ends == []
    answer_producer(transport.conn, "x", last=41)
    assert rec.responses[0].last_sequence_id == 41


def test_a_refused_producer_ends_the_stream_with_the_typed_error():
    _, transport, rec = started("x")
    transport.conn.requests[0][1](None, errors.ProducerFenced("fenced"))
    assert [type(e) for e in rec.ends] == [errors.ProducerFenced] and transport.conn.producers == {}


def test_a_failed_lookup_ends_the_stream_with_its_error():
    _, _, rec = started(transport=FakeTransport(failure=errors.ServiceNotReady("no broker")))
    assert [type(e) for e in rec.ends] == [errors.ServiceNotReady]


# --- sending -------------------------------------------------------------------------------------------
def test_an_unbatched_entry_is_one_send_whose_payload_is_the_entry_as_built():
    adapter, conn, _ = opened()
    e = entry(7)
    adapter.send(e)
    [(send, payload)] = conn.sends()
    assert (send.producer_id, send.sequence_id, send.num_messages) == (1, 7, 1)
    assert not send.HasField("highest_sequence_id") and not send.is_chunk
    assert payload is e.data


def test_a_batch_says_its_highest_sequence_id_and_message_count():
    adapter, conn, _ = opened()
    adapter.send(entry(10, n=5))
    [(send, _)] = conn.sends()
    assert (send.sequence_id, send.highest_sequence_id, send.num_messages) == (10, 14, 5)


def test_entries_resent_while_the_core_hears_of_the_opening_go_out_in_one_write_in_order():
    adapter, transport, rec = started("x")
    conn = transport.conn
    rec.on_opened = lambda: [adapter.send(entry(s)) for s in (3, 4, 5)]
    answer_producer(conn, "x")
    assert [s.sequence_id for s, _ in conn.sends()] == [3, 4, 5]
    assert conn.writes == 1
    adapter.send(entry(6))
    assert [s.sequence_id for s, _ in conn.sends()] == [3, 4, 5, 6]


def test_every_chunk_of_a_chunked_message_is_marked_as_a_chunk():
    adapter, conn, _ = opened()
    chunks = [entry(9, payload=b"ab", uuid="p-9", chunk_id=i, num_chunks_from_msg=3, total_chunk_msg_size=6)
              for i in range(3)]
    chunks[0].counted = chunks[1].counted = 0
    for chunk in chunks:
        adapter.send(chunk)
    adapter.send(entry(10))
    assert [s.is_chunk for s, _ in conn.sends()] == [True, True, True, False]


def test_a_last_chunk_resent_alone_after_a_reconnection_is_still_a_chunk():
    adapter, conn, _ = opened()
    adapter.send(entry(9, payload=b"ab", uuid="p-9", chunk_id=2, num_chunks_from_msg=3, total_chunk_msg_size=6))
    assert [s.is_chunk for s, _ in conn.sends()] == [True]


# --- answers -------------------------------------------------------------------------------------------
def test_a_receipt_carries_the_brokers_own_message_id():
    adapter, conn, rec = opened()
    frame_to(conn, receipt(10, 3, 77, highest=14))
    assert repr(rec.responses[-1]) == repr(Receipt(10, 14, 3, 77))


def test_a_receipt_without_a_highest_sequence_id_counts_its_sequence_id_as_the_highest():
    _, conn, rec = opened()
    frame_to(conn, receipt(10, 0, 5))
    assert rec.responses[-1].highest_sequence_id == 10


def test_a_receipt_with_ids_minus_one_is_a_duplicate():
    _, conn, rec = opened()
    frame_to(conn, receipt(4, NO_ID, NO_ID, highest=4))
    assert repr(rec.responses[-1]) == repr(Receipt(4, 4, duplicate=True))


def test_a_refused_entry_fails_alone_with_the_typed_error():
    _, conn, rec = opened()
    frame_to(conn, T(type=T.SEND_ERROR, send_error=cmd.CommandSendError(
        producer_id=1, sequence_id=4, error=cmd.TopicTerminatedError, message="terminated")))
    failure = rec.responses[-1]
    assert type(failure) is SendFailed
    assert failure.sequence_id == 4 and isinstance(failure.error, errors.TopicTerminated)
    assert rec.ends == []


def test_a_checksum_error_closes_the_producer_and_reconnects_to_send_again():
    _, conn, rec = opened()
    frame_to(conn, T(type=T.SEND_ERROR, send_error=cmd.CommandSendError(
        producer_id=1, sequence_id=4, error=cmd.ChecksumError, message="bad crc")))
    assert [type(e) for e in rec.ends] == [errors.ConnectError]
    assert [c.type for c, _ in conn.requests][-1] == T.CLOSE_PRODUCER
    assert conn.producers == {}


def test_close_producer_from_the_broker_is_a_lost_stream_and_the_reopening_has_a_higher_epoch():
    _, transport, rec = started("named")
    answer_producer(transport.conn, "named")
    frame_to(transport.conn, T(type=T.CLOSE_PRODUCER, close_producer=cmd.CommandCloseProducer(producer_id=1)))
    assert [type(e) for e in rec.ends] == [errors.ConnectError]
    assert transport.forgotten == [TOPIC]  # it may be served by another broker now: looked up again
    started("named", transport=transport)
    assert transport.conn.requests[-1][0].producer.epoch == 1


def test_a_reopened_producer_whose_name_the_broker_chose_says_the_name_is_not_the_users():
    _, transport, rec = started()
    answer_producer(transport.conn, "standalone-0-7")
    transport.conn.producers[1].on_connection_lost(errors.ConnectError("socket closed"))
    started("standalone-0-7", transport=transport)
    producer = transport.conn.requests[-1][0].producer
    assert (producer.producer_name, producer.epoch, producer.user_provided_producer_name) == \
        ("standalone-0-7", 1, False)


def test_a_lost_connection_ends_the_stream_once():
    adapter, conn, rec = opened()
    adapter.on_connection_lost(errors.ConnectError("socket closed"))
    adapter.on_connection_lost(errors.ConnectError("socket closed"))
    adapter.close()
    assert [type(e) for e in rec.ends] == [errors.ConnectError] and not adapter.alive


# --- closing -------------------------------------------------------------------------------------------
def test_close_sends_close_producer_waits_for_its_answer_and_ends_with_none():
    adapter, conn, rec = opened("named")
    closer = threading.Thread(target=adapter.close, args=(5.0,))
    adapter.half_close()
    closer.start()
    close_request, callback = conn.requests[-1]
    assert close_request.type == T.CLOSE_PRODUCER and close_request.close_producer.producer_id == 1
    assert rec.ends == []
    callback(T(type=T.SUCCESS), None)
    closer.join(5)
    assert rec.ends == [None] and conn.producers == {}
    assert sum(c.type == T.CLOSE_PRODUCER for c, _ in conn.requests) == 1


def test_closing_while_opening_ends_at_once_and_closes_the_producer_when_the_broker_answers():
    adapter, transport, rec = started("x", access=ProducerAccessMode.WaitForExclusive)
    conn = transport.conn
    adapter.close(wait_s=0)
    assert rec.ends == [None]
    answer_producer(conn, "x")
    assert rec.responses == []
    assert [c.type for c, _ in conn.requests][1:] == [T.CLOSE_PRODUCER, T.CLOSE_PRODUCER]
