"""Chunking on the producer side (``chunking_enabled=True``): one large message, several entries.

A message whose payload -- compressed first, as a whole, with the producer's codec -- exceeds the
broker's ``maxMessageSize`` (``ProducerOpened.max_message_size``) is split into ``n`` chunks. Each chunk
is one unbatched entry whose ``MessageMetadata`` repeats the message's own fields and adds the chunk
fields::

    producer_name, sequence_id, publish_time      the same in every chunk (one message, one id)
    uuid                  "{producer_name}-{sequence_id}": what the consumer groups chunks by
    chunk_id              0 .. n-1
    num_chunks_from_msg   n
    total_chunk_msg_size  size of the whole (compressed) payload
    compression, uncompressed_size                of the whole payload: the consumer concatenates the
                                                  chunks, then decompresses once
    properties, partition_key, ordering_key, event_time, deliver_at_time    copied into every chunk

The chunk payload size is ``maxMessageSize`` minus the serialized size of the chunk metadata (measured
with the largest values the chunk fields can take), so metadata + payload of every chunk stays within
the broker's limit, as Pulsar's Java client computes it. Worked example: ``maxMessageSize`` 1,000 bytes,
metadata 60 bytes, a 2,000-byte payload -> chunks of 940, 940 and 120 bytes (``n = 3``).

Chunking needs batching off (a chunk is never part of a batch) and a persistent topic; the client
checks both when the producer is created.

With encryption, Pulsar's order: the message is compressed whole, split, and each chunk encrypted on its own
(its own IV and ``encryption_keys``); ``total_chunk_msg_size`` and the chunk sizes are the unencrypted ones,
and each chunk leaves room for what encryption adds (the GCM tag, the IV, the wrapped keys).
"""
from __future__ import annotations

from typing import Any, Callable, Mapping

from broker_core import errors
from broker_core.protocol import codec, pulsar_api_pb2

from connector.client.key_bytes import is_b64


def chunk_uuid(producer_name: str, sequence_id: int) -> str:
    """The id every chunk of one message carries (Pulsar's format)."""
    return f"{producer_name}-{sequence_id}"


def message_metadata(producer_name: str, sequence_id: int, publish_time_ms: int, compression: int,
                     uncompressed_size: int, properties: Mapping[str, str] | None,
                     partition_key: str | None, ordering_key: bytes | None, event_timestamp: int,
                     deliver_at: int | None) -> pulsar_api_pb2.MessageMetadata:
    """The ``MessageMetadata`` of one unbatched message (the fields every chunk repeats)."""
    meta = pulsar_api_pb2.MessageMetadata(producer_name=producer_name, sequence_id=sequence_id,
                                          publish_time=publish_time_ms)
    if properties:
        meta.properties.extend(pulsar_api_pb2.KeyValue(key=k, value=v) for k, v in properties.items())
    if partition_key is not None:
        meta.partition_key = partition_key
        if is_b64(partition_key):
            meta.partition_key_b64_encoded = True
    if ordering_key is not None:
        meta.ordering_key = ordering_key
    if event_timestamp:
        meta.event_time = event_timestamp
    if deliver_at is not None:
        meta.deliver_at_time = deliver_at
    if compression != pulsar_api_pb2.NONE:
        meta.compression = compression  # type: ignore[assignment]
        meta.uncompressed_size = uncompressed_size
    return meta


def chunk_payload_size(meta: pulsar_api_pb2.MessageMetadata, total_size: int,
                       max_message_size: int, overhead: int = 0) -> int:
    """Payload bytes per chunk: ``max_message_size`` minus the largest chunk metadata.

    ``meta`` is the message's metadata without chunk fields (left unchanged). Raises
    :class:`~broker_core.errors.MessageTooBig` when the metadata alone leaves no room.
    """
    probe = pulsar_api_pb2.MessageMetadata()
    probe.CopyFrom(meta)
    # Chunk id and count are below total_size: their varints are at most as long as its.
    probe.uuid = chunk_uuid(meta.producer_name, meta.sequence_id)
    probe.chunk_id = probe.num_chunks_from_msg = probe.total_chunk_msg_size = total_size
    size = max_message_size - probe.ByteSize() - overhead
    if size <= 0:
        raise errors.MessageTooBig(
            f"the message metadata ({probe.ByteSize()} bytes) leaves no room for a chunk within "
            f"maxMessageSize={max_message_size}; send fewer or shorter properties and keys",
            size=probe.ByteSize(), limit=max_message_size)
    return size


def build_entries(meta: pulsar_api_pb2.MessageMetadata, payload: bytes, max_message_size: int,
                  encrypt: Callable[[Any, bytes], bytes] | None = None, overhead: int = 0) -> list[bytes]:
    """The entries of one message: itself when ``payload`` (already compressed) fits within
    ``max_message_size``, else its chunks in order. ``meta`` is filled in place for the chunks. ``encrypt``
    (``ProducerCrypto.encrypt``) encrypts each entry, which grows by at most ``overhead`` bytes."""
    total = len(payload)
    if total + overhead <= max_message_size:
        return [codec.encode_entry(meta, encrypt(meta, payload) if encrypt is not None else payload)]
    step = chunk_payload_size(meta, total, max_message_size, overhead)
    num_chunks = -(-total // step)
    meta.uuid = chunk_uuid(meta.producer_name, meta.sequence_id)
    meta.num_chunks_from_msg = num_chunks
    meta.total_chunk_msg_size = total
    entries = []
    for chunk_id in range(num_chunks):
        meta.chunk_id = chunk_id
        chunk = payload[chunk_id * step:(chunk_id + 1) * step]
        entries.append(codec.encode_entry(meta, encrypt(meta, chunk) if encrypt is not None else chunk))
    return entries
