"""The client's side of Pulsar's binary framing: frames out, frames in, and the typed error of an answer.

Frames are cut and written by :mod:`broker_core.protocol.frames` (the broker's front end uses the same
code); this module adds what only a client needs:

- :func:`payload_frame`: the parts of a SEND frame. A producer's entry (``PendingEntry.data``, made by
  :func:`broker_core.protocol.codec.entries.encode_entry`) already starts with ``0x0e01 | CRC32C``: it goes
  out as it is. Bytes that start at ``metadataSize`` instead get the magic and the CRC32C here (a
  ``metadataSize`` cannot start with ``0x0e01``: that would be a 235 MB metadata, far over any frame bound).
- :class:`FrameReader` (re-exported): yields ``(BaseCommand, payload)`` per complete frame of a byte
  stream, however it was split, bounded by the broker's ``maxMessageSize`` plus padding; a bad size or an
  unparseable command is :class:`FrameError` (the connection is then unusable and closes).
- :func:`error_of`: the typed :mod:`broker_core.errors` error of a ``ServerError`` code, and
  :func:`answer_error`: the error an answer carries (``ERROR``, or a ``*_RESPONSE`` with an error field).
"""
from __future__ import annotations

import struct

import google_crc32c

from broker_core import errors
from broker_core.protocol import pulsar_commands_pb2 as cmd
from broker_core.protocol.entry_limits import FRAME_PADDING
from broker_core.protocol.frames import FRAME_HEADER, FrameError, FrameReader, FrameSizeError, encode
from broker_core.protocol.server_errors import error_of

__all__ = ["DEFAULT_MAX_MESSAGE_SIZE", "FRAME_PADDING", "FrameError", "FrameReader", "FrameSizeError",
           "answer_error", "encode", "error_of", "max_frame", "payload_frame"]

T = cmd.BaseCommand

DEFAULT_MAX_MESSAGE_SIZE = 5 * 1024 * 1024
"""Pulsar's ``maxMessageSize`` default: the bound before ``CONNECTED`` says the broker's own."""

_MAGIC = b"\x0e\x01"
_MAGIC_AND_CRC = struct.Struct(">HI")


def max_frame(max_message_size: int) -> int:
    """The largest ``totalSize`` a broker with this ``maxMessageSize`` sends (a chunk plus its headers)."""
    return max_message_size + FRAME_PADDING


def payload_frame(command: cmd.BaseCommand, payload: bytes | memoryview) -> list[bytes | memoryview]:
    """The parts of a frame with a payload (written in order, they are the frame): the header and command,
    then the entry (see the module docstring for ``payload``'s two accepted forms)."""
    body = command.SerializeToString()
    if payload[:2] == _MAGIC:
        return [FRAME_HEADER.pack(4 + len(body) + len(payload), len(body)) + body, payload]
    prefix = _MAGIC_AND_CRC.pack(0x0E01, google_crc32c.value(bytes(payload)))
    return [FRAME_HEADER.pack(4 + len(body) + len(prefix) + len(payload), len(body)) + body + prefix, payload]


def answer_error(command: cmd.BaseCommand) -> errors.PulsarLikeError | None:
    """The error an answer carries, or None for a successful answer."""
    kind = command.type
    if kind == T.ERROR:
        return error_of(command.error.error, command.error.message)
    if kind == T.LOOKUP_RESPONSE:
        r = command.lookupTopicResponse
        return error_of(r.error, r.message) if r.response == r.Failed else None
    if kind == T.PARTITIONED_METADATA_RESPONSE:
        r = command.partitionMetadataResponse
        return error_of(r.error, r.message) if r.response == r.Failed else None
    if kind == T.GET_SCHEMA_RESPONSE:
        r = command.getSchemaResponse
        return error_of(r.error_code, r.error_message) if r.HasField("error_code") else None
    if kind == T.GET_OR_CREATE_SCHEMA_RESPONSE:
        r = command.getOrCreateSchemaResponse
        return error_of(r.error_code, r.error_message) if r.HasField("error_code") else None
    if kind == T.ACK_RESPONSE:
        r = command.ackResponse
        return error_of(r.error, r.message) if r.HasField("error") else None
    if kind == T.CONSUMER_STATS_RESPONSE:
        r = command.consumerStatsResponse
        return error_of(r.error_code, r.error_message) if r.HasField("error_code") else None
    return None
