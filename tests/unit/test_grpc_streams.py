"""The gRPC transport's translation (connector/client/transport/grpc/streams.py): the client's events to and from the
``Consume`` and ``Produce`` messages of broker.proto, without a broker (the stream is never started: the test
feeds its responses and its end by hand)."""
from __future__ import annotations

from broker_core import errors
from broker_core.protocol import broker_pb2 as pb
from broker_core.protocol.status import error_to_proto
from connector.client.transport.grpc import streams as grpc_streams
from connector.client.producer.batching import PendingEntry
from connector.client.enums import ConsumerType, ProducerAccessMode
from connector.client.transport.events import (
    LATEST, Ack, AckCumulative, Closed, ConsumerSpec, Delivery, Flow, KeySharedSpec, Position, ProducerReady,
    ProducerSpec, Receipt, Redeliver, Seek, SeekDone, SendFailed, Subscribed, Unsubscribe)
from connector.client.transport.grpc.streams import (GrpcConsumer, GrpcProducer, consume_request, producer_open,
                                                     subscribe_of)


class _Security:
    @staticmethod
    def authorization():
        return None


class _Call:
    def cancel(self) -> None:
        pass


class _Stub:
    def __init__(self) -> None:
        self.opened: list[str] = []

    def __getattr__(self, method):
        def open_stream(requests, wait_for_ready=False, metadata=None):
            self.opened.append(method)
            return _Call()
        return open_stream


class _Connection:
    security = _Security()

    def __init__(self) -> None:
        self.stub = _Stub()


def _recorded(cls, spec):
    events: list = []
    return cls(_Connection(), spec, events.append, "t", False), events


def test_a_subscription_spec_becomes_the_subscribe_request():
    spec = ConsumerSpec(topic="persistent://t/n/x-partition-2", subscription="s", sub_type=ConsumerType.KeyShared,
                        durable=False, start=Position.at(7), start_inclusive=True, partition=2, initial_permits=100,
                        key_shared=KeySharedSpec(True, True, ((0, 99), (200, 299))))
    subscribe = subscribe_of(spec)
    assert (subscribe.topic, subscribe.sub_type, subscribe.start.offset, subscribe.partition_index,
            subscribe.initial_permits) == ("persistent://t/n/x-partition-2", pb.KEY_SHARED_SUB, 7, 2, 100)
    assert subscribe.key_shared.mode == pb.STICKY and subscribe.key_shared.allow_out_of_order_delivery
    assert [(r.start, r.end) for r in subscribe.key_shared.ranges] == [(0, 99), (200, 299)]
    assert subscribe_of(ConsumerSpec(start=LATEST)).start.latest


def test_each_consumer_request_becomes_its_consume_request():
    assert consume_request(Flow(5)).flow.permits == 5
    ack = consume_request(Ack(((1, 3), (7, 8)))).ack
    assert ack.ack_type == pb.INDIVIDUAL and [(r.start, r.end) for r in ack.ranges] == [(1, 3), (7, 8)]
    cumulative = consume_request(AckCumulative(9)).ack
    assert (cumulative.ack_type, cumulative.offset) == (pb.CUMULATIVE, 9)
    assert [(r.start, r.end) for r in consume_request(Redeliver(((4, 5),))).redeliver.ranges] == [(4, 5)]
    assert consume_request(Seek(3, publish_time_ms=1234)).seek.publish_time_ms == 1234
    assert consume_request(Seek(4, Position.at(10))).seek.position.offset == 10
    assert consume_request(Unsubscribe(6)).unsubscribe.request_id == 6


def test_consume_responses_become_events_and_the_brokers_in_band_error_ends_the_stream():
    consumer, events = _recorded(GrpcConsumer, ConsumerSpec(topic="t", subscription="s"))
    consumer._on_response(pb.ConsumeResponse(subscribed=pb.Subscribed(topic="t", consumer_name="c")))
    consumer._on_response(pb.ConsumeResponse(deliveries=pb.Deliveries(entries=[
        pb.DeliveredEntry(data=b"e", ledger_id=1, entry_id=10, num_messages=2, redelivery_count=1, ack_set=[3])])))
    consumer._on_response(pb.ConsumeResponse(seek_done=pb.SeekDone(
        seek_id=2, error=error_to_proto(errors.NotAllowedError("no")))))
    consumer._on_response(pb.ConsumeResponse(error=error_to_proto(errors.ConsumerBusy("taken"))))
    consumer._on_end(errors.ConnectError("the broker ended the stream"))
    subscribed, delivery, seek_done, closed = events
    assert subscribed == Subscribed("t", "c", 0)
    (entry,) = delivery.entries
    assert type(delivery) is Delivery and (entry.entry_id, entry.num_messages, entry.ack_set) == (10, 2, (3,))
    assert type(seek_done) is SeekDone and isinstance(seek_done.error, errors.NotAllowedError)
    assert type(closed) is Closed and isinstance(closed.error, errors.ConsumerBusy)  # the broker's, not the loss


def test_a_producer_spec_becomes_the_open_request_with_the_wires_access_mode():
    request = producer_open(ProducerSpec("t", "p", ProducerAccessMode.WaitForExclusive, {"k": "v"}, 5)).open
    assert (request.topic, request.producer_name, request.access_mode, dict(request.properties),
            request.initial_sequence_id) == ("t", "p", pb.WAIT_FOR_EXCLUSIVE, {"k": "v"}, 5)
    assert producer_open(ProducerSpec("t", access_mode=ProducerAccessMode.ExclusiveWithFencing)).open.access_mode \
        == pb.EXCLUSIVE_WITH_FENCING


def test_produce_responses_become_one_receipt_per_entry_and_typed_failures():
    producer, events = _recorded(GrpcProducer, ProducerSpec("t"))
    producer._on_response(pb.ProduceResponse(opened=pb.ProducerOpened(
        producer_name="p", last_sequence_id=4, max_message_size=1000, topic="t")))
    producer._on_response(pb.ProduceResponse(receipts=pb.Receipts(receipts=[
        pb.SendReceipt(sequence_id=5, highest_sequence_id=5, ledger_id=0, entry_id=20),
        pb.SendReceipt(sequence_id=6, highest_sequence_id=8, duplicate=True)])))
    producer._on_response(pb.ProduceResponse(failure=pb.SendFailure(
        sequence_id=9, error=error_to_proto(errors.MessageTooBig("big", size=2, limit=1)))))
    producer._on_response(pb.ProduceResponse(error=error_to_proto(errors.ProducerFenced("fenced"))))
    producer._on_end(None)
    ready, first, second, failed, closed = events
    assert ready == ProducerReady("p", 4, 1000, "t") and producer.max_message_size == 1000
    assert type(first) is Receipt and (first.sequence_id, first.entry_id, first.duplicate) == (5, 20, False)
    assert (second.sequence_id, second.highest_sequence_id, second.duplicate) == (6, 8, True)
    assert type(failed) is SendFailed and isinstance(failed.error, errors.MessageTooBig)
    assert isinstance(closed.error, errors.ProducerFenced)


def test_queued_entries_are_packed_within_the_max_message_size_the_broker_announced():
    producer, _ = _recorded(GrpcProducer, ProducerSpec("t"))
    producer._on_response(pb.ProduceResponse(opened=pb.ProducerOpened(producer_name="p", max_message_size=200)))
    entries = [PendingEntry(i, i, 1, False, b"x" * 100, []) for i in range(4)]
    requests = producer._pack(entries)
    assert [[e.sequence_id for e in r.send.entries] for r in requests] == [[0], [1], [2], [3]]
    assert grpc_streams.pack_within(entries, 10_000)[0].send.entries[3].sequence_id == 3
