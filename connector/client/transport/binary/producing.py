"""The ``Produce`` stream over Pulsar's binary protocol: :class:`ProduceAdapter`.

The client core (:mod:`connector.client.producer.channel`) opens a producer with a
:class:`~connector.client.transport.events.ProducerSpec`, sends :class:`~connector.client.producer.batching.PendingEntry` items and
closes it with ``close()``; it hears the client's events (:mod:`connector.client.transport.events`) back. This adapter
carries that conversation as Pulsar commands, so the core (batching, chunking, dedup sequence ids, send
timeouts, reconnection and resend) is the same over both transports::

    ProducerSpec(topic, name, access mode,        PRODUCER(producer_id, request_id, producer_name,
                 properties)                  ->           producer_access_mode, metadata, epoch)
    ProducerReady(name, last_sequence_id,     <-  PRODUCER_SUCCESS(producer_ready=true)
                  max_message_size)                   (max_message_size: the connection's CONNECTED)
    PendingEntry(sequence_id, highest,        ->  SEND(producer_id, sequence_id, num_messages,
                 num_messages, data)                   highest_sequence_id if batched, is_chunk) + data
    Receipt(ids, duplicate)                   <-  SEND_RECEIPT (ids (-1, -1): a deduplicated send)
    SendFailed(sequence_id, error)            <-  SEND_ERROR (most codes; see below), typed
    close()                                   ->  CLOSE_PRODUCER, then the stream ends with Closed(None)
    Closed(ConnectError)                      <-  CLOSE_PRODUCER / TOPIC_MIGRATED from the broker, the
                                                  connection lost, a SEND_ERROR a resend gets past

``data`` already is the Pulsar payload (``0x0e01 | CRC32C | metadataSize | MessageMetadata | payload``): a SEND
is one small command built and one write queued on the caller's thread, with no thread hop; receipts become
events right on the connection's reader thread. Message ids in receipts are the broker's own (producers
never see packed positions).

A ``SEND_ERROR`` with ``ChecksumError`` (the bytes were damaged on the way: ours are immutable and were
checksummed when built), ``ServiceNotReady``, ``PersistenceError``, ``MetadataError`` or ``TooManyRequests``
ends the stream as a lost connection: the core reopens the producer and sends every pending entry again, in
order, as Pulsar's clients do. Any other code (the broker refuses that entry: too big, malformed, topic
terminated) fails that entry only, as over gRPC.

``PRODUCER_SUCCESS`` with ``producer_ready=false`` (``WaitForExclusive``; or our broker's write fault for a
reconnecting producer) is not the answer yet: the producer is ready at the second ``PRODUCER_SUCCESS`` of the
same request. A producer reopened after it was lost carries a higher ``epoch``, so the broker can tell it
from another producer that wants the same name.

:func:`register_with_producer` registers a schema the way every Pulsar broker takes one -- a producer carrying it --
for brokers that do not answer ``GET_OR_CREATE_SCHEMA`` (pulsar-lite).
"""
from __future__ import annotations

import logging
import threading
import weakref
from typing import Any, Callable

from broker_core import errors
from broker_core.protocol import pulsar_commands_pb2 as cmd
from broker_core.protocol.codec.entries import decode_entry
from broker_core.protocol.server_errors import error_of
from broker_core.types import TopicName

from connector.client.producer.batching import PendingEntry
from connector.client.transport.binary.unary import wire_schema
from connector.client.enums import ProducerAccessMode
from connector.client.transport.events import (Closed, ProducerEvent, ProducerReady, ProducerSpec, Receipt,
                                               SendFailed, TopicSchema)

log = logging.getLogger(__name__)

T = cmd.BaseCommand
SEND, SEND_RECEIPT, SEND_ERROR = T.SEND, T.SEND_RECEIPT, T.SEND_ERROR
NO_ID = (1 << 64) - 1
"""-1 as an unsigned 64-bit field: the ledger and entry of a deduplicated send's receipt."""
ACCESS_MODES = {ProducerAccessMode.Shared: cmd.Shared, ProducerAccessMode.Exclusive: cmd.Exclusive,
                ProducerAccessMode.WaitForExclusive: cmd.WaitForExclusive,
                ProducerAccessMode.ExclusiveWithFencing: cmd.ExclusiveWithFencing}
RESEND_CODES = frozenset({cmd.ChecksumError, cmd.ServiceNotReady, cmd.PersistenceError, cmd.MetadataError,
                          cmd.TooManyRequests})
"""SEND_ERROR codes a reconnection and resend get past (see the module docstring)."""
MAX_EPOCHS = 4096

_epochs: weakref.WeakKeyDictionary[Any, dict[tuple[str, str], tuple[int, bool]]] = weakref.WeakKeyDictionary()
"""By transport, then by (topic, producer name): the epoch of the next opening of a producer that was lost (absent:
0, a new producer), and whether the broker generated its name (its reopenings say it is not the user's, as
Pulsar's clients do). Dropped when the producer closes."""
_epochs_lock = threading.Lock()


def _epochs_of(transport: Any) -> dict[tuple[str, str], tuple[int, bool]]:
    with _epochs_lock:
        found = _epochs.get(transport)
        if found is None:
            found = _epochs[transport] = {}
        return found


def _bump_epoch(transport: Any, key: tuple[str, str], generated: bool) -> None:
    epochs = _epochs_of(transport)
    with _epochs_lock:
        epoch, was_generated = epochs.get(key, (0, generated))
        epochs[key] = (epoch + 1, was_generated)
        if len(epochs) > MAX_EPOCHS:  # producers lost and never closed: forget the oldest
            del epochs[next(iter(epochs))]


def _is_chunk(data: bytes) -> bool:
    """Whether an unbatched entry is a chunk of a larger message (its metadata says so)."""
    try:
        meta, _ = decode_entry(data, verify=False)
    except errors.PulsarLikeError:
        return False
    return meta.num_chunks_from_msg > 1


class ProduceAdapter:
    """A ``Produce`` stream over the binary protocol (see the module docstring); one per opening."""

    def __init__(self, transport: Any, spec: ProducerSpec, on_event: Callable[[ProducerEvent], None],
                 name: str = "producer") -> None:
        self._transport = transport
        self._spec = spec
        self.topic = spec.topic
        self._on_event = on_event
        self._name = name
        self._lock = threading.Lock()
        self._conn: Any = None
        self.producer_id = -1
        self.producer_name = spec.producer_name
        self.schema_version = b""
        self._live = False
        """True once opened and the entries held meanwhile went out: sends go straight to the connection."""
        self._held: list[PendingEntry] = []
        self._opened = False
        self._closing = False
        self._close_sent = False
        self._closed_answer = threading.Event()
        self._ended = False
        self._chunk_sequence = -1
        """The sequence id of the last chunk sent: the chunks after it with that id are chunks too."""
        self._sent_any = False

    # --- TransportStream ------------------------------------------------------------------------------
    def start(self) -> None:
        threading.Thread(target=self._connect, name=f"pulsarlike-{self._name}-open", daemon=True).start()

    @property
    def alive(self) -> bool:
        return not self._ended

    def send(self, entry: PendingEntry) -> None:
        if self._live:
            self._conn.send(self._frame(entry), entry.data)
            return
        with self._lock:
            if not self._live:
                if not self._ended:  # ended: the core sends it again on its next stream
                    self._held.append(entry)  # opening, or the opened answer is being handled
                return
        self._conn.send(self._frame(entry), entry.data)

    def half_close(self) -> None:
        """No more sends: CLOSE_PRODUCER (once opened; an opening is closed when its answer comes)."""
        with self._lock:
            self._closing = True
            conn, opened, sent = self._conn, self._opened, self._close_sent
            self._close_sent = self._close_sent or (opened and conn is not None)
        if opened and conn is not None and not sent and not self._ended:
            self._send_close(conn, self._closed_answer)

    def close(self, wait_s: float = 2.0) -> None:
        """Close the producer on the broker (waiting up to ``wait_s`` for its answer), then end with None."""
        if self._ended:
            return
        self.half_close()
        with self._lock:
            conn, pid, opened = self._conn, self.producer_id, self._opened
        if not opened and conn is not None and pid >= 0:  # still opening: the broker may hold it meanwhile
            self._send_close(conn, None)
        if opened and wait_s > 0:
            self._closed_answer.wait(wait_s)
        epochs = _epochs_of(self._transport)
        with _epochs_lock:
            epochs.pop(self._epoch_key(), None)
        self._end(None)

    # --- opening (a worker thread, then the connection's) -----------------------------------------------
    def _connect(self) -> None:
        transport = self._transport
        try:
            conn = transport.connection_for(self.topic, transport.operation_timeout_s)
        except errors.PulsarLikeError as exc:
            self._end(exc)
            return
        except Exception as exc:  # a bug must end this stream, not leave the producer waiting for ever
            log.exception("event=producer_open_failed topic=%s", self.topic)
            self._end(errors.UnknownError(f"opening the producer on {self.topic} failed: {exc!r}"))
            return
        with self._lock:
            if self._closing or self._ended:
                closing = True
            else:
                closing = False
                self._conn = conn
                self.producer_id = conn.next_producer_id()
        if closing:
            self._end(None)
            return
        conn.register_producer(self.producer_id, self)
        request_id = conn.next_request_id()
        request = T(type=T.PRODUCER)
        producer = request.producer
        producer.topic = self.topic
        producer.producer_id = self.producer_id
        producer.request_id = request_id
        producer.producer_access_mode = ACCESS_MODES.get(self._spec.access_mode, cmd.Shared)
        if self.producer_name:
            producer.producer_name = self.producer_name
            epoch, generated = _epochs_of(transport).get(self._epoch_key(), (0, False))
            producer.user_provided_producer_name = not generated
            producer.epoch = epoch
        else:
            producer.user_provided_producer_name = False
        for key, value in self._spec.properties.items():
            producer.metadata.add(key=key, value=value)
        conn.request_async(request, self._on_producer_answer)

    def _on_producer_answer(self, answer: cmd.BaseCommand | None, error: errors.PulsarLikeError | None) -> None:
        if error is not None or answer is None:
            if isinstance(error, errors.ServiceNotReady):  # e.g. the topic is being unloaded or moved
                self._transport.forget(self.topic)
            self._end(error or errors.ConnectError(f"no answer to PRODUCER on {self.topic}"))
            return
        success = answer.producer_success
        if answer.type != T.PRODUCER_SUCCESS:
            self._end(errors.UnknownError(f"unexpected answer to PRODUCER on {self.topic}: {T.Type.Name(answer.type)}"))
            return
        if not success.producer_ready:
            log.info("event=producer_waiting topic=%s producer=%s", self.topic, success.producer_name)
            return  # its turn comes with a second PRODUCER_SUCCESS for the same request
        conn = self._conn
        with self._lock:
            self._opened = True
            closing = self._closing
            if closing:
                self._close_sent = True
        if closing or self._ended:
            self._send_close(conn, self._closed_answer)
            self._end(None)
            return
        self.producer_name = success.producer_name
        self.schema_version = success.schema_version
        max_size = conn.max_message_size
        self._on_event(ProducerReady(success.producer_name, success.last_sequence_id, max_size, self.topic))
        with self._lock:  # what the core re-sent while it heard the news goes out in one write, in order
            held, self._held = self._held, []
            if held:
                conn.send_many([(self._frame(entry), entry.data) for entry in held])
            self._live = True

    # --- sending --------------------------------------------------------------------------------------
    def _frame(self, entry: PendingEntry) -> cmd.BaseCommand:
        command = T(type=SEND)
        send = command.send
        send.producer_id = self.producer_id
        sequence_id = send.sequence_id = entry.sequence_id
        send.num_messages = entry.num_messages
        if entry.batched:
            send.highest_sequence_id = entry.highest_sequence_id
        elif entry.counted == 0:  # a chunk before its message's last (see PartitionProducer._add_large)
            send.is_chunk = True
            self._chunk_sequence = sequence_id
        elif sequence_id == self._chunk_sequence or not self._sent_any and _is_chunk(entry.data):
            send.is_chunk = True  # a last chunk (the first entry of a reopened producer may be one alone)
        self._sent_any = True
        return command

    def _send_close(self, conn: Any, answered: threading.Event | None) -> None:
        request = T(type=T.CLOSE_PRODUCER)
        request.close_producer.producer_id = self.producer_id
        request.close_producer.request_id = conn.next_request_id()

        def done(answer: cmd.BaseCommand | None, error: errors.PulsarLikeError | None) -> None:
            if answered is not None:
                answered.set()
        conn.request_async(request, done)

    # --- frames for this producer (the connection's reader thread) -----------------------------------------
    def on_frame(self, command: cmd.BaseCommand, payload: memoryview | None) -> None:
        kind = command.type
        if kind == SEND_RECEIPT:
            receipt = command.send_receipt
            message_id = receipt.message_id
            sequence_id = receipt.sequence_id
            highest = receipt.highest_sequence_id
            if highest < sequence_id:
                highest = sequence_id
            if message_id.ledgerId == NO_ID and message_id.entryId == NO_ID:
                self._on_event(Receipt(sequence_id, highest, duplicate=True))
            else:
                self._on_event(Receipt(sequence_id, highest, message_id.ledgerId, message_id.entryId))
        elif kind == SEND_ERROR:
            self._send_error(command.send_error)
        elif kind == T.CLOSE_PRODUCER:
            log.info("event=producer_closed_by_broker topic=%s producer=%s", self.topic, self.producer_name)
            self._lost(errors.ConnectError(f"the broker closed the producer on {self.topic}; reconnecting"),
                       moved=True)
        elif kind == T.TOPIC_MIGRATED:
            self._lost(errors.ConnectError(f"{self.topic} moved to {command.topicMigrated.brokerServiceUrl}; "
                                           "reconnecting"), moved=True)

    def _send_error(self, failure: cmd.CommandSendError) -> None:
        error = error_of(failure.error, failure.message)
        if failure.error in RESEND_CODES:
            log.warning("event=send_error_resend topic=%s sequence_id=%d error=%s", self.topic,
                        failure.sequence_id, error)
            conn = self._conn
            if conn is not None and not conn.closed:
                self._send_close(conn, None)  # the new opening must not find this one still holding the name
            self._lost(errors.ConnectError(f"the broker answered {type(error).__name__} to sequence id "
                                           f"{failure.sequence_id} on {self.topic} ({error}); resending"))
            return
        self._on_event(SendFailed(failure.sequence_id, error))

    def on_connection_lost(self, error: errors.PulsarLikeError) -> None:
        if isinstance(error, errors.ConnectError):
            self._lost(error)
        else:
            self._lost(errors.ConnectError(f"the connection to the broker of {self.topic} was lost: {error}"))

    def _lost(self, error: errors.PulsarLikeError, moved: bool = False) -> None:
        if moved:  # the topic may be served elsewhere now: the reopening looks it up again
            self._transport.forget(self.topic)
        if self._opened and not self._closing:
            _bump_epoch(self._transport, self._epoch_key(), generated=not self._spec.producer_name)
        self._end(None if self._closing else error)

    # --- the end --------------------------------------------------------------------------------------
    def _epoch_key(self) -> tuple[str, str]:
        return (self.topic, self.producer_name)

    def _end(self, error: errors.PulsarLikeError | None) -> None:
        with self._lock:
            if self._ended:
                return
            self._ended = True
            self._live = False
            conn, pid = self._conn, self.producer_id
        if conn is not None and pid >= 0:
            conn.unregister_producer(pid)
        try:
            self._on_event(Closed(error))
        except Exception:  # the core's handler must not break the connection's reader
            log.exception("event=producer_on_end_failed topic=%s", self.topic)


def register_with_producer(transport: Any, topic: str, schema: TopicSchema, timeout_s: float) -> int:
    """Register ``schema`` on its topic the way every Pulsar broker takes one: with a producer that
    carries it (``GET_OR_CREATE_SCHEMA`` is not answered by all brokers: pulsar-lite 0.2.0 never answers it).
    A partitioned topic's schema goes through its partition 0 (the registry keys schemas by the base name).
    Returns the version the broker gave, or -1 when it gave none (a broker without a registry); a refusal
    (``IncompatibleSchema`` ...) is raised. The producer is refused (``ProducerFenced``) while an exclusive
    producer holds the topic."""
    if transport.partitions(topic, timeout_s) > 0:
        topic = str(TopicName.parse(topic).partition(0))
    conn = transport.connection_for(topic, timeout_s)
    producer_id = conn.next_producer_id()
    command = T(type=T.PRODUCER)
    producer = command.producer
    producer.topic = topic
    producer.producer_id = producer_id
    producer.request_id = conn.next_request_id()
    producer.user_provided_producer_name = False
    producer.schema.CopyFrom(wire_schema(schema))
    answer = conn.request(command, timeout_s)
    close = T(type=T.CLOSE_PRODUCER)
    close.close_producer.producer_id = producer_id
    close.close_producer.request_id = conn.next_request_id()
    conn.request_async(close, lambda answer, error: None)
    return schema_version_number(answer.producer_success.schema_version)


def schema_version_number(version: bytes) -> int:
    """A schema version as a number: Pulsar's 8-byte big-endian; -1 for none."""
    return int.from_bytes(version, "big", signed=True) if len(version) == 8 else -1
