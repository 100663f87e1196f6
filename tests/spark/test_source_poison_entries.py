"""The source's decoder meets poison entries: a batch claiming more messages than its bytes hold, a
decompression bomb. Each fails the read with a MessageDecodeError naming topic, partition and offsets, quickly
and without inflating anything (no SparkSession needed: the executor's RangeReader is read directly)."""
from __future__ import annotations

import tracemalloc

import pytest

from broker_core.errors import InvalidMessage, MessageDecodeError
from broker_core.protocol import broker_pb2, codec, pulsar_api_pb2
from connector.client.entries import decode as split
from connector.spark.partition_reader import RangePartition, RangeReader

from tests.integration.test_poison_entries import produce_raw
from tests.poison import INT32_MAX, MiB, huge_count_entry, plain, zlib_bomb_entry


def reader_of(topic, partition, start, end, service_url="pulsar://127.0.0.1:1"):
    return RangeReader(service_url, RangePartition(topic, partition, start, end), 5000, True)


def delivered(data, entry_id, num_messages):
    return broker_pb2.DeliveredEntry(data=data, ledger_id=0, entry_id=entry_id, num_messages=num_messages)


def test_split_refuses_a_batch_claiming_int32_max_messages_in_one_byte():
    metadata, payload = codec.decode_entry(huge_count_entry(1))
    with pytest.raises(InvalidMessage, match="claims 2147483647 messages"):
        split(metadata, payload, 0, 0)


def test_split_refuses_a_zlib_bomb_holding_little_memory():
    metadata, payload = codec.decode_entry(zlib_bomb_entry(1, claims=MiB))
    tracemalloc.start()
    try:
        with pytest.raises(InvalidMessage, match="more than the 1048576 bytes"):
            split(metadata, payload, 0, 0)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 20 * MiB


def test_split_names_an_unknown_compression_type():
    encoded = pulsar_api_pb2.MessageMetadata(producer_name="p", sequence_id=1, publish_time=1,
                                             uncompressed_size=100).SerializeToString() + bytes([0x40, 9])
    metadata = pulsar_api_pb2.MessageMetadata.FromString(encoded)
    with pytest.raises(InvalidMessage, match="unknown compression type 9"):
        split(metadata, b"compressed by a codec from the future", 0, 0)


def test_an_undecodable_entry_fails_the_range_naming_topic_partition_and_offsets():
    from connector.client.entries import ChunkedRange
    from connector.spark.arrow_batches import BatchBuilder

    topic = "persistent://public/default/poison"
    reader = reader_of(topic, 3, 10, 20)
    entry = delivered(huge_count_entry(1), 12, INT32_MAX)
    with pytest.raises(MessageDecodeError) as info:
        reader._take(entry, 12, 20, BatchBuilder(topic, 3), ChunkedRange())
    error = info.value
    assert (error.topic, error.partition, error.offsets[0], len(error.offsets)) == (topic, 3, 12, INT32_MAX)
    assert f"offsets 12..{12 + INT32_MAX - 1} of {topic} partition 3" in str(error)
    assert "claims 2147483647 messages" in error.reason and "failOnDataLoss" in str(error)


def test_an_entry_holding_other_than_its_stored_count_fails_the_range():
    from connector.client.entries import ChunkedRange
    from connector.spark.arrow_batches import BatchBuilder

    metadata = pulsar_api_pb2.MessageMetadata(producer_name="p", sequence_id=1, publish_time=1,
                                              num_messages_in_batch=2)
    data = codec.encode_entry(metadata, codec.encode_batch([b"a", b"b"]))
    reader = reader_of("persistent://public/default/t", -1, 0, 10)
    with pytest.raises(MessageDecodeError, match="holds 2 messages but the broker stored it as 3"):
        reader._take(delivered(data, 0, 3), 0, 10, BatchBuilder("t", -1), ChunkedRange())


def test_a_zlib_bomb_on_the_broker_fails_the_range_read_between_good_entries(broker):
    topic = "persistent://public/default/spark-poison-bomb"
    offsets = produce_raw(broker.address, topic, [plain(0, b"before"), zlib_bomb_entry(1, claims=MiB),
                                                  plain(2, b"after")])
    reader = reader_of(topic, -1, 0, 3, broker.service_url)
    with pytest.raises(MessageDecodeError) as info:
        list(reader.batches())
    assert info.value.offsets == range(offsets[1], offsets[1] + 1)
    assert "ZLIB" in info.value.reason and f"offset {offsets[1]} of {topic}" in str(info.value)
    # the ranges around it read as before
    rows = [row for batch in reader_of(topic, -1, 2, 3, broker.service_url).batches() for row in batch.to_pylist()]
    assert [r["value"] for r in rows] == [b"after"]
