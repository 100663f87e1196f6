"""Seeking to a message id as pulsar-client does it: the broker delivers from the entry holding the id, and the
client drops the message itself unless the consumer or reader was made with ``start_message_id_inclusive=True``
(pulsar-client 3.13 filters against its start id the same way), batched or not; ``has_message_available()``
after a seek answers for where the seek put the reader. The expected values are what the official client
answers on the same broker. One in-process broker on port 0, both transports."""
from __future__ import annotations

import uuid

import pytest

from connector import InitialPosition, MessageId, Timeout

pytestmark = pytest.mark.transports


def _ids(client, topic: str, batched: bool) -> list[MessageId]:
    """m0..m8; batched: three batches of three."""
    producer = client.create_producer(topic, batching_enabled=batched, batching_max_messages=3,
                                      batching_max_publish_delay_ms=1000)
    if not batched:
        return [producer.send(b"m%d" % i) for i in range(9)]
    ids: list = [None] * 9
    for i in range(9):
        producer.send_async(b"m%d" % i, lambda res, mid, i=i: ids.__setitem__(i, mid))
    producer.flush()
    return ids


def _next(receive) -> bytes | str:
    try:
        return receive(1000).data()
    except Timeout:
        return "Timeout"


@pytest.fixture(params=[False, True], ids=["unbatched", "batched"])
def batched(request):
    return request.param


@pytest.fixture
def topic():
    return f"seek-{uuid.uuid4().hex[:10]}"


def test_a_consumer_seek_to_a_message_id_delivers_the_message_after_it(client, topic, batched):
    ids = _ids(client, topic, batched)
    consumer = client.subscribe(topic, "s", initial_position=InitialPosition.Earliest)
    got = []
    for k in (1, 4, 8):
        consumer.seek(ids[k])
        got.append(_next(consumer.receive))
    assert got == [b"m2", b"m5", "Timeout"]


def test_an_inclusive_consumer_seek_to_a_message_id_delivers_that_message(client, topic, batched):
    ids = _ids(client, topic, batched)
    consumer = client.subscribe(topic, "s", initial_position=InitialPosition.Earliest,
                                start_message_id_inclusive=True)
    got = []
    for k in (1, 4, 8):
        consumer.seek(ids[k])
        got.append(_next(consumer.receive))
    assert got == [b"m1", b"m4", b"m8"]


def test_a_reader_seek_to_a_message_id_reads_the_message_after_it(client, topic, batched):
    ids = _ids(client, topic, batched)
    reader = client.create_reader(topic, MessageId.latest)
    got = []
    for k in (1, 4, 8):
        reader.seek(ids[k])
        got.append((reader.has_message_available(), _next(reader.read_next)))
    assert got == [(True, b"m2"), (True, b"m5"), (False, "Timeout")]


def test_an_inclusive_reader_seek_to_a_message_id_reads_that_message(client, topic, batched):
    ids = _ids(client, topic, batched)
    reader = client.create_reader(topic, MessageId.latest, start_message_id_inclusive=True)
    got = []
    for k in (1, 4, 8):
        reader.seek(ids[k])
        got.append((reader.has_message_available(), _next(reader.read_next)))
    assert got == [(True, b"m1"), (True, b"m4"), (True, b"m8")]


def test_has_message_available_after_a_seek_ignores_what_was_buffered_before_it(client, topic):
    """The messages buffered before a seek are dropped when taken: they are no message available."""
    ids = _ids(client, topic, False)
    reader = client.create_reader(topic, MessageId.earliest)
    assert reader.read_next(5000).data() == b"m0"  # the rest of the topic is buffered now
    reader.seek(MessageId.latest)
    assert not reader.has_message_available()
    reader.seek(ids[8])
    assert not reader.has_message_available()
    client.create_producer(topic).send(b"m9")
    assert reader.has_message_available()
    assert reader.read_next(5000).data() == b"m9"
    reader.seek(MessageId.earliest)
    assert reader.has_message_available()


def test_an_inclusive_reader_seek_to_latest_has_the_last_message_available(client, topic):
    _ids(client, topic, False)
    reader = client.create_reader(topic, MessageId.earliest, start_message_id_inclusive=True)
    reader.seek(MessageId.latest)
    assert reader.has_message_available()
