"""The producer's batch container: collects messages, builds one Pulsar entry per batch.

A batch of one message is sent unbatched (its key and properties in ``MessageMetadata``; message id
``batch_index = -1``), as Pulsar's Java client does; two or more become a batch payload of
``SingleMessageMetadata``-framed messages with ``num_messages_in_batch = n``. Per-message headers are
built when the message is added (one table lookup for a payload-only message), so building the entry
is one ``join``, one optional compression and one CRC. A transport carries each :class:`PendingEntry` as its
wire does (gRPC packs those waiting into SendBatch requests: :func:`connector.client.transport.grpc.streams.pack_within`).
"""
from __future__ import annotations

import struct
from typing import Any, Callable, Mapping

from broker_core.protocol import codec, pulsar_api_pb2
from broker_core.protocol.compression import compress_payload

from connector.client.security.crypto_keys import CryptoError
from connector.client.key_bytes import b64_key_header, is_b64

FRAME_OVERHEAD = 8
"""Bytes of a SingleMessageMetadata frame beyond the payload, for size accounting only."""
PLAIN_LIMIT = 4096
"""Payloads shorter than this have their payload-only header precomputed: ``PLAIN_HEADERS[size]``."""
PLAIN_HEADERS = [codec.single_message_header(n) for n in range(PLAIN_LIMIT)]
_U32 = struct.Struct(">I")
"""The size prefix of a ``SingleMessageMetadata`` frame."""
_NULL_VALUE_FIELD = b"\x48\x01"
"""``SingleMessageMetadata.null_value = true`` (field 9, varint): the last field number a header has."""


class NullValue(bytes):
    """The payload of a message sent with ``send(None)`` (pulsar-client's null value, a tombstone for
    compaction): empty bytes, recognised by identity (:data:`NULL_VALUE`), carried as Pulsar's ``null_value``
    flag (``MessageMetadata`` field 25, ``SingleMessageMetadata`` field 9 in a batch)."""

    __slots__ = ()


NULL_VALUE = NullValue()


def _with_null_value(header: bytes) -> bytes:
    """``header`` (``u32 size | SingleMessageMetadata``) with ``null_value`` set."""
    meta = header[4:] + _NULL_VALUE_FIELD
    return _U32.pack(len(meta)) + meta


class PendingEntry:
    """An entry sent (or about to be) and waiting for its receipt; its bytes are kept until then, to be sent
    again after a reconnection."""

    __slots__ = ("sequence_id", "highest_sequence_id", "num_messages", "batched", "data", "callbacks",
                 "sent_at", "counted", "error")

    def __init__(self, sequence_id: int, highest_sequence_id: int, num_messages: int, batched: bool,
                 data: bytes, callbacks: list[Any], sent_at: float = 0.0) -> None:
        self.sequence_id = sequence_id
        self.highest_sequence_id = highest_sequence_id
        self.num_messages = num_messages
        """Messages the entry holds (as the broker is told)."""
        self.batched = batched
        self.data = data
        self.callbacks = callbacks
        self.sent_at = sent_at
        """When it was queued (``time.monotonic()``): its send timeout counts from then."""
        self.counted = num_messages
        """Messages it counts against ``max_pending_messages`` (a chunked message counts once, on its last
        chunk)."""
        self.error: Exception | None = None
        """Why it could not be built (encryption failed): its callbacks fail with it, nothing is sent."""


class BatchContainer:
    """Messages of the next entry. Not thread-safe: the producer holds its lock around every call."""

    schema_version = b""
    """The registry's version of the producer's schema, stamped on every entry (none without a schema)."""
    encrypt: Callable[[Any, bytes], bytes] | None = None
    """``encrypt(metadata, payload)``: sets the entry's encryption fields, returns the encrypted payload
    (:meth:`~connector.client.security.message_crypto.ProducerCrypto.encrypt`); applied after compression."""

    def __init__(self, max_messages: int, max_bytes: int,
                 compression: int = pulsar_api_pb2.NONE) -> None:
        self.max_messages = max(1, max_messages)
        self.max_bytes = max(1, max_bytes)
        self.compression = compression
        self.generation = 0
        """Bumped on every build, so a delayed flush can tell whether its batch is still open."""
        self.fast_max_count = self.max_messages - 1
        self.fast_max_bytes = self.max_bytes - FRAME_OVERHEAD
        """A payload-only message (of fewer than PLAIN_LIMIT bytes) may be appended without the checks
        of has_room/is_full while ``count < fast_max_count`` and ``size + len(content) <=
        fast_max_bytes``: it fits and leaves the batch not full (its header is shorter than
        FRAME_OVERHEAD)."""
        self._reset()

    def _reset(self) -> None:
        self.count = 0
        self.size = 0
        self.first_sequence_id = 0
        self.last_sequence_id = 0
        self.key: str | None = None
        self.parts: list[bytes] = []
        """Header and payload of each message, in order (appended to directly by the producer's
        payload-only fast path, which keeps count, size and last_sequence_id in step)."""
        self.callbacks: list[Any] = []
        self._first: tuple[Any, ...] = ()

    def __len__(self) -> int:
        return self.count

    def has_room(self, size: int) -> bool:
        """Whether a message of ``size`` bytes fits (an empty container takes any message)."""
        return self.count == 0 or (self.count < self.max_messages
                                   and self.size + size + FRAME_OVERHEAD <= self.max_bytes)

    def is_full(self) -> bool:
        return self.count >= self.max_messages or self.size >= self.max_bytes

    def add(self, content: bytes, sequence_id: int, callback: Any,
            properties: Mapping[str, str] | None = None, partition_key: str | None = None,
            ordering_key: bytes | None = None, event_timestamp: int = 0,
            deliver_at: int | None = None) -> None:
        n = self.count
        size = len(content)
        if n == 0:
            self.first_sequence_id = sequence_id
            self.key = partition_key
            self._first = (content, properties, partition_key, ordering_key, event_timestamp, deliver_at)
        if content is NULL_VALUE:
            explicit = None if sequence_id == self.first_sequence_id + n else sequence_id
            header = _with_null_value(
                b64_key_header(0, partition_key, ordering_key, properties, event_timestamp, explicit)
                if is_b64(partition_key) else
                codec.single_message_header(0, partition_key, ordering_key, properties, event_timestamp, explicit))
        elif sequence_id == self.first_sequence_id + n and partition_key is None and size < PLAIN_LIMIT \
                and ordering_key is None and not properties and not event_timestamp:
            header = PLAIN_HEADERS[size]  # payload only: a table lookup
        else:
            explicit = None if sequence_id == self.first_sequence_id + n else sequence_id
            if is_b64(partition_key):
                header = b64_key_header(size, partition_key, ordering_key, properties, event_timestamp,
                                        explicit)
            else:
                header = codec.single_message_header(size, partition_key, ordering_key, properties,
                                                     event_timestamp, explicit)
        self.parts.append(header)
        self.parts.append(content)
        self.callbacks.append(callback)
        self.count = n + 1
        self.size += len(header) + size
        self.last_sequence_id = sequence_id

    def build(self, producer_name: str, publish_time_ms: int,
              batch_key: tuple[str | None, bytes | None] | None = None) -> PendingEntry:
        """The entry for the collected messages; the container is empty afterwards.

        ``batch_key`` -- (partition key, ordering key) -- is written in the ``MessageMetadata`` of a
        batch of two or more (key-based batching); a single message always carries its own.
        """
        n = self.count
        meta = pulsar_api_pb2.MessageMetadata(producer_name=producer_name,
                                              sequence_id=self.first_sequence_id,
                                              publish_time=publish_time_ms)
        if n == 1:
            payload, properties, key, ordering_key, event_ts, deliver_at = self._first
            if properties:
                meta.properties.extend(pulsar_api_pb2.KeyValue(key=k, value=v)
                                       for k, v in properties.items())
            if key is not None:
                meta.partition_key = key
                if is_b64(key):
                    meta.partition_key_b64_encoded = True
            if ordering_key is not None:
                meta.ordering_key = ordering_key
            if event_ts:
                meta.event_time = event_ts
            if deliver_at is not None:
                meta.deliver_at_time = deliver_at
            if payload is NULL_VALUE:
                meta.null_value = True
                payload = b""
        else:
            payload = b"".join(self.parts)
            meta.num_messages_in_batch = n
            meta.highest_sequence_id = self.last_sequence_id
            if batch_key is not None:
                if batch_key[0] is not None:
                    meta.partition_key = batch_key[0]
                    if is_b64(batch_key[0]):
                        meta.partition_key_b64_encoded = True
                if batch_key[1] is not None:
                    meta.ordering_key = batch_key[1]
        if self.schema_version:
            meta.schema_version = self.schema_version
        if self.compression != pulsar_api_pb2.NONE:
            meta.compression = self.compression  # type: ignore[assignment]
            meta.uncompressed_size = len(payload)
            payload = compress_payload(self.compression, payload)
        error = None
        if self.encrypt is not None:
            try:
                payload = self.encrypt(meta, payload)
            except CryptoError as exc:
                error, payload = exc, b""
        entry = PendingEntry(self.first_sequence_id, self.last_sequence_id, n, n > 1,
                             codec.encode_entry(meta, payload), self.callbacks)
        entry.error = error
        self.generation += 1
        self._reset()
        return entry

    def take_callbacks(self) -> list[Callable[..., Any]]:
        """Empty the container without building (the producer failed); returns the callbacks."""
        callbacks = self.callbacks
        self.generation += 1
        self._reset()
        return callbacks
