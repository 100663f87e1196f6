"""The producer of one (partition) topic: its batch container, the admission of messages, and the
:class:`~connector.client.producer.channel.ProducerChannel` that sends its entries (and reconnects).

Messages go into a batch container (default, or key-based: :mod:`connector.client.producer.key_based`); a
message above ``max_message_size`` goes out as chunks when chunking is on
(:mod:`connector.client.producer.chunking`). Each entry's callbacks get ``(None, MessageId)`` or
``(error, None)`` -- a :class:`SyncWaiter` (a blocking ``send``), the user's ``send_async`` callback (called as
``callback(Result, MessageId)`` like pulsar-client) or a chunk's part of its message's callback.
``max_pending_messages`` counts the messages queued and not yet acknowledged by the broker.
"""
from __future__ import annotations

import logging
import threading
import time
from typing import Any, Callable, Mapping, Sequence

from broker_core import errors
from broker_core.protocol.compression import compress_payload
from broker_core.protocol.entry_limits import FRAME_PADDING
from broker_core.types import TopicName

from connector.client.producer import chunking as chunking_producer
from connector.client.producer.batching import PLAIN_HEADERS, PLAIN_LIMIT, BatchContainer, PendingEntry
from connector.client.producer.callbacks import ChunkedSend, SyncWaiter, complete_callbacks
from connector.client.security.crypto_keys import CryptoError
from connector.client.producer.key_based import KeyBasedBatchContainer
from connector.client.opening import Deadline, open_all
from connector.client.producer.channel import ProducerChannel
from connector.client.producer.conf import ProducerConf, check_sequence_id
from connector.client.timer import TimerThread
from connector.client.transport import Transport

log = logging.getLogger(__name__)

__all__ = ["PartitionProducer", "SyncWaiter", "close_unused", "open_producers"]


def open_producers(connection: Transport, timer: TimerThread, topic: str, indexes: Sequence[int], conf: ProducerConf,
                   deadline: Deadline | None, producer_name: str | None = None) -> list["PartitionProducer"]:
    """The producers of ``topic``'s partitions ``indexes`` (``[-1]``: the topic itself, not partitioned), opened
    within ``deadline`` (None: as long as it takes, a ``WaitForExclusive`` producer's way) by
    :func:`~connector.client.opening.open_all`: on a refusal or ``Timeout`` those opened are closed. Without a
    ``producer_name`` (nor one in ``conf``) the first is opened alone: the broker names it, the others take
    its name."""
    parsed = TopicName.parse(topic)
    named: list[str] = [producer_name] if producer_name else []

    def open_one(index: int) -> PartitionProducer:
        partition_topic = topic if index < 0 else str(parsed.partition(index))
        producer = PartitionProducer(connection, timer, partition_topic, index, conf, named[0] if named else None)
        if not named:
            named.append(producer.producer_name)
        return producer
    return open_all(indexes, open_one, close_unused, deadline, f"create_producer on {topic}",
                    lead=not named and not conf.producer_name)


def close_unused(producer: "PartitionProducer") -> None:
    """Close a producer opened for a call that failed (nothing was sent on it)."""
    producer.close(timeout_s=1)


class PartitionProducer:
    def __init__(self, connection: Transport, timer: TimerThread, topic: str, partition: int,
                 conf: ProducerConf, producer_name: str | None = None) -> None:
        self.topic = topic
        self.partition = partition
        self.conf = conf
        self._timer = timer
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        max_messages = conf.batching_max_messages if conf.batching_enabled else 1
        self._key_based = conf.key_based_batching and conf.batching_enabled
        self._container: BatchContainer | KeyBasedBatchContainer = (
            KeyBasedBatchContainer if self._key_based else BatchContainer)(
            max_messages, conf.batching_max_bytes, conf.compression)
        if conf.crypto is not None:
            self._container.encrypt = conf.crypto.encrypt
        self._max_pending = conf.max_pending_messages
        self._fast_admit = 0
        """add_payload's fast path takes a message while fewer than this are pending: the queue limit
        (unbounded when 0), or 0 -- never -- for key-based batching and once closed or failed."""
        if not self._key_based:
            self._fast_admit = conf.max_pending_messages or (1 << 62)
        self._publish_delay_s = conf.batching_max_publish_delay_ms / 1000.0
        self._pending_messages = 0
        self._closed = False
        self._flush_timer_armed = False
        self._batch_opened_at = 0.0
        self.on_batch_sent: Callable[[int], None] | None = None
        """Called with the partition index, under the producer's lock, after each batch (or unbatched
        or chunked message) went out: round-robin routing moves on then."""
        self._channel = ProducerChannel(connection, timer, topic, partition, conf, self._lock, self._changed,
                                        self, producer_name)
        self._channel.open()
        initial = conf.initial_sequence_id
        opened_last = self._channel.first_last_sequence_id
        self._next_sequence_id = initial + 1 if initial is not None else max(opened_last + 1, 0)
        if initial is not None:
            self._channel.last_sequence_id = max(opened_last, initial)

    @property
    def producer_name(self) -> str:
        return self._channel.producer_name

    @property
    def max_message_size(self) -> int:
        return self._channel.max_message_size

    @property
    def last_sequence_id(self) -> int:
        """The highest sequence id the broker acknowledged (-1 when none)."""
        return self._channel.last_sequence_id

    # --- what the channel reports (lock held) ----------------------------------------------------------
    def settled_locked(self, messages: int) -> None:
        self._pending_messages -= messages

    def failed_locked(self, error: errors.PulsarLikeError) -> list[Any]:
        self._fast_admit = 0
        return self._container.take_callbacks()

    # --- sending --------------------------------------------------------------------------------------
    def add_payload(self, content: bytes, callback: Any) -> None:
        """:meth:`add` for a ``send_async`` message that carries only a payload: the hot path.

        A message that joins an open batch without filling it is appended right here (the container's
        plain-header lookup and arithmetic, inlined); anything else -- the first or the last message of
        a batch, a full queue, a closed or failed producer, a large payload -- goes through :meth:`add`.
        """
        size = len(content)
        lock = self._lock
        lock.acquire()  # not ``with``: its __exit__ call costs as much as the rest of the fast path
        try:
            c = self._container
            n = c.count
            if 0 < n < c.fast_max_count and c.size + size <= c.fast_max_bytes and size < PLAIN_LIMIT \
                    and self._pending_messages < self._fast_admit:
                seq = self._next_sequence_id
                if seq == c.first_sequence_id + n:
                    self._next_sequence_id = seq + 1
                    self._pending_messages += 1
                    header = PLAIN_HEADERS[size]
                    parts = c.parts
                    parts.append(header)
                    parts.append(content)
                    c.callbacks.append(callback)
                    c.count = n + 1
                    c.size += len(header) + size
                    c.last_sequence_id = seq
                    return
        finally:
            lock.release()
        self.add(content, callback, None, None, None, None, 0, None, False)

    def use_schema_version(self, version: bytes) -> None:
        """Stamp ``version`` (the registry's, of the producer's schema) on every message from now on."""
        with self._lock:
            self._container.schema_version = version

    def add(self, content: bytes, callback: Any, properties: Mapping[str, str] | None,
            partition_key: str | None, ordering_key: bytes | None, sequence_id: int | None,
            event_timestamp: int, deliver_at: int | None, flush: bool) -> bool:
        """Queue one message; True when a batch went out."""
        if sequence_id is not None:
            check_sequence_id("sequence_id", sequence_id)
        size = len(content)
        if size > self.max_message_size:
            if not self.conf.chunking_enabled:
                raise errors.MessageTooBig(size=size, limit=self.max_message_size)
            return self._add_large(content, callback, properties, partition_key, ordering_key,
                                   sequence_id, event_timestamp, deliver_at)
        full = None
        with self._lock:
            if self._closed or self._channel.error is not None:
                self._check_usable()
            if self._max_pending and self._pending_messages >= self._max_pending:
                full = self._admit_locked(callback)
            if full is None:
                container = self._container
                flushed = False
                if container.count and (not container.has_room(size) or deliver_at is not None):
                    self._flush_locked()  # a delayed message is always an entry of its own
                    flushed = True
                if sequence_id is None and not self._key_based:  # key-based: assigned at flush
                    sequence_id = self._next_sequence_id
                    self._next_sequence_id = sequence_id + 1
                container.add(content, sequence_id, callback, properties, partition_key, ordering_key,
                              event_timestamp, deliver_at)
                self._pending_messages += 1
                if flush or deliver_at is not None or container.is_full():
                    self._flush_locked()
                    return True
                if container.count == 1:
                    self._batch_opened_at = time.monotonic()
                    if not self._flush_timer_armed:
                        self._flush_timer_armed = True
                        self._timer.call_later(self._publish_delay_s, self._delayed_flush)
                return flushed
        complete_callbacks([callback], full)  # as pulsar-client: send_async's callback gets it
        return False

    def _add_large(self, content: bytes, callback: Any, properties: Mapping[str, str] | None,
                   partition_key: str | None, ordering_key: bytes | None, sequence_id: int | None,
                   event_timestamp: int, deliver_at: int | None) -> bool:
        """A message above ``max_message_size`` with chunking on: compressed as a whole, then sent as
        its chunks (or as one entry when compression made it fit). It counts once against
        ``max_pending_messages``; its callback completes with the last chunk's receipt."""
        compression = self.conf.compression
        payload = compress_payload(compression, content)  # outside the lock: it may take a while
        full: errors.PulsarLikeError | None = None
        with self._lock:
            if self._closed or self._channel.error is not None:
                self._check_usable()
            if self._max_pending and self._pending_messages >= self._max_pending:
                full = self._admit_locked(callback)
            if full is None:
                if self._container.count:
                    self._flush_locked()
                if sequence_id is None:
                    sequence_id = self._next_sequence_id
                    self._next_sequence_id = sequence_id + 1
                meta = chunking_producer.message_metadata(
                    self.producer_name, sequence_id, int(time.time() * 1000), compression,
                    len(content), properties, partition_key, ordering_key, event_timestamp, deliver_at)
                if self._container.schema_version:
                    meta.schema_version = self._container.schema_version
                crypto = self.conf.crypto
                try:
                    datas = chunking_producer.build_entries(
                        meta, payload, self.max_message_size, crypto.encrypt if crypto is not None else None,
                        crypto.overhead() if crypto is not None else 0)
                except CryptoError as exc:
                    full = exc
                    datas = []
            if full is None:
                chunked = ChunkedSend(callback)
                self._pending_messages += 1
                last = len(datas) - 1
                for index, data in enumerate(datas):
                    entry = PendingEntry(sequence_id, sequence_id, 1, False, data,
                                         [chunked.part(index == last)])
                    entry.counted = 1 if index == last else 0  # the message counts once
                    self._send_locked(entry)
                if self.on_batch_sent is not None:
                    self.on_batch_sent(self.partition)
                return True
        complete_callbacks([callback], full)
        return False

    def _admit_locked(self, callback: Any) -> errors.ProducerQueueIsFull | None:
        """Wait for room (block_if_queue_full) or report a full queue: raised for a blocking send,
        returned for send_async."""
        limit = self._max_pending
        if self.conf.block_if_queue_full:
            while self._pending_messages >= limit:
                self._changed.wait()
                self._check_usable()
            return None
        full = errors.ProducerQueueIsFull(
            f"{self._pending_messages} messages are pending on {self.topic} "
            f"(max_pending_messages={limit}); wait for receipts or set block_if_queue_full=True",
            pending=self._pending_messages, limit=limit)
        if type(callback) is SyncWaiter or callback is None:
            raise full
        return full

    def _check_usable(self) -> None:
        if self._closed:
            raise errors.AlreadyClosed(f"the producer on {self.topic} is closed")
        if self._channel.error is not None:
            raise self._channel.error

    def _delayed_flush(self) -> None:
        """The publish-delay timer: flushes the open batch once it is ``batching_max_publish_delay_ms``
        old. One timer per producer, re-armed for a younger batch -- not one per batch, which at full
        speed woke the timer thread for every (long gone) batch."""
        with self._lock:
            self._flush_timer_armed = False
            if not self._container.count:
                return  # the next batch's first message arms it again
            wait = self._batch_opened_at + self._publish_delay_s - time.monotonic()
            if wait > 0:
                self._flush_timer_armed = True
                self._timer.call_later(wait, self._delayed_flush)
                return
            self._flush_locked()

    def _flush_locked(self) -> None:
        if self._key_based:
            entries, self._next_sequence_id = self._container.build(  # type: ignore[call-arg]
                self.producer_name, int(time.time() * 1000), self._next_sequence_id)
            for entry in entries:
                self._send_locked(entry)
        else:
            self._send_locked(self._container.build(self.producer_name, int(time.time() * 1000)))
        if self.on_batch_sent is not None:
            self.on_batch_sent(self.partition)

    def _send_locked(self, entry: PendingEntry) -> None:
        if entry.error is not None:  # it could not be encrypted: nothing goes out
            self._pending_messages -= entry.counted
            self._changed.notify_all()
            self._timer.call_later(0, complete_callbacks, entry.callbacks, entry.error)  # never under the lock
            return
        if len(entry.data) > self.max_message_size + FRAME_PADDING:
            self._refuse_locked(entry)
            return
        entry.sent_at = time.monotonic()
        self._channel.send_locked(entry)

    def _refuse_locked(self, entry: PendingEntry) -> None:
        """Fail an entry the broker would refuse (a batch or a message's metadata above its limit) here:
        sent, it would exceed the request size the broker reads and end the stream for every send."""
        error = errors.MessageTooBig(
            f"an entry of {len(entry.data)} bytes ({entry.num_messages} message(s) with their metadata) exceeds "
            f"the broker's maxMessageSize={self.max_message_size} (+{FRAME_PADDING} bytes of framing); lower "
            "batching_max_allowed_size_in_bytes, or send smaller messages or properties",
            size=len(entry.data), limit=self.max_message_size)
        self._pending_messages -= entry.counted
        self._changed.notify_all()
        self._timer.call_later(0, complete_callbacks, entry.callbacks, error)  # never under the lock

    def flush_batch(self) -> None:
        with self._lock:
            if self._container.count and self._channel.error is None and not self._closed:
                self._flush_locked()

    def flush(self, timeout_s: float | None = None) -> None:
        """Send the open batch and wait until every pending message has its receipt (or failed)."""
        self.flush_batch()
        pending = self._channel.pending
        with self._lock:
            if not self._changed.wait_for(lambda: not pending, timeout_s):
                raise errors.Timeout(f"flush on {self.topic}: {len(pending)} entries still wait for receipts")

    # --- lifecycle ------------------------------------------------------------------------------------
    def is_connected(self) -> bool:
        return not self._closed and self._channel.is_connected()

    def fail(self, error: errors.PulsarLikeError) -> None:
        """Make the producer unusable: pending and queued messages fail with ``error``."""
        self._channel.fail(error)

    def close(self, timeout_s: float | None = None) -> None:
        """Flush what is queued and wait for receipts (not while reconnecting: then what is pending fails
        at once with ``AlreadyClosed``), then close the stream."""
        if self._closed:
            return
        try:
            if self._channel.error is None and self._channel.is_connected():
                self.flush(timeout_s)
        except errors.PulsarLikeError:
            pass
        with self._lock:
            self._closed = True
            self._fast_admit = 0
            self._changed.notify_all()
        self._channel.close()
