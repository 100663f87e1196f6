"""Pulsar binary protocol framing and message ids (broker_core.frontends.pulsar.frames, .message_ids)."""
from __future__ import annotations

import pytest

from broker_core.protocol import pulsar_commands_pb2 as cmd
from broker_core.frontends.pulsar.frames import FrameError, FrameReader, encode, header_with_payload
from broker_core.frontends.pulsar.message_ids import (NO_ID, acked_ranges, cumulative_offset, is_earliest, is_latest,
                                                    message_id, signed)

T = cmd.BaseCommand
PING = encode(T(type=T.PING, ping=cmd.CommandPing()))


def test_a_frame_split_anywhere_is_read_once_whole():
    send = T(type=T.SEND, send=cmd.CommandSend(producer_id=1, sequence_id=2))
    data = header_with_payload(send, 5) + b"hello" + PING
    for cut in range(1, len(data)):
        reader = FrameReader(1024)
        frames = [*reader.feed(data[:cut]), *reader.feed(data[cut:])]
        assert [(c.type, bytes(p)) for c, p in frames] == [(T.SEND, b"hello"), (T.PING, b"")]
        assert reader.buffered == 0


def test_a_large_frame_arriving_in_pieces_is_not_rescanned():
    reader = FrameReader(1 << 20)
    data = header_with_payload(T(type=T.SEND, send=cmd.CommandSend(producer_id=1, sequence_id=1)), 100_000)
    data += b"x" * 100_000
    got = []
    for i in range(0, len(data), 1000):
        got += reader.feed(data[i:i + 1000])
    assert len(got) == 1 and len(got[0][1]) == 100_000


def test_payloads_of_frames_read_in_pieces_stay_as_read_while_later_frames_are_fed():
    def send(sequence_id: int, body: bytes) -> bytes:
        return header_with_payload(T(type=T.SEND, send=cmd.CommandSend(producer_id=1, sequence_id=sequence_id)),
                                   len(body)) + body
    data = send(1, b"a" * 5000) + send(2, b"b" * 3000) + send(3, b"c" * 7000)
    reader = FrameReader(1 << 20)
    got = []
    for i in range(0, len(data), 777):  # every frame in pieces, pieces holding the ends of two frames
        got += reader.feed(data[i:i + 777])
    assert [(c.send.sequence_id, bytes(p)) for c, p in got] == [(1, b"a" * 5000), (2, b"b" * 3000), (3, b"c" * 7000)]
    assert all(p.readonly for _, p in got)
    assert reader.buffered == 0


def test_a_size_over_the_limit_is_refused_before_anything_is_buffered():
    reader = FrameReader(1000)
    with pytest.raises(FrameError, match="frames hold 4 to 1000 bytes"):
        list(reader.feed((1001).to_bytes(4, "big")))


def test_a_command_size_beyond_its_frame_is_refused():
    with pytest.raises(FrameError, match="commandSize 100"):
        list(FrameReader(1000).feed((8).to_bytes(4, "big") + (100).to_bytes(4, "big") + b"\0" * 4))


def test_clients_sentinels_are_recognised():
    assert is_earliest(message_id(-1, -1, -1)) and signed(NO_ID) == -1
    assert is_latest(message_id((1 << 63) - 1, (1 << 63) - 1, -1))
    assert not is_earliest(message_id(0, 0, 0))


def test_a_batch_index_ack_acknowledges_the_clear_bits():
    # entry at offset 10 with 4 messages; bits 1 and 3 still unacked: 10 and 12 are acknowledged
    assert acked_ranges(10, 4, [0b1010]) == [(10, 11), (12, 13)]
    assert acked_ranges(10, 4, [0]) == [(10, 14)]


def test_a_cumulative_ack_covers_up_to_the_message_it_names():
    assert cumulative_offset(10, 1, [], 14) == 11
    assert cumulative_offset(10, -1, [], 14) == 13
    assert cumulative_offset(10, -1, [0b1100], 14) == 11  # messages 0 and 1 acknowledged
