"""Pulsar binary protocol: bad input from raw sockets. Each gets a typed error or a closed connection with a
logged reason, and the broker keeps serving everyone else (issue 14, "Bad input")."""
from __future__ import annotations

import logging
import struct
import uuid

import pytest

from broker_core.protocol import pulsar_api_pb2 as wire
from broker_core.protocol import pulsar_commands_pb2 as cmd
from broker_core.protocol.entry_limits import FRAME_PADDING
from tests.pulsar_wire import HEADER, RawPulsar, entry, frame, raw_frame
from tests.waiting import wait_until

T = cmd.BaseCommand
MAX_MESSAGE = 64 * 1024


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    from broker_core import Broker

    with Broker(data_dir=tmp_path_factory.mktemp("broker"), port=0, maxMessageSize=MAX_MESSAGE) as running:
        yield running


@pytest.fixture
def topic():
    return f"persistent://public/default/bad-{uuid.uuid4().hex[:8]}"


def refused(caplog, reason: str) -> bool:
    return any("event=pulsar_connection_refused" in r.getMessage() and reason in r.getMessage()
               for r in caplog.records)


def assert_broker_still_serves(broker, topic: str) -> None:
    """A well-behaved client still produces and consumes, and what was stored is all there."""
    with RawPulsar(broker.address) as good:
        good.connect()
        assert good.producer(topic, producer_id=7).type == T.PRODUCER_SUCCESS
        receipt = good.send_entry(entry(b"still here"), producer_id=7, sequence_id=1)
        assert receipt.type == T.SEND_RECEIPT


@pytest.fixture(autouse=True)
def _warnings(caplog):
    caplog.set_level(logging.WARNING, logger="broker_core.frontends.pulsar")


def test_a_frame_above_max_message_size_plus_padding_closes_the_connection(broker, topic, caplog):
    with RawPulsar(broker.address) as raw:
        raw.connect()
        raw.send(struct.pack(">I", MAX_MESSAGE + FRAME_PADDING + 1) + b"\x00" * 16)
        assert raw.closed_by_broker()
    assert wait_until(lambda: refused(caplog, "frames hold 4 to"))
    assert_broker_still_serves(broker, topic)


def test_a_truncated_frame_waits_and_the_connection_ends_cleanly(broker, topic, caplog):
    with RawPulsar(broker.address) as raw:
        raw.connect()
        whole = frame(T(type=T.PRODUCER, producer=cmd.CommandProducer(topic=topic, producer_id=1, request_id=1)))
        raw.send(whole[:len(whole) - 3])
    assert_broker_still_serves(broker, topic)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


def test_an_unknown_command_type_closes_the_connection(broker, topic, caplog):
    with RawPulsar(broker.address) as raw:
        raw.connect()
        raw.send(raw_frame(b"\x08\xe7\x07"))  # type = 999
        assert raw.closed_by_broker()
    assert wait_until(lambda: refused(caplog, "does not know"))
    assert_broker_still_serves(broker, topic)


def test_a_command_missing_a_required_field_is_answered_with_an_error(broker, topic):
    with RawPulsar(broker.address) as raw:
        raw.connect()
        partial = T(type=T.LOOKUP, lookupTopic=cmd.CommandLookupTopic(request_id=5))  # no topic
        raw.send(raw_frame(partial.SerializePartialToString()))
        error = raw.expect(T.ERROR).error
        assert (error.request_id, error.error) == (5, cmd.NotAllowedError)
        assert "topic" in error.message


def test_a_command_missing_its_request_id_closes_the_connection(broker, topic, caplog):
    with RawPulsar(broker.address) as raw:
        raw.connect()
        partial = T(type=T.LOOKUP, lookupTopic=cmd.CommandLookupTopic(topic=topic))
        raw.send(raw_frame(partial.SerializePartialToString()))
        assert raw.closed_by_broker()
    assert wait_until(lambda: refused(caplog, "required field"))


def test_garbage_instead_of_connect_closes_the_connection(broker, topic, caplog):
    with RawPulsar(broker.address) as raw:
        raw.send(b"\x00\x00\x00\x10" + b"\xff" * 16)
        assert raw.closed_by_broker()
    assert wait_until(lambda: refused(caplog, "reason="))
    assert_broker_still_serves(broker, topic)


def test_a_command_before_connect_closes_the_connection(broker, topic, caplog):
    with RawPulsar(broker.address) as raw:
        raw.send(frame(T(type=T.PRODUCER, producer=cmd.CommandProducer(topic=topic, producer_id=1,
                                                                        request_id=1))))
        assert raw.closed_by_broker()
    assert wait_until(lambda: refused(caplog, "PRODUCER before CONNECT"))


def test_send_before_producer_is_a_send_error(broker, topic):
    with RawPulsar(broker.address) as raw:
        raw.connect()
        answer = raw.send_entry(entry(), producer_id=42, sequence_id=3)
        assert answer.type == T.SEND_ERROR
        assert (answer.send_error.producer_id, answer.send_error.sequence_id) == (42, 3)
        assert answer.send_error.error == cmd.NotAllowedError


def test_a_wrong_crc_is_a_checksum_error_and_nothing_is_stored(broker, topic, admin):
    with RawPulsar(broker.address) as raw:
        raw.connect()
        assert raw.producer(topic).type == T.PRODUCER_SUCCESS
        data = bytearray(entry(b"payload"))
        data[-1] ^= 0xFF
        answer = raw.send_entry(bytes(data))
        assert answer.type == T.SEND_ERROR and answer.send_error.error == cmd.ChecksumError
    assert admin.topic_stats(topic)["msgInCounter"] == 0


def test_metadata_claiming_more_messages_than_the_payload_holds_is_refused(broker, topic):
    with RawPulsar(broker.address) as raw:
        raw.connect()
        assert raw.producer(topic).type == T.PRODUCER_SUCCESS
        answer = raw.send_entry(entry(b"x", num_messages_in_batch=1000), num_messages=1000)
        assert answer.type == T.SEND_ERROR and answer.send_error.error == cmd.NotAllowedError
        assert "num_messages_in_batch" in answer.send_error.message


def test_a_decompression_that_would_exceed_max_message_size_is_refused(broker, topic):
    with RawPulsar(broker.address) as raw:
        raw.connect()
        assert raw.producer(topic).type == T.PRODUCER_SUCCESS
        bomb = entry(b"\x00" * 10, compression=wire.ZLIB, uncompressed_size=MAX_MESSAGE * 100,
                     num_messages_in_batch=2)
        answer = raw.send_entry(bomb, num_messages=2)
        assert answer.type == T.SEND_ERROR and "decompresses to" in answer.send_error.message


def test_permits_that_overflow_close_the_connection(broker, topic, caplog):
    with RawPulsar(broker.address) as raw:
        raw.connect()
        assert raw.subscribe(topic, "s").type == T.SUCCESS
        for _ in range(2):
            raw.send(frame(T(type=T.FLOW, flow=cmd.CommandFlow(consumer_id=1, messagePermits=(1 << 32) - 1))))
        assert raw.closed_by_broker()
    assert wait_until(lambda: refused(caplog, "permits"))
    assert_broker_still_serves(broker, topic)


def test_acks_of_ids_past_the_topics_end_are_refused_and_change_nothing(broker, topic, admin):
    with RawPulsar(broker.address) as raw:
        raw.connect()
        assert raw.subscribe(topic, "s", initialPosition=cmd.CommandSubscribe.Earliest).type == T.SUCCESS
        assert raw.producer(topic, producer_id=2, request_id=2).type == T.PRODUCER_SUCCESS
        assert raw.send_entry(entry(b"kept"), producer_id=2).type == T.SEND_RECEIPT
        raw.send(frame(T(type=T.ACK, ack=cmd.CommandAck(
            consumer_id=1, ack_type=cmd.CommandAck.Individual, request_id=9,
            message_id=[wire.MessageIdData(ledgerId=0, entryId=1)]))))
        answer = raw.expect(T.ACK_RESPONSE).ackResponse
        assert answer.request_id == 9 and answer.HasField("error")
    # an id of the topic not delivered yet is applied, as Pulsar's (tests/integration/test_acks_after_reconnect.py)
    assert admin.topic_stats(topic)["subscriptions"]["s"]["msgBacklog"] == 1


def test_a_transaction_command_is_answered_not_supported(broker):
    with RawPulsar(broker.address) as raw:
        raw.connect()
        raw.send(frame(T(type=T.NEW_TXN, newTxn=cmd.RequestIdOnly(request_id=4))))
        answer = raw.expect(T.NEW_TXN_RESPONSE).newTxnResponse
        assert (answer.request_id, answer.error) == (4, cmd.NotAllowedError)
        assert "not supported" in answer.message


def test_a_silent_connection_is_pinged_then_closed(tmp_path, caplog):
    from broker_core import Broker

    with Broker(data_dir=tmp_path / "b", port=0, keepAliveIntervalSeconds=1) as quick:
        with RawPulsar(quick.address, timeout=10) as raw:
            raw.connect()
            command, _ = raw.read()
            assert command.type == T.PING
            assert raw.closed_by_broker(timeout=10)
        assert wait_until(lambda: refused(caplog, "silent for 2 s"))


def test_a_header_size_larger_than_its_frame_closes_the_connection(broker, caplog):
    with RawPulsar(broker.address) as raw:
        raw.connect()
        raw.send(HEADER.pack(8, 100) + b"\x00" * 4)
        assert raw.closed_by_broker()
    assert wait_until(lambda: refused(caplog, "commandSize"))


def test_a_consumer_that_does_not_read_stops_being_sent_messages(tmp_path):
    from broker_core import Broker
    from connector import Admin

    entry_bytes, entries = 60_000, 500  # 30 MB stored, far beyond what the connection may hold unread
    with Broker(data_dir=tmp_path / "b", port=0, maxMessageSize=MAX_MESSAGE, streamReplyQueueMaxBytes=1 << 20,
                dispatcherMaxDeliveryBytes=1 << 20) as small, Admin(small.service_url) as admin:
        topic = "persistent://public/default/unread"
        with RawPulsar(small.address) as producer:
            producer.connect()
            assert producer.producer(topic).type == T.PRODUCER_SUCCESS
            data = entry(b"x" * entry_bytes)
            for i in range(entries):
                assert producer.send_entry(data, sequence_id=i).type == T.SEND_RECEIPT
        with RawPulsar(small.address) as sluggish:
            sluggish.connect()
            assert sluggish.subscribe(topic, "s", initialPosition=cmd.CommandSubscribe.Earliest).type == T.SUCCESS
            sluggish.send(frame(T(type=T.FLOW, flow=cmd.CommandFlow(consumer_id=1, messagePermits=entries))))
            sent = lambda: admin.topic_stats(topic)["subscriptions"]["s"]["msgOutCounter"]  # noqa: E731
            wait_until(lambda: sent() > 0)
            first = sent()
            assert not wait_until(lambda: sent() > first + entries // 2, timeout_s=1.0)
            assert sent() < entries
            assert_broker_still_serves(small, topic + "-other")


def _not_utf8(command: cmd.BaseCommand, text: str) -> bytes:
    """``command``'s frame with the string field holding ``text`` (one occurrence) made invalid UTF-8."""
    body = command.SerializeToString()
    assert body.count(text.encode()) == 1
    return raw_frame(body.replace(text.encode(), b"\xff" * len(text.encode())))


def test_a_string_field_that_is_not_utf8_is_refused_with_a_typed_error(broker, topic):
    """The protobuf parser hands such a field over as bytes; a topic-list pattern made of them once failed
    with a TypeError in the handler (found by the wire fuzz)."""
    with RawPulsar(broker.address) as raw:
        raw.connect()
        raw.send(_not_utf8(T(type=T.GET_TOPICS_OF_NAMESPACE, getTopicsOfNamespace=cmd.CommandGetTopicsOfNamespace(
            request_id=5, namespace="public/default", topics_pattern="zzpattern")), "zzpattern"))
        error = raw.expect(T.ERROR).error
        assert (error.request_id, error.error) == (5, cmd.NotAllowedError) and "topics_pattern" in error.message
        raw.send(_not_utf8(T(type=T.PRODUCER, producer=cmd.CommandProducer(
            topic=topic, producer_id=3, request_id=6, metadata=[wire.KeyValue(key="k", value="zzvalue")])),
            "zzvalue"))
        error = raw.expect(T.ERROR).error
        assert error.request_id == 6 and "metadata.value" in error.message
    assert_broker_still_serves(broker, topic)
