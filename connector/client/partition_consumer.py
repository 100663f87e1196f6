"""The consumer of one (partition) topic: its Consume stream, flow permits, acks, seeks.

Deliveries are parsed on the stream's reader thread (CRC check, decompression, batch split, messages
whose ``ack_set`` bit is 0 skipped) into :class:`Message` objects appended to the owning consumer's
queue. Permits: ``receiver_queue_size`` at start; each time half of that has been taken by the
application (or skipped), the same number is sent back, as Pulsar's clients do.

Chunks (unbatched entries with ``num_chunks_from_msg > 1``: one field test) are reassembled by the
:class:`~connector.client.chunk_assembly.ChunkAssembly` half of the class. An undecodable entry becomes a :class:`DecodeFailure` in its place in the queue (see the consumer).

Batch acks. With ``batch_index_ack_enabled=False`` (the default, as in Pulsar) the acks of a batch's messages
are held (:meth:`PartitionConsumer.ack_batch_member`, a bit mask per entry) until every message of the batch
is acknowledged, then the entry is acknowledged whole; a partly acknowledged batch is therefore delivered
whole again after a redelivery, as the seed says. With ``True`` each message's ack is sent at once, and a
broker with ``acknowledgmentAtBatchIndexLevelEnabled`` redelivers only the others. A delivery that carries an
ack set (messages acknowledged before are left out) marks those as acknowledged in the mask.

Dead letters: with a dead letter policy, :meth:`PartitionConsumer._parse_entry` is replaced on the instance
by a variant that hands the messages of entries redelivered ``max_redeliver_count`` times or more to the
consumer (:mod:`connector.client.dead_letter`); without one, parsing pays nothing for it.
"""
from __future__ import annotations

import itertools
import logging
import threading
from typing import Any, Iterable, Sequence

from broker_core import errors
from broker_core.protocol import broker_pb2, codec
from broker_core.protocol.compression import decompress_payload
from broker_core.protocol.status import error_from_proto
from broker_core.types import MessageId

from connector.client.chunk_assembly import ChunkAssembly
from connector.client.connection import BidiStream, Connection
from connector.client.message import (
    DecodeFailure, EntryInfo, Message, decoded_payload, unexpected_payload_size)
from connector.client.timer import TimerThread

log = logging.getLogger(__name__)

ACK_GROUP_S = 0.01
"""Individual acks are grouped for this long (or up to ACK_GROUP_MAX) into one Ack request."""
ACK_GROUP_MAX = 1000
FLOW_PERMITS_MAX = 0xFFFF_FFFF
"""The most permits one Flow request carries (its field is a uint32)."""
BATCH_MASKS_MAX = 10_000
"""Partly acknowledged batches whose held acks are remembered; past it the oldest is forgotten (its batch
comes back whole after a redelivery, as if none of its messages were acknowledged)."""


class PartitionConsumer(ChunkAssembly):
    _batch_masks: dict[int, int] | None = None
    """Held batch acks (``batch_index_ack_enabled=False``): entry offset -> bits of its acked messages."""

    def __init__(self, owner: Any, connection: Connection, timer: TimerThread,
                 subscribe: broker_pb2.Subscribe, receiver_queue_size: int) -> None:
        self.owner = owner
        self.topic = subscribe.topic
        self.partition = subscribe.partition_index
        self.consumer_name = subscribe.consumer_name
        self._timer = timer
        self._queue_size = max(1, receiver_queue_size)
        self._refill_every = max(1, self._queue_size // 2)
        self._lock = threading.Lock()
        self._reset_permits()
        self._acks: list[int] = []
        self._seek_id = 0
        self._seeking = 0
        self._seek_done = threading.Event()
        self._seek_error: errors.PulsarLikeError | None = None
        self._unsubscribed = threading.Event()
        self._unsubscribe_error: errors.PulsarLikeError | None = None
        self.max_received_offset = -1
        self.reached_end_of_topic = False
        """The broker said the topic is terminated and everything was delivered (a seek clears it)."""
        self.closed = False
        self.error: errors.PulsarLikeError | None = None
        self.active = True
        self._subscribed = threading.Event()
        self._open_error: errors.PulsarLikeError | None = None
        if getattr(owner, "_dead_letters", None) is not None:
            self._parse_entry = self._parse_entry_with_dead_letters  # type: ignore[method-assign]
        # The first permits travel with the subscribe: a message sent right after subscribe() returns is
        # covered (a non-persistent topic drops what no permit covers).
        request = broker_pb2.ConsumeRequest(subscribe=subscribe)
        request.subscribe.initial_permits = self._queue_size
        self._stream = BidiStream(connection, "Consume", request,
                                  self._on_response, self._on_end, name=f"consumer-{self.topic}")
        if not self._subscribed.wait(connection.operation_timeout_s):
            self._stream.close(wait_s=0.1)
            raise errors.Timeout(f"the broker did not confirm the subscription on {self.topic} "
                                 f"within {connection.operation_timeout_s:g}s")
        if self._open_error is not None:
            self._stream.close(wait_s=0.5)
            raise self._open_error

    @property
    def real(self) -> "PartitionConsumer":
        """Itself (a :class:`~connector.client.message.Discarded` stand-in's ``real`` is this)."""
        return self

    # --- flow control ---------------------------------------------------------------------------------
    def _send_flow(self, permits: int) -> None:
        while permits > 0 and not self.closed:  # a poison entry's skipped count may exceed Flow's uint32
            step = min(permits, FLOW_PERMITS_MAX)
            self._stream.send(broker_pb2.ConsumeRequest(flow=broker_pb2.Flow(permits=step)))
            permits -= step

    def on_taken(self) -> None:
        """The application took one of this consumer's messages (called by receive, lock-free:
        ``next()`` on an itertools.count is atomic)."""
        if next(self._taken) >= self._next_refill_raw:
            self._refill()

    def _refill(self) -> None:
        # The counter's value is taken + probes: each probe here is one next() nobody took.
        with self._lock:
            self._probes += 1
            taken = next(self._taken) - self._probes
            if taken >= self._next_refill:
                permits, self._taken_base = taken - self._taken_base, taken
                self._next_refill = taken + self._refill_every
            else:
                permits = 0
            self._next_refill_raw = self._next_refill + self._probes
        self._send_flow(permits)

    def _reset_permits(self) -> None:
        """After a seek: the broker starts again from zero permits."""
        with self._lock:
            self._taken = itertools.count(1)
            self._probes = 0
            self._taken_base = 0
            self._next_refill = self._refill_every
            self._next_refill_raw = self._refill_every
            self._skipped = 0

    # --- deliveries -----------------------------------------------------------------------------------
    def _on_response(self, response: broker_pb2.ConsumeResponse) -> None:
        kind = response.WhichOneof("response")
        if kind == "deliveries":
            if self._seeking:
                return
            messages: list[Message | DecodeFailure] = []
            for entry in response.deliveries.entries:
                try:
                    self._parse_entry(entry, messages)
                except errors.PulsarLikeError as exc:
                    messages.append(self._failure(entry, exc))
            if messages:
                self.owner._deliver(messages)  # type: ignore[arg-type]
            if self._skipped >= self._refill_every or (self._skipped and not messages):
                skipped, self._skipped = self._skipped, 0
                self._send_flow(skipped)
        elif kind == "seek_done":
            done = response.seek_done
            if done.seek_id == self._seeking:
                self._seek_error = error_from_proto(done.error) if done.error.code else None
                self._seeking = 0
                self._seek_done.set()
        elif kind == "subscribed":
            self.consumer_name = response.subscribed.consumer_name or self.consumer_name
            self._subscribed.set()
        elif kind == "active_change":
            self.active = response.active_change.is_active
        elif kind == "end_of_topic":
            self.reached_end_of_topic = True
            self.owner._wake()
        elif kind == "unsubscribed":
            done = response.unsubscribed
            self._unsubscribe_error = error_from_proto(done.error) if done.error.code else None
            self._unsubscribed.set()
        elif kind == "warning":
            log.warning("broker rejected a request on %s: %s", self.topic,
                        error_from_proto(response.warning))
        elif kind == "error":
            error = error_from_proto(response.error)
            if not self._subscribed.is_set():
                self._open_error = error
                self._subscribed.set()
            else:
                self.error = error

    def _parse_entry(self, entry: broker_pb2.DeliveredEntry, out: list[Any]) -> None:
        data = entry.data
        _, _, start = codec.split_broker_entry(data)
        metadata, payload = codec.decode_entry(memoryview(data)[start:] if start else data)
        compression = metadata.compression
        if not metadata.HasField("num_messages_in_batch"):  # one message, or one chunk of a message
            if metadata.num_chunks_from_msg > 1:
                self._add_chunk(entry, metadata, payload, out)
                return
            if compression:  # decoded_payload(), inlined: unbatched entries are one message each
                payload = decompress_payload(compression, payload, metadata.uncompressed_size)
            elif metadata.uncompressed_size and metadata.uncompressed_size != len(payload):
                raise unexpected_payload_size(metadata, len(payload))
            entry_id = entry.entry_id
            if entry_id > self.max_received_offset:
                self.max_received_offset = entry_id
            out.append(Message(bytes(payload), None, EntryInfo(
                metadata, self.topic, entry.ledger_id, entry_id, self.partition, entry.redelivery_count,
                1, False, self), -1))
            return
        payload = decoded_payload(metadata, payload)
        num = metadata.num_messages_in_batch
        info = EntryInfo(metadata, self.topic, entry.ledger_id, entry.entry_id, self.partition,
                         entry.redelivery_count, num, True, self)
        last = entry.entry_id + num - 1
        if last > self.max_received_offset:
            self.max_received_offset = last
        metas, payloads = codec.split_batch(payload, num)
        ack_set = entry.ack_set
        if not ack_set:
            out.extend(map(Message, payloads, metas, itertools.repeat(info, num), range(num)))
            return
        words = list(ack_set)
        kept = [i for i in range(num) if i >> 6 < len(words) and (words[i >> 6] >> (i & 63)) & 1]
        out.extend([Message(payloads[i], metas[i], info, i) for i in kept])
        self._skipped += num - len(kept)
        if getattr(self.owner, "_hold_batch_acks", False):  # the messages left out count as acked
            acked = ((1 << num) - 1) & ~sum(1 << i for i in kept)
            with self._lock:
                masks = self._batch_masks
                if masks is None:
                    masks = self._batch_masks = {}
                masks[entry.entry_id] = masks.get(entry.entry_id, 0) | acked

    def _parse_entry_with_dead_letters(self, entry: broker_pb2.DeliveredEntry, out: list[Any]) -> None:
        """:meth:`_parse_entry`, then the entry's messages go to the consumer's dead letter bookkeeping when it
        was redelivered ``max_redeliver_count`` times or more (beyond it, they are taken out of ``out``)."""
        first = len(out)
        PartitionConsumer._parse_entry(self, entry, out)
        if entry.redelivery_count >= self.owner._dead_letters.max_redeliver_count and len(out) > first:
            taken = self.owner._dead_letters.received(self, out[first:], entry.redelivery_count)
            if taken:
                del out[first:]
                self._skipped += taken

    def drop_buffered(self, count: int) -> None:
        """``count`` of this consumer's buffered messages were discarded: return their permits (now: the
        broker may have none left to deliver anything that would carry them back)."""
        self._send_flow(count)

    def _failure(self, entry: broker_pb2.DeliveredEntry, exc: errors.PulsarLikeError,
                 offsets: Sequence[int] | None = None) -> DecodeFailure:
        """What stands in the queue for an undecodable entry, or chunked message when ``offsets`` (its
        chunks') are given; it is taken like one message, so the entry's other permits return now."""
        if offsets is None:  # a range: the count comes from an entry that could not be decoded
            num = max(1, entry.num_messages)
            offsets = range(entry.entry_id, entry.entry_id + num)
            self._skipped += num - 1
        if offsets[-1] > self.max_received_offset:
            self.max_received_offset = offsets[-1]
        failure = DecodeFailure.of(self, entry.ledger_id, entry.entry_id, offsets, exc.message)
        log.warning("%s", failure.error.message)
        return failure

    # --- acks -----------------------------------------------------------------------------------------
    def check_open(self) -> None:
        if self.closed:
            raise errors.AlreadyClosed(f"the consumer on {self.topic} is closed")
        if self.error is not None:
            raise self.error

    def ack(self, offset: int) -> None:
        chunked = self._chunk_acks
        if chunked:  # a chunked message's id (its last chunk's offset) stands for all its chunks
            chunks = chunked.pop(offset, None)
            if chunks is not None:
                self.ack_offsets(chunks)
                return
        with self._lock:
            acks = self._acks
            acks.append(offset)
            first = len(acks) == 1
            full = len(acks) >= ACK_GROUP_MAX
        if full:
            self.flush_acks()
        elif first:
            self._timer.call_later(ACK_GROUP_S, self.flush_acks)

    def ack_offsets(self, offsets: Iterable[int]) -> None:
        """Acknowledge these offsets individually (grouped with the other acks; a long ``range`` -- an
        undecodable entry's -- goes out at once as one range, never as a list of its offsets)."""
        if isinstance(offsets, range) and len(offsets) > ACK_GROUP_MAX and offsets.step == 1:
            self.flush_acks()
            if not self.closed:
                self._stream.send(broker_pb2.ConsumeRequest(ack=broker_pb2.Ack(
                    ack_type=broker_pb2.INDIVIDUAL,
                    ranges=[broker_pb2.OffsetRange(start=offsets.start, end=offsets.stop)])))
            return
        with self._lock:
            acks = self._acks
            first = not acks
            acks.extend(offsets)
            full = len(acks) >= ACK_GROUP_MAX
        if full:
            self.flush_acks()
        elif first:
            self._timer.call_later(ACK_GROUP_S, self.flush_acks)

    def ack_batch_member(self, entry_id: int, index: int, size: int) -> None:
        """Hold the ack of message ``index`` of the batch at ``entry_id`` (of ``size`` messages) until all of
        them are acknowledged, then acknowledge the batch."""
        with self._lock:
            masks = self._batch_masks
            if masks is None:
                masks = self._batch_masks = {}
            mask = masks.get(entry_id, 0) | (1 << index)
            if mask != (1 << size) - 1:
                masks[entry_id] = mask
                if len(masks) > BATCH_MASKS_MAX:
                    masks.pop(next(iter(masks)))
                return
            masks.pop(entry_id, None)
        self.ack_offsets(range(entry_id, entry_id + size))

    def forget_batch_acks(self, through: int | None = None) -> None:
        """Drop held batch acks (of entries at or before ``through``; all when None)."""
        with self._lock:
            masks = self._batch_masks
            if not masks:
                return
            if through is None:
                masks.clear()
            else:
                for entry_id in [e for e in masks if e <= through]:
                    del masks[entry_id]

    def flush_acks(self) -> None:
        with self._lock:
            acks, self._acks = self._acks, []
        if not acks or self.closed:
            return
        acks.sort()
        ranges: list[broker_pb2.OffsetRange] = []
        start = end = acks[0]
        for offset in acks[1:]:
            if offset <= end + 1:
                end = max(end, offset)
            else:
                ranges.append(broker_pb2.OffsetRange(start=start, end=end + 1))
                start = end = offset
        ranges.append(broker_pb2.OffsetRange(start=start, end=end + 1))
        self._stream.send(broker_pb2.ConsumeRequest(ack=broker_pb2.Ack(
            ack_type=broker_pb2.INDIVIDUAL, ranges=ranges)))

    def ack_cumulative(self, offset: int) -> None:
        if offset > self.max_received_offset:
            raise errors.InvalidMessage(
                f"cannot acknowledge cumulatively up to offset {offset} on {self.topic}: this consumer "
                f"never received it (highest received: {self.max_received_offset})", offset=offset)
        self.flush_acks()
        self._stream.send(broker_pb2.ConsumeRequest(ack=broker_pb2.Ack(
            ack_type=broker_pb2.CUMULATIVE, offset=offset)))
        chunked = self._chunk_acks
        if chunked:
            for last in [last for last in list(chunked) if last <= offset]:
                chunked.pop(last, None)
        if self._batch_masks:
            self.forget_batch_acks(offset)

    def redeliver(self, entry_ids: Iterable[int] | None = None) -> None:
        """Ask the broker for these entries again (negative acks; the ordered subscription types rewind
        everything anyway), or for everything unacknowledged when None."""
        self.flush_acks()
        ranges = [] if entry_ids is None else self.ranges_of(entry_ids)
        self._stream.send(broker_pb2.ConsumeRequest(redeliver=broker_pb2.RedeliverUnacknowledged(
            ranges=ranges)))

    def ranges_of(self, entry_ids: Iterable[int]) -> list[broker_pb2.OffsetRange]:
        """Offset ranges naming these entries: the first offset of each (the broker sends the whole entry
        that holds it), every chunk of a chunked message (named by its last chunk)."""
        chunked = self._chunk_acks or {}
        ranges = []
        for entry_id in entry_ids:
            for offset in chunked.get(entry_id, (entry_id,)):
                ranges.append(broker_pb2.OffsetRange(start=offset, end=offset + 1))
        return ranges

    # --- seek -----------------------------------------------------------------------------------------
    def start_seek(self, target: MessageId | int) -> int:
        """Send the Seek; deliveries are dropped from now until its ``seek_done``."""
        self.flush_acks()
        self._seek_id += 1
        seek = broker_pb2.Seek(seek_id=self._seek_id)
        if isinstance(target, MessageId):
            if target.is_earliest():
                seek.position.earliest = True
            elif target.is_latest():
                seek.position.latest = True
            else:
                seek.position.offset = target.offset
        else:
            seek.publish_time_ms = int(target)
        self._seek_done.clear()
        self._seek_error = None
        self.reached_end_of_topic = False
        self.forget_batch_acks()
        self._seeking = self._seek_id
        if self._chunks is not None:  # buffered chunks are from before the seek (their permits are back)
            with self._chunk_lock:
                self._chunks.clear()
        self._stream.send(broker_pb2.ConsumeRequest(seek=seek))
        return self._seek_id

    def finish_seek(self, timeout_s: float) -> None:
        if not self._seek_done.wait(timeout_s):
            self._seeking = 0
            raise errors.Timeout(f"seek on {self.topic} not confirmed within {timeout_s:g}s")
        self._reset_permits()
        self._send_flow(self._queue_size)
        if self._seek_error is not None:
            raise self._seek_error

    # --- lifecycle ------------------------------------------------------------------------------------
    def unsubscribe(self, request_id: int, timeout_s: float) -> None:
        self.flush_acks()
        self._unsubscribed.clear()
        self._stream.send(broker_pb2.ConsumeRequest(unsubscribe=broker_pb2.Unsubscribe(
            request_id=request_id)))
        if not self._unsubscribed.wait(timeout_s):
            raise errors.Timeout(f"unsubscribe on {self.topic} not confirmed within {timeout_s:g}s")
        if self._unsubscribe_error is not None:
            raise self._unsubscribe_error

    def _on_end(self, error: errors.PulsarLikeError | None) -> None:
        if not self._subscribed.is_set():
            self._open_error = error or errors.ConnectError(f"the consume stream on {self.topic} ended")
            self._subscribed.set()
            return
        if error is not None and not self.closed:
            self.error = self.error or error
            log.warning("consumer on %s disconnected: %s", self.topic, error)
        self._seek_done.set()
        self._unsubscribed.set()
        self.owner._wake()

    def is_connected(self) -> bool:
        return not self.closed and self.error is None and self._stream.alive

    def close(self) -> None:
        if self.closed:
            return
        try:
            self.flush_acks()
            if self._stream.alive:
                self._stream.send(broker_pb2.ConsumeRequest(close=broker_pb2.CloseConsumer()))
        finally:
            self.closed = True
            self._stream.close()

