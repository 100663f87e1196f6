"""Topic compaction as Apache Pulsar's two-phase compactor does it, for one persistent topic partition.

A run reads the topic as Pulsar's ``__compaction`` reader does: the previous compacted ledger below its
horizon, then the raw log from that horizon up to the durable end when the run started (the new horizon).

- **Phase one** learns the offset of the latest message of each key. A message with an empty payload (or
  marked ``null_value``) is a tombstone: its key is removed. Messages without a key are not tracked (Pulsar
  ``topicCompactionRetainNullKey``: dropped by default since Pulsar 3.2, kept when true). Memory grows
  with the number of keys, never with the number of messages.
- **Tombstones kept** (pulsarlike; Pulsar's compactor keeps none): a key whose latest message is a tombstone
  at or after ``keep_tombstones_from`` keeps that tombstone, so that a compacted reader positioned before it
  -- one that may hold the key's older value -- still reads the deletion. The broker passes the lowest
  position of the compacted readers it knows (see :mod:`broker_core.core.persistent.compacted_readers`);
  tombstones before it are removed with their key, as Pulsar removes them. E.g. raw ``0:k1=a 1:k2=b
  2:k1=<tombstone> 3:k2=<tombstone>``, horizon 4, ``keep_tombstones_from=2`` keeps ``2:k1=<tombstone>
  3:k2=<tombstone>``; ``keep_tombstones_from=3`` keeps only ``3:k2=<tombstone>``; None keeps nothing.
- **Phase two** reads the same messages again and writes each kept one (the latest of its key, or its kept
  tombstone) to a new compacted ledger as one single-message entry carrying its original offset, publish
  time and metadata (key, properties, event time, producer, sequence id, schema version, ordering key,
  ``null_value``): batches are split.
- **Chunks:** a chunked message counts as one message, of its last chunk's offset, and is kept whole
  (every chunk entry, unchanged) or not at all; a chunked message whose chunks are incomplete is dropped.
  A chunked message still being written when the run starts (its last chunk after the end) moves the new
  horizon back to its first chunk, so that a compacted reader finds it whole in the raw log.

The ledger is written by :class:`~broker_core.storage.compacted.LedgerWriter` (temp file, fsync, rename,
then the horizon: a SIGKILL leaves the previous state); with ``current=False`` it is only sealed, and the
caller makes it current or discards it. :func:`compact` is pure file work driven through a
``read_raw`` function, so the topic runs it on a worker thread (see
:mod:`broker_core.core.persistent.compaction_runs`) and the tests and bench/compaction.py call it directly.
"""
from __future__ import annotations

import bisect
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from broker_core.errors import AlreadyClosed, InvalidMessage, PulsarLikeError
from broker_core.protocol import codec, pulsar_api_pb2
from broker_core.protocol.entry import payload_of
from broker_core.storage.compacted import FOLDER, CompactedLedger, LedgerWriter, SealedLedger, crash_point, load
from broker_core.storage.stored_entry import StoredEntry

__all__ = ["CompactedLedger", "CompactionResult", "CompactionStopped", "FOLDER", "SealedLedger", "compact", "load"]

log = logging.getLogger(__name__)

ReadRaw = Callable[[int, int], list[StoredEntry]]
"""``read_raw(start, end)``: raw entries from the one holding ``start``, below ``end`` (empty: none left)."""

READ_ENTRIES = 1000
READ_BYTES = 4 << 20


class CompactionStopped(AlreadyClosed):
    """The topic closed (unload, delete, broker stop) while a compaction ran; the previous state stays."""


@dataclass(frozen=True)
class CompactionResult:
    ledger: CompactedLedger
    read: int
    """messages read (the previous ledger's and the raw ones)"""
    kept: int
    """messages in the new ledger"""
    read_bytes: int = 0
    """bytes of the entries phase one read"""
    tombstones: int = 0
    """tombstones kept in the new ledger"""
    dropped_tombstone: int = -1
    """the offset of the last tombstone this run removed (-1: none); a compacted reader positioned at or before
    it may have needed it"""
    sealed: SealedLedger | None = None
    """the new ledger, not current yet (``compact(current=False)``): make it current or discard it"""

    @property
    def removed(self) -> int:
        """Pulsar's ``lastCompactionRemovedEventCount``: messages read that the new ledger does not keep."""
        return self.read - self.kept


@dataclass(slots=True)
class _Message:
    """One message of an entry, as the phases see it."""

    offset: int
    key: str | None
    empty: bool
    chunk: pulsar_api_pb2.MessageMetadata | None = None  # the entry's metadata when the entry is a chunk


def _decode(entry: StoredEntry) -> tuple[int, pulsar_api_pb2.MessageMetadata, memoryview]:
    broker_time, _, start = codec.split_broker_entry(entry.data)
    metadata, payload = codec.decode_entry(memoryview(entry.data)[start:], verify=False)
    return broker_time, metadata, payload


def _is_batch(metadata: pulsar_api_pb2.MessageMetadata) -> bool:
    return metadata.HasField("num_messages_in_batch") and not metadata.HasField("chunk_id")


def _key(metadata) -> str | None:
    """A message's key (None: keyless); ``metadata`` is a MessageMetadata or a SingleMeta."""
    if isinstance(metadata, codec.SingleMeta):
        return None if metadata.partition_key is None or metadata.null_partition_key else metadata.partition_key
    if not metadata.HasField("partition_key") or metadata.null_partition_key:
        return None
    return metadata.partition_key


def _split(metadata: pulsar_api_pb2.MessageMetadata, payload: memoryview):
    """A batch's (metadata, payloads), or None when the broker cannot read it (an encrypted batch): Pulsar's
    compactor then treats the batch as one message, of the entry's key, kept whole or not at all."""
    try:
        return codec.split_batch(payload_of(metadata, payload), metadata.num_messages_in_batch)
    except InvalidMessage:
        return None


def _messages(entry: StoredEntry) -> Iterator[_Message]:
    _, metadata, payload = _decode(entry)
    if metadata.HasField("marker_type"):  # broker markers (transactions, replication) are never compacted
        return
    split = _split(metadata, payload) if _is_batch(metadata) else None
    if split is not None:
        metas, _ = split
        for i, single in enumerate(metas):
            if not single.compacted_out:
                yield _Message(entry.offset + i, _key(single), single.payload_size == 0 or single.null_value)
        return
    chunked = metadata.HasField("chunk_id") and metadata.num_chunks_from_msg > 1
    yield _Message(entry.offset, _key(metadata), len(payload) == 0 or metadata.null_value,
                   metadata if chunked else None)


def _entries(previous: CompactedLedger | None, read_raw: ReadRaw, end: int, stopping: Callable[[], bool],
             start: int = 0) -> Iterator[StoredEntry]:
    """What Pulsar's ``__compaction`` reader reads: the previous ledger, then the raw log from its horizon
    (from the entry holding ``start`` on)."""
    position = start
    if previous is not None:
        while position < previous.horizon and (batch := previous.read(position, READ_ENTRIES, READ_BYTES)):
            yield from batch
            position = batch[-1].end_offset
        position = max(position, previous.horizon)
    while position < end:
        if stopping():
            raise CompactionStopped("the topic closed during compaction; the previous compacted state stays")
        batch = read_raw(position, end)
        if not batch:
            return
        for entry in batch:
            if entry.end_offset > position:
                yield entry
        position = batch[-1].end_offset


class _Latest:
    """Phase one's state: the latest offset of each key, and the chunked messages (kept whole)."""

    def __init__(self, retain_null_key: bool) -> None:
        self.retain_null_key = retain_null_key
        self.latest: dict[str, int] = {}
        self.deleted: dict[str, int] = {}  # a key whose latest message is a tombstone -> that tombstone's offset
        self.groups: dict[int, list[int]] = {}  # a complete chunked message's last offset -> its chunk offsets
        self.keyless_groups: list[list[int]] = []
        self.pending: dict[str, list[int]] = {}  # chunked messages being read, by uuid
        self.producing: dict[str, str] = {}  # producer -> uuid of its chunked message being read
        self.read = 0
        self.read_bytes = 0
        self.keyless = 0

    def add(self, message: _Message) -> None:
        if message.chunk is not None:
            self._chunk(message)
            return
        self.read += 1
        if message.key is None:
            self.keyless += 1
        elif message.empty:
            self._set(message.key, None)
            self.deleted[message.key] = message.offset
        else:
            self.deleted.pop(message.key, None)
            self._set(message.key, message.offset)

    def _set(self, key: str, offset: int | None) -> None:
        old = self.latest.pop(key, None) if offset is None else self.latest.get(key)
        if offset is not None:
            self.latest[key] = offset
        if old is not None:
            self.groups.pop(old, None)

    def _chunk(self, message: _Message) -> None:
        meta = message.chunk
        uuid, chunk_id = meta.uuid, meta.chunk_id
        if chunk_id == 0:
            abandoned = self.producing.get(meta.producer_name)
            if abandoned is not None:  # a producer sends one chunked message at a time: that one never ends
                self.pending.pop(abandoned, None)
            self.pending[uuid] = [message.offset]
            self.producing[meta.producer_name] = uuid
        elif uuid in self.pending and len(self.pending[uuid]) == chunk_id:
            self.pending[uuid].append(message.offset)
        else:  # a gap or a repeat: the message cannot be read whole
            self.pending.pop(uuid, None)
            return
        offsets = self.pending[uuid]
        if len(offsets) < meta.num_chunks_from_msg:
            return
        del self.pending[uuid]
        if self.producing.get(meta.producer_name) == uuid:
            del self.producing[meta.producer_name]
        self.read += 1
        if message.key is None:
            self.keyless += 1
            if self.retain_null_key:
                self.keyless_groups.append(offsets)
            return
        self.deleted.pop(message.key, None)
        self._set(message.key, message.offset)  # chunked messages are never empty: no tombstone
        self.groups[message.offset] = offsets

    def first_pending(self) -> int | None:
        """The first chunk offset of the earliest chunked message still incomplete."""
        return min((offsets[0] for offsets in self.pending.values()), default=None)

    def tombstones(self, keep_from: int | None) -> tuple[dict[str, int], int]:
        """The tombstones to keep (those at or after ``keep_from``; None: none), by key, and the offset of the
        last one removed (-1: none)."""
        if keep_from is None:
            return {}, max(self.deleted.values(), default=-1)
        kept = {key: offset for key, offset in self.deleted.items() if offset >= keep_from}
        return kept, max((offset for offset in self.deleted.values() if offset < keep_from), default=-1)

    def kept_chunks(self) -> set[int]:
        kept = {o for offsets in self.groups.values() for o in offsets}
        kept.update(o for offsets in self.keyless_groups for o in offsets)
        return kept


def _phase_one(previous: CompactedLedger | None, read_raw: ReadRaw, end: int, retain_null_key: bool,
               stopping: Callable[[], bool]) -> _Latest:
    state = _Latest(retain_null_key)
    for entry in _entries(previous, read_raw, end, stopping):
        state.read_bytes += len(entry.data)
        for message in _messages(entry):
            if message.offset < end:
                state.add(message)
    return state


def _single_entry(entry: StoredEntry, broker_time: int, metadata: pulsar_api_pb2.MessageMetadata, index: int,
                  single: codec.SingleMeta, payload: bytes) -> StoredEntry:
    """Message ``index`` of a batch as one unbatched entry of its own, with its original metadata."""
    out = pulsar_api_pb2.MessageMetadata(
        producer_name=metadata.producer_name, publish_time=metadata.publish_time,
        sequence_id=single.sequence_id if single.sequence_id is not None else metadata.sequence_id + index)
    for name, value in single.properties.items():
        out.properties.add(key=name, value=value)
    if single.partition_key is not None:
        out.partition_key = single.partition_key
        out.partition_key_b64_encoded = single.partition_key_b64_encoded
    if single.ordering_key is not None:
        out.ordering_key = single.ordering_key
    if single.event_time:
        out.event_time = single.event_time
    if single.null_value:
        out.null_value = True
    for field in ("schema_version", "replicated_from"):
        if metadata.HasField(field):
            setattr(out, field, getattr(metadata, field))
    offset = entry.offset + index
    prefix = codec.broker_entry_prefix(broker_time, offset) if broker_time >= 0 else b""
    return StoredEntry(offset, 1, entry.publish_time, entry.ledger_id, prefix + codec.encode_entry(out, payload))


def _keeps(state: _Latest, tombstones: dict[str, int], key: str | None, offset: int) -> bool:
    """Whether the message of ``key`` at ``offset`` goes to the new ledger."""
    if key is None:
        return state.retain_null_key
    return state.latest.get(key) == offset or tombstones.get(key) == offset


def _kept_entries(entry: StoredEntry, state: _Latest, tombstones: dict[str, int], chunks: set[int],
                  horizon: int) -> Iterator[StoredEntry]:
    broker_time, metadata, payload = _decode(entry)
    if metadata.HasField("marker_type"):
        return
    split = _split(metadata, payload) if _is_batch(metadata) else None
    if split is None:
        if metadata.HasField("chunk_id") and metadata.num_chunks_from_msg > 1:
            if entry.offset in chunks:
                yield entry
            return
        if _keeps(state, tombstones, _key(metadata), entry.offset):
            yield entry
        return
    metas, payloads = split
    for i, single in enumerate(metas):
        offset = entry.offset + i
        if offset >= horizon or single.compacted_out:
            continue
        if _keeps(state, tombstones, _key(single), offset):
            yield _single_entry(entry, broker_time, metadata, i, single, bytes(payloads[i]))


def compact(folder: Path, previous: CompactedLedger | None, read_raw: ReadRaw, end: int, *,
            retain_null_key: bool = False, keep_tombstones_from: int | None = None,
            stopping: Callable[[], bool] = lambda: False, current: bool = True) -> CompactionResult:
    """One compaction run over the previous ledger and the raw log below ``end``; the new ledger is made
    current in ``folder`` before this returns (``current=False``: only sealed, see ``CompactionResult.sealed``).
    ``keep_tombstones_from``: keep the tombstones at or after this offset (None: none, as Pulsar). Raises
    :class:`CompactionStopped` when ``stopping()`` turns true, and what reading or writing raises; the previous
    state stays in both cases."""
    state = _phase_one(previous, read_raw, end, retain_null_key, stopping)
    horizon = end
    first_pending = state.first_pending()
    if first_pending is not None and first_pending < end:  # read it whole later, from the raw log
        horizon = first_pending
        state = _phase_one(previous, read_raw, horizon, retain_null_key, stopping)
    if previous is not None and horizon < previous.horizon:
        horizon = previous.horizon
    chunks = state.kept_chunks()
    tombstones, dropped = state.tombstones(keep_tombstones_from)
    # only the entries holding a kept message are decoded again (most hold none: phase two is mostly reading)
    kept_offsets = sorted({*state.latest.values(), *chunks, *tombstones.values()})
    every_entry = state.retain_null_key and state.keyless > 0
    writer = LedgerWriter(folder)
    try:
        first = 0 if every_entry or not kept_offsets else kept_offsets[0]
        for entry in _entries(previous, read_raw, horizon, stopping, first):
            if entry.offset >= horizon:
                break
            i = bisect.bisect_left(kept_offsets, entry.offset)
            if not every_entry and (i == len(kept_offsets) or kept_offsets[i] >= entry.end_offset):
                continue
            for kept in _kept_entries(entry, state, tombstones, chunks, horizon):
                writer.add(kept)
            if writer.entries > len(state.latest) // 2:  # half written (the test crash point)
                crash_point("mid_write")
        kept_from = horizon if keep_tombstones_from is None else min(keep_tombstones_from, horizon)
        sealed = writer.seal(horizon, tombstones=len(tombstones), tombstones_from=kept_from)
    except BaseException:
        writer.abort()
        raise
    ledger = sealed.make_current() if current else sealed.ledger
    chunk_entries = sum(len(offsets) - 1 for offsets in [*state.groups.values(), *state.keyless_groups])
    return CompactionResult(ledger, state.read, writer.entries - chunk_entries, state.read_bytes, len(tombstones),
                            dropped, None if current else sealed)


def describe(error: BaseException) -> str:
    """The ``lastError`` of a failed run: the broker's message, never a server path."""
    if isinstance(error, PulsarLikeError):
        return error.message
    if isinstance(error, OSError):
        return f"cannot write the compacted ledger: {error.strerror or type(error).__name__}"
    return f"{type(error).__name__}: {error}"
