"""The client's public entry decoding (connector.client.entries): what a reader of raw entries (the Spark
source) gets -- messages, their metadata, their ids -- and chunked messages reassembled for a range."""
from __future__ import annotations

import pytest

from broker_core.errors import ChecksumError, InvalidMessage
from broker_core.protocol import codec, pulsar_api_pb2
from connector import MessageId
from connector.client import entries


def metadata(**fields):
    return pulsar_api_pb2.MessageMetadata(producer_name="p", sequence_id=7, publish_time=1000, **fields)


def opened(data):
    meta, payload, _ = entries.open_entry(data)
    return meta, payload


def test_an_unbatched_entry_decodes_to_one_message_with_the_entrys_metadata():
    meta, payload = opened(codec.encode_entry(metadata(partition_key="k"), b"hello"))
    decoded = entries.decode(meta, payload, 3, 40)
    assert not decoded.batched and len(decoded) == 1 and decoded.metas == (None,)
    assert decoded.payloads == (b"hello",) and decoded.metadata.partition_key == "k"
    assert (decoded.ledger_id, decoded.entry_id) == (3, 40)


def test_a_batch_decodes_to_its_messages_with_their_own_metadata():
    items = [b"a", codec.BatchMessage(b"b", partition_key="k1", event_time=5), b"c"]
    meta, payload = opened(codec.encode_entry(metadata(num_messages_in_batch=3), codec.encode_batch(items)))
    decoded = entries.decode(meta, payload, 0, 10)
    assert decoded.batched and list(decoded.payloads) == [b"a", b"b", b"c"]
    assert decoded.metas[1].partition_key == "k1" and decoded.metas[1].event_time == 5
    assert decoded.metas[0].partition_key is None


def test_message_ids_are_the_bytes_message_id_serialize_writes():
    meta, payload = opened(codec.encode_entry(metadata(num_messages_in_batch=3),
                                              codec.encode_batch([b"a", b"b", b"c"])))
    decoded = entries.decode(meta, payload, 2, 10)
    assert decoded.message_ids(1, 1, 3) == [MessageId.of(2, 10, 1, i, 3).serialize() for i in (1, 2)]
    single = entries.decode(*opened(codec.encode_entry(metadata(), b"x")), 2, 13)
    assert single.message_id(-1) == MessageId.of(2, 13, -1).serialize()


def test_a_damaged_entry_raises_a_typed_error_saying_what_is_wrong():
    data = bytearray(codec.encode_entry(metadata(), b"hello"))
    data[-1] ^= 0xFF
    with pytest.raises(ChecksumError):
        entries.open_entry(bytes(data))
    meta, payload = opened(codec.encode_entry(metadata(num_messages_in_batch=5), codec.encode_batch([b"a"])))
    with pytest.raises(InvalidMessage):
        entries.decode(meta, payload, 0, 0)


def chunk(uuid, chunk_id, num_chunks, payload, total):
    data = codec.encode_entry(metadata(uuid=uuid, chunk_id=chunk_id, num_chunks_from_msg=num_chunks,
                                       total_chunk_msg_size=total), payload)
    return opened(data)


def test_a_chunked_range_reassembles_a_message_whose_chunks_interleave_with_another():
    chunks = entries.ChunkedRange()
    first = chunk("m1", 0, 2, b"hel", 5)
    assert entries.is_chunk(first[0]) and chunks.add(*first, 4) is None
    assert chunks.add(*chunk("m2", 0, 2, b"x", 2), 5) is None
    assert len(chunks) == 2 and chunks.is_pending("m1") and chunks.first_pending_offset() == 4
    last = chunk("m1", 1, 2, b"lo", 5)
    done = chunks.add(*last, 6)
    assert done is not None and done.error is None and done.offsets == (4, 6)
    assert entries.decode(last[0], done.payload, 0, 6).payloads == (b"hello",)
    assert chunks.clear() == [5] and len(chunks) == 0


def test_a_plain_entry_is_not_a_chunk():
    assert not entries.is_chunk(opened(codec.encode_entry(metadata(), b"x"))[0])
