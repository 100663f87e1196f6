"""Chunked messages on a :class:`~connector.client.partition_consumer.PartitionConsumer` (a mixin: it
works on the consumer's tracker, locks, timer and acks).

Chunks (unbatched entries with ``num_chunks_from_msg > 1``) go to a
:class:`~connector.client.chunking.ChunkedMessageTracker`, made at the first chunk. A completed message is
one :class:`~connector.client.message.Message` with its last chunk's id; acknowledging it (or that id)
acknowledges every chunk. A chunk that completes nothing returns its permit at once, so a message of more
chunks than ``receiver_queue_size`` still arrives. Incomplete messages expire on later deliveries and on
the client's timer; what the tracker gives up is acknowledged or redelivered as it says.
"""
from __future__ import annotations

import threading
import time
from typing import Any

from broker_core import errors
from broker_core.protocol import broker_pb2, pulsar_api_pb2

from connector.client.chunking import Chunk, ChunkedMessageTracker, ChunkOutcome, CompletedMessage
from connector.client.message import ChunkedEntryInfo, DecodeFailure, Message, decoded_payload

CHUNKED_IDS_MAX = 10_000
"""Delivered, unacknowledged chunked messages whose chunk offsets are remembered (a Reader never acks);
acknowledging an older one acknowledges its last chunk only (its other chunks come back and expire)."""


def _now_ms() -> int:
    return int(time.time() * 1000)


class ChunkAssembly:
    # Chunk state is created at the first chunk: consumers of unchunked topics never pay for it.
    _chunks: ChunkedMessageTracker | None = None
    _chunk_lock: threading.Lock
    _chunk_acks: dict[int, tuple[int, ...]] | None = None
    """Last-chunk offset of a delivered, unacknowledged chunked message -> every chunk's offset."""
    _expiry_scheduled = False

    def _add_chunk(self, entry: broker_pb2.DeliveredEntry, metadata: pulsar_api_pb2.MessageMetadata,
                   payload: memoryview, out: list[Any]) -> None:
        tracker = self._chunks
        if tracker is None:
            self._chunk_lock = threading.Lock()
            owner = self.owner
            tracker = self._chunks = ChunkedMessageTracker(
                owner._max_pending_chunked, owner._auto_ack_oldest_chunked, owner._chunk_expiry_ms,
                now_ms=_now_ms, label=f"{self.topic}: ")
        offset = entry.entry_id
        if offset > self.max_received_offset:
            self.max_received_offset = offset
        chunk = Chunk(metadata.uuid, metadata.chunk_id, metadata.num_chunks_from_msg,
                      metadata.total_chunk_msg_size, offset, metadata.publish_time, payload)
        with self._chunk_lock:
            outcome = tracker.add(chunk)
            self._schedule_expiry_check()
        if outcome.completed is None:
            self._skipped += 1  # the application never takes a chunk: its permit goes back now
        else:
            out.append(self._reassembled(entry, metadata, outcome.completed))
        self._settle(outcome)

    def _reassembled(self, last: broker_pb2.DeliveredEntry, metadata: pulsar_api_pb2.MessageMetadata,
                     done: CompletedMessage) -> Message | DecodeFailure:
        """The message of a completed chunk sequence (``last`` is its last chunk), or its failure."""
        try:
            if done.error is not None:
                raise errors.InvalidMessage(done.error)
            payload = decoded_payload(metadata, done.payload)
        except errors.PulsarLikeError as exc:
            return self._failure(last, exc, done.offsets)
        acks = self._chunk_acks
        if acks is None:
            acks = self._chunk_acks = {}
        acks[last.entry_id] = done.offsets
        if len(acks) > CHUNKED_IDS_MAX:
            acks.pop(next(iter(acks)), None)
        info = ChunkedEntryInfo(metadata, self.topic, last.ledger_id, last.entry_id, self.partition,
                                last.redelivery_count, self, done.offsets)
        return Message(bytes(payload), None, info, -1)

    def _settle(self, outcome: ChunkOutcome) -> None:
        """Acknowledge or have redelivered the chunks the tracker gave up."""
        if outcome.ack:
            self.ack_offsets(outcome.ack)
        if outcome.redeliver and not self.closed:
            self.owner._redeliver_later(self)

    def _schedule_expiry_check(self) -> None:
        """One timer task at a time, due when the oldest incomplete message expires (under _chunk_lock)."""
        if self._expiry_scheduled or self._chunks is None:
            return
        deadline = self._chunks.next_expiry_ms()
        if deadline is not None:
            self._expiry_scheduled = True
            self._timer.call_later(max(0, deadline - _now_ms() + 1) / 1000.0, self._check_expiry)

    def _check_expiry(self) -> None:
        if self.closed or self._chunks is None:
            return
        with self._chunk_lock:
            self._expiry_scheduled = False
            outcome = self._chunks.expire()
            self._schedule_expiry_check()
        self._settle(outcome)

