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
reader may trust), and decompression checks the output against it. It is also the most a decompression may
allocate: an entry is a few bytes an attacker controls, and a 1 MiB ZLIB stream can inflate to 1 GiB, so
every codec refuses, before inflating, output above the metadata's size or above the reader's cap.
"""
from __future__ import annotations

import threading
import zlib

from broker_core.errors import InvalidMessage
from broker_core.protocol.entry_limits import MAX_UNCOMPRESSED_SIZE
from broker_core.protocol.pulsar_api_pb2 import CompressionType as Compression

_PIECE = 1 << 20
"""Output bytes inflated per step by the streaming decompressors."""

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


def decompress_payload(compression: int, data: bytes | memoryview, uncompressed_size: int, *,
                       max_size: int = MAX_UNCOMPRESSED_SIZE) -> bytes:
    """Inverse of :func:`compress_payload`; ``uncompressed_size`` comes from the entry's metadata.

    Never allocates more than ``max_size`` bytes (default :data:`MAX_UNCOMPRESSED_SIZE`; a reader that
    knows the broker's ``maxMessageSize`` may pass a tighter one): a larger ``uncompressed_size`` is refused
    before decompressing, ZLIB and ZSTD stop at ``uncompressed_size + 1`` bytes of output, a ZSTD frame or
    SNAPPY block stating another size than the metadata is refused before decompressing.

    Raises :class:`InvalidMessage` naming the codec for an unknown codec, data that does not
    decompress, or output of another size than the metadata says.
    """
    if compression == Compression.NONE:
        return bytes(data)
    try:
        name = Compression.Name(compression)
    except ValueError:
        raise InvalidMessage(f"unknown compression type {compression}") from None
    if not 0 <= uncompressed_size <= max_size:
        raise InvalidMessage(f"the metadata says a {name} payload decompresses to {uncompressed_size} bytes, "
                             f"above the {max_size} bytes this reader accepts: the entry is corrupt or was "
                             "written by a producer that ignores maxMessageSize")
    try:
        out = _DECOMPRESS[compression](data, uncompressed_size)
    except InvalidMessage as exc:
        raise InvalidMessage(f"cannot decompress a {name} payload: {exc.message}") from None
    except Exception as exc:  # each codec raises its own error type
        raise InvalidMessage(f"cannot decompress a {name} payload: {exc}") from None
    if len(out) != uncompressed_size:
        raise InvalidMessage(f"decompressed {len(out)} bytes of a {name} payload, metadata says "
                             f"{uncompressed_size}")
    return out


def _lz4(data: bytes | memoryview, size: int) -> bytes:
    import lz4.block
    # A raw block states no size: the output buffer is the metadata's, already bounded.
    return lz4.block.decompress(data, uncompressed_size=size)


def _zlib(data: bytes | memoryview, size: int) -> bytes:
    # Inflated piece by piece, to one byte past the promise (zlib's own max_length output is one buffer
    # built in blocks, then copied: twice the memory).
    stream = zlib.decompressobj()
    pieces: list[bytes] = []
    total = 0
    tail: bytes | memoryview = data
    while total <= size and not stream.eof:
        before = len(tail)
        piece = stream.decompress(tail, min(size + 1 - total, _PIECE))
        tail = stream.unconsumed_tail
        if not piece and len(tail) == before:
            raise InvalidMessage("the zlib stream is truncated")
        pieces.append(piece)
        total += len(piece)
    return _joined(pieces, total, size)


def _zstd(data: bytes | memoryview, size: int) -> bytes:
    import zstandard
    stated = zstandard.frame_content_size(data)
    if stated == size:  # the decompressor allocates what the frame states: here, no more than allowed
        return _zstd_decompressor().decompress(data)
    if stated >= 0:  # -1: the frame does not state its size
        raise InvalidMessage(f"its frame states {stated} bytes, the metadata {size}")
    pieces: list[bytes] = []
    total = 0
    with _zstd_decompressor().stream_reader(data) as reader:
        while total <= size:
            piece = reader.read(min(size + 1 - total, _PIECE))
            if not piece:
                break
            pieces.append(piece)
            total += len(piece)
    return _joined(pieces, total, size)


def _joined(pieces: list[bytes], total: int, size: int) -> bytes:
    if total > size:  # before joining: a bomb is refused holding the promised size, not twice it
        raise InvalidMessage(f"it inflates to more than the {size} bytes its metadata says")
    return pieces[0] if len(pieces) == 1 else b"".join(pieces)


def _snappy(data: bytes | memoryview, size: int) -> bytes:
    import cramjam
    stated = cramjam.snappy.decompress_raw_len(data)  # the block's own length preamble
    if stated != size:
        raise InvalidMessage(f"its block states {stated} bytes, the metadata {size}")
    return bytes(cramjam.snappy.decompress_raw(data))


_DECOMPRESS = {Compression.LZ4: _lz4, Compression.ZLIB: _zlib, Compression.ZSTD: _zstd,
               Compression.SNAPPY: _snappy}


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
