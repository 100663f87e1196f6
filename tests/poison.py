"""Poison payloads and entries for the tests: decompression bombs built in a few KiB of work, a batch
claiming 2**31-1 messages in one byte."""
from __future__ import annotations

import struct
import time
import zlib

from broker_core.protocol import codec, pulsar_api_pb2

MiB = 1 << 20
INT32_MAX = 2**31 - 1


def zlib_bomb(mib: int) -> bytes:
    """A zlib stream of zeros inflating to ``mib`` MiB, about 1 KiB per MiB: one self-contained deflate block
    (a full flush resets the window) repeated, then an empty final block and the Adler-32 of the zeros."""
    raw = zlib.compressobj(9, zlib.DEFLATED, -15)
    block = raw.compress(bytes(MiB)) + raw.flush(zlib.Z_FULL_FLUSH)
    final = zlib.compressobj(9, zlib.DEFLATED, -15).flush()
    adler = ((mib * MiB) % 65521) << 16 | 1  # over zeros, Adler-32's sum A stays 1 and B counts the bytes
    return b"\x78\xda" + block * mib + final + struct.pack(">I", adler)


def zstd_zeros(mib: int, *, states_size: bool = True) -> bytes:
    """A zstd frame of ``mib`` MiB of zeros, compressed piece by piece (the zeros never exist at once)."""
    import zstandard
    stream = zstandard.ZstdCompressor(write_content_size=states_size).compressobj(size=mib * MiB)
    zeros = bytes(MiB)
    return b"".join([stream.compress(zeros) for _ in range(mib)] + [stream.flush()])


def metadata(sequence_id: int, **fields: object) -> pulsar_api_pb2.MessageMetadata:
    return pulsar_api_pb2.MessageMetadata(producer_name="raw", sequence_id=sequence_id,
                                          publish_time=int(time.time() * 1000), **fields)


def plain(sequence_id: int, payload: bytes) -> bytes:
    """The entry of one uncompressed message."""
    return codec.encode_entry(metadata(sequence_id), payload)


def zlib_bomb_entry(sequence_id: int, claims: int) -> bytes:
    """A batch of one message whose ZLIB payload (about 2 MiB) inflates to 2 GiB but claims ``claims``."""
    return codec.encode_entry(metadata(sequence_id, compression=pulsar_api_pb2.ZLIB, uncompressed_size=claims,
                                       num_messages_in_batch=1), zlib_bomb(2048))


def zstd_lying_frame_entry(sequence_id: int, claims: int) -> bytes:
    """A ZSTD message whose frame header states 256 MiB, its metadata ``claims``."""
    return codec.encode_entry(metadata(sequence_id, compression=pulsar_api_pb2.ZSTD, uncompressed_size=claims),
                              zstd_zeros(256))


def huge_count_entry(sequence_id: int) -> bytes:
    """One byte of payload claiming INT32_MAX batched messages."""
    return codec.encode_entry(metadata(sequence_id, num_messages_in_batch=INT32_MAX), b"x")
