"""Frames of Pulsar's binary protocol: cutting a byte stream into commands, and writing commands (the broker's
front end, :mod:`broker_core.frontends.pulsar`, and the client's binary transport, :mod:`connector.client.transport.binary`,
share it).

Every frame (all integers big-endian)::

    u32 totalSize | u32 commandSize | BaseCommand (commandSize bytes) | [ payload ]
                  \\_________________ totalSize bytes __________________/

A payload follows the command of SEND and MESSAGE only; it is an entry in Pulsar's format
(``0x0e01 | CRC32C | metadataSize | MessageMetadata | payload``, see :mod:`broker_core.protocol.codec`),
so a SEND's payload is stored as it came and a stored entry is a MESSAGE's payload as it is.

:class:`FrameReader` never trusts a size before checking it: ``totalSize`` is bounded by the broker's
``maxMessageSize`` plus :data:`~broker_core.protocol.entry_limits.FRAME_PADDING` before anything is
buffered for it, ``commandSize`` by ``totalSize``. A bad size is :class:`FrameError`: the connection's
stream cannot be cut into frames any more, so it is closed.

Before ``CONNECT`` has been answered, a connection's frames are bounded by :data:`PRE_CONNECT_MAX_FRAME`
instead (:meth:`FrameReader.limit`): a client that has not shown who it is can make the broker hold
64 KiB for it, not ``maxMessageSize``.
"""
from __future__ import annotations

import struct
from typing import Iterator

from google.protobuf.message import DecodeError

from broker_core.protocol import pulsar_commands_pb2 as cmd

FRAME_HEADER = struct.Struct(">II")
"""totalSize (u32: bytes after this field) | commandSize (u32: bytes of the BaseCommand)."""
TOTAL_SIZE = struct.Struct(">I")

Command = cmd.BaseCommand
Type = cmd.BaseCommand.Type

PRE_CONNECT_MAX_FRAME = 64 * 1024
"""The largest frame of a connection before ``CONNECTED``: ``CONNECT`` and ``AUTH_RESPONSE`` carry a client
version, a few names and a credential -- a JWT or a basic-auth pair is a few KB, a Kerberos ticket (SASL)
at most 48,000 bytes (Windows' ``MaxTokenSize``), a TLS client's certificate is in the handshake, not here.
64 KiB holds the largest with room to spare, and 1,000 unauthenticated connections can then make the broker
buffer 64 MiB, not the 5 GiB that ``maxMessageSize`` would allow."""


class FrameError(Exception):
    """The byte stream is not Pulsar frames (a size out of bounds, a command that does not parse): the
    connection is closed; ``reason`` is logged."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class FrameSizeError(FrameError):
    """A ``totalSize`` out of the reader's bounds: over its ``max_frame``, or under the 4 bytes of a ``commandSize``."""


class FrameReader:
    """Buffers a connection's bytes and yields ``(command, payload)`` for each complete frame.

    ``max_frame`` bounds ``totalSize``; ``bound`` says what it is, for the error. ``payload`` is a
    memoryview of the frame's bytes after the command (empty for commands without payload); it stays valid
    after the next :meth:`feed`.
    """

    __slots__ = ("_buf", "_max_frame", "_bound", "_need")

    def __init__(self, max_frame: int, bound: str = "maxMessageSize plus framing") -> None:
        self._buf = bytearray()
        self._max_frame = max_frame
        self._bound = bound
        self._need = 0  # bytes the buffered partial frame needs in all (0: unknown yet)

    def limit(self, max_frame: int, bound: str) -> None:
        """Bound the frames from now on by ``max_frame`` (the frames of a batch being fed included: a
        handler of ``CONNECT`` raises the bound for the frames after it)."""
        self._max_frame = max_frame
        self._bound = bound

    @property
    def buffered(self) -> int:
        return len(self._buf)

    def feed(self, data: bytes) -> Iterator[tuple[cmd.BaseCommand, memoryview]]:
        buf = self._buf
        if buf:
            buf += data
            if len(buf) < self._need:  # a large frame arriving in pieces: no re-scan, no copy but this one
                return
            # the frames' views are of this buffer, which nothing writes again (a new one takes the rest):
            # no second copy of a frame that came in pieces
            view = memoryview(buf).toreadonly()
            self._buf = bytearray()
        else:
            view = memoryview(data)
        self._need = 0
        pos = 0
        end = len(view)
        while end - pos >= 4:
            (total,) = TOTAL_SIZE.unpack_from(view, pos)
            if total > self._max_frame or total < 4:
                raise FrameSizeError(f"frame of {total} bytes: frames hold 4 to {self._max_frame} bytes"
                                    f" ({self._bound})")
            if end - pos - 4 < total:
                self._need = total + 4
                break
            (size,) = TOTAL_SIZE.unpack_from(view, pos + 4)
            if size > total - 4:
                raise FrameError(f"commandSize {size} exceeds the frame's {total - 4} bytes")
            start = pos + 8
            command = cmd.BaseCommand()
            try:
                command.ParseFromString(view[start:start + size])
            except DecodeError as exc:
                raise FrameError(f"command does not parse ({exc})") from None
            frame_end = pos + 4 + total
            yield command, view[start + size:frame_end]
            pos = frame_end
        if pos < end:
            self._buf += view[pos:]


def encode(command: cmd.BaseCommand) -> bytes:
    """A frame without payload."""
    body = command.SerializeToString()
    return FRAME_HEADER.pack(len(body) + 4, len(body)) + body


def header_with_payload(command: cmd.BaseCommand, payload_size: int) -> bytes:
    """The frame's first part when ``payload_size`` bytes of payload follow (MESSAGE)."""
    body = command.SerializeToString()
    return FRAME_HEADER.pack(len(body) + 4 + payload_size, len(body)) + body
