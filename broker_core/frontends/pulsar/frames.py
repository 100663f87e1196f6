"""Frames of Pulsar's binary protocol: they live in :mod:`broker_core.protocol.frames` (the client's binary
transport shares them); re-exported here for the front end's modules."""
from broker_core.protocol.frames import (FRAME_HEADER, PRE_CONNECT_MAX_FRAME, TOTAL_SIZE, Command, FrameError,
                                         FrameReader, FrameSizeError, Type, encode, header_with_payload)

__all__ = ["FRAME_HEADER", "PRE_CONNECT_MAX_FRAME", "TOTAL_SIZE", "Command", "FrameError", "FrameReader",
           "FrameSizeError", "Type", "encode", "header_with_payload"]
