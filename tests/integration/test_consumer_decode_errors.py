"""Entries a consumer cannot decode (valid CRC, bad compressed bytes; an unknown compression type): the
consumer raises MessageDecodeError once at that message's place, acknowledges it, and goes on."""
from __future__ import annotations

import logging
import threading

import google_crc32c
import pytest

from broker_core.protocol import codec, pulsar_api_pb2
from connector import InitialPosition, MessageDecodeError, Timeout

from tests.integration.test_consumer_chunking import chunks, plain, produce_raw, wait_for_backlog


def corrupt(compression):
    """An entry whose metadata says ``compression`` but whose payload is not that codec's output."""
    meta = pulsar_api_pb2.MessageMetadata(producer_name="raw", sequence_id=1, publish_time=1,
                                          compression=compression, uncompressed_size=1000)
    return meta, b"\x00\xff" * 40


def unknown_compression_entry(value=9):
    """Entry bytes whose compression enum value this client does not know (a valid CRC)."""
    meta = pulsar_api_pb2.MessageMetadata(producer_name="raw", sequence_id=1, publish_time=1,
                                          uncompressed_size=1000)
    encoded = meta.SerializeToString() + bytes([0x40, value])  # field 8 (compression), varint
    body = codec.U32.pack(len(encoded)) + encoded + b"compressed by a codec from the future"
    return codec.entries._MAGIC_AND_CRC.pack(codec.MAGIC_CRC32C, google_crc32c.value(body)) + body


def subscribe(client, topic, **options):
    return client.subscribe(topic, "sub", initial_position=InitialPosition.Earliest, **options)


@pytest.mark.parametrize("compression", [pulsar_api_pb2.LZ4, pulsar_api_pb2.ZSTD, pulsar_api_pb2.ZLIB])
def test_entry_that_fails_to_decompress_raises_once_between_good_messages(broker, client, admin, topic,
                                                                          compression):
    offsets = produce_raw(broker, topic, [plain("raw", 0, b"good-1"), corrupt(compression),
                                          plain("raw", 2, b"good-2")])
    consumer = subscribe(client, topic)
    assert consumer.receive(5000).data() == b"good-1"
    with pytest.raises(MessageDecodeError) as info:
        consumer.receive(5000)
    error = info.value
    name = pulsar_api_pb2.CompressionType.Name(compression)
    assert error.topic == topic and error.offsets == (offsets[1],)
    assert error.message_id.entry_id() == offsets[1] and name in error.reason
    assert "acknowledged" in str(error) and topic in str(error)
    assert consumer.receive(5000).data() == b"good-2"
    # the subscription keeps going: later messages arrive, and the bad entry left the backlog
    client.create_producer(topic).send(b"good-3")
    last = consumer.receive(5000)
    assert last.data() == b"good-3"
    consumer.acknowledge_cumulative(last)
    assert wait_for_backlog(admin, topic, 0) == 0


def test_entry_with_an_unknown_compression_type_raises_a_decode_error_naming_it(broker, client, admin,
                                                                               topic):
    produce_raw(broker, topic, [plain("raw", 0, b"before"), unknown_compression_entry(9),
                                plain("raw", 2, b"after")])
    consumer = subscribe(client, topic)
    first = consumer.receive(5000)
    with pytest.raises(MessageDecodeError, match="unknown compression type 9"):
        consumer.receive(5000)
    after = consumer.receive(5000)
    assert (first.data(), after.data()) == (b"before", b"after")
    consumer.acknowledge(first)
    consumer.acknowledge(after)
    assert wait_for_backlog(admin, topic, 0) == 0  # the undecodable entry was acknowledged for us


def test_decode_error_is_raised_only_once(broker, client, topic):
    produce_raw(broker, topic, [corrupt(pulsar_api_pb2.LZ4)])
    consumer = subscribe(client, topic)
    with pytest.raises(MessageDecodeError):
        consumer.receive(5000)
    with pytest.raises(Timeout):
        consumer.receive(300)


def test_undecodable_entry_is_not_redelivered_to_a_new_consumer(broker, client, topic):
    produce_raw(broker, topic, [corrupt(pulsar_api_pb2.ZSTD), plain("raw", 1, b"good")])
    consumer = subscribe(client, topic)
    with pytest.raises(MessageDecodeError):
        consumer.receive(5000)
    consumer.close()  # before acknowledging "good": only that comes back
    again = subscribe(client, topic)
    assert again.receive(5000).data() == b"good"


def test_chunked_message_that_fails_to_decompress_raises_for_the_whole_message(broker, client, admin,
                                                                              topic):
    bad = chunks("p", 0, b"\x01\x02" * 60, 3, compression=pulsar_api_pb2.LZ4, uncompressed_size=999)
    offsets = produce_raw(broker, topic, [*bad, plain("p", 1, b"next")])
    consumer = subscribe(client, topic)
    with pytest.raises(MessageDecodeError) as info:
        consumer.receive(5000)
    assert info.value.offsets == tuple(offsets[:3])
    assert info.value.message_id.entry_id() == offsets[2]
    nxt = consumer.receive(5000)
    assert nxt.data() == b"next"
    consumer.acknowledge(nxt)
    assert wait_for_backlog(admin, topic, 0) == 0


def test_listener_consumer_logs_the_decode_error_and_keeps_receiving(broker, client, topic, caplog):
    produce_raw(broker, topic, [plain("raw", 0, b"one"), corrupt(pulsar_api_pb2.LZ4),
                                plain("raw", 2, b"two")])
    received, done = [], threading.Event()

    def listener(consumer, msg):
        received.append(msg.data())
        consumer.acknowledge(msg)
        if len(received) == 2:
            done.set()

    with caplog.at_level(logging.ERROR, logger="connector.client.consumer"):
        consumer = subscribe(client, topic, message_listener=listener)
        assert done.wait(10)
        consumer.close()
    assert received == [b"one", b"two"]
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1 and "cannot decode" in errors[0].getMessage()


def test_a_reader_goes_on_after_an_undecodable_last_entry(broker, client, topic):
    """read_next raises the decode error once; the reader then knows nothing more is available."""
    from connector import MessageId

    produce_raw(broker, topic, [plain("raw", 0, b"good"), corrupt(pulsar_api_pb2.LZ4)])
    reader = client.create_reader(topic, MessageId.earliest)
    assert reader.read_next(5000).data() == b"good"
    with pytest.raises(MessageDecodeError):
        reader.read_next(5000)
    assert reader.has_message_available() is False
    reader.close()
