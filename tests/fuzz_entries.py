"""Hypothesis strategies for the numbers and entries of the wire fuzz test (tests/wire_fuzz.py): each
protobuf integer type's edges, and Pulsar entries -- honest ones (plain, batched, compressed, chunked) and
lying ones (``num_messages_in_batch``, ``uncompressed_size``, the codec, the chunk fields), flipped or cut,
their CRC fixed up afterwards or left stale."""
from __future__ import annotations

import time
from typing import Any, Callable

import google_crc32c
from google.protobuf.descriptor import FieldDescriptor
from hypothesis import strategies as st

from broker_core.protocol import codec, compression, pulsar_api_pb2

# ---------------------------------------------------------------------------------------------------
# Numbers: each protobuf integer type's edges, small values (real offsets and counts) and the rest.
INTEGER_EDGES = {
    FieldDescriptor.TYPE_INT32: (-2**31, 2**31 - 1),
    FieldDescriptor.TYPE_INT64: (-2**63, 2**63 - 1),
    FieldDescriptor.TYPE_UINT32: (0, 2**32 - 1),
    FieldDescriptor.TYPE_UINT64: (0, 2**64 - 1),
}


def integers_of(field_type: int) -> st.SearchStrategy[int]:
    low, high = INTEGER_EDGES[field_type]
    edges = sorted({v for v in (low, high, 0, 1, -1, 2**31 - 1, 2**32 - 1, 2**53, 2**63 - 1) if low <= v <= high})
    return st.one_of(st.sampled_from(edges), st.integers(max(low, -5), 300), st.integers(low, high))


int32s, int64s = integers_of(FieldDescriptor.TYPE_INT32), integers_of(FieldDescriptor.TYPE_INT64)
uint32s, uint64s = integers_of(FieldDescriptor.TYPE_UINT32), integers_of(FieldDescriptor.TYPE_UINT64)


def millis() -> st.SearchStrategy[int]:
    now = int(time.time() * 1000)
    return st.one_of(st.sampled_from((0, 1, now, now + 10**9, 2**63 - 1, 2**64 - 1)), st.integers(0, 2**64 - 1))


# ---------------------------------------------------------------------------------------------------
# Entries.
CODECS = (pulsar_api_pb2.NONE, pulsar_api_pb2.LZ4, pulsar_api_pb2.ZLIB, pulsar_api_pb2.ZSTD, pulsar_api_pb2.SNAPPY)
_COMPRESSION_TAG = b"\x40"  # MessageMetadata.compression: field 8, varint


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def fix_crc(entry: bytes) -> bytes:
    """``entry`` with its CRC32C recomputed over whatever follows it (a mutation then reaches the decoder)."""
    if len(entry) < 6:
        return entry
    return entry[:2] + google_crc32c.value(entry[6:]).to_bytes(4, "big") + entry[6:]


@st.composite
def valid_entries(draw: Callable) -> tuple[pulsar_api_pb2.MessageMetadata, bytes]:
    """(metadata, payload) of an entry a real producer could send: one message or a batch, maybe compressed,
    maybe one chunk of a larger message."""
    meta = pulsar_api_pb2.MessageMetadata(producer_name=draw(st.sampled_from(("fz-p", "raw"))),
                                          sequence_id=draw(st.integers(0, 1000)),
                                          publish_time=int(time.time() * 1000))
    if draw(st.booleans()):
        meta.partition_key = draw(st.sampled_from(("k1", "k2", "")))
    if draw(st.integers(0, 9)) == 0:
        meta.deliver_at_time = draw(st.sampled_from((0, -1, int(time.time() * 1000) + 500, 2**63 - 1)))
    if draw(st.booleans()):
        messages = draw(st.lists(st.binary(max_size=64), min_size=1, max_size=8))
        meta.num_messages_in_batch = len(messages)
        payload = codec.encode_batch(messages)
    else:
        payload = draw(st.binary(max_size=256))
        if draw(st.integers(0, 4)) == 0:
            meta.uuid = "fz-chunked"
            meta.num_chunks_from_msg = draw(st.integers(1, 4))
            meta.chunk_id = draw(st.integers(0, meta.num_chunks_from_msg - 1))
    codec_id = draw(st.sampled_from(CODECS))
    if codec_id != pulsar_api_pb2.NONE:
        meta.compression = codec_id
        meta.uncompressed_size = len(payload)
        payload = compression.compress_payload(codec_id, payload)
    if meta.HasField("num_chunks_from_msg"):
        meta.total_chunk_msg_size = len(payload) * meta.num_chunks_from_msg
    return meta, payload


_LIES: dict[str, st.SearchStrategy[Any]] = {
    "num_messages_in_batch": int32s, "uncompressed_size": uint32s, "compression": st.sampled_from(CODECS),
    "num_chunks_from_msg": int32s, "chunk_id": int32s, "total_chunk_msg_size": int32s, "deliver_at_time": int64s,
    "sequence_id": uint64s, "highest_sequence_id": uint64s, "publish_time": uint64s, "event_time": uint64s,
    "marker_type": int32s, "uuid": st.text(max_size=8),
}


@st.composite
def lying_entries(draw: Callable) -> bytes:
    """A valid entry whose metadata then lies (counts, sizes, codec, chunk fields), perhaps with an unknown
    codec number, flipped or cut bytes, and a CRC recomputed or left stale."""
    meta, payload = draw(valid_entries())
    for field in draw(st.lists(st.sampled_from(sorted(_LIES)), max_size=3, unique=True)):
        setattr(meta, field, draw(_LIES[field]))
    raw_meta = meta.SerializeToString()
    if draw(st.integers(0, 5)) == 0:  # a codec this broker does not know: kept among the unknown fields
        raw_meta += _COMPRESSION_TAG + _varint(draw(st.sampled_from((5, 6, 99, 2**31 - 1))))
    entry = bytearray(codec.ENTRY_HEADER.pack(codec.MAGIC_CRC32C, 0, len(raw_meta)) + raw_meta + payload)
    for _ in range(draw(st.integers(0, 3))):
        position = draw(st.integers(0, len(entry) - 1))
        entry[position] ^= draw(st.integers(1, 255))
    if draw(st.integers(0, 4)) == 0:
        entry = entry[:draw(st.integers(0, len(entry)))]
    if draw(st.integers(0, 4)) == 0:
        entry += draw(st.binary(min_size=1, max_size=64))
    entry = bytes(entry)
    return entry if draw(st.integers(0, 4)) == 0 else fix_crc(entry)


def _honest(pair: tuple[pulsar_api_pb2.MessageMetadata, bytes]) -> bytes:
    return codec.encode_entry(*pair)


entry_data = st.one_of(
    valid_entries().map(_honest), valid_entries().map(_honest),
    lying_entries(), lying_entries(),
    st.binary(max_size=128),
    st.sampled_from((b"", b"\x0e\x01", b"\x0e\x02\xff\xff\xff\xff", b"\x0e\x01" + b"\xff" * 8)),
    st.sampled_from((70_000, 200_000)).map(lambda n: codec.encode_entry(
        pulsar_api_pb2.MessageMetadata(producer_name="fz-big", sequence_id=1, publish_time=1), b"z" * n)),
)
"""``SendEntry.data``: honest entries, lying ones, random bytes, and entries above a 64 KiB maxMessageSize."""
