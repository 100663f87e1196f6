"""The FrameReader's bound before CONNECTED (broker_core.frontends.pulsar.frames): a client that has not shown
who it is can make the broker buffer 64 KiB, not maxMessageSize; CONNECT raises the bound for what follows."""
from __future__ import annotations

import pytest

from broker_core.protocol import pulsar_commands_pb2 as cmd
from broker_core.frontends.pulsar.frames import (PRE_CONNECT_MAX_FRAME, FrameError, FrameReader, FrameSizeError, encode,
                                               header_with_payload)

T = cmd.BaseCommand
CONNECT = encode(T(type=T.CONNECT, connect=cmd.CommandConnect(client_version="test", protocol_version=20)))
MAX_MESSAGE_FRAME = 5 * 1024 * 1024 + 10 * 1024


def pre_connect_reader() -> FrameReader:
    return FrameReader(PRE_CONNECT_MAX_FRAME, "before CONNECTED")


def send_frame(payload_size: int) -> bytes:
    send = T(type=T.SEND, send=cmd.CommandSend(producer_id=1, sequence_id=1))
    return header_with_payload(send, payload_size) + b"x" * payload_size


def test_the_bound_before_connect_holds_a_connect_with_a_large_credential():
    big_token = b"t" * 48_000  # a Kerberos ticket at Windows' MaxTokenSize
    connect = encode(T(type=T.CONNECT, connect=cmd.CommandConnect(
        client_version="test", protocol_version=20, auth_method_name="sasl", auth_data=big_token)))
    assert [c.type for c, _ in pre_connect_reader().feed(connect)] == [T.CONNECT]


def test_a_frame_size_over_the_bound_is_refused_from_its_four_byte_header_alone():
    reader = pre_connect_reader()
    with pytest.raises(FrameSizeError, match=f"frames hold 4 to {PRE_CONNECT_MAX_FRAME} bytes \\(before CONNECTED\\)"):
        list(reader.feed((5 * 1024 * 1024).to_bytes(4, "big")))
    assert reader.buffered == 0


def test_a_frame_size_error_is_a_frame_error():
    assert issubclass(FrameSizeError, FrameError)


def test_a_partial_frame_within_the_bound_buffers_at_most_the_bound():
    reader = pre_connect_reader()
    frame = send_frame(PRE_CONNECT_MAX_FRAME - 100)
    assert len(frame) - 4 <= PRE_CONNECT_MAX_FRAME
    for i in range(0, len(frame) - 1, 4096):
        assert not list(reader.feed(frame[i:min(i + 4096, len(frame) - 1)]))
    assert reader.buffered == len(frame) - 1 <= PRE_CONNECT_MAX_FRAME + 4


def test_a_frame_of_exactly_the_bound_is_read():
    frame = send_frame(0)
    padding = PRE_CONNECT_MAX_FRAME - (len(frame) - 4)
    frame = send_frame(padding)
    assert len(frame) - 4 == PRE_CONNECT_MAX_FRAME
    assert [c.type for c, _ in pre_connect_reader().feed(frame)] == [T.SEND]


def test_raising_the_bound_after_connect_admits_the_frames_that_follow_in_the_same_batch():
    reader = pre_connect_reader()
    seen = []
    for command, payload in reader.feed(CONNECT + send_frame(1_000_000)):
        seen.append((command.type, len(payload)))
        if command.type == T.CONNECT:
            reader.limit(MAX_MESSAGE_FRAME, "maxMessageSize plus framing")
    assert seen == [(T.CONNECT, 0), (T.SEND, 1_000_000)]


def test_without_raising_the_bound_a_large_frame_after_connect_is_refused():
    reader = pre_connect_reader()
    with pytest.raises(FrameSizeError, match="before CONNECTED"):
        list(reader.feed(CONNECT + send_frame(1_000_000)))


def test_after_the_bound_is_raised_a_large_frame_in_pieces_is_read_whole():
    reader = pre_connect_reader()
    assert [c.type for c, _ in reader.feed(CONNECT)] == [T.CONNECT]
    reader.limit(MAX_MESSAGE_FRAME, "maxMessageSize plus framing")
    frame = send_frame(3_000_000)
    got = []
    for i in range(0, len(frame), 256 * 1024):
        got += reader.feed(frame[i:i + 256 * 1024])
    assert len(got) == 1 and len(got[0][1]) == 3_000_000
