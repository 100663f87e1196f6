"""A range read that reconnects (issue 12), without a broker: where it resubscribes from, and how it treats
the entries the new stream sends again -- the rows stay exactly those of the range."""
from __future__ import annotations

from broker_core.protocol import broker_pb2, codec, pulsar_api_pb2
from connector.client.entries import ChunkedRange
from connector.spark.arrow_batches import BatchBuilder
from connector.spark.partition_reader import RangePartition, RangeReader, _resume_offset

TOPIC = "persistent://public/default/resume"


def _reader(start: int, end: int) -> RangeReader:
    return RangeReader("pulsar://127.0.0.1:1", RangePartition(TOPIC, -1, start, end), 5000, True)


def _plain(offset: int, payload: bytes) -> broker_pb2.DeliveredEntry:
    meta = pulsar_api_pb2.MessageMetadata(producer_name="p", sequence_id=offset, publish_time=1)
    return broker_pb2.DeliveredEntry(data=codec.encode_entry(meta, payload), entry_id=offset, num_messages=1)


def _chunk(offset: int, chunk_id: int, part: bytes, total: int) -> broker_pb2.DeliveredEntry:
    meta = pulsar_api_pb2.MessageMetadata(producer_name="p", sequence_id=100, publish_time=1, uuid="p-100",
                                          chunk_id=chunk_id, num_chunks_from_msg=2, total_chunk_msg_size=total)
    return broker_pb2.DeliveredEntry(data=codec.encode_entry(meta, part), entry_id=offset, num_messages=1)


def _read(reader: RangeReader, entries, position: int, end: int, builder, chunks) -> int:
    for entry in entries:
        position = reader._take(entry, position, end, builder, chunks)
    return position


def test_a_reconnected_read_resumes_at_the_offset_it_reached():
    assert _resume_offset(7, ChunkedRange()) == 7


def test_a_reconnected_read_resumes_at_the_first_chunk_of_a_message_still_incomplete():
    reader, builder, chunks = _reader(0, 10), BatchBuilder(TOPIC, -1), ChunkedRange()
    position = _read(reader, [_plain(0, b"a"), _chunk(1, 0, b"xx", 4), _plain(2, b"b")], 0, 10, builder, chunks)
    assert position == 3 and _resume_offset(position, chunks) == 1


def test_entries_sent_again_after_a_reconnection_give_each_row_once():
    reader, builder, chunks = _reader(0, 10), BatchBuilder(TOPIC, -1), ChunkedRange()
    position = _read(reader, [_plain(0, b"a"), _chunk(1, 0, b"xx", 4), _plain(2, b"b")], 0, 10, builder, chunks)
    # the stream is lost; the new one starts at the incomplete message's first chunk, offset 1
    position = _read(reader, [_chunk(1, 0, b"xx", 4), _plain(2, b"b"), _chunk(3, 1, b"yy", 4), _plain(4, b"c")],
                     position, 10, builder, chunks)
    rows = builder.build().to_pylist()
    assert [(r["__offset"], r["value"]) for r in rows] == [(0, b"a"), (2, b"b"), (1, b"xxyy"), (4, b"c")]
    assert position == 5 and len(chunks) == 0
