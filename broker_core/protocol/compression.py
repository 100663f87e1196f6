"""Compression of a whole (batch or chunked-message) payload, as ``MessageMetadata.compression`` says.

The formats are the ones Pulsar's Java client writes, so entries stay interchangeable with it:

======  ======================================  ==============================================
codec   format                                  library
======  ======================================  ==============================================
LZ4     raw block, no size prefix               ``lz4`` (``lz4.block``)
ZLIB    zlib stream (RFC 1950)                  ``zlib`` (standard library)
ZSTD    one zstd frame                          ``zstandard``
SNAPPY  raw block (not the framed format)       ``cramjam`` (``cramjam.snappy.*_raw``)
======  ======================================  ==============================================

``uncompressed_size`` travels in the metadata (LZ4 and SNAPPY raw blocks do not carry it in a form the
reader may trust), and decompression checks the output against it.
"""
from __future__ import annotations

import threading
import zlib

from broker_core.errors import InvalidMessage
from broker_core.protocol.pulsar_api_pb2 import CompressionType as Compression

_local = threading.local()
"""Per-thread zstd (de)compressor: a ZstdCompressor costs ~13 µs to make and is not thread-safe."""


def compress_payload(compression: int, data: bytes) -> bytes:
    """Compress with the codec ``compression`` (``CompressionType`` value); NONE returns ``data``."""
    if compression == Compression.NONE:
        return data
    if compression == Compression.LZ4:
        import lz4.block
        return lz4.block.compress(data, store_size=False)
    if compression == Compression.ZLIB:
        return zlib.compress(data)
    if compression == Compression.ZSTD:
        return _zstd_compressor().compress(data)
    if compression == Compression.SNAPPY:
        import cramjam
        return bytes(cramjam.snappy.compress_raw(data))
    raise InvalidMessage(f"unknown compression type {compression}")


def decompress_payload(compression: int, data: bytes | memoryview, uncompressed_size: int) -> bytes:
    """Inverse of :func:`compress_payload`; ``uncompressed_size`` comes from the entry's metadata.

    Raises :class:`InvalidMessage` naming the codec for an unknown codec, data that does not
    decompress, or output of another size than the metadata says.
    """
    try:
        if compression == Compression.NONE:
            return bytes(data)
        if compression == Compression.LZ4:
            import lz4.block
            out = lz4.block.decompress(data, uncompressed_size=uncompressed_size)
        elif compression == Compression.ZLIB:
            out = zlib.decompress(data)
        elif compression == Compression.ZSTD:
            out = _zstd_decompressor().decompress(data, max_output_size=uncompressed_size)
        elif compression == Compression.SNAPPY:
            import cramjam
            out = bytes(cramjam.snappy.decompress_raw(data))
        else:
            raise InvalidMessage(f"unknown compression type {compression}")
    except InvalidMessage:
        raise
    except Exception as exc:  # each codec raises its own error type
        raise InvalidMessage(f"cannot decompress a {Compression.Name(compression)} payload: "
                             f"{exc}") from None
    if len(out) != uncompressed_size:
        raise InvalidMessage(f"decompressed {len(out)} bytes of a {Compression.Name(compression)} "
                             f"payload, metadata says {uncompressed_size}")
    return out


def _zstd_compressor():  # type: ignore[no-untyped-def]
    try:
        return _local.zstd_c
    except AttributeError:
        import zstandard
        _local.zstd_c = zstandard.ZstdCompressor()
        return _local.zstd_c


def _zstd_decompressor():  # type: ignore[no-untyped-def]
    try:
        return _local.zstd_d
    except AttributeError:
        import zstandard
        _local.zstd_d = zstandard.ZstdDecompressor()
        return _local.zstd_d
