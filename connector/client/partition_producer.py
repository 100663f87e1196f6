"""The producer of one (partition) topic: its Produce stream, batch container and pending entries.

Messages go into a batch container (default, or key-based: :mod:`connector.client.key_based`); a
message above ``max_message_size`` goes out as chunks when chunking is on
(:mod:`connector.client.chunking_producer`). Receipts arrive in send order and are matched to pending
entries by sequence id; each entry's callbacks get ``(None, MessageId)`` or ``(error, None)`` -- a
:class:`SyncWaiter` (a blocking ``send``), the user's ``send_async`` callback (called as
``callback(Result, MessageId)`` like pulsar-client) or a chunk's part of its message's callback.
"""
from __future__ import annotations

import collections
import logging
import threading
import time
from typing import Any, Callable, Mapping

from broker_core import errors
from broker_core.protocol import broker_pb2
from broker_core.protocol.compression import compress_payload
from broker_core.protocol.entry_limits import FRAME_PADDING
from broker_core.protocol.status import error_from_proto
from broker_core.types import MessageId

from connector.client import chunking_producer
from connector.client.batching import (
    PLAIN_HEADERS, PLAIN_LIMIT, BatchContainer, PendingEntry, pack_requests)
from connector.client.callbacks import ChunkedSend, SyncWaiter, complete_callbacks
from connector.client.connection import BidiStream, Connection
from connector.client.enums import Result
from connector.client.key_based import KeyBasedBatchContainer
from connector.client.producer_conf import ProducerConf, check_sequence_id
from connector.client.timer import TimerThread

log = logging.getLogger(__name__)

SEND_ENTRY_FRAMING = 48
"""Most bytes a ``SendEntry`` adds to its data in a request (field tags, three varints, lengths)."""


class PartitionProducer:
    def __init__(self, connection: Connection, timer: TimerThread, topic: str, partition: int,
                 conf: ProducerConf, producer_name: str | None = None) -> None:
        self.topic = topic
        self.partition = partition
        self.conf = conf
        self._connection = connection
        self._timer = timer
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        max_messages = conf.batching_max_messages if conf.batching_enabled else 1
        self._key_based = conf.key_based_batching and conf.batching_enabled
        self._container: BatchContainer | KeyBasedBatchContainer = (
            KeyBasedBatchContainer if self._key_based else BatchContainer)(
            max_messages, conf.batching_max_bytes, conf.compression)
        self._max_pending = conf.max_pending_messages
        self._fast_admit = 0
        """add_payload's fast path takes a message while fewer than this are pending: the queue limit
        (unbounded when 0), or 0 -- never -- for key-based batching and once closed or failed."""
        if not self._key_based:
            self._fast_admit = conf.max_pending_messages or (1 << 62)
        self._publish_delay_s = conf.batching_max_publish_delay_ms / 1000.0
        self._pending: collections.deque[PendingEntry] = collections.deque()
        self._pending_messages = 0
        self._error: errors.PulsarLikeError | None = None
        self._closed = False
        self._timeout_check_scheduled = False
        self._flush_timer_armed = False
        self._batch_opened_at = 0.0
        self._opened = threading.Event()
        self._open_error: errors.PulsarLikeError | None = None
        self.producer_name = ""
        self.on_batch_sent: Callable[[int], None] | None = None
        """Called with the partition index, under the producer's lock, after each batch (or unbatched
        or chunked message) went out: round-robin routing moves on then."""
        self.max_message_size = 5 * 1024 * 1024
        self.last_sequence_id = -1
        self._next_sequence_id = 0
        request = broker_pb2.ProduceRequest(open=broker_pb2.ProducerOpen(
            topic=topic, producer_name=producer_name or conf.producer_name or "",
            access_mode=conf.access_mode, properties=dict(conf.properties),
            initial_sequence_id=-1 if conf.initial_sequence_id is None else conf.initial_sequence_id))
        self._stream = BidiStream(connection, "Produce", request, self._on_response, self._on_end,
                                  batch_requests=self._pack, name=f"producer-{topic}")
        # WaitForExclusive: the broker answers once this producer is the exclusive one, however long
        # that takes (a stream error still ends the wait).
        wait_s = None if conf.access_mode == broker_pb2.WAIT_FOR_EXCLUSIVE \
            else connection.operation_timeout_s
        if not self._opened.wait(wait_s):
            self._stream.close(wait_s=0.1)
            raise errors.Timeout(f"the broker did not open the producer on {topic} within "
                                 f"{connection.operation_timeout_s:g}s")
        if self._open_error is not None:
            self._stream.close(wait_s=0.5)
            raise self._open_error

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
            if self._closed or self._error is not None:
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
        full = None
        with self._lock:
            if self._closed or self._error is not None:
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
                datas = chunking_producer.build_entries(meta, payload, self.max_message_size)
                chunked = ChunkedSend(callback)
                self._pending_messages += 1
                last = len(datas) - 1
                for index, data in enumerate(datas):
                    entry = PendingEntry(sequence_id, sequence_id, 1, False, data,
                                         [chunked.part(index == last)])
                    self._send_locked(entry)
                    entry.num_messages = 1 if index == last else 0  # the message counts once
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
        if self._error is not None:
            raise self._error

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
        if len(entry.data) > self.max_message_size + FRAME_PADDING:
            self._refuse_locked(entry)
            return
        entry.sent_at = time.monotonic()
        self._pending.append(entry)
        # A plain tuple: pack_requests copies the bytes once, straight into the SendBatch request.
        self._stream.send((entry.sequence_id, entry.highest_sequence_id, entry.num_messages, entry.data))
        entry.data = b""  # the outbox holds the bytes now
        if self.conf.send_timeout_ms > 0 and not self._timeout_check_scheduled:
            self._timeout_check_scheduled = True
            self._timer.call_later(self.conf.send_timeout_ms / 1000.0, self._check_send_timeouts)

    def _refuse_locked(self, entry: PendingEntry) -> None:
        """Fail an entry the broker would refuse (a batch or a message's metadata above its limit) here:
        sent, it would exceed the request size the broker reads and end the stream for every send."""
        error = errors.MessageTooBig(
            f"an entry of {len(entry.data)} bytes ({entry.num_messages} message(s) with their metadata) exceeds "
            f"the broker's maxMessageSize={self.max_message_size} (+{FRAME_PADDING} bytes of framing); lower "
            "batching_max_allowed_size_in_bytes, or send smaller messages or properties",
            size=len(entry.data), limit=self.max_message_size)
        self._pending_messages -= entry.num_messages
        self._changed.notify_all()
        self._timer.call_later(0, complete_callbacks, entry.callbacks, error)  # never under the lock

    def _pack(self, items: list[Any]) -> list[broker_pb2.ProduceRequest]:
        """``pack_requests`` over runs of at most ``max_message_size`` bytes, counting each entry's
        protobuf framing: the broker reads requests of its maxMessageSize plus a margin, no larger."""
        limit = self.max_message_size
        out: list[broker_pb2.ProduceRequest] = []
        run: list[Any] = []
        size = 0
        for item in items:
            if type(item) is tuple:
                n = len(item[3]) + SEND_ENTRY_FRAMING
                if run and size + n > limit:
                    out.extend(pack_requests(run))
                    run, size = [], 0
                size += n
            run.append(item)
        if run:
            out.extend(pack_requests(run))
        return out

    def flush_batch(self) -> None:
        with self._lock:
            if self._container.count and self._error is None and not self._closed:
                self._flush_locked()

    def flush(self, timeout_s: float | None = None) -> None:
        """Send the open batch and wait until every pending message has its receipt (or failed)."""
        self.flush_batch()
        with self._lock:
            if not self._changed.wait_for(lambda: not self._pending, timeout_s):
                raise errors.Timeout(f"flush on {self.topic}: {len(self._pending)} entries still "
                                     "wait for receipts")

    def _check_send_timeouts(self) -> None:
        expired: list[PendingEntry] = []
        with self._lock:
            self._timeout_check_scheduled = False
            horizon = time.monotonic() - self.conf.send_timeout_ms / 1000.0
            while self._pending and self._pending[0].sent_at <= horizon:
                entry = self._pending.popleft()
                self._pending_messages -= entry.num_messages
                expired.append(entry)
            if self._pending and not self._closed:
                self._timeout_check_scheduled = True
                delay = self._pending[0].sent_at - horizon
                self._timer.call_later(max(delay, 0.001), self._check_send_timeouts)
            if expired:
                self._changed.notify_all()
        for entry in expired:
            complete_callbacks(entry.callbacks, errors.Timeout(
                f"no receipt for sequence id {entry.sequence_id} on {self.topic} within "
                f"send_timeout_millis={self.conf.send_timeout_ms}"))

    # --- responses ------------------------------------------------------------------------------------
    def _on_response(self, response: broker_pb2.ProduceResponse) -> None:
        kind = response.WhichOneof("response")
        if kind == "receipts":
            for receipt in response.receipts.receipts:
                self._on_receipt(receipt)
        elif kind == "failure":
            self._on_failure(response.failure.sequence_id, error_from_proto(response.failure.error))
        elif kind == "opened":
            opened = response.opened
            self.producer_name = opened.producer_name
            if opened.max_message_size > 0:
                self.max_message_size = opened.max_message_size
            self.last_sequence_id = opened.last_sequence_id
            initial = self.conf.initial_sequence_id
            self._next_sequence_id = (initial + 1 if initial is not None
                                      else max(opened.last_sequence_id + 1, 0))
            if initial is not None:
                self.last_sequence_id = max(self.last_sequence_id, initial)
            self._opened.set()
        elif kind == "error":
            error = error_from_proto(response.error)
            if not self._opened.is_set():
                self._open_error = error
                self._opened.set()
            else:
                self._fail_all(error)

    def _on_receipt(self, receipt: broker_pb2.SendReceipt) -> None:
        with self._lock:
            entry = self._pop_pending(receipt.sequence_id)
            if entry is None:
                return
            if receipt.highest_sequence_id > self.last_sequence_id or self.last_sequence_id < 0:
                self.last_sequence_id = max(receipt.highest_sequence_id, entry.highest_sequence_id)
            self._changed.notify_all()
        callbacks, partition, topic = entry.callbacks, self.partition, self.topic
        if receipt.duplicate:
            complete_callbacks(callbacks, None, lambda i: MessageId(-1, -1, partition, -1, topic=topic))
            return
        ledger, first = receipt.ledger_id, receipt.entry_id
        if not entry.batched:
            complete_callbacks(callbacks, None,
                               lambda i: MessageId(ledger, first, partition, -1, 0, topic))
        elif type(callbacks[-1]) is SyncWaiter:  # a blocking send's message always ends its entry
            n = entry.num_messages
            complete_callbacks(callbacks, None,
                               lambda i: MessageId(ledger, first, partition, i, n, topic))
        else:  # send_async callbacks only: the hot path
            ok, make_id, n = Result.Ok, MessageId.from_fields, entry.num_messages
            for i, callback in enumerate(callbacks):
                if callback is not None:  # ids are made one at a time: a list of them would feed the GC
                    try:
                        callback(ok, make_id(ledger, first, partition, i, n, topic))
                    except Exception:  # a user callback must not break the producer
                        log.exception("send callback failed")

    def _pop_pending(self, sequence_id: int) -> PendingEntry | None:
        """The pending entry for a receipt (the head, unless earlier ones timed out or were lost)."""
        pending = self._pending
        if not pending or sequence_id < pending[0].sequence_id:
            return None  # an entry that already timed out
        for index, entry in enumerate(pending):
            if entry.sequence_id == sequence_id:
                del pending[index]
                self._pending_messages -= entry.num_messages
                return entry
        log.warning("receipt for unknown sequence id %d on %s", sequence_id, self.topic)
        return None

    def _on_failure(self, sequence_id: int, error: errors.PulsarLikeError) -> None:
        with self._lock:
            entry = self._pop_pending(sequence_id)
            self._changed.notify_all()
        if entry is not None:
            complete_callbacks(entry.callbacks, error)

    def _fail_all(self, error: errors.PulsarLikeError) -> None:
        with self._lock:
            if self._error is None:
                self._error = error
            self._fast_admit = 0
            entries = list(self._pending)
            self._pending.clear()
            self._pending_messages = 0
            callbacks = self._container.take_callbacks()
            self._changed.notify_all()
        for entry in entries:
            complete_callbacks(entry.callbacks, error)
        complete_callbacks(callbacks, error)

    def _on_end(self, error: errors.PulsarLikeError | None) -> None:
        if not self._opened.is_set():
            self._open_error = error or errors.ConnectError(f"the producer stream on {self.topic} ended")
            self._opened.set()
            return
        if error is None:
            error = errors.AlreadyClosed(f"the producer on {self.topic} is closed")
        self._fail_all(error)

    # --- lifecycle ------------------------------------------------------------------------------------
    def is_connected(self) -> bool:
        return not self._closed and self._error is None and self._stream.alive

    def close(self, timeout_s: float | None = None) -> None:
        """Flush what is queued, wait for receipts, then close the stream."""
        if self._closed:
            return
        try:
            if self._error is None:
                self.flush(timeout_s)
        except errors.PulsarLikeError:
            pass
        with self._lock:
            self._closed = True
            self._fast_admit = 0
            self._changed.notify_all()
        if self._stream.alive:
            self._stream.send(broker_pb2.ProduceRequest(close=broker_pb2.CloseProducer()))
        self._stream.close()
        self._fail_all(errors.AlreadyClosed(f"the producer on {self.topic} is closed"))
