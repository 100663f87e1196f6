"""The ``Consume`` stream over Pulsar's binary protocol: :class:`ConsumeAdapter`.

The client core (:mod:`connector.client.consumer.stream`, readers through :mod:`connector.client.entry_stream`)
opens a subscription with a :class:`~connector.client.transport.events.ConsumerSpec` and hears the client's events
(:mod:`connector.client.transport.events`) back. This adapter carries that conversation as Pulsar commands, so receive
queues, acks, negative acks, dead letters, seeks and reconnection are the same over both transports::

    ConsumerSpec(topic, subscription, type ...) ->  SUBSCRIBE (start: the real id of the start position)
    Subscribed(topic, consumer_name, partition) <-  SUCCESS; then FLOW(initial_permits)
    Flow(permits)                               ->  FLOW
    Ack(ranges)                                 ->  ACK Individual: an entry's id, with an ack set for part
                                                     of a batch (Pulsar's batch-index acknowledgment)
    AckCumulative(offset)                       ->  ACK Cumulative (inside a batch: the entry before it)
    Redeliver(ranges | all)                     ->  REDELIVER_UNACKNOWLEDGED_MESSAGES (the entries' ids)
    Seek(position | publish time)               ->  SEEK; the broker closes the consumer (CLOSE_CONSUMER),
    SeekDone(seek_id, error)                    <-  which is subscribed again here, then SeekDone
    Unsubscribe / Unsubscribed                  <-> UNSUBSCRIBE / its answer
    close()                                     ->  CLOSE_CONSUMER, and the stream ends with Closed(None)
    Delivery([Entry])                           <-  MESSAGE (one entry each, on the connection's I/O thread)
    ActiveChanged / EndOfTopic                  <-  ACTIVE_CONSUMER_CHANGE / REACHED_END_OF_TOPIC
    Closed(ConnectError)                        <-  CLOSE_CONSUMER from the broker (outside a seek), the
                                                     connection lost: the core resubscribes from its resume
                                                     position, as over gRPC
    Unreadable(error)                           <-  PULSARLIKE_CONSUMER_ERROR (pulsarlike's extension, asked for
                                                     by CONNECT's ``pulsarlike_consumer_errors``): the next
                                                     message is in a damaged range (DataLost), raised in its
                                                     place; the consumer stays subscribed, as over gRPC

A MESSAGE's payload is the stored entry as the core expects ``Entry.data``: an optional broker-entry
metadata prefix (``0x0e02``) then ``0x0e01 | CRC32C | metadataSize | MessageMetadata | payload``. Its CRC is
checked once, by the core's decoding (:func:`connector.client.entries.open_entry`): a mismatch makes the entry
undecodable there, acknowledged and reported once (``MessageDecodeError``), as Pulsar's clients discard a
corrupted message with an ACK. Here only its ``num_messages_in_batch`` is read, for the entry's size.

Positions (:mod:`.positions`): on pulsarlike an entry's ``entry_id`` is its first dense offset (the MESSAGE's
entry id); on another broker its packed ``(ledger, entry, 0)``. The entries delivered are remembered per
transport (:class:`~.positions.EntryMemory`) so that acks and redeliveries name them right, also on a stream
reopened after a reconnection. A start or seek at a position is sent as the real id of its entry (the broker
starts at that entry, as Pulsar's do for a reader's start id); entries wholly before the position are dropped
here, and their permits given back, the earlier messages of a batch by the core (its ``start_floor``). An entry
whose ids or batch size positions cannot hold (a ledger far from the first one seen, an entry id or a batch
beyond their bits) is acknowledged here by its real id, its permits given back, and reported to the core as
``Unreadable(MessageDecodeError)`` naming the field, its value and the limit: raised once in its place, the
consumer goes on with the next entry (it used to close the stream, which the core reopened onto the same entry).
"""
from __future__ import annotations

import logging
import threading
import uuid
import struct
import weakref
from typing import Any, Callable

import google_crc32c

from broker_core import errors
from broker_core.protocol import pulsar_api_pb2
from broker_core.protocol import pulsar_commands_pb2 as cmd
from broker_core.protocol.codec.entries import ENTRY_HEADER, MAGIC_CRC32C, split_broker_entry
from broker_core.protocol.codec.varint import read_varint
from broker_core.protocol.status import error_from_proto

from connector.client.transport.binary.positions import EntryMemory, WireIds
from connector.client.enums import ConsumerType, InitialPosition
from connector.client.transport.events import (
    Ack, AckCumulative, ActiveChanged, Closed, ConsumerEvent, ConsumerSpec, Delivery, EndOfTopic, Entry, Flow,
    Position, Redeliver, Seek, SeekDone, Subscribed, Unreadable, Unsubscribe, Unsubscribed)

log = logging.getLogger(__name__)

T = cmd.BaseCommand
MESSAGE, CLOSE_CONSUMER = T.MESSAGE, T.CLOSE_CONSUMER
SUB_TYPES = {ConsumerType.Exclusive: cmd.CommandSubscribe.Exclusive, ConsumerType.Shared: cmd.CommandSubscribe.Shared,
             ConsumerType.Failover: cmd.CommandSubscribe.Failover,
             ConsumerType.KeyShared: cmd.CommandSubscribe.Key_Shared}
_U64 = 1 << 64
_FLOW_MAX = 0xFFFF_FFFF
"""The most permits one FLOW carries (``messagePermits`` is a uint32)."""
_LATEST = (1 << 63) - 1
_EARLIEST_ID = pulsar_api_pb2.MessageIdData(ledgerId=_U64 - 1, entryId=_U64 - 1)
_LATEST_ID = pulsar_api_pb2.MessageIdData(ledgerId=_LATEST, entryId=_LATEST)
_BROKER_MAGIC = b"\x0e\x02"
_CRC_MAGIC = b"\x0e\x01"
_MAGIC_AND_CRC = struct.Struct(">HI")

_memories: "weakref.WeakKeyDictionary[Any, EntryMemory]" = weakref.WeakKeyDictionary()
_memories_lock = threading.Lock()


def memory_of(transport: Any) -> EntryMemory:
    """The delivered entries a transport's streams remember (module docstring)."""
    with _memories_lock:
        memory = _memories.get(transport)
        if memory is None:
            memory = _memories[transport] = EntryMemory()
        return memory


def stored_bytes(payload: memoryview) -> bytes:
    """A MESSAGE's payload as the core's ``Entry.data``: its magic and CRC32C are optional in
    Pulsar's framing (pulsar-lite leaves them out), the core's decoding wants them: added when absent."""
    start = split_broker_entry(payload)[2] if payload[:2] == _BROKER_MAGIC else 0
    if payload[start:start + 2] == _CRC_MAGIC:
        return bytes(payload)
    rest = payload[start:]
    return b"".join((payload[:start], _MAGIC_AND_CRC.pack(MAGIC_CRC32C, google_crc32c.value(bytes(rest))), rest))


def num_messages(payload: bytes | memoryview) -> int:
    """The messages of a MESSAGE's entry (``num_messages_in_batch``, 1 when unbatched or unreadable: the
    core's decoding then says what is wrong with it). The metadata's fields are walked, not parsed into a
    message: this runs once per entry on the connection's I/O thread, and the core parses it afterwards."""
    try:
        start = split_broker_entry(payload)[2] if payload[:2] == _BROKER_MAGIC else 0
        magic, _, meta_size = ENTRY_HEADER.unpack_from(payload, start)
        if magic != MAGIC_CRC32C:
            return 1
        pos = start + ENTRY_HEADER.size
        return _batch_count(payload, pos, min(pos + meta_size, len(payload)))
    except Exception:  # noqa: BLE001 -- any damage: the core's decoding reports it
        return 1


_NUM_MESSAGES_TAG = (11 << 3) | 0  # MessageMetadata.num_messages_in_batch, a varint


def _batch_count(buf: bytes | memoryview, pos: int, end: int) -> int:
    while pos < end:
        tag = buf[pos]
        if tag & 0x80:
            tag, pos = read_varint(buf, pos)
        else:
            pos += 1
        kind = tag & 7
        if kind == 0:
            if tag == _NUM_MESSAGES_TAG:
                return read_varint(buf, pos)[0]
            while buf[pos] & 0x80:
                pos += 1
            pos += 1
        elif kind == 2:
            length, pos = read_varint(buf, pos)
            pos += length
        elif kind == 1:
            pos += 8
        elif kind == 5:
            pos += 4
        else:
            return 1
    return 1


def _signed(value: int) -> int:
    return value - _U64 if value >= 1 << 63 else value


class ConsumeAdapter:
    """A ``Consume`` stream over the binary protocol (see the module docstring); one per opening."""

    def __init__(self, transport: Any, spec: ConsumerSpec, on_event: Callable[[ConsumerEvent], None],
                 name: str = "consumer", reconnecting: bool = False) -> None:
        self._transport = transport
        self._recreate = not (reconnecting and self._persistent(spec.topic))
        """SUBSCRIBE's ``force_topic_creation``: off when the core subscribes again to a persistent topic it
        had: the broker closed the consumer (a deletion, an unload) or the connection was lost, and a deleted
        topic must end the stream with ``TopicNotFound``, as the gRPC broker ends it (a force-deleted topic
        leaves a pattern consumer), not be created again (a non-persistent topic is created again after a
        broker restart, as over gRPC)."""
        self._spec = spec
        self.topic = spec.topic
        self._partition = spec.partition
        self.consumer_name = spec.consumer_name or uuid.uuid4().hex[:10]
        self._on_event = on_event
        self._name = name
        self._lock = threading.Lock()
        self._conn: Any = None
        self._ids: WireIds | None = None
        self.consumer_id = -1
        self._live = False
        """Subscribed and not between a seek's close and its resubscription: requests go out at once."""
        self._held: list[Any] = []
        self._closing = False
        self._ended = False
        start = spec.start
        self._floor = start.offset if start is not None and not start.latest else -1
        """Entries wholly before this position are not the application's (a start or seek inside or after)."""
        self._seek: tuple[int, int | None, Any] | None = None
        """The seek in flight: (seek id, its position or None for earliest, latest or a time, the start id
        of a reader's resubscription)."""
        self._seek_closed = False
        self._io_thread = 0
        """The connection's I/O thread (known once the subscription is answered on it)."""

    @staticmethod
    def _persistent(topic: str) -> bool:
        return not topic.startswith("non-persistent://")

    # --- TransportStream ------------------------------------------------------------------------------
    def allow_topic_creation(self) -> None:
        """Subscribe with ``force_topic_creation`` after all: the core subscribes again, but to another cluster
        than before (:mod:`connector.client.failover`), where the topic may not exist yet."""
        self._recreate = True

    def start(self) -> None:
        threading.Thread(target=self._connect, name=f"pulsarlike-{self._name}-open", daemon=True).start()

    @property
    def alive(self) -> bool:
        return not self._ended

    def send(self, request: Any) -> None:
        if not self._live:
            with self._lock:
                if not self._live:
                    if not self._ended:
                        self._held.append(request)
                    return
        self._send(request)

    def close(self, wait_s: float = 2.0) -> None:
        """Close the consumer on the broker (waiting up to ``wait_s`` for its answer), then end with None."""
        with self._lock:
            if self._ended:
                return
            self._closing = True
            conn, consumer_id, live = self._conn, self.consumer_id, self._live
        if conn is not None and consumer_id >= 0:
            done = threading.Event()
            conn.request_async(T(type=CLOSE_CONSUMER, close_consumer=cmd.CommandCloseConsumer(
                consumer_id=consumer_id, request_id=conn.next_request_id())), lambda *_: done.set())
            if live and wait_s > 0 and threading.get_ident() != self._io_thread:  # the answer comes on it
                done.wait(wait_s)
            conn.unregister_consumer(consumer_id)
        self._end(None)

    # --- opening (a worker thread, then the connection's) -----------------------------------------------
    def _connect(self) -> None:
        transport = self._transport
        try:
            conn = transport.connection_for(self.topic, transport.operation_timeout_s)
            ids = WireIds(transport.positions, memory_of(transport), self.topic, self._partition)
            start = self._start_id(ids)
        except errors.PulsarLikeError as exc:
            self._end(exc)
            return
        except Exception as exc:  # a bug must end this stream, not leave the consumer waiting for ever
            log.exception("event=consumer_open_failed topic=%s", self.topic)
            self._end(errors.UnknownError(f"subscribing on {self.topic} failed: {exc!r}"))
            return
        with self._lock:
            if self._closing or self._ended:
                closing = True
            else:
                closing = False
                self._conn, self._ids = conn, ids
        if closing:
            self._end(None)
            return
        self._subscribe(start, self._spec.initial_permits, self._subscribed)

    def _start_id(self, ids: WireIds) -> pulsar_api_pb2.MessageIdData | None:
        spec = self._spec
        if spec.durable or spec.start is None:
            return None
        return _wire_position(ids, spec.start)

    def _subscribe(self, start: pulsar_api_pb2.MessageIdData | None, permits: int,
                   answered: Callable[[int, int, cmd.BaseCommand | None, errors.PulsarLikeError | None], None]) -> None:
        """SUBSCRIBE with a new consumer id; ``answered(consumer_id, permits, answer, error)`` on the I/O
        thread."""
        conn, spec = self._conn, self._spec
        consumer_id = conn.next_consumer_id()
        with self._lock:
            self.consumer_id = consumer_id
        conn.register_consumer(consumer_id, self)
        command = T(type=T.SUBSCRIBE)
        sub = command.subscribe
        sub.topic = self.topic
        sub.subscription = spec.subscription
        sub.subType = SUB_TYPES.get(spec.sub_type, cmd.CommandSubscribe.Exclusive)
        sub.consumer_id = consumer_id
        sub.request_id = conn.next_request_id()
        sub.consumer_name = self.consumer_name
        sub.durable = spec.durable
        if not self._recreate:
            sub.force_topic_creation = False
        sub.initialPosition = (cmd.CommandSubscribe.Earliest if spec.initial_position == InitialPosition.Earliest
                               else cmd.CommandSubscribe.Latest)
        if spec.priority_level:
            sub.priority_level = spec.priority_level
        if spec.read_compacted:
            sub.read_compacted = True
        if start is not None:
            sub.start_message_id.CopyFrom(start)
        if spec.sub_type == ConsumerType.KeyShared:
            meta = spec.key_shared
            sticky = meta is not None and meta.sticky
            sub.keySharedMeta.keySharedMode = cmd.STICKY if sticky else cmd.AUTO_SPLIT
            if meta is not None:
                sub.keySharedMeta.allowOutOfOrderDelivery = meta.allow_out_of_order_delivery
                for start_hash, end_hash in meta.ranges:
                    sub.keySharedMeta.hashRanges.add(start=start_hash, end=end_hash)
        conn.request_async(command, lambda answer, error: answered(consumer_id, permits, answer, error))

    def _subscribed(self, consumer_id: int, permits: int, answer: cmd.BaseCommand | None,
                    error: errors.PulsarLikeError | None) -> None:
        conn = self._conn
        self._io_thread = threading.get_ident()
        if error is not None:
            conn.unregister_consumer(consumer_id)
            self._end(error)
            return
        with self._lock:
            closing = self._closing or self._ended
        if closing:
            self.close(0)
            return
        # Subscribed goes to the core before any permit: no delivery can come ahead of it.
        self._emit(Subscribed(self.topic, self.consumer_name, self._partition))
        self._go_live()
        if permits:
            self._flow(permits)

    def _go_live(self) -> None:
        while True:
            with self._lock:
                held, self._held = self._held, []
                if not held:
                    self._live = True
                    return
            for request in held:
                self._send(request)

    # --- requests ---------------------------------------------------------------------------------------
    def _send(self, request: Any) -> None:
        kind = type(request)
        conn, ids, consumer_id = self._conn, self._ids, self.consumer_id
        if kind is Flow:
            self._flow(request.permits)
        elif kind is Ack:
            message_ids = ids.individual(request.ranges)
            if not message_ids:
                return
            command = T(type=T.ACK)
            command.ack.consumer_id = consumer_id
            command.ack.ack_type = cmd.CommandAck.Individual
            command.ack.message_id.extend(message_ids)
            conn.send(command)
        elif kind is AckCumulative:
            command = T(type=T.ACK)
            command.ack.consumer_id = consumer_id
            command.ack.ack_type = cmd.CommandAck.Cumulative
            command.ack.message_id.append(ids.cumulative(request.offset))
            conn.send(command)
        elif kind is Redeliver:
            command = T(type=T.REDELIVER_UNACKNOWLEDGED_MESSAGES)
            command.redeliverUnacknowledgedMessages.consumer_id = consumer_id
            if request.ranges:
                message_ids = ids.redeliver(request.ranges)
                if not message_ids:
                    return
                command.redeliverUnacknowledgedMessages.message_ids.extend(message_ids)
            conn.send(command)
        elif kind is Seek:
            self._start_seek(request)
        elif kind is Unsubscribe:
            request_id = request.request_id
            conn.request_async(T(type=T.UNSUBSCRIBE, unsubscribe=cmd.CommandUnsubscribe(
                consumer_id=consumer_id, request_id=conn.next_request_id())),
                lambda _, error: self._emit(Unsubscribed(request_id, error)))
        else:
            raise errors.InvalidMessage(f"a consumer stream cannot send {request!r} after it subscribed")

    def _flow(self, permits: int) -> None:
        self._conn.send(T(type=T.FLOW, flow=cmd.CommandFlow(consumer_id=self.consumer_id, messagePermits=permits)))

    # --- seek -------------------------------------------------------------------------------------------
    def _start_seek(self, seek: Seek) -> None:
        conn, ids = self._conn, self._ids
        command = T(type=T.SEEK)
        command.seek.consumer_id = self.consumer_id
        command.seek.request_id = conn.next_request_id()
        position: int | None = None
        target = seek.position
        if target is None:
            command.seek.message_publish_time = seek.publish_time_ms
            start = self._start_id(ids)  # a reader's subscription keeps its new place (ours) or starts anew
        else:
            if not target.latest and target.offset >= 0:
                position = target.offset
            start = _wire_position(ids, target)
            command.seek.message_id.CopyFrom(start)
        with self._lock:
            self._seek = (seek.seek_id, position, None if self._spec.durable else start)
            self._seek_closed = False
        conn.request_async(command, self._seek_answered)

    def _seek_answered(self, answer: cmd.BaseCommand | None, error: errors.PulsarLikeError | None) -> None:
        with self._lock:
            seek, closed = self._seek, self._seek_closed
            if seek is None or self._ended:
                return
            if closed:  # the broker closed the consumer for the seek (Pulsar's order): subscribe it again
                self._live = False
        seek_id, position, start = seek
        if not closed:
            self._seek_done(seek_id, position, error)
            return
        self._subscribe(start, 0,
                        lambda consumer_id, _, answer2, error2: self._resubscribed(
                            consumer_id, seek_id, position, error, error2))

    def _resubscribed(self, consumer_id: int, seek_id: int, position: int | None,
                      seek_error: errors.PulsarLikeError | None, error: errors.PulsarLikeError | None) -> None:
        if error is not None:
            self._conn.unregister_consumer(consumer_id)
            self._end(error if not error.retriable else errors.ConnectError(
                f"subscribing again after a seek on {self.topic} failed: {error.message}"))
            return
        self._go_live()
        self._seek_done(seek_id, position, seek_error)

    def _seek_done(self, seek_id: int, position: int | None, error: errors.PulsarLikeError | None) -> None:
        with self._lock:
            self._seek = None
            if error is None:
                self._floor = position if position is not None else -1
        self._emit(SeekDone(seek_id, error))

    # --- frames from the broker (the connection's I/O thread) ---------------------------------------------
    def on_frame(self, command: cmd.BaseCommand, payload: memoryview | None) -> None:
        kind = command.type
        if kind == MESSAGE:
            self._message(command.message, payload)
        elif kind == CLOSE_CONSUMER:
            consumer_id = command.close_consumer.consumer_id
            self._conn.unregister_consumer(consumer_id)
            with self._lock:
                if consumer_id != self.consumer_id:
                    return
                seeking = self._seek is not None
                if seeking:
                    self._seek_closed = True
                    self._live = False
            if not seeking:
                self._end(errors.ConnectError(f"the broker closed the consumer on {self.topic}",
                                              target=getattr(self._conn, "address", "")))
        elif kind == T.PULSARLIKE_CONSUMER_ERROR:
            self._emit(Unreadable(error_from_proto(command.pulsarlikeConsumerError.error)))
        elif kind == T.ACTIVE_CONSUMER_CHANGE:
            self._emit(ActiveChanged(command.active_consumer_change.is_active))
        elif kind == T.REACHED_END_OF_TOPIC:
            self._emit(EndOfTopic())

    def _message(self, message: cmd.CommandMessage, payload: memoryview | None) -> None:
        if payload is None:
            return
        mid = message.message_id
        try:
            data = stored_bytes(payload)
        except errors.PulsarLikeError:  # a damaged broker prefix: the core's decoding says so
            data = bytes(payload)
        size = num_messages(data)
        try:
            first = self._ids.delivered(_signed(mid.ledgerId), _signed(mid.entryId), size)
        except errors.NotSupported as exc:  # beyond what positions can name: reported once, passed over
            self._unpositionable(message, size, exc)
            return
        floor = self._floor
        if floor >= 0:
            if first + size <= floor:  # before the start: not the application's; its permits go back
                self._flow(size)
                return
            self._floor = -1
        ack_set = message.ack_set
        self._emit(Delivery((Entry(data, mid.ledgerId, first, size, message.redelivery_count,
                                   tuple(ack_set) if ack_set else ()),)))

    def _unpositionable(self, message: cmd.CommandMessage, size: int, exc: errors.NotSupported) -> None:
        """An entry whose ids (or batch size) this client's positions cannot hold (:mod:`.positions`): the core
        could neither order nor acknowledge it, and closing the stream only had the broker send it again. It is
        acknowledged here by its real id (the broker does not redeliver it), its permits go back, and the core
        hears of it as an unreadable message: ``receive()`` raises a ``MessageDecodeError`` once in its place
        (naming the field, its value and the limit) and the next entry is delivered as usual."""
        mid = message.message_id
        ledger, entry = _signed(mid.ledgerId), _signed(mid.entryId)
        real = pulsar_api_pb2.MessageIdData(ledgerId=mid.ledgerId, entryId=mid.entryId, partition=self._partition)
        self._conn.send(T(type=T.ACK, ack=cmd.CommandAck(consumer_id=message.consumer_id,
                                                          ack_type=cmd.CommandAck.Individual, message_id=[real])))
        self._flow(min(size, _FLOW_MAX))  # the broker took a permit per message; a lying count is not a uint32
        fields = exc.fields
        log.debug("event=unpositionable_entry topic=%s ledger_id=%d entry_id=%d messages=%d field=%s value=%s "
                  "limit=%s", self.topic, ledger, entry, size, fields.get("field"), fields.get("value"),
                  fields.get("limit"))  # the core logs it as a WARNING with the error's message
        error = errors.MessageDecodeError(
            f"cannot receive the entry {ledger}:{entry} ({size} message(s)) on {self.topic}: {exc.message}. It is "
            "acknowledged, as an undecodable message is: it will not be redelivered", topic=self.topic,
            message_id=f"{ledger}:{entry}:{self._partition}", ledger_id=ledger, entry_id=entry, num_messages=size,
            reason=exc.message, field=fields.get("field"), value=fields.get("value"), limit=fields.get("limit"))
        self._emit(Unreadable(error))

    def on_connection_lost(self, error: errors.PulsarLikeError) -> None:
        self._end(error if isinstance(error, errors.ConnectError) else errors.ConnectError(
            f"the connection to the broker was lost: {error.message}"))

    # --- ending -------------------------------------------------------------------------------------------
    def _emit(self, event: ConsumerEvent) -> None:
        if self._ended:
            return
        try:
            self._on_event(event)
        except Exception:
            log.exception("event=consumer_response_failed topic=%s", self.topic)

    def _end(self, error: errors.PulsarLikeError | None) -> None:
        with self._lock:
            if self._ended:
                return
            self._ended = True
            self._live = False
            self._held = []
        if error is not None:
            log.debug("event=binary_consumer_ended topic=%s error=%r", self.topic, error)
        self._on_event(Closed(error))


def _wire_position(ids: WireIds, position: Position) -> pulsar_api_pb2.MessageIdData:
    """The id a SUBSCRIBE's start or a SEEK names for ``position``."""
    if position.latest:
        return _LATEST_ID
    return _EARLIEST_ID if position.offset < 0 else ids.start(position.offset)


__all__ = ["ConsumeAdapter", "memory_of", "num_messages"]
