"""Reassembly of chunked messages, the pure part shared by the client's consumers and the Spark source:
:class:`ChunkedMessageTracker` (state in, messages out; no threads, no I/O).

A producer with ``chunking_enabled=True`` splits a message larger than the broker's ``maxMessageSize``
into chunks, each stored as one unbatched entry whose metadata carries the message's ``uuid``
(``"<producer_name>-<sequence_id>"``), the ``chunk_id`` (0..n-1), ``num_chunks_from_msg`` (n) and
``total_chunk_msg_size`` (the bytes of all chunk payloads together, i.e. after compression). The chunks
of one message are stored in order, but chunks of other messages may sit between them. The seed's
example, two producers publishing at once::

    offset:   0      1      2      3      4      5
    entry:  M1-C1  M2-C1  M1-C2  M2-C2  M1-C3  M2-C3

    after 0: pending {M1: [C1]}
    after 1: pending {M1: [C1], M2: [C1]}          two buffers: max_pending_chunked_message counts these
    after 4: M1 complete (offsets 0, 2, 4)  ->  one message, id = offset 4 (its last chunk)
    after 5: M2 complete (offsets 1, 3, 5)

The tracker keeps one buffer per incomplete message and answers each chunk with a :class:`ChunkOutcome`:
the completed message if that chunk was the last one, and the chunk offsets to acknowledge or to have
redelivered because a buffer was given up. It does no I/O and takes the time from ``now_ms`` (wall-clock
milliseconds, compared with publish times), so it is tested with a fake clock; the caller serialises
calls (one lock).

When a buffer is given up (as Apache Pulsar's ``ConsumerImpl`` does, checked against its source):

- **queue full**: a chunk 0 of a new message while ``max_pending_chunked_message`` messages are already
  incomplete drops the oldest one; its chunks are acknowledged when
  ``auto_ack_oldest_chunked_message_on_queue_full`` is true, else redelivered later (the message can
  still complete from a redelivery, since every chunk is stored).
- **expiry**: a message still incomplete ``expire_time_of_incomplete_chunked_message_ms`` after its first
  chunk arrived is dropped and its chunks are *acknowledged, whatever the auto-ack option* (Pulsar does
  the same: a message that did not complete in that time is taken to be broken, e.g. its producer died
  mid-message, and redelivering it would only expire it again, forever). 0 disables expiry.
- **later chunks of a message given up** (by queue full or expiry) follow its fate at once: acknowledged
  when its chunks were, else redelivered. Pulsar treats them as unexpected chunks (below), which with
  auto-ack on has them come back again and again until the expiry time has passed; the tracker remembers
  the last ``GIVEN_UP_MEMORY`` given-up messages instead.
- **unexpected chunk** (a chunk other than 0 for a message with no buffer, a gap, an invalid chunk id):
  the buffer of that message, if any, and the chunk are dropped; they are acknowledged when the chunk's
  publish time is older than the expiry time (the message cannot complete any more), else redelivered
  later (a redelivery may bring the chunks in order).
- **chunk 0 again** for a message in progress restarts its buffer: a redelivery of the same entry (same
  offset) acknowledges nothing; a chunk 0 at another offset means the earlier chunks are an abandoned
  copy (a producer that resent the message), and those are acknowledged so they leave no ack hole.
- **a chunk already buffered** (chunk id not above the last one received) is ignored; acknowledged when
  it is a stored duplicate at another offset.

A chunk 0 that arrives again after its message completed starts a new buffer like any chunk 0; unless
the rest follows, that buffer simply expires.
"""
from __future__ import annotations

import collections
import logging
from typing import Callable, NamedTuple

from broker_core.protocol import pulsar_api_pb2

log = logging.getLogger(__name__)

GIVEN_UP_MEMORY = 1000
"""How many given-up messages the tracker remembers, to settle their later chunks the same way."""


class Chunk(NamedTuple):
    """One received chunk entry (its metadata fields, as the producer wrote them)."""

    uuid: str
    """The message's id among chunked messages: ``"<producer_name>-<sequence_id>"``."""
    chunk_id: int
    """0 .. num_chunks - 1."""
    num_chunks: int
    """``num_chunks_from_msg``: how many chunks the message has."""
    total_size: int
    """``total_chunk_msg_size``: the bytes of all chunk payloads together."""
    offset: int
    """The chunk entry's offset in its partition."""
    publish_time: int
    """Milliseconds since the epoch, from the chunk's metadata."""
    payload: bytes | memoryview
    """This chunk's part of the (possibly compressed) message payload."""

    @classmethod
    def of(cls, metadata: pulsar_api_pb2.MessageMetadata, payload: bytes | memoryview, offset: int) -> "Chunk":
        """The chunk an entry at ``offset`` holds (see :func:`broker_core.protocol.entry.is_chunk`)."""
        return cls(metadata.uuid, metadata.chunk_id, metadata.num_chunks_from_msg, metadata.total_chunk_msg_size,
                   offset, metadata.publish_time, payload)


class CompletedMessage(NamedTuple):
    """Every chunk of one message, in chunk id order."""

    uuid: str
    payload: bytes
    """The chunk payloads concatenated: still compressed when the message is."""
    offsets: tuple[int, ...]
    """Every chunk's offset, chunk 0 first; the message's id is the last one's."""
    error: str | None
    """Why the chunks do not make a valid message (their size disagrees with total_size), else None."""


class ChunkOutcome(NamedTuple):
    """What the caller has to do after a chunk or an expiry check."""

    completed: CompletedMessage | None
    """The message this chunk completed, if any."""
    ack: list[int]
    """Chunk offsets given up for good: acknowledge them."""
    redeliver: list[int]
    """Chunk offsets given up for now: have them redelivered later."""


class _Pending:
    """The buffer of one incomplete message."""

    __slots__ = ("num_chunks", "total_size", "payloads", "offsets", "first_arrival_ms")

    def __init__(self, chunk: Chunk, now_ms: int) -> None:
        self.num_chunks = chunk.num_chunks
        self.total_size = chunk.total_size
        self.payloads: list[bytes | memoryview] = [chunk.payload]
        self.offsets: list[int] = [chunk.offset]
        self.first_arrival_ms = now_ms


class ChunkedMessageTracker:
    """Buffers the chunks of incomplete messages of one topic partition (see the module docstring)."""

    def __init__(self, max_pending_chunked_message: int = 10,
                 auto_ack_oldest_chunked_message_on_queue_full: bool = False,
                 expire_time_of_incomplete_chunked_message_ms: int = 60000, *,
                 now_ms: Callable[[], int], label: str = "") -> None:
        if max_pending_chunked_message < 1:
            raise ValueError(f"max_pending_chunked_message={max_pending_chunked_message!r} is not valid; "
                             "use an int >= 1")
        if expire_time_of_incomplete_chunked_message_ms < 0:
            raise ValueError(f"expire_time_of_incomplete_chunked_message_ms="
                             f"{expire_time_of_incomplete_chunked_message_ms!r} is not valid; "
                             "use an int >= 0")
        self.max_pending = max_pending_chunked_message
        self.auto_ack_oldest = auto_ack_oldest_chunked_message_on_queue_full
        self.expiry_ms = expire_time_of_incomplete_chunked_message_ms
        self._now_ms = now_ms
        self._label = label
        # uuid -> buffer, oldest first chunk first (a restarted message moves to the end).
        self._pending: collections.OrderedDict[str, _Pending] = collections.OrderedDict()
        # uuid -> whether its chunks were acknowledged, for messages dropped on queue full or expiry.
        self._given_up: collections.OrderedDict[str, bool] = collections.OrderedDict()

    def __len__(self) -> int:
        """How many messages are incomplete."""
        return len(self._pending)

    def is_pending(self, uuid: str) -> bool:
        """Whether chunks of the message ``uuid`` are buffered (it started and is not complete)."""
        return uuid in self._pending

    def first_pending_offset(self) -> int | None:
        """The lowest offset of any buffered chunk (where reading must start again to complete every
        incomplete message), or None."""
        return min((p.offsets[0] for p in self._pending.values()), default=None)

    def pending_offsets(self) -> list[int]:
        """Offsets of every buffered chunk."""
        return [o for p in self._pending.values() for o in p.offsets]

    def next_expiry_ms(self) -> int | None:
        """When the oldest incomplete message expires (``now_ms`` time), or None."""
        if not self._pending or not self.expiry_ms:
            return None
        return next(iter(self._pending.values())).first_arrival_ms + self.expiry_ms

    # --- chunks ---------------------------------------------------------------------------------------
    def add(self, chunk: Chunk) -> ChunkOutcome:
        """Take one chunk (expired buffers are dropped first)."""
        now = self._now_ms()
        ack, redeliver = self._expire(now)
        pending = self._pending.get(chunk.uuid)
        if not 0 <= chunk.chunk_id < chunk.num_chunks:
            self._unexpected(chunk, pending, now, ack, redeliver, "its chunk id is out of range")
            return ChunkOutcome(None, ack, redeliver)
        if chunk.chunk_id == 0:
            self._given_up.pop(chunk.uuid, None)
            if pending is not None:
                self._restart(chunk, pending, ack)
            elif len(self._pending) >= self.max_pending:
                self._drop_oldest(ack, redeliver)
            done = self._start(chunk, now)
            return ChunkOutcome(done, ack, redeliver)
        if pending is None:
            acked = self._given_up.get(chunk.uuid)
            if acked is not None:
                (ack if acked else redeliver).append(chunk.offset)
            else:
                self._unexpected(chunk, None, now, ack, redeliver, "its first chunk was not received")
            return ChunkOutcome(None, ack, redeliver)
        received = len(pending.offsets)
        if chunk.chunk_id < received:
            if chunk.offset not in pending.offsets:  # a stored duplicate, not a redelivery
                ack.append(chunk.offset)
            log.warning("%sduplicate chunk %d of %s at offset %d ignored", self._label, chunk.chunk_id,
                        chunk.uuid, chunk.offset)
            return ChunkOutcome(None, ack, redeliver)
        if chunk.chunk_id > received or chunk.num_chunks != pending.num_chunks:
            self._unexpected(chunk, pending, now, ack, redeliver,
                             f"chunk {received} was expected (of {pending.num_chunks})")
            return ChunkOutcome(None, ack, redeliver)
        pending.payloads.append(chunk.payload)
        pending.offsets.append(chunk.offset)
        return ChunkOutcome(self._complete_if_done(chunk.uuid, pending), ack, redeliver)

    def expire(self) -> ChunkOutcome:
        """Drop (and acknowledge) every message incomplete for longer than the expiry time."""
        ack, redeliver = self._expire(self._now_ms())
        return ChunkOutcome(None, ack, redeliver)

    def clear(self) -> list[int]:
        """Forget every buffer (after a seek); returns the offsets that were buffered."""
        offsets = self.pending_offsets()
        self._pending.clear()
        self._given_up.clear()
        return offsets

    # --- internals ------------------------------------------------------------------------------------
    def _start(self, chunk: Chunk, now: int) -> CompletedMessage | None:
        pending = _Pending(chunk, now)
        self._pending[chunk.uuid] = pending
        return self._complete_if_done(chunk.uuid, pending)

    def _complete_if_done(self, uuid: str, pending: _Pending) -> CompletedMessage | None:
        if len(pending.offsets) < pending.num_chunks:
            return None
        del self._pending[uuid]
        payload = b"".join(pending.payloads)
        error = None
        if len(payload) != pending.total_size:
            error = (f"its {pending.num_chunks} chunks hold {len(payload)} bytes but total_chunk_msg_size "
                     f"says {pending.total_size}")
        return CompletedMessage(uuid, payload, tuple(pending.offsets), error)

    def _restart(self, chunk: Chunk, pending: _Pending, ack: list[int]) -> None:
        del self._pending[chunk.uuid]
        if chunk.offset != pending.offsets[0]:
            ack.extend(pending.offsets)
            log.warning("%schunked message %s starts again at offset %d: its earlier chunks at %s are "
                        "acknowledged", self._label, chunk.uuid, chunk.offset, pending.offsets)

    def _drop_oldest(self, ack: list[int], redeliver: list[int]) -> None:
        uuid, oldest = self._pending.popitem(last=False)
        (ack if self.auto_ack_oldest else redeliver).extend(oldest.offsets)
        self._give_up(uuid, self.auto_ack_oldest)
        log.warning("%smore than max_pending_chunked_message=%d incomplete chunked messages: dropped the "
                    "oldest, %s (%d of %d chunks), its chunks are %s", self._label, self.max_pending, uuid,
                    len(oldest.offsets), oldest.num_chunks,
                    "acknowledged" if self.auto_ack_oldest else "to be redelivered")

    def _expire(self, now: int) -> tuple[list[int], list[int]]:
        ack: list[int] = []
        if not self.expiry_ms:
            return ack, []
        pending = self._pending
        while pending:
            uuid, oldest = next(iter(pending.items()))
            if now < oldest.first_arrival_ms + self.expiry_ms:
                break
            del pending[uuid]
            ack.extend(oldest.offsets)
            self._give_up(uuid, True)
            log.warning("%schunked message %s expired incomplete (%d of %d chunks after %d ms): its chunks "
                        "are acknowledged", self._label, uuid, len(oldest.offsets), oldest.num_chunks,
                        now - oldest.first_arrival_ms)
        return ack, []

    def _give_up(self, uuid: str, acked: bool) -> None:
        given_up = self._given_up
        given_up[uuid] = acked
        if len(given_up) > GIVEN_UP_MEMORY:
            given_up.popitem(last=False)

    def _unexpected(self, chunk: Chunk, pending: _Pending | None, now: int, ack: list[int],
                    redeliver: list[int], why: str) -> None:
        offsets = [chunk.offset]
        if pending is not None:
            del self._pending[chunk.uuid]
            offsets[:0] = pending.offsets
        too_old = bool(self.expiry_ms) and now >= chunk.publish_time + self.expiry_ms
        (ack if too_old else redeliver).extend(offsets)
        log.warning("%sunexpected chunk %d of %s at offset %d (%s): chunks %s dropped and %s", self._label,
                    chunk.chunk_id, chunk.uuid, chunk.offset, why, offsets,
                    "acknowledged" if too_old else "to be redelivered")
