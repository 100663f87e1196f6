"""Executor side: read one fixed offset range ``[start, end)`` of one topic partition as Arrow batches.

Procedure (the same range always yields the same rows, so a replayed micro-batch is identical):

1. Ask the broker for the partition's stored bounds (:class:`~connector.spark.range_calls.RangeCalls`, over the
   range's one transport: the one its entries come over). Messages of the range below the
   first stored offset were deleted by retention: with ``failOnDataLoss`` this raises
   :class:`DataLossError` naming topic, partition and offsets, and why (from the partition's stats:
   :func:`~connector.spark.planning.why_lost`); without, they are skipped (logged, counted in
   :attr:`RangeReader.lost`). A range ending past the stored end is lost the same way (the topic was deleted
   and re-created, or the offsets were never there). Every lost offset goes through one decision,
   :class:`~connector.spark.data_loss.LostOffsets`.
2. Open a non-durable (reader) subscription starting at the first offset to read, through the client's
   entry stream (:func:`~connector.client.entry_stream.open_entry_stream`: a window of flow permits topped up
   as entries are taken) over the transport option ``transport`` names (:func:`read_transport`: gRPC, or
   Pulsar's binary protocol, whose message ids on pulsarlike are the same dense offsets). When the broker
   restarts, the stream reconnects by itself and resumes from the offset reached -- or from the first chunk
   of a chunked message still incomplete; entries already taken that come again are skipped, so the rows
   stay exactly those of the range.
3. Keep each delivered message whose offset is in the range (an entry may start before it: a batch); stop at
   ``end``, or past it only to complete a chunked message that started inside the range (the client's
   :class:`~connector.client.entries.ChunkedRange` reassembles only those). Entries are decoded by the
   client's entry decoding (:mod:`connector.client.entries`), the same pipeline as its consumers'.
4. Every wait is bounded by ``pollTimeoutMs``: a broker that cannot be reached raises
   :class:`~connector.spark.source_admin.SourceConnectError`, a range that never arrives -- the broker away
   longer than that -- :class:`RangeReadTimeout`, instead of hanging the task.
5. A damaged stored range (the broker reports ``DataLost`` in place of the next message wanted: a frame that
   does not verify, a segment file missing) is lost like deleted messages: ``failOnDataLoss`` fails the task
   naming its offsets in the range; without, they are skipped and the stream is moved (a seek, on the same
   stream and transport) to the range's ``end_offset``. A gap in what the stream delivers is either
   retention deleting messages while the range was read, or a damaged range the broker passed over itself
   (``autoSkipNonRecoverableData=true``: logged and counted, never a failure); the stored bounds tell which.
6. An entry that cannot be decoded (bad CRC, a payload that does not decompress, a batch count its bytes
   cannot hold) fails the task with a :class:`~broker_core.errors.MessageDecodeError` naming topic,
   partition and offsets. It is never skipped, whatever ``failOnDataLoss`` says (that option is about
   messages the broker cannot give: deleted or damaged in its storage): the broker stored this entry intact,
   so rows would silently go missing from a range that replays identically.
7. An end-to-end encrypted entry the range takes is decrypted before step 6's decoding (options
   ``cryptoPrivateKey``/``cryptoKeyReaderClassName``); one that cannot be fails the task, is left out or is
   kept encrypted as ``cryptoFailureAction`` says (:mod:`connector.spark.encrypted_rows`).
"""
from __future__ import annotations

import functools
import logging
import queue
import time
import uuid
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Sequence

import pyarrow as pa
from pyspark.sql.datasource import InputPartition

from broker_core import errors

from connector.client import entries
from connector.client.admin import Admin
from connector.client.broker_kind import open_transport
from connector.client.transport import Transport
from connector.client.entry_stream import PartitionStream, PermitWindow, open_entry_stream
from connector.client.timer import TimerThread
from connector.spark.arrow_batches import BatchBuilder
from connector.client.lookup import Lookup
from connector.client.message_id import MessageId
from connector.spark.auth_options import ClientSecurity
from connector.spark.compacted import compacted_since, latest_per_key
from connector.spark.crypto_options import SourceCrypto
from connector.spark.data_loss import DataLossError, LostOffsets
from connector.spark.encrypted_rows import ContextColumn, EntryDecryption, append_context
from connector.spark.source_admin import SourceConnectError, close_later
from connector.spark.offsets import TopicPartition
from connector.spark.planning import why_lost
from connector.spark.range_calls import RangeCalls
from connector.spark.typed_values import BYTES, TopicSchema, TypedValues, fetch_topic_schema

log = logging.getLogger(__name__)

PERMITS_WINDOW = 100
"""Messages the broker may send ahead of what the reader has handled, at first; the first delivery shows how
large they are and the window grows to about :data:`READ_AHEAD_BYTES` of them, up to :data:`PERMITS_WINDOW_MAX`
(``pulsar.reader.receiverQueueSize`` fixes the window instead)."""
READ_AHEAD_BYTES = 32 << 20
"""About how many bytes of messages a range read lets the broker send ahead: enough that the broker keeps
sending while Spark takes a record batch from the task (bench/spark_throughput.py: 2M x 100 B, 468-540k rows/s
with a window of 20,000 messages, 567k with 100,000), bounded so that large messages do not fill the task's
memory."""
PERMITS_WINDOW_MAX = 200_000
ROWS_PER_BATCH = 16_384
"""Rows per yielded record batch (the last one of a range may be smaller)."""
FASTER_READ_ON_PULSARLIKE = "binary"
"""The transport option ``transport=auto`` reads pulsarlike's ranges over: the faster for a Spark read
(bench/spark_throughput.py, same broker, same run; figures in bench/README.md and docs/spark.md)."""


def read_transport(option: str) -> str:
    """The transport a range of pulsarlike is read over for option ``transport`` (``auto``, ``grpc``, ``binary``)."""
    return FASTER_READ_ON_PULSARLIKE if option == "auto" else option


class RangeReadTimeout(errors.Timeout):
    """No delivery within ``pollTimeoutMs`` while part of a range was still unread."""


@dataclass(frozen=True)
class RangePartition(InputPartition):
    """One Spark partition: messages ``start <= offset < end`` of one topic partition."""

    topic: str
    partition: int
    start: int
    end: int
    subscription: str = ""
    """The stream's durable subscription (empty for a batch read), to explain a data loss."""
    compacted: bool = False
    """Read the partition's compacted view (option ``readCompacted``; :mod:`connector.spark.compacted`)."""
    snapshot: bool = False
    """Reduce the rows to the latest value per key (a batch read with ``readCompacted``)."""
    compaction_stamp: int = 0
    """The partition's last compaction when the snapshot was planned (``lastCompactionSucceedTimestamp``)."""

    @property
    def topic_partition(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)


def _window_for(delivered: Sequence[Any]) -> int:
    """Flow permits that let about :data:`READ_AHEAD_BYTES` of messages like ``delivered``'s come ahead."""
    messages = sum(max(1, entry.num_messages) for entry in delivered)
    size = max(1, sum(len(entry.data) for entry in delivered) // max(1, messages))
    return max(1, min(PERMITS_WINDOW_MAX, READ_AHEAD_BYTES // size))


def split_range(tp: TopicPartition, start: int, end: int, max_messages: int, subscription: str = "",
                compacted: bool = False) -> list[RangePartition]:
    """``[start, end)`` as consecutive Spark partitions of at most ``max_messages`` offsets each (a compacted
    view's offsets have gaps: a range is the same offsets, whatever it holds)."""
    return [RangePartition(tp.topic, tp.partition, lo, min(lo + max_messages, end), subscription, compacted)
            for lo in range(start, end, max_messages)]


class RangeReader:
    """Reads one :class:`RangePartition` (see the module docstring); :meth:`batches` yields its rows."""

    def __init__(self, service_url: str, part: RangePartition, poll_timeout_ms: int,
                 fail_on_data_loss: bool, rows_per_batch: int = ROWS_PER_BATCH,
                 security: ClientSecurity | None = None, permits_window: int | None = None,
                 topic_schema: TopicSchema = BYTES, key_type: str = "binary", transport: str = "auto",
                 crypto: SourceCrypto | None = None) -> None:
        self.service_url = service_url
        self.crypto = crypto or SourceCrypto()
        """End-to-end decryption and ``cryptoFailureAction`` (:mod:`connector.spark.encrypted_rows`)."""
        self._decryption: EntryDecryption | None = None
        """Made at the first encrypted entry (the key reader is built on the executor)."""
        self._contexts = ContextColumn() if self.crypto.consume else None
        """``__encryptionContext`` of the rows being collected (``cryptoFailureAction=consume`` only)."""
        self.transport = read_transport(transport)
        """``grpc`` or ``binary``: what the range's bounds, schema and entries come over."""
        self.key_type = key_type
        """Option ``keyType``: the type of ``__key`` (:class:`~connector.spark.arrow_batches.BatchBuilder`)."""
        self.topic_schema = topic_schema
        """The topics' schema (typed columns when it has some: :mod:`connector.spark.typed_values`)."""
        self._built_versions: list[int] = []
        self.permits_window = permits_window or PERMITS_WINDOW
        """Flow permits of the range's stream (option ``pulsar.reader.receiverQueueSize``)."""
        self._window_target: int | None = permits_window
        """What each stream generation's window grows to (None until the first delivery shows the messages'
        size; the option's value when it is set, which is also where the window starts)."""
        self._grown: Any = None
        """The window last grown (a reconnection starts a new one, at the first size)."""
        self.security = security or ClientSecurity()
        self.part = part
        self.tp = part.topic_partition
        self.poll_timeout_s = poll_timeout_ms / 1000.0
        self.poll_timeout_ms = poll_timeout_ms
        self.fail_on_data_loss = fail_on_data_loss
        self.rows_per_batch = rows_per_batch
        self._losses = LostOffsets(self.tp, fail_on_data_loss)
        self._calls: RangeCalls | None = None
        self._compacted = part.compacted
        """Reading the compacted view (False for a snapshot whose view changed since planning: raw)."""

    @property
    def lost(self) -> int:
        """Messages of the range found lost (deleted, damaged) and skipped."""
        return self._losses.count

    def batches(self) -> Iterator[pa.RecordBatch]:
        part = self.part
        # one transport for the bounds, the schema and the stream (the stats, asked only to explain a loss, come
        # over it too when it is gRPC)
        transport = open_transport(self.transport, self.service_url, self.poll_timeout_s, self.poll_timeout_s,
                                   self.security.connection_security(self.service_url))
        self._calls = calls = RangeCalls(transport, self._admin_of(transport), owns_admin=self.transport != "grpc")
        try:
            start, end = self._plan(calls)
            if start < end:
                rows = self._read(transport, start, end)
                typed = TypedValues(self.topic_schema, functools.partial(
                    fetch_topic_schema, calls.lookup, self.tp.topic)) if self.topic_schema.typed else None
                if part.snapshot:
                    versions: dict[int, int] = {}
                    rows = latest_per_key(self._noting_versions(rows, versions, typed), self.rows_per_batch)
                    if typed is not None:
                        rows = (typed.convert(b, [versions.get(o, -1) for o in b.column("__offset").to_pylist()])
                                for b in rows)
                elif typed is not None:
                    rows = (typed.convert(batch, self._built_versions) for batch in rows)
                yield from rows
        except errors.ConnectError as exc:
            # Not a timeout: the broker refused or dropped the connection (or never answered the connect).
            raise SourceConnectError(
                f"reading offsets [{part.start}, {part.end}) of {self.tp}: {exc.message} (option service.url="
                f"{self.service_url}): start the broker or fix service.url", target=self.service_url) from None
        finally:
            self._calls = None
            calls.close()
            if self.transport == "grpc":
                close_later(transport)  # a gRPC channel's close waits ~0.2 s for its threads: off the task's path
            else:
                transport.close()

    def _admin_of(self, transport: Transport) -> Callable[[], Admin]:
        """What makes the admin a range's stats come from: one on ``transport`` when it is gRPC, else one of its
        own over gRPC (the binary protocol has no stats call)."""
        if self.transport == "grpc":
            return lambda: Admin.on_connection(transport, retry_while_unavailable=True)  # type: ignore[arg-type]
        security = self.security.connection_security(self.service_url)
        return lambda: Admin.on_connection(open_transport("grpc", self.service_url, self.poll_timeout_s,  # type: ignore[arg-type]
                                                          self.poll_timeout_s, security), retry_while_unavailable=True)

    def _noting_versions(self, rows: Iterator[pa.RecordBatch], versions: dict[int, int],
                         typed: TypedValues | None) -> Iterator[pa.RecordBatch]:
        """``rows``, noting each row's writer schema version by offset (a snapshot reorders rows)."""
        for batch in rows:
            if typed is not None and any(v >= 0 for v in self._built_versions):
                versions.update(zip(batch.column("__offset").to_pylist(), self._built_versions))
            yield batch

    # --- 1. bounds and data loss ----------------------------------------------------------------------
    def _plan(self, calls: RangeCalls) -> tuple[int, int]:
        part = self.part
        try:
            first_stored, stored_end = calls.bounds(self.tp.internal_name)
        except errors.TopicNotFound:
            first_stored = stored_end = 0
            self._lose(part.start, part.end, "the topic partition does not exist any more")
            return part.end, part.end
        if stored_end < part.end:
            reason = (f"the partition ends at offset {stored_end}, before the range's end (was the topic "
                      "deleted and re-created?)")
            self._lose(max(part.start, stored_end), part.end, reason)
        start = part.start
        if part.snapshot and compacted_since(part.compaction_stamp, self._stats()):
            # The view may now lack keys updated after the snapshot's end: the raw messages give the same
            # snapshot as planned, or the read fails (never a different snapshot).
            log.info("event=snapshot_reads_raw topic=%s reason=compacted_since_planning", self.tp)
            self._compacted = False
            if first_stored > start:
                raise DataLossError(
                    f"{self.tp.topic} partition {self.tp.partition} was compacted again after this snapshot "
                    f"(readCompacted) was planned, and retention deleted its raw messages {start}.."
                    f"{first_stored - 1} that would give the planned snapshot; run the read again",
                    topic=self.tp.topic, partition=self.tp.partition, start=start, end=first_stored)
        if self._compacted:
            # Below the raw log's first stored offset the compacted view holds the kept messages.
            return start, min(part.end, stored_end)
        if first_stored > start:
            self._lose(start, min(first_stored, part.end), f"retention deleted them (the first stored offset is "
                                                           f"{first_stored})", deleted=True)
            start = first_stored
        return start, min(part.end, stored_end)

    def _lose(self, start: int, end: int, reason: str, deleted: bool = False) -> None:
        """``deleted``: the broker removed them (retention, TTL); else the partition itself changed."""
        self._losses.lose(start, end, reason,
                          self._why_lost if deleted else lambda: "set option failOnDataLoss=false to skip them")

    def _passed_over(self, start: int, end: int) -> None:
        """The stream skipped ``start..end-1``: below the first stored offset retention deleted them while the
        range was read; from it on the broker passed over a damaged range (autoSkipNonRecoverableData)."""
        first_stored = end
        if self._calls is not None:
            try:
                first_stored = self._calls.bounds(self.tp.internal_name)[0]
            except errors.PulsarLikeError:
                pass  # taken for deleted: the stricter answer
        deleted_end = min(end, max(start, first_stored))
        self._lose(start, deleted_end, "retention deleted them while the range was read", deleted=True)
        self._losses.passed_over(deleted_end, end)

    def _why_lost(self) -> str:
        stats = None
        if self._calls is not None:
            try:
                stats = self._calls.stats(self.tp.internal_name)
            except errors.PulsarLikeError:
                pass  # the explanation is a courtesy; the loss is reported either way
        return why_lost(stats, self.part.subscription or None)

    def _stats(self) -> dict[str, Any] | None:
        assert self._calls is not None
        return self._calls.stats(self.tp.internal_name)

    # --- 2-4. the reader subscription -----------------------------------------------------------------
    def _read(self, transport: Transport, start: int, end: int) -> Iterator[pa.RecordBatch]:
        tp = self.tp
        deliveries = _Deliveries()
        # Only messages whose first chunk is in the range are reassembled (the range owns them); none expires.
        chunks = entries.ChunkedRange(label=f"{tp}: ")
        builder = BatchBuilder(tp.topic, tp.partition, self.key_type)
        self._position = start  # the next offset wanted
        timer = TimerThread(name="pulsarlike-spark-range-timer")
        stream = open_entry_stream(transport, timer, tp.internal_name, tp.partition, start,
                                   min(self.permits_window, end - start + 1), deliveries,
                                   resume=lambda: _resume_offset(self._position, chunks),
                                   subscription=f"spark-range-{uuid.uuid4().hex[:12]}",
                                   read_compacted=self._compacted)
        view_end = _ViewEnd(Lookup(transport), tp.internal_name, end) if self._compacted else None
        try:
            stream.open()
            while _unread(self._position, end, view_end, chunks):
                try:
                    delivered, window = self._next(deliveries, end, view_end)
                except _ViewDone:
                    break
                except RangeReadTimeout:
                    if self._position < end:
                        raise
                    _drop_incomplete(chunks)  # the rest of a chunked message never came
                    break
                except _Unreadable as met:  # in the next wanted message's place: everything before it was taken
                    self._position = self._losses.damaged(met.lost, self._position, end)
                    if _unread(self._position, end, view_end, chunks):
                        self._go_on_at(stream, self._position)
                    continue
                if window is not self._grown:  # the first delivery of this stream generation
                    if self._window_target is None:
                        self._window_target = _window_for(delivered)
                    window.grow(min(end - self._position + 1, self._window_target))
                    self._grown = window
                taken = 0
                for entry in delivered:
                    taken += max(1, entry.num_messages)
                    self._position = self._take(entry, self._position, end, builder, chunks)
                    if builder.rows >= self.rows_per_batch:
                        yield self._built(builder)
                window.took(taken)
            if builder.rows:
                yield self._built(builder)
        finally:
            stream.close()
            timer.stop()

    def _go_on_at(self, stream: PartitionStream, offset: int) -> None:
        """Move the stream past a damaged range: it waits there until a seek moves it (chunked messages still
        incomplete go on with the chunks after it; a reconnection resumes before it and meets it again)."""
        stream.start_seek(MessageId(self.tp.partition, 0, offset))
        stream.finish_seek(self.poll_timeout_s)

    def _built(self, builder: BatchBuilder) -> pa.RecordBatch:
        batch = builder.build()
        if self._contexts is not None:
            batch = append_context(batch, self._contexts)
        self._built_versions = builder.built_versions  # the rows' writer schema versions, for typed columns
        return batch

    def _next(self, deliveries: "_Deliveries", end: int,
              view_end: "_ViewEnd | None" = None) -> tuple[Sequence[Any], PermitWindow]:
        try:
            if view_end is None:
                item = deliveries.get(self.poll_timeout_s)
            else:
                item = view_end.wait(deliveries, self.poll_timeout_s, lambda: self._position)
        except queue.Empty:
            raise RangeReadTimeout(
                f"no message from {self.tp} within pollTimeoutMs={self.poll_timeout_ms} while reading "
                f"offsets [{self.part.start}, {end}) (next wanted: {self._position}); is the broker up? "
                "Raise pollTimeoutMs for a slow broker, or for one that restarts") from None
        if isinstance(item, Exception):  # the stream failed, or met a damaged range
            raise item
        return item

    def _take(self, entry: Any, position: int, end: int, builder: BatchBuilder,
              chunks: entries.ChunkedRange) -> int:
        """Keep what ``entry`` holds of the range; the next offset wanted."""
        first = entry.entry_id
        count = max(1, entry.num_messages)
        if first + count <= position and not len(chunks):
            return position  # wholly before the wanted offset (a batch we started inside, re-sent)
        if first > position and position < end and not self._compacted:  # the compacted view has gaps
            self._passed_over(position, min(first, end))
        try:
            metadata, payload, _ = entries.open_entry(entry.data)
            if metadata.encryption_keys and _wanted(metadata, first, count, position, end, chunks):
                plain = self._decrypting().open(metadata, payload, first, count)  # FAIL raises
                if plain is None:
                    return self._undecrypted(entry, metadata, payload, position, builder)
                payload = plain
            if entries.is_chunk(metadata):
                self._add_chunk(metadata, payload, entry, position, end, builder, chunks)
                return max(position, first + 1)
            if first + count <= position:
                return position  # taken before a reconnection, sent again after it
            if first >= end:
                return first + count  # past the end, read only to complete chunked messages
            decoded = entries.decode(metadata, payload, entry.ledger_id, first)
            if len(decoded.payloads) != count:  # rows and offsets would no longer line up
                raise errors.InvalidMessage(f"it holds {len(decoded.payloads)} messages but the broker stored it "
                                            f"as {count}")
        except (errors.InvalidMessage, errors.ChecksumError) as exc:
            raise self._undecodable(first, count, exc) from None
        lo = max(position, first) - first
        hi = min(end, first + count) - first
        self._note(builder, metadata)
        builder.add(decoded, lo, hi)
        return first + count

    def _add_chunk(self, metadata: Any, payload: memoryview, entry: Any, position: int, end: int,
                   builder: BatchBuilder, chunks: entries.ChunkedRange) -> None:
        """Reassemble the chunked messages whose first chunk is in the range (each taken once)."""
        uuid_, offset = metadata.uuid, entry.entry_id
        if metadata.chunk_id == 0:
            if offset >= end or (offset < position and not chunks.is_pending(uuid_)):
                return  # past the range, or a message completed before a reconnection
        elif not chunks.is_pending(uuid_):
            return  # a continuation of a message that started before the range
        done = chunks.add(metadata, payload, offset)
        if done is None:
            return
        where = f"the chunked message {uuid_} (from offset {done.offsets[0]}) it completes"
        if done.error is not None:
            raise errors.InvalidMessage(f"{where}: {done.error}")
        try:
            decoded = entries.decode(metadata, done.payload, entry.ledger_id, offset)
        except errors.InvalidMessage as exc:
            raise errors.InvalidMessage(f"{where}: {exc.message}") from None
        # __offset is the first chunk's, __messageId the last chunk's (what pulsar-client gives the message)
        self._note(builder, metadata)
        builder.add(decoded, 0, 1, offset=done.offsets[0])

    # --- encrypted entries (connector.spark.encrypted_rows) ----------------------------------------------
    def _decrypting(self) -> EntryDecryption:
        if self._decryption is None:
            self._decryption = EntryDecryption(self.crypto, self.tp.topic, self.tp.partition)
        return self._decryption

    def _undecrypted(self, entry: Any, metadata: Any, payload: memoryview, position: int,
                     builder: BatchBuilder) -> int:
        """An entry that could not be decrypted, with ``cryptoFailureAction`` discard or consume (one row
        standing for the entry, at its first offset, in the range that holds that offset)."""
        first, count = entry.entry_id, max(1, entry.num_messages)
        decryption = self._decrypting()
        if decryption.action == "discard":
            decryption.discard(max(first, position), first + count - max(first, position))
        elif first >= position:
            if self._contexts is not None:
                self._contexts.note(builder.rows, EntryDecryption.context(metadata, True))
            builder.add(entries.DecodedEntry(metadata, (None,), [bytes(payload)], entry.ledger_id, first, False),
                        0, 1)
        return max(position, first + count)

    def _note(self, builder: BatchBuilder, metadata: Any) -> None:
        """The ``__encryptionContext`` of the rows about to be added from an entry (null: not encrypted)."""
        if self._contexts is not None:
            self._contexts.note(builder.rows, EntryDecryption.context(metadata, False)
                                if metadata.encryption_keys else None)

    def _undecodable(self, first: int, count: int, exc: errors.InvalidMessage) -> errors.MessageDecodeError:
        tp = self.tp
        where = f"offset {first}" if count == 1 else f"offsets {first}..{first + count - 1}"
        return errors.MessageDecodeError(
            f"cannot decode the entry at {where} of {tp.topic} partition {tp.partition}: {exc.message}. The "
            "query stops rather than skip its messages (failOnDataLoss covers only messages retention "
            "deleted); look at it with `pulsarlike admin topics peek-messages`, and to go past it start a "
            f"query from an offset after {first + count - 1}",
            topic=tp.topic, partition=tp.partition, offsets=range(first, first + count), reason=exc.message)


class _Unreadable(Exception):
    """The stream met a damaged stored range (``lost``: the broker's ``DataLost``) at the next message wanted;
    it stays open, waiting there."""

    def __init__(self, lost: errors.DataLost) -> None:
        super().__init__(lost.message)
        self.lost = lost


class _Deliveries:
    """The stream's events as the reading task sees them: ``(entries, permit window)`` in order, a damaged
    range met (:class:`_Unreadable`), or the error that ended the stream for good. A lost stream is the
    stream's to reconnect (nothing to see here)."""

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()

    def get(self, timeout_s: float) -> Any:
        return self._queue.get(timeout=timeout_s)

    def on_entries(self, delivered: Sequence[Any], window: PermitWindow) -> None:
        self._queue.put((delivered, window))

    def on_disconnected(self, cause: errors.PulsarLikeError) -> None:
        log.info("event=range_read_reconnecting cause=%r", cause)

    def on_reconnected(self) -> None:
        pass

    def on_failed(self, error: errors.PulsarLikeError) -> None:
        self._queue.put(error)

    def on_unreadable(self, error: errors.PulsarLikeError, window: PermitWindow) -> None:
        self._queue.put(_Unreadable(error) if isinstance(error, errors.DataLost) else error)

    def on_end_of_topic(self) -> None:
        pass


class _ViewDone(Exception):
    """The compacted view holds nothing more of the range."""


class _ViewEnd:
    """Where a compacted read of ``[start, end)`` ends: past the view's last message, when that comes before
    ``end`` (the messages after it were compacted away: tombstones). Asked again whenever the stream is quiet,
    since a compaction run may remove the message the read waits for."""

    QUIET_S = 0.5

    def __init__(self, lookup: Lookup, topic: str, end: int) -> None:
        self._lookup = lookup
        self._topic = topic
        self._range_end = end
        self.end = self._ask()

    def _ask(self) -> int:
        last = self._lookup.last_message(self._topic, read_compacted=True).last_offset
        return min(self._range_end, last + 1)

    def wait(self, deliveries: "_Deliveries", timeout_s: float, position: Callable[[], int]) -> Any:
        """The next delivery; ``_ViewDone`` once the view has nothing at or after ``position()`` in the range,
        ``queue.Empty`` after ``timeout_s`` without either."""
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                return deliveries.get(min(self.QUIET_S, max(0.0, deadline - time.monotonic())))
            except queue.Empty:
                self.end = self._ask()
                if position() >= self.end:
                    raise _ViewDone() from None
                if time.monotonic() >= deadline:
                    raise


def _wanted(metadata: Any, first: int, count: int, position: int, end: int, chunks: entries.ChunkedRange) -> bool:
    """Whether the range takes anything of an entry (what is decrypted: a message outside the range that
    cannot be decrypted is none of this range's business)."""
    if entries.is_chunk(metadata):
        if metadata.chunk_id == 0:
            return first < end and (first >= position or chunks.is_pending(metadata.uuid))
        return chunks.is_pending(metadata.uuid)
    return position < first + count and first < end


def _unread(position: int, end: int, view_end: _ViewEnd | None, chunks: entries.ChunkedRange) -> bool:
    """Whether a range read at ``position`` goes on: offsets of the range (of the compacted view's part of it)
    are still unread, or chunked messages that started in it are incomplete."""
    return position < (end if view_end is None else view_end.end) or len(chunks) > 0


def _resume_offset(position: int, chunks: entries.ChunkedRange) -> int:
    """Where a reconnected read starts: the next offset wanted, or the first chunk of a chunked message still
    incomplete (its chunks come again)."""
    pending = chunks.first_pending_offset()
    return position if pending is None else min(position, pending)


def _drop_incomplete(chunks: entries.ChunkedRange) -> None:
    offsets = chunks.clear()
    if offsets:
        log.warning("event=incomplete_chunked_message_skipped chunk_offsets=%s", offsets)
