"""One topic partition of a consumer: its :class:`~connector.client.consumer.stream.PartitionStream`, the
decoding of what it delivers into :class:`Message` objects for the consumer's receive queue, chunk
reassembly, and the acks of messages (a chunked message's id stands for its chunks; a batch's acks are held
until the whole batch is acknowledged unless ``batch_index_ack_enabled``).

Deliveries are decoded on the stream's reader thread with the client's entry decoding
(:mod:`connector.client.entries`, which the Spark source uses too): CRC check, decompression, batch split, messages an ack set leaves out
skipped (their permits go back at once). An undecodable entry holds its place in the queue as one message
whose taker raises its ``MessageDecodeError`` (see :mod:`connector.client.consumer.permits`). With a dead letter
policy, the messages of an entry delivered ``max_redeliver_count`` times or more go to
:class:`~connector.client.consumer.dead_letter.DeadLetters`, which may keep them from the application.
"""
from __future__ import annotations

import dataclasses
import functools
import itertools
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterable, Sequence

from broker_core import errors
from broker_core.protocol import pulsar_api_pb2
from broker_core.protocol.chunks import Chunk

from connector.client import entries as entry_codec
from connector.client.consumer.chunk_assembly import ChunkAssembly
from connector.client.consumer.stream import PartitionStream
from connector.client.enums import InitialPosition
from connector.client.transport.events import EARLIEST, ConsumerSpec, Entry
from connector.client.message import EntryInfo, Message, UndecryptedEntry, decode_error
from connector.client.security.message_crypto import ConsumerCryptoFailureAction
from connector.client.message_id import MessageId
from connector.client.opening import Deadline, open_all
from connector.client.consumer.permits import PermitWindow, Undecodable, Unreadable
from connector.client.consumer.receive_queue import ReceiveQueue
from connector.client.timer import TimerThread

if TYPE_CHECKING:
    from connector.client.consumer.dead_letter import DeadLetters
    from connector.client.lookup import Lookup
    from connector.client.consumer.positions import ReadPositions
    from connector.client.transport import Positions, Transport

log = logging.getLogger(__name__)

_NO_METADATA = pulsar_api_pb2.MessageMetadata()


@dataclass(frozen=True)
class ConsumerSettings:
    """What every partition consumer of one consumer shares (subscribe's options, parsed once)."""

    receiver_queue_size: int = 1000
    hold_batch_acks: bool = True
    """``batch_index_ack_enabled=False``: a batch's acks are held until all its messages are acked."""
    max_pending_chunked_message: int = 10
    auto_ack_oldest_chunked_message_on_queue_full: bool = False
    expire_time_of_incomplete_chunked_message_ms: int = 60000
    values: Any = None
    """The consumer's schema binding (:mod:`connector.client.schema.binding`): ``msg.value()`` decodes with it."""
    start_inclusive: bool = False
    """``start_message_id_inclusive``: a seek to a message id delivers that message first (True) or the one
    after it (False), as pulsar-client's consumers and readers do."""
    crypto: Any = None
    """:class:`~connector.client.security.message_crypto.ConsumerCrypto` decrypting encrypted entries (None: no key reader,
    ``FAIL``)."""
    crypto_redelivery_ms: int = 0
    """An entry that could not be decrypted (``FAIL``) is redelivered after this long (the ack timeout; 0: not
    until the consumer reconnects or redelivers its unacknowledged messages), as pulsar-client."""


class PartitionConsumer:
    """See the module docstring. ``redeliver_later(self)`` has this partition's unacknowledged messages
    redelivered later (chunks given up for now); ``resume`` is the non-durable resume point (see
    :class:`~connector.client.consumer.stream.PartitionStream`)."""

    def __init__(self, connection: "Transport", timer: TimerThread, spec: ConsumerSpec,
                 settings: ConsumerSettings, queue: ReceiveQueue,
                 redeliver_later: Callable[["PartitionConsumer"], None],
                 dead_letters: "DeadLetters | None" = None, resume: Callable[[], int | None] | None = None,
                 restart: Callable[[], None] | None = None) -> None:
        """``restart()`` puts ``resume``'s position back to the start (the consumer moved to another cluster)."""
        self.topic = spec.topic
        self.partition = spec.partition
        self._connection = connection
        self._settings = settings
        self.values = settings.values
        self._queue = queue
        self._dead_letters = dead_letters
        self.max_received_offset = -1
        self._resume = resume
        self._restart = restart
        self.start_floor = spec.start.offset if spec.start is not None and not spec.start.latest else -1
        """The first offset the application may get: the broker delivers whole entries, so a start (or seek)
        inside a batch gets the batch's earlier messages too, and a seek to a message id not inclusive gets the
        message itself: both are dropped here (pulsar-client does the same with its start id)."""
        self._first_floor = self.start_floor
        self.cluster = 0
        """One more each time the consumer moves to another cluster: what its messages were received on
        (``EntryInfo.cluster``); acks of a message received on a cluster it left are not sent."""
        self._chunks = ChunkAssembly(
            self.topic, timer, settings.max_pending_chunked_message,
            settings.auto_ack_oldest_chunked_message_on_queue_full,
            settings.expire_time_of_incomplete_chunked_message_ms,
            ack_all=self._ack_offsets, redeliver_later=functools.partial(redeliver_later, self))
        self._timer = timer
        self.stream = PartitionStream(connection, timer, spec, settings.receiver_queue_size, self, resume)
        self.stream.open()

    # --- stream events (reader thread) --------------------------------------------------------------------
    def on_entries(self, entries: Sequence[Entry], window: PermitWindow) -> None:
        out: list[Message] = []
        settled = 0
        for entry in entries:
            try:
                settled += self._decode(entry, window, out)
            except (errors.InvalidMessage, errors.ChecksumError) as exc:
                out.append(self._undecodable(entry, window, exc))
        if out:
            self._queue.extend(out)
        if settled:
            window.took(settled)

    def on_unreadable(self, error: errors.PulsarLikeError, window: PermitWindow) -> None:
        """The broker cannot read this partition's next message (``DataLost``): its place in the queue raises
        the error once, after what came before it."""
        log.warning("event=unreadable_messages topic=%s error=%s", self.topic, error.message)
        start = getattr(error, "start_offset", -1)
        self._queue.extend([Message(b"", None, EntryInfo(_NO_METADATA, self.topic, -1, start, self.partition, 0, 1,
                                                          False, self, Unreadable(window, error), self.cluster),
                                    -1)])

    def on_disconnected(self, cause: errors.PulsarLikeError) -> None:
        log.debug("event=consumer_disconnected topic=%s cause=%r", self.topic, cause)

    def on_reconnected(self) -> None:
        self._chunks.clear()
        resumed = self._resume() if self._resume is not None else None
        if resumed is not None:  # resubscribed at it: the messages before it in its batch were handed out
            self.start_floor = resumed

    def on_cluster_switch(self) -> None:
        """The subscription reopens on another cluster (failover): nothing of the old one's positions holds
        there -- the start floor and a reader's resume position go back to the start, buffered chunks and the
        highest offset received are forgotten (pulsar-client's ``onClusterSwitching``)."""
        self.cluster += 1
        self.start_floor = self._first_floor
        self.max_received_offset = -1
        self._chunks.clear()
        if self._restart is not None:
            self._restart()

    def on_failed(self, error: errors.PulsarLikeError) -> None:
        self._queue.wake()

    def on_end_of_topic(self) -> None:
        self._queue.wake()

    # --- decoding -----------------------------------------------------------------------------------------
    def _decode(self, entry: Entry, window: PermitWindow, out: list[Message]) -> int:
        """Append the entry's messages to ``out``; returns how many it settled without the application."""
        metadata, payload, _ = entry_codec.open_entry(entry.data)
        if metadata.encryption_keys:  # decrypted first: then decompressed, split or reassembled as any entry
            crypto = self._settings.crypto
            plain = crypto.decrypt(metadata, payload) if crypto is not None else None
            if plain is None:
                return self._undecrypted(entry, metadata, payload, window, out)
            payload = memoryview(plain)
        first = len(out)
        settled = 0
        if not metadata.HasField("num_messages_in_batch"):  # one message, or one chunk of a message
            if metadata.num_chunks_from_msg > 1:
                completed = self._add_chunk(entry, metadata, payload, window, out)
                if completed is None:  # the application never takes a chunk: its permit goes back now
                    return 0 if len(out) > first else 1
                out.append(completed)
                return self._to_dead_letters(entry, out, first)
            data = entry_codec.payload_of(metadata, payload)
            entry_id = entry.entry_id
            if entry_id > self.max_received_offset:
                self.max_received_offset = entry_id
            if entry_id < self.start_floor:  # the message a seek not inclusive named: not delivered
                return 1
            out.append(Message(data if type(data) is bytes else bytes(data), None, EntryInfo(
                metadata, self.topic, entry.ledger_id, entry_id, self.partition, entry.redelivery_count,
                1, False, self, window, self.cluster), -1))
        else:
            metas, payloads = entry_codec.split_messages(metadata, payload)
            num = len(payloads)
            info = EntryInfo(metadata, self.topic, entry.ledger_id, entry.entry_id, self.partition,
                             entry.redelivery_count, num, True, self, window, self.cluster)
            last = entry.entry_id + num - 1
            if last > self.max_received_offset:
                self.max_received_offset = last
            kept = entry_codec.kept_indexes(entry.ack_set, num)
            floor = self.start_floor - entry.entry_id
            if floor > 0:  # the start is inside this batch: its members before it are not delivered
                kept = [i for i in (range(num) if kept is None else kept) if i >= floor]
            if kept is None:
                out.extend(map(Message, payloads, metas, itertools.repeat(info, num), range(num)))
            else:
                out.extend([Message(payloads[i], metas[i], info, i) for i in kept])
                settled = num - len(kept)
                if self._settings.hold_batch_acks:
                    self.stream.held_batch_acks.acknowledged_before(entry.entry_id, num, kept)
        return settled + self._to_dead_letters(entry, out, first)

    def _undecrypted(self, entry: Entry, metadata: pulsar_api_pb2.MessageMetadata, payload: memoryview,
                     window: PermitWindow, out: list[Message]) -> int:
        """An entry that could not be decrypted, as ``crypto_failure_action`` says (see
        :mod:`connector.client.security.message_crypto`); returns how many messages it settled without the application."""
        num = entry_codec.message_count(metadata)
        offsets = range(entry.entry_id, entry.entry_id + num)
        if offsets[-1] > self.max_received_offset:
            self.max_received_offset = offsets[-1]
        crypto = self._settings.crypto
        action = crypto.action if crypto is not None else ConsumerCryptoFailureAction.FAIL
        if action == ConsumerCryptoFailureAction.CONSUME:  # as sent, a batch as one message standing for all
            if num > 1:
                self._chunks.remember(entry.entry_id, tuple(offsets))
            out.append(Message(bytes(payload), None, UndecryptedEntry(
                metadata, self.topic, entry.ledger_id, entry.entry_id, self.partition, entry.redelivery_count, 1,
                False, self, window, self.cluster), -1))
            return num - 1
        if action == ConsumerCryptoFailureAction.DISCARD:
            self._ack_offsets(offsets)
        elif self._settings.crypto_redelivery_ms:
            self._timer.call_later(self._settings.crypto_redelivery_ms / 1000.0, self._redeliver_undecrypted,
                                   offsets)
        return num

    def _redeliver_undecrypted(self, offsets: range) -> None:
        if not self._chunks.closed:
            try:
                self.stream.redeliver([(offsets.start, offsets.stop)])
            except errors.PulsarLikeError as exc:  # closed or failed meanwhile: nothing to redeliver to
                log.debug("event=undecrypted_redelivery_skipped topic=%s error=%s", self.topic, exc.message)

    def _to_dead_letters(self, entry: Entry, out: list[Message], first: int) -> int:
        """Hand the entry's messages (``out[first:]``) to the dead letters when it was delivered
        ``max_redeliver_count`` times or more; returns how many they kept from the application."""
        dead = self._dead_letters
        if dead is None or entry.redelivery_count < dead.max_redeliver_count or len(out) <= first:
            return 0
        taken = dead.received(self, out[first:], entry.redelivery_count)
        if taken:
            del out[first:]
        return taken

    def _add_chunk(self, entry: Entry, metadata: pulsar_api_pb2.MessageMetadata,
                   payload: memoryview, window: PermitWindow, out: list[Message]) -> Message | None:
        """The message this chunk completes, if any (an undecodable one is appended to ``out`` directly)."""
        offset = entry.entry_id
        if offset > self.max_received_offset:
            self.max_received_offset = offset
        done = self._chunks.add(Chunk.of(metadata, payload, offset))
        if done is None:
            return None
        try:
            if done.error is not None:
                raise errors.InvalidMessage(done.error)
            data = entry_codec.payload_of(metadata, done.payload)
        except errors.InvalidMessage as exc:
            out.append(self._undecodable(entry, window, exc, done.offsets))
            return None
        self._chunks.remember(offset, done.offsets)
        return Message(bytes(data), None, EntryInfo(
            metadata, self.topic, entry.ledger_id, offset, self.partition, entry.redelivery_count, 1, False,
            self, window, self.cluster), -1)

    def _undecodable(self, entry: Entry, window: PermitWindow, exc: errors.PulsarLikeError,
                     offsets: Sequence[int] | None = None) -> Message:
        """What stands in the queue for an undecodable entry, or chunked message when ``offsets`` (its
        chunks') are given; it is taken like one message, so the entry's other permits return now."""
        if offsets is None:  # a range: the count comes from an entry that could not be decoded
            num = max(1, entry.num_messages)
            offsets = range(entry.entry_id, entry.entry_id + num)
            window.took(num - 1)
        if offsets[-1] > self.max_received_offset:
            self.max_received_offset = offsets[-1]
        mid = self.positions.message_id(entry.ledger_id, entry.entry_id, self.partition, topic=self.topic)
        error = decode_error(mid, self.topic, offsets, exc.message)
        log.warning("event=undecodable_entry topic=%s entry_id=%d reason=%s", self.topic, entry.entry_id,
                    exc.message)
        taker = Undecodable(window, error, functools.partial(self._ack_offsets, error.offsets))
        return Message(b"", None, EntryInfo(_NO_METADATA, self.topic, entry.ledger_id, entry.entry_id,
                                            self.partition, entry.redelivery_count, 1, False, self, taker,
                                            self.cluster), -1)

    # --- acks ---------------------------------------------------------------------------------------------
    def acknowledge(self, entry_id: int, index: int, batch_size: int) -> None:
        """Acknowledge message ``index`` (-1: not batched) of the entry at ``entry_id``."""
        self.stream.check_usable()
        chunks = self._chunks.chunk_offsets(entry_id) if index < 0 else None
        if chunks is not None:  # a chunked message's id (its last chunk's offset) stands for all its chunks
            self.stream.ack_all(chunks)
        elif batch_size > 1 and self._settings.hold_batch_acks:
            self.stream.ack_batch_member(entry_id, index, batch_size)
        else:
            self.stream.ack(entry_id + index if index > 0 else entry_id)

    def acknowledge_cumulative(self, offset: int) -> None:
        self.stream.check_usable()
        if offset > self.max_received_offset:
            raise errors.InvalidMessage(
                f"cannot acknowledge cumulatively up to offset {offset} on {self.topic}: this consumer "
                f"never received it (highest received: {self.max_received_offset})", offset=offset)
        self.stream.ack_cumulative(offset)
        self._chunks.forget_through(offset)

    def _ack_offsets(self, offsets: Iterable[int]) -> None:
        self.stream.ack_all(offsets)

    def redeliver(self, entry_ids: Iterable[int] | None = None) -> None:
        """Ask the broker for these entries again (a chunked message: all its chunks), or for everything
        unacknowledged when None."""
        if entry_ids is None:
            self.stream.redeliver()
            return
        self.stream.redeliver([(offset, offset + 1)
                               for entry_id in entry_ids for offset in self._chunks.offsets_of(entry_id)])

    # --- seek and lifecycle -------------------------------------------------------------------------------
    def start_seek(self, target: MessageId | int) -> None:
        specific = isinstance(target, MessageId) and not (target.is_earliest() or target.is_latest())
        # the broker delivers from the entry holding the target: the target itself only when inclusive
        self.start_floor = (self.positions.position(target) + (0 if self._settings.start_inclusive else 1)
                            if specific else -1)  # type: ignore[arg-type]
        self.stream.start_seek(target)
        self._chunks.clear()  # buffered chunks are from before the seek

    def finish_seek(self, timeout_s: float) -> None:
        self.stream.finish_seek(timeout_s)

    @property
    def positions(self) -> Positions:
        """How positions and message ids relate on this partition's transport."""
        return self._connection.positions

    @property
    def consumer_name(self) -> str:
        return self.stream.consumer_name

    @property
    def error(self) -> errors.PulsarLikeError | None:
        return self.stream.error

    @property
    def reached_end_of_topic(self) -> bool:
        return self.stream.reached_end_of_topic

    def is_connected(self) -> bool:
        return self.stream.is_connected()

    def close(self) -> None:
        self._chunks.closed = True
        self.stream.close()


class PartitionOpener:
    """Opens the partition consumers of one consumer: for each topic (every partition of a partitioned one)
    a copy of the ``template`` :class:`~connector.client.transport.events.ConsumerSpec`; with ``positions``
    (non-durable subscriptions) each resumes after the last message it handed out."""

    def __init__(self, connection: "Transport", timer: TimerThread, lookup: "Lookup", template: ConsumerSpec,
                 settings: ConsumerSettings, positions: "ReadPositions | None" = None, call: str = "subscribe") -> None:
        """``call`` names the client call in the errors of an opening (``subscribe``, ``create_reader``)."""
        self._connection = connection
        self._timer = timer
        self._lookup = lookup
        self._template = template
        self.settings = settings
        self._positions = positions
        self._call = call

    @property
    def read_compacted(self) -> bool:
        """Whether the partitions read the compacted view (``is_read_compacted``)."""
        return self._template.read_compacted

    def open(self, topics: list[str], queue: ReceiveQueue, redeliver_later: Callable[[PartitionConsumer], None],
             dead_letters: "DeadLetters | None", *, from_earliest: bool = False,
             deadline: Deadline | None = None, shown: str | None = None) -> list[PartitionConsumer]:
        """The partition consumers of ``topics``, looked up and opened within ``deadline`` (one operation
        timeout from now when None), :data:`~connector.client.opening.OPEN_CONCURRENCY` at a time; on a refusal
        or ``Timeout`` those opened are closed (:func:`~connector.client.opening.open_all`). ``shown`` names the
        call in a ``Timeout``. ``from_earliest``: partitions added to a topic after the consumer looked -- a
        subscription they do not have yet, or a reader, starts at their first message (producers may have used
        them first)."""
        if deadline is None:
            deadline = Deadline(self._lookup.operation_timeout_s)
        targets = self._lookup.expand(topics, deadline)
        positions = self._positions

        def open_one(target: tuple[str, int]) -> PartitionConsumer:
            partition_topic, index = target
            spec = dataclasses.replace(self._template, topic=partition_topic, partition=index)
            if from_earliest:
                spec = dataclasses.replace(spec, initial_position=InitialPosition.Earliest,
                                           start=spec.start if spec.durable else EARLIEST)
            resume = restart = None
            if positions is not None:
                resume = functools.partial(positions.next_offset, partition_topic)
                restart = functools.partial(positions.restart, partition_topic, spec.start)
            return PartitionConsumer(self._connection, self._timer, spec, self.settings, queue,
                                     redeliver_later, dead_letters, resume, restart)
        what = f"{self._call} on {shown or ', '.join(topics)} (subscription {self._template.subscription})"
        return open_all(targets, open_one, PartitionConsumer.close, deadline, what)
