"""Compression of a whole (batch) payload, as ``MessageMetadata.compression`` says.

LZ4 is the raw block format (no size prefix: ``uncompressed_size`` travels in the metadata, as Pulsar
does), ZLIB the zlib stream, ZSTD a zstd frame; SNAPPY needs python-snappy when installed.
"""
from __future__ import annotations

import zlib

from broker_core.errors import InvalidMessage
from broker_core.protocol.pulsar_api_pb2 import CompressionType as Compression


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
        import zstandard
        return zstandard.ZstdCompressor().compress(data)
    if compression == Compression.SNAPPY:
        return _snappy().compress(data)
    raise InvalidMessage(f"unknown compression type {compression}")


def decompress_payload(compression: int, data: bytes | memoryview, uncompressed_size: int) -> bytes:
    """Inverse of :func:`compress_payload`; ``uncompressed_size`` comes from the entry's metadata."""
    try:
        if compression == Compression.NONE:
            return bytes(data)
        if compression == Compression.LZ4:
            import lz4.block
            out = lz4.block.decompress(data, uncompressed_size=uncompressed_size)
        elif compression == Compression.ZLIB:
            out = zlib.decompress(data)
        elif compression == Compression.ZSTD:
            import zstandard
            out = zstandard.ZstdDecompressor().decompress(data, max_output_size=uncompressed_size)
        elif compression == Compression.SNAPPY:
            out = _snappy().uncompress(bytes(data))
        else:
            raise InvalidMessage(f"unknown compression type {compression}")
    except InvalidMessage:
        raise
    except Exception as exc:  # each codec raises its own error type
        raise InvalidMessage(f"cannot decompress a {Compression.Name(compression)} payload: "
                             f"{exc}") from None
    if len(out) != uncompressed_size:
        raise InvalidMessage(f"decompressed {len(out)} bytes, metadata says {uncompressed_size}")
    return out


def _snappy():  # type: ignore[no-untyped-def]
    try:
        import snappy  # type: ignore[import-not-found]
    except ImportError:
        raise InvalidMessage("SNAPPY compression needs the python-snappy package; "
                             "install it or use LZ4, ZLIB or ZSTD") from None
    return snappy
