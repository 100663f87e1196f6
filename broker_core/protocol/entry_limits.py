"""What an entry may claim about itself: the checks that keep one entry from costing a reader more than its
own bytes.

A ``MessageMetadata`` states counts and sizes (``num_messages_in_batch``, ``uncompressed_size``, the chunk
fields) that readers use to size loops and buffers. :func:`check_entry` verifies them against the bytes the
entry really holds and the broker's ``maxMessageSize``, so the broker stores no entry whose claims its
consumers would have to trust: the rules, each with the reason it holds for every honest producer (ours and
Pulsar's Java client), are in its docstring. Readers do not rely on the broker alone (old data, another
broker): batch splitting and decompression bound themselves with the same constants.

Pure functions of the metadata and sizes; no I/O.
"""
from __future__ import annotations

from broker_core.errors import InvalidMessage
from broker_core.protocol import pulsar_api_pb2

FRAME_PADDING = 10 * 1024
"""Bytes an entry may take above ``maxMessageSize`` for its own headers and metadata (Pulsar's frame
padding); the broker's topics allow ``maxMessageSize + FRAME_PADDING`` per entry."""

MIN_BATCH_FRAME = 4 + 2
"""The fewest bytes one message of a batch can take: its u32 size, then the smallest valid
``SingleMessageMetadata`` -- only the required ``payload_size`` (tag 0x18, varint 0: 2 bytes) -- and an empty
payload. A batch of ``n`` messages is therefore at least ``n * MIN_BATCH_FRAME`` bytes."""

MAX_UNCOMPRESSED_SIZE = (64 << 20) + FRAME_PADDING
"""The largest ``uncompressed_size`` a reader decompresses by default (64 MiB + padding): no broker stores a
frame above 64 MiB (the storage's hard cap), so no honest batch decompresses to more, and a single message
compressed to fit ``maxMessageSize`` is refused above it rather than let a bomb take a reader's memory.
Readers may pass a tighter cap; the broker refuses to store what readers would refuse."""

_COMPRESSION_FIELD = pulsar_api_pb2.MessageMetadata.DESCRIPTOR.fields_by_name["compression"].number
_unknown_fields = None
"""``google.protobuf.unknown_fields``, imported at the first check (not at start), once (not per SEND)."""


def unknown_compression(metadata: pulsar_api_pb2.MessageMetadata) -> int | None:
    """The compression enum value of ``metadata`` when this code does not know it (protobuf then reads
    ``compression`` as NONE and keeps the number among the unknown fields), else None."""
    global _unknown_fields
    try:
        if _unknown_fields is None:
            from google.protobuf import unknown_fields as _unknown_fields
        for field in _unknown_fields.UnknownFieldSet(metadata):
            if field.field_number == _COMPRESSION_FIELD:
                return int(field.data)
    except (ImportError, NotImplementedError):  # an older protobuf runtime cannot tell
        pass
    return None


def check_entry(metadata: pulsar_api_pb2.MessageMetadata, payload_size: int, max_message_size: int) -> int:
    """The number of messages of an entry whose metadata is ``metadata`` and whose payload (the bytes after
    the metadata) is ``payload_size`` bytes; raises :class:`InvalidMessage` saying which claim is false.

    Rules (``max_entry = max_message_size + FRAME_PADDING``):

    1. ``num_messages_in_batch``, when present, is >= 1 (absent: one message).
    2. A compressed entry (any codec, including one this code does not know) states its
       ``uncompressed_size``: readers size their output buffer by it.
    3. A batch holds at least ``num_messages_in_batch * MIN_BATCH_FRAME`` bytes once decompressed: its
       payload when uncompressed, its ``uncompressed_size`` when compressed.
    4. A compressed batch decompresses to at most ``max_entry`` bytes: producers fill a batch up to
       ``maxMessageSize`` before compressing it (as Pulsar's clients do).
    5. A compressed single message or chunked message decompresses to at most
       :data:`MAX_UNCOMPRESSED_SIZE`: it may legitimately exceed ``maxMessageSize`` (a producer with
       chunking on sends a message as one entry when compression made it fit), but readers refuse more.
    6. Chunk fields, when present, are consistent: ``0 <= chunk_id < num_chunks_from_msg``, a chunk is
       never a batch, and ``payload_size <= total_chunk_msg_size <= num_chunks_from_msg * max_entry``
       (each chunk is one entry of at most ``max_entry`` bytes, so no honest total is larger).
    """
    max_entry = max_message_size + FRAME_PADDING
    batched = metadata.HasField("num_messages_in_batch")
    count = metadata.num_messages_in_batch if batched else 1
    if count < 1:
        raise InvalidMessage(f"num_messages_in_batch is {count}: a batch holds at least one message")
    _check_chunk_fields(metadata, payload_size, max_entry, batched)
    unknown = unknown_compression(metadata)
    compression = metadata.compression
    if compression == pulsar_api_pb2.NONE and unknown is None:
        uncompressed = payload_size
    else:
        name = pulsar_api_pb2.CompressionType.Name(compression) if unknown is None else f"type {unknown}"
        if not metadata.HasField("uncompressed_size"):
            raise InvalidMessage(f"a {name}-compressed entry without uncompressed_size: readers cannot size "
                                 "its output; set uncompressed_size to the payload's size before compression")
        uncompressed = metadata.uncompressed_size
        limit = max_entry if batched else MAX_UNCOMPRESSED_SIZE
        if uncompressed > limit:
            what = (f"maxMessageSize={max_message_size} (+{FRAME_PADDING} bytes of framing)" if batched
                    else f"the {MAX_UNCOMPRESSED_SIZE} bytes readers decompress")
            raise InvalidMessage(f"the {name}-compressed {'batch' if batched else 'message'} says it "
                                 f"decompresses to {uncompressed} bytes, above {what}; send smaller "
                                 f"{'batches' if batched else 'messages'}")
    if batched and count > uncompressed // MIN_BATCH_FRAME:
        raise InvalidMessage(f"num_messages_in_batch is {count} but the batch holds {uncompressed} bytes, room "
                             f"for at most {uncompressed // MIN_BATCH_FRAME} messages")
    return count


def _check_chunk_fields(metadata: pulsar_api_pb2.MessageMetadata, payload_size: int, max_entry: int,
                        batched: bool) -> None:
    """Rule 6."""
    has = metadata.HasField
    if not (has("num_chunks_from_msg") or has("chunk_id") or has("total_chunk_msg_size")):
        return
    num_chunks, chunk_id, total = (metadata.num_chunks_from_msg, metadata.chunk_id,
                                   metadata.total_chunk_msg_size)
    if not 0 <= chunk_id < num_chunks:
        raise InvalidMessage(f"chunk_id {chunk_id} is outside 0..num_chunks_from_msg-1 "
                             f"(num_chunks_from_msg={num_chunks})")
    if num_chunks > 1 and batched:
        raise InvalidMessage(f"a chunk (chunk {chunk_id} of {num_chunks}) that is also a batch of "
                             f"{metadata.num_messages_in_batch}: chunking needs batching off")
    if not payload_size <= total <= num_chunks * max_entry:
        raise InvalidMessage(f"total_chunk_msg_size {total} is impossible for chunk {chunk_id} of {num_chunks} "
                             f"holding {payload_size} bytes: it is at least the chunk's own payload and at "
                             f"most {num_chunks} entries of {max_entry} bytes")
