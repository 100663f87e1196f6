"""Acknowledgments applied as Pulsar's consumer applies them: any message of the topic, whether the broker has
(re)sent it to this consumer yet or not. A client that acknowledges a message it received before a
reconnection (a topic unload, a broker restart) sends that ack on its new subscription before the broker has
sent the message again; refusing it ("not sent to this consumer") had the message come back again and again.
An id past the topic's durable end is still refused (Pulsar's cursor: an invalid position), and a
cumulative ack past the read position moves dispatch past it, as Pulsar moves its read position."""
from __future__ import annotations

import queue
import uuid

import grpc
import pulsar
import pytest

from broker_core import Broker
from broker_core.protocol import broker_pb2 as pb
from broker_core.protocol import broker_pb2_grpc
from broker_core.protocol import pulsar_api_pb2 as wire
from broker_core.protocol import pulsar_commands_pb2 as cmd
from connector import Admin
from tests.pulsar_wire import RawPulsar, frame
from tests.waiting import wait_until

T = cmd.BaseCommand
QUIET = pulsar.ConsoleLogger(pulsar.LoggerLevel.Error)


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    with Broker(data_dir=tmp_path_factory.mktemp("acks"), port=0) as running:
        yield running


@pytest.fixture
def admin(broker):
    admin = Admin(broker.service_url)
    yield admin
    admin.close()


def fresh_topic() -> str:
    return f"persistent://public/default/acks-{uuid.uuid4().hex[:8]}"


def subscription(admin: Admin, topic: str) -> dict:
    return admin.topic_stats(topic)["subscriptions"]["s"]


def reconnected(admin: Admin, topic: str) -> None:
    """Wait until the subscription has its consumer again."""
    assert wait_until(lambda: subscription(admin, topic)["consumers"], timeout_s=30), "the consumer did not come back"


def produce(client: pulsar.Client, topic: str, n: int) -> None:
    producer = client.create_producer(topic)
    for i in range(n):
        producer.send(f"m{i}".encode())
    producer.close()


@pytest.mark.parametrize("consumer_type", [pulsar.ConsumerType.Shared, pulsar.ConsumerType.Exclusive])
def test_the_official_clients_ack_after_an_unload_is_taken_before_redelivery(broker, admin, consumer_type):
    topic = fresh_topic()
    client = pulsar.Client(broker.service_url, operation_timeout_seconds=30, logger=QUIET)
    try:
        # a zero receiver queue: after the reconnection the broker sends nothing until receive() asks, so the
        # ack surely comes first
        consumer = client.subscribe(topic, "s", consumer_type=consumer_type, receiver_queue_size=0,
                                    initial_position=pulsar.InitialPosition.Earliest)
        produce(client, topic, 3)
        first = consumer.receive()
        admin.unload_topic(topic)
        reconnected(admin, topic)
        consumer.acknowledge(first)
        assert wait_until(lambda: subscription(admin, topic)["msgBacklog"] == 2), "the ack was not taken"
        assert consumer.receive().data() == b"m1"  # not m0 again
    finally:
        client.close()
    again = pulsar.Client(broker.service_url, operation_timeout_seconds=30, logger=QUIET)
    try:
        consumer = again.subscribe(topic, "s", consumer_type=consumer_type)
        assert sorted(consumer.receive(10_000).data() for _ in range(2)) == [b"m1", b"m2"]
    finally:
        again.close()


def test_the_official_clients_cumulative_ack_after_an_unload_is_taken(broker, admin):
    topic = fresh_topic()
    client = pulsar.Client(broker.service_url, operation_timeout_seconds=30, logger=QUIET)
    try:
        consumer = client.subscribe(topic, "s", consumer_type=pulsar.ConsumerType.Exclusive, receiver_queue_size=0,
                                    initial_position=pulsar.InitialPosition.Earliest)
        produce(client, topic, 3)
        consumer.receive()
        second = consumer.receive()
        admin.unload_topic(topic)
        reconnected(admin, topic)
        consumer.acknowledge_cumulative(second)
        assert wait_until(lambda: subscription(admin, topic)["msgBacklog"] == 1), "the ack was not taken"
        assert consumer.receive().data() == b"m2"
    finally:
        client.close()


def test_the_official_clients_ack_after_a_broker_restart_is_taken(broker_process):
    process = broker_process(restartable=True)
    topic = fresh_topic()
    client = pulsar.Client(process.service_url, operation_timeout_seconds=30, logger=QUIET)
    admin = Admin(process.service_url, retry_while_unavailable=True)
    try:
        consumer = client.subscribe(topic, "s", consumer_type=pulsar.ConsumerType.Shared, receiver_queue_size=0,
                                    initial_position=pulsar.InitialPosition.Earliest)
        produce(client, topic, 3)
        first = consumer.receive()
        process.terminate()
        process.restart()
        reconnected(admin, topic)
        consumer.acknowledge(first)
        assert wait_until(lambda: subscription(admin, topic)["msgBacklog"] == 2), "the ack was not taken"
        assert consumer.receive().data() == b"m1"
    finally:
        admin.close()
        client.close()


def _message_id(message: cmd.BaseCommand) -> wire.MessageIdData:
    got = message.message.message_id
    return wire.MessageIdData(ledgerId=got.ledgerId, entryId=got.entryId)


def _ack(raw: RawPulsar, consumer_id: int, request_id: int, ids: list[wire.MessageIdData],
         cumulative: bool = False) -> cmd.CommandAckResponse:
    raw.send(frame(T(type=T.ACK, ack=cmd.CommandAck(
        consumer_id=consumer_id, request_id=request_id, message_id=ids,
        ack_type=cmd.CommandAck.Cumulative if cumulative else cmd.CommandAck.Individual))))
    return raw.expect(T.ACK_RESPONSE).ackResponse


def test_raw_frames_an_ack_on_a_new_connection_before_redelivery_is_applied(broker, admin):
    topic = fresh_topic()
    client = pulsar.Client(broker.service_url, logger=QUIET)
    try:
        produce(client, topic, 3)
    finally:
        client.close()
    with RawPulsar(broker.address) as raw:
        raw.connect()
        assert raw.subscribe(topic, "s", subType=cmd.CommandSubscribe.Shared,
                             initialPosition=cmd.CommandSubscribe.Earliest).type == T.SUCCESS
        raw.send(frame(T(type=T.FLOW, flow=cmd.CommandFlow(consumer_id=1, messagePermits=1))))
        first = _message_id(raw.expect(T.MESSAGE))
    with RawPulsar(broker.address) as raw:  # the client reconnected: the ack it still had goes first
        raw.connect()
        assert raw.subscribe(topic, "s", subType=cmd.CommandSubscribe.Shared).type == T.SUCCESS
        answer = _ack(raw, 1, 7, [first])
        assert not answer.HasField("error"), answer.message
        assert subscription(admin, topic)["msgBacklog"] == 2
        raw.send(frame(T(type=T.FLOW, flow=cmd.CommandFlow(consumer_id=1, messagePermits=10))))
        assert raw.expect(T.MESSAGE).message.message_id.entryId == first.entryId + 1  # not the acked one again


def test_raw_frames_an_id_past_the_topics_end_is_still_refused(broker, admin):
    topic = fresh_topic()
    client = pulsar.Client(broker.service_url, logger=QUIET)
    try:
        produce(client, topic, 2)
    finally:
        client.close()
    with RawPulsar(broker.address) as raw:
        raw.connect()
        assert raw.subscribe(topic, "s", initialPosition=cmd.CommandSubscribe.Earliest).type == T.SUCCESS
        for cumulative in (False, True):
            answer = _ack(raw, 1, 8 + cumulative, [wire.MessageIdData(ledgerId=0, entryId=2)], cumulative)
            assert answer.HasField("error") and "the topic ends before it" in answer.message
        assert subscription(admin, topic)["msgBacklog"] == 2


def test_raw_frames_a_cumulative_ack_past_the_read_position_moves_dispatch_past_it(broker, admin):
    topic = fresh_topic()
    client = pulsar.Client(broker.service_url, logger=QUIET)
    try:
        produce(client, topic, 4)
    finally:
        client.close()
    with RawPulsar(broker.address) as raw:
        raw.connect()
        assert raw.subscribe(topic, "s", initialPosition=cmd.CommandSubscribe.Earliest).type == T.SUCCESS
        answer = _ack(raw, 1, 3, [wire.MessageIdData(ledgerId=0, entryId=1)], cumulative=True)
        assert not answer.HasField("error"), answer.message
        raw.send(frame(T(type=T.FLOW, flow=cmd.CommandFlow(consumer_id=1, messagePermits=10))))
        assert raw.expect(T.MESSAGE).message.message_id.entryId == 2
        assert subscription(admin, topic)["msgBacklog"] == 2


def test_grpc_an_ack_before_the_message_was_sent_is_applied(broker, admin):
    topic = fresh_topic()
    client = pulsar.Client(broker.service_url, logger=QUIET)
    try:
        produce(client, topic, 3)
    finally:
        client.close()
    requests: queue.Queue = queue.Queue()

    def stream():
        while (request := requests.get()) is not None:
            yield request
    requests.put(pb.ConsumeRequest(subscribe=pb.Subscribe(topic=topic, subscription="s", sub_type=pb.SHARED_SUB,
                                                          durable=True, initial_position=pb.EARLIEST)))
    with grpc.insecure_channel(broker.address) as channel:
        replies = broker_pb2_grpc.PulsarLikeStub(channel).Consume(stream(), timeout=30)
        try:
            assert next(replies).WhichOneof("response") == "subscribed"
            requests.put(pb.ConsumeRequest(ack=pb.Ack(ack_type=pb.INDIVIDUAL, ranges=[pb.OffsetRange(start=0, end=1)])))
            requests.put(pb.ConsumeRequest(ack=pb.Ack(ack_type=pb.INDIVIDUAL, ranges=[pb.OffsetRange(start=3, end=4)])))
            warning = next(replies)  # the second is past the topic's end
            assert warning.WhichOneof("response") == "warning" and "holds offsets below 3" in warning.warning.message
            assert subscription(admin, topic)["msgBacklog"] == 2
            requests.put(pb.ConsumeRequest(flow=pb.Flow(permits=10)))
            delivered = next(replies)
            assert [e.entry_id for e in delivered.deliveries.entries] == [1, 2]
        finally:
            requests.put(None)
            replies.cancel()


@pytest.mark.parametrize("transport", ["binary", "grpc"])
def test_our_clients_ack_made_while_the_broker_restarts_is_taken_on_the_new_stream(broker_process, transport):
    from connector import Client, ConsumerType, InitialPosition

    process = broker_process(restartable=True)
    topic = fresh_topic()
    client = Client(process.service_url, transport=transport, operation_timeout_seconds=30)
    admin = Admin(process.service_url, retry_while_unavailable=True)
    try:
        consumer = client.subscribe(topic, "s", consumer_type=ConsumerType.Shared,
                                    initial_position=InitialPosition.Earliest)
        producer = client.create_producer(topic)
        for i in range(3):
            producer.send(f"m{i}".encode())
        first = consumer.receive(timeout_millis=10_000)
        process.terminate()
        consumer.acknowledge(first)  # kept, and sent on the new stream
        process.restart()
        assert wait_until(lambda: subscription(admin, topic)["msgBacklog"] == 2, timeout_s=30), "the ack was lost"
        consumer.close()
        again = client.subscribe(topic, "s", consumer_type=ConsumerType.Shared)
        assert sorted(again.receive(timeout_millis=10_000).data() for _ in range(2)) == [b"m1", b"m2"]
    finally:
        admin.close()
        client.close()
