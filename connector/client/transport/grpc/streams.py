"""The gRPC transport's streams, translated: pulsarlike's ``Consume`` and ``Produce`` messages of
``broker.proto`` to and from the client's events (:mod:`connector.client.transport.events`), as the binary transport
translates Pulsar's commands (:mod:`connector.client.transport.binary.consuming`, :mod:`connector.client.transport.binary.producing`).

A consumer (:class:`GrpcConsumer`)::

    ConsumerSpec                   ->  ConsumeRequest(subscribe=Subscribe(...)), the stream's first request
    Flow / Ack / AckCumulative     ->  ConsumeRequest(flow / ack INDIVIDUAL ranges / ack CUMULATIVE offset)
    Redeliver / Seek / Unsubscribe ->  ConsumeRequest(redeliver / seek / unsubscribe)
    close()                        ->  ConsumeRequest(close), then the stream is half-closed
    Subscribed / Delivery          <-  ConsumeResponse(subscribed / deliveries: one Entry per DeliveredEntry)
    SeekDone / Unsubscribed        <-  ConsumeResponse(seek_done / unsubscribed), errors typed
    ActiveChanged / EndOfTopic     <-  ConsumeResponse(active_change / end_of_topic)
    Unreadable / Refused           <-  ConsumeResponse(unreadable / warning)
    Closed(error)                  <-  the stream's end: the broker's in-band ``error`` when it sent one before
                                       ending it, else the transport's (None after close())

A producer (:class:`GrpcProducer`)::

    ProducerSpec                   ->  ProduceRequest(open=ProducerOpen(...)), the stream's first request
    PendingEntry items             ->  ProduceRequest(send=SendBatch): what is queued when gRPC pulls the next
                                       request goes in one, of at most the broker's max_message_size
                                       (:func:`pack_within`)
    close()                        ->  ProduceRequest(close), then the stream is half-closed
    ProducerReady                  <-  ProduceResponse(opened)
    Receipt (one per entry)        <-  ProduceResponse(receipts)
    SendFailed                     <-  ProduceResponse(failure), typed
    Closed(error)                  <-  the stream's end, as a consumer's

The stream itself (queue, reader thread, authentication renewal) is :class:`~connector.client.transport.grpc.connection.BidiStream`.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from broker_core import errors
from broker_core.protocol import broker_pb2 as pb
from broker_core.protocol.status import error_from_proto

from connector.client.producer.batching import PendingEntry
from connector.client.enums import ProducerAccessMode
from connector.client.transport.events import (
    Ack, AckCumulative, ActiveChanged, Closed, ConsumerEvent, ConsumerSpec, Delivery, EndOfTopic, Entry, Flow,
    Position, ProducerEvent, ProducerReady, ProducerSpec, Receipt, Redeliver, Refused, Seek, SeekDone, SendFailed,
    Subscribed, Unreadable, Unsubscribe, Unsubscribed)
from connector.client.producer.channel import DEFAULT_MAX_MESSAGE_SIZE

if TYPE_CHECKING:
    from connector.client.transport.grpc.connection import BidiStream, Connection

_CLOSE_CONSUMER = pb.ConsumeRequest(close=pb.CloseConsumer())
_CLOSE_PRODUCER = pb.ProduceRequest(close=pb.CloseProducer())
ACCESS_MODES = {ProducerAccessMode.Shared: pb.SHARED, ProducerAccessMode.Exclusive: pb.EXCLUSIVE,
                ProducerAccessMode.WaitForExclusive: pb.WAIT_FOR_EXCLUSIVE,
                ProducerAccessMode.ExclusiveWithFencing: pb.EXCLUSIVE_WITH_FENCING}
"""The client's access modes as ``broker.proto`` numbers them (not in the same order)."""
MAX_REQUEST_BYTES = 16 * 1024 * 1024
"""Entry bytes per SendBatch request: well under gRPC's 64 MiB message cap (chunks of a large message,
or many queued large batches, go out in several requests)."""
SEND_ENTRY_FRAMING = 48
"""Most bytes a ``SendEntry`` adds to its data in a request (field tags, three varints, lengths)."""


def position_of(position: Position) -> pb.Position:
    if position.latest:
        return pb.Position(latest=True)
    if position.offset < 0:
        return pb.Position(earliest=True)
    return pb.Position(offset=position.offset)


def subscribe_of(spec: ConsumerSpec) -> pb.Subscribe:
    subscribe = pb.Subscribe(
        topic=spec.topic, subscription=spec.subscription, sub_type=int(spec.sub_type),
        consumer_name=spec.consumer_name, initial_position=int(spec.initial_position),
        priority_level=spec.priority_level, durable=spec.durable, start_inclusive=spec.start_inclusive,
        partition_index=spec.partition, multi_topic=spec.multi_topic, initial_permits=spec.initial_permits,
        read_compacted=spec.read_compacted)
    if spec.start is not None:
        subscribe.start.CopyFrom(position_of(spec.start))
    meta = spec.key_shared
    if meta is not None:
        subscribe.key_shared.CopyFrom(pb.KeySharedMeta(
            mode=pb.STICKY if meta.sticky else pb.AUTO_SPLIT,
            allow_out_of_order_delivery=meta.allow_out_of_order_delivery,
            ranges=[pb.HashRange(start=start, end=end) for start, end in meta.ranges]))
    return subscribe


def _ranges(ranges: Any) -> list[pb.OffsetRange]:
    return [pb.OffsetRange(start=start, end=end) for start, end in ranges]


def consume_request(request: Any) -> pb.ConsumeRequest:
    """The ``ConsumeRequest`` of a consumer's request (:data:`~connector.client.transport.events.ConsumerRequest`)."""
    kind = type(request)
    if kind is Flow:
        return pb.ConsumeRequest(flow=pb.Flow(permits=request.permits))
    if kind is Ack:
        return pb.ConsumeRequest(ack=pb.Ack(ack_type=pb.INDIVIDUAL, ranges=_ranges(request.ranges)))
    if kind is AckCumulative:
        return pb.ConsumeRequest(ack=pb.Ack(ack_type=pb.CUMULATIVE, offset=request.offset))
    if kind is Redeliver:
        return pb.ConsumeRequest(redeliver=pb.RedeliverUnacknowledged(ranges=_ranges(request.ranges)))
    if kind is Seek:
        seek = pb.Seek(seek_id=request.seek_id)
        if request.position is None:
            seek.publish_time_ms = request.publish_time_ms
        else:
            seek.position.CopyFrom(position_of(request.position))
        return pb.ConsumeRequest(seek=seek)
    if kind is Unsubscribe:
        return pb.ConsumeRequest(unsubscribe=pb.Unsubscribe(request_id=request.request_id))
    raise errors.InvalidMessage(f"a consumer stream cannot send {request!r}")


def _typed(error: pb.Error) -> errors.PulsarLikeError | None:
    return error_from_proto(error) if error.code else None


class GrpcConsumer:
    """A consumer's ``Consume`` stream (a :class:`~connector.client.transport.TransportStream`)."""

    def __init__(self, connection: "Connection", spec: ConsumerSpec, on_event: Callable[[ConsumerEvent], None],
                 name: str, reconnecting: bool) -> None:
        from connector.client.transport.grpc.connection import BidiStream

        self._on_event = on_event
        self._in_band: errors.PulsarLikeError | None = None
        """The error the broker sent before ending the stream (it wins over the transport's)."""
        self._stream: BidiStream = BidiStream(connection, "Consume", pb.ConsumeRequest(subscribe=subscribe_of(spec)),
                                              self._on_response, self._on_end, name=name,
                                              wait_for_ready=reconnecting, start=False)

    def start(self) -> None:
        self._stream.start()

    def send(self, request: Any) -> None:
        self._stream.send(consume_request(request))

    def close(self, wait_s: float = 2.0) -> None:
        self._stream.send(_CLOSE_CONSUMER)
        self._stream.close(wait_s)

    @property
    def alive(self) -> bool:
        return self._stream.alive

    def _on_response(self, response: pb.ConsumeResponse) -> None:
        kind = response.WhichOneof("response")
        emit = self._on_event
        if kind == "deliveries":
            emit(Delivery([Entry(e.data, e.ledger_id, e.entry_id, e.num_messages, e.redelivery_count,
                                 tuple(e.ack_set) if e.ack_set else ()) for e in response.deliveries.entries]))
        elif kind == "subscribed":
            subscribed = response.subscribed
            emit(Subscribed(subscribed.topic, subscribed.consumer_name, subscribed.partition_index))
        elif kind == "seek_done":
            emit(SeekDone(response.seek_done.seek_id, _typed(response.seek_done.error)))
        elif kind == "active_change":
            emit(ActiveChanged(response.active_change.is_active))
        elif kind == "end_of_topic":
            emit(EndOfTopic())
        elif kind == "unsubscribed":
            emit(Unsubscribed(response.unsubscribed.request_id, _typed(response.unsubscribed.error)))
        elif kind == "warning":
            emit(Refused(error_from_proto(response.warning)))
        elif kind == "error":
            self._in_band = error_from_proto(response.error)  # the stream ends next
        elif kind == "unreadable":
            emit(Unreadable(error_from_proto(response.unreadable)))

    def _on_end(self, error: errors.PulsarLikeError | None) -> None:
        self._on_event(Closed(self._in_band or error))


# --- producers ---------------------------------------------------------------------------------------------------


def pack_requests(items: list[Any]) -> list[pb.ProduceRequest]:
    """Consecutive :class:`~connector.client.producer.batching.PendingEntry` items become one SendBatch request of at
    most MAX_REQUEST_BYTES (or of one larger entry); other requests pass as they are."""
    out: list[pb.ProduceRequest] = []
    batch = None
    size = 0
    for item in items:
        if type(item) is PendingEntry:
            data = item.data
            if batch is not None and size + len(data) > MAX_REQUEST_BYTES:
                out.append(batch)
                batch = None
            if batch is None:
                batch = pb.ProduceRequest()
                add = batch.send.entries.add
                size = 0
            size += len(data)
            add(sequence_id=item.sequence_id, highest_sequence_id=item.highest_sequence_id,
                num_messages=item.num_messages, data=data)
            continue
        if batch is not None:
            out.append(batch)
            batch = None
        out.append(item)
    if batch is not None:
        out.append(batch)
    return out


def pack_within(items: list[Any], limit: int) -> list[pb.ProduceRequest]:
    """``pack_requests`` over runs of at most ``limit`` (the broker's maxMessageSize) bytes, counting each
    entry's protobuf framing: the broker reads requests of its maxMessageSize plus a margin, no larger."""
    out: list[pb.ProduceRequest] = []
    run: list[Any] = []
    size = 0
    for item in items:
        if type(item) is PendingEntry:
            n = len(item.data) + SEND_ENTRY_FRAMING
            if run and size + n > limit:
                out.extend(pack_requests(run))
                run, size = [], 0
            size += n
        run.append(item)
    if run:
        out.extend(pack_requests(run))
    return out


def producer_open(spec: ProducerSpec) -> pb.ProduceRequest:
    return pb.ProduceRequest(open=pb.ProducerOpen(
        topic=spec.topic, producer_name=spec.producer_name,
        access_mode=ACCESS_MODES.get(ProducerAccessMode(spec.access_mode), pb.SHARED),
        properties=dict(spec.properties), initial_sequence_id=spec.initial_sequence_id))


class GrpcProducer:
    """A producer's ``Produce`` stream (a :class:`~connector.client.transport.TransportStream`): ``send`` takes
    :class:`~connector.client.producer.batching.PendingEntry` items."""

    def __init__(self, connection: "Connection", spec: ProducerSpec, on_event: Callable[[ProducerEvent], None],
                 name: str, reconnecting: bool) -> None:
        from connector.client.transport.grpc.connection import BidiStream

        self._on_event = on_event
        self._in_band: errors.PulsarLikeError | None = None
        self.max_message_size = DEFAULT_MAX_MESSAGE_SIZE
        """What one request may hold (the broker's, once it said)."""
        self._stream: BidiStream = BidiStream(connection, "Produce", producer_open(spec), self._on_response,
                                              self._on_end, self._pack, name=name, wait_for_ready=reconnecting,
                                              start=False)

    def start(self) -> None:
        self._stream.start()

    def send(self, entry: PendingEntry) -> None:
        self._stream.send(entry)

    def close(self, wait_s: float = 2.0) -> None:
        self._stream.send(_CLOSE_PRODUCER)
        self._stream.close(wait_s)

    @property
    def alive(self) -> bool:
        return self._stream.alive

    def _pack(self, items: list[Any]) -> list[pb.ProduceRequest]:
        return pack_within(items, self.max_message_size)

    def _on_response(self, response: pb.ProduceResponse) -> None:
        kind = response.WhichOneof("response")
        emit = self._on_event
        if kind == "receipts":
            for r in response.receipts.receipts:
                emit(Receipt(r.sequence_id, r.highest_sequence_id, r.ledger_id, r.entry_id, r.duplicate))
        elif kind == "failure":
            emit(SendFailed(response.failure.sequence_id, error_from_proto(response.failure.error)))
        elif kind == "opened":
            opened = response.opened
            if opened.max_message_size > 0:
                self.max_message_size = opened.max_message_size
            emit(ProducerReady(opened.producer_name, opened.last_sequence_id, opened.max_message_size, opened.topic))
        elif kind == "error":
            self._in_band = error_from_proto(response.error)  # the stream ends next

    def _on_end(self, error: errors.PulsarLikeError | None) -> None:
        self._on_event(Closed(self._in_band or error))
