"""Entry decoding, public: the client's one pipeline from a delivered entry's bytes to its messages.

The client's consumers (:mod:`connector.client.consumer.partition`), its admin's peek, and anything else
that reads raw entries from :func:`~connector.client.entry_stream.open_entry_stream` (the Spark source's
range reader) decode through here, so an entry is decoded the same way everywhere. The steps, in order::

    entry bytes --open_entry--> OpenedEntry(metadata, payload, broker_timestamp)   CRC checked
    chunk?      --is_chunk----> ChunkedRange.add(...) until the message completes  (reassembled payload)
    payload     --decode------> DecodedEntry: per-message metadata and bytes       decompressed, batch split

The metadata objects are the entry's ``MessageMetadata`` (protobuf: ``publish_time``, ``producer_name``,
``sequence_id``, ``event_time``, ``partition_key``, ``properties``, ``null_value`` ...) and, for a batch,
one ``SingleMeta`` per message (same field names; absent optional fields are ``None``, ``properties`` is a
mapping; payload-only messages of one batch share one object). Nothing is copied per message beyond its
bytes: a reader that builds columns (Arrow) reads them in bulk.

Message ids come as the bytes pulsar-client's ``MessageId.serialize()`` writes (:meth:`DecodedEntry.
message_id`, :meth:`DecodedEntry.message_ids`): one prefix per entry, the batch fields per message.

Bad input raises :class:`~broker_core.errors.InvalidMessage` (or ``ChecksumError``) saying what is wrong.
"""
from __future__ import annotations

from typing import Any, Iterator, Sequence, overload

from broker_core.protocol import entry as _codec, pulsar_api_pb2
from broker_core.protocol.codec import batch_decoding
from broker_core.protocol.chunks import Chunk, ChunkedMessageTracker, CompletedMessage

MessageMetadata = pulsar_api_pb2.MessageMetadata
"""An entry's metadata (Pulsar's ``MessageMetadata``)."""
SingleMeta = _codec.SingleMeta
"""The metadata of one message of a batch."""
OpenedEntry = _codec.OpenedEntry
"""``(metadata, payload, broker_timestamp)`` of an entry whose headers were read."""
ReassembledMessage = CompletedMessage
"""A chunked message with every chunk received: ``uuid``, ``payload`` (still compressed when the message
is), ``offsets`` (chunk 0's first; the message's id is the last one's) and ``error`` (None when valid)."""

open_entry = _codec.open_entry
is_chunk = _codec.is_chunk
message_count = _codec.message_count
message_id_prefix = _codec.message_id_prefix
"""``message_id_prefix(ledger_id, entry_id, partition)``: the serialized id's fields up to the batch fields."""
batch_fields = _codec.batch_fields
"""``batch_fields(batch_index, batch_size)``: the serialized id's batch fields (after the prefix)."""
payload_of = _codec.payload_of
split_messages = _codec.split_messages
kept_indexes = _codec.kept_indexes

__all__ = ["ChunkedRange", "DecodedEntry", "MessageMetadata", "OpenedEntry", "ReassembledMessage", "SingleMeta",
           "UniformPayloads", "batch_fields", "decode", "is_chunk", "kept_indexes", "message_count", "message_id_prefix",
           "open_entry", "payload_of", "split_messages"]

_INDEX_FIELDS: list[bytes] = []
"""The batch-index field of a message id for index 0, 1, 2, ... (grown on demand, shared by every entry)."""


def _index_fields(count: int) -> list[bytes]:
    while len(_INDEX_FIELDS) < count:
        _INDEX_FIELDS.append(_codec.batch_fields(len(_INDEX_FIELDS), 0))
    return _INDEX_FIELDS


class UniformPayloads(Sequence[bytes]):
    """The message bytes of a batch of same-size payload-only messages (what a producer of fixed-size records
    writes), split only when a message is asked for: a columnar reader (the Spark source's Arrow columns)
    takes them straight from ``buffer``, message ``i`` being ``buffer[i * stride + header_size:][:size]``
    with ``stride = header_size + size``."""

    __slots__ = ("buffer", "header_size", "size", "_count", "_split")

    def __init__(self, buffer: bytes, header_size: int, size: int, count: int) -> None:
        self.buffer = buffer
        self.header_size = header_size
        self.size = size
        self._count = count
        self._split: tuple[bytes, ...] | None = None

    def _messages(self) -> tuple[bytes, ...]:
        split = self._split
        if split is None:
            split = self._split = batch_decoding.split_uniform(self.buffer, self.header_size, self.size,
                                                               self._count)
        return split

    def __len__(self) -> int:
        return self._count

    @overload
    def __getitem__(self, index: int) -> bytes: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[bytes]: ...

    def __getitem__(self, index: int | slice) -> bytes | Sequence[bytes]:
        return self._messages()[index]

    def __iter__(self) -> Iterator[bytes]:
        return iter(self._messages())


class DecodedEntry:
    """One entry's messages: ``payloads`` (bytes, in order), ``metas`` (per-message ``SingleMeta``, or
    ``(None,)`` for an unbatched message whose fields are the entry's), the entry's ``metadata``, and where it
    sits (``ledger_id``, ``entry_id`` = the offset of its first message)."""

    __slots__ = ("metadata", "metas", "payloads", "ledger_id", "entry_id", "batched")

    def __init__(self, metadata: MessageMetadata, metas: Sequence[Any], payloads: Sequence[bytes], ledger_id: int,
                 entry_id: int, batched: bool) -> None:
        self.metadata = metadata
        self.metas = metas
        self.payloads = payloads
        self.ledger_id = ledger_id
        self.entry_id = entry_id
        self.batched = batched
        """True for a batch (even of one message): ``metas`` holds each message's metadata."""

    def __len__(self) -> int:
        return len(self.payloads)

    def message_id(self, partition: int) -> bytes:
        """The serialized id of an unbatched message (or a chunked message, whose id is its last chunk's)."""
        return _codec.message_id_prefix(self.ledger_id, self.entry_id, partition)

    def message_ids(self, partition: int, lo: int, hi: int) -> list[bytes]:
        """The serialized ids of messages ``lo <= index < hi`` of a batch."""
        prefix = _codec.message_id_prefix(self.ledger_id, self.entry_id, partition)
        suffix = _codec.batch_fields(-1, len(self.payloads))
        return [prefix + f + suffix for f in _index_fields(hi)[lo:hi]]


def decode(metadata: MessageMetadata, payload: bytes | memoryview, ledger_id: int, entry_id: int) -> DecodedEntry:
    """The messages of an opened entry that is not a chunk (or of a reassembled chunked message, with its
    last chunk's metadata): decompressed (bounded by ``uncompressed_size``), a batch split with its count
    checked against the bytes before anything is built (a batch of same-size payload-only messages is not
    split: its ``payloads`` are :class:`UniformPayloads`). Raises ``InvalidMessage`` when it cannot be."""
    if not metadata.HasField("num_messages_in_batch"):
        metas, payloads = _codec.split_messages(metadata, payload)
        return DecodedEntry(metadata, metas, payloads, ledger_id, entry_id, False)
    data = _codec.payload_of(metadata, payload)
    buf = data if type(data) is bytes else bytes(data)
    count = metadata.num_messages_in_batch
    layout = batch_decoding.uniform_layout(buf, count)
    if layout is None:
        metas, payloads = batch_decoding.split_batch(buf, count)
        return DecodedEntry(metadata, metas, payloads, ledger_id, entry_id, True)
    header_size, size = layout
    return DecodedEntry(metadata, [batch_decoding.plain_meta(size)] * count,
                        UniformPayloads(buf, header_size, size, count), ledger_id, entry_id, True)


class ChunkedRange:
    """Chunk reassembly for a reader that owns a range of offsets (it never gives a message up: no queue
    limit, no expiry -- the reader decides which first chunks it keeps). ``label`` prefixes log lines."""

    def __init__(self, label: str = "") -> None:
        self._tracker = ChunkedMessageTracker(1 << 30, False, 0, now_ms=lambda: 0, label=label)

    def __len__(self) -> int:
        """How many messages are incomplete."""
        return len(self._tracker)

    def is_pending(self, uuid: str) -> bool:
        return self._tracker.is_pending(uuid)

    def add(self, metadata: MessageMetadata, payload: bytes | memoryview, offset: int) -> ReassembledMessage | None:
        """Take one chunk (an opened entry for which :func:`is_chunk` holds); the message it completes, if
        any. Decode that with :func:`decode` (``metadata`` and the message's ``payload``)."""
        return self._tracker.add(Chunk.of(metadata, payload, offset)).completed

    def first_pending_offset(self) -> int | None:
        """The first chunk's offset of the earliest incomplete message (where a reconnected read resumes)."""
        return self._tracker.first_pending_offset()

    def clear(self) -> list[int]:
        """Drop every incomplete message; the offsets of their chunks."""
        return self._tracker.clear()
