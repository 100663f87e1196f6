"""Readers: start positions, inclusive starts, seek, has_message_available."""
from __future__ import annotations

import pytest

from connector import MessageId, Timeout


@pytest.fixture
def ids(client, topic):
    producer = client.create_producer(topic)
    return [producer.send(b"m%d" % i) for i in range(5)]


def _read_all(reader, timeout_ms=300):
    out = []
    while True:
        try:
            out.append(reader.read_next(timeout_ms).data())
        except Timeout:
            return out


@pytest.mark.transports
def test_reader_from_earliest_reads_everything(client, topic, ids):
    reader = client.create_reader(topic, MessageId.earliest)
    assert _read_all(reader) == [b"m%d" % i for i in range(5)]


@pytest.mark.transports
def test_reader_from_a_message_id_starts_after_it(client, topic, ids):
    reader = client.create_reader(topic, ids[2])
    assert _read_all(reader) == [b"m3", b"m4"]


@pytest.mark.transports
def test_reader_from_a_message_id_inclusive_starts_at_it(client, topic, ids):
    reader = client.create_reader(topic, ids[2], start_message_id_inclusive=True)
    assert _read_all(reader) == [b"m2", b"m3", b"m4"]


@pytest.mark.transports
def test_reader_from_latest_reads_only_new_messages(client, topic, ids):
    reader = client.create_reader(topic, MessageId.latest)
    assert not reader.has_message_available()
    client.create_producer(topic).send(b"new")
    assert reader.read_next(5000).data() == b"new"


@pytest.mark.transports
def test_has_message_available_until_the_end_of_the_topic(client, topic, ids):
    reader = client.create_reader(topic, MessageId.earliest)
    read = []
    while reader.has_message_available():
        read.append(reader.read_next(5000).data())
    assert read == [b"m%d" % i for i in range(5)]


@pytest.mark.transports
def test_reader_seek_rewinds(client, topic, ids):
    reader = client.create_reader(topic, MessageId.earliest)
    assert _read_all(reader) == [b"m%d" % i for i in range(5)]
    assert not reader.has_message_available()
    reader.seek(ids[1])  # the next read is the message after it (start_message_id_inclusive=False)
    assert reader.has_message_available()
    assert _read_all(reader) == [b"m2", b"m3", b"m4"]


@pytest.mark.transports
def test_readers_do_not_disturb_each_other(client, topic, ids):
    first = client.create_reader(topic, MessageId.earliest)
    second = client.create_reader(topic, MessageId.earliest)
    assert first.read_next(5000).data() == second.read_next(5000).data() == b"m0"


@pytest.mark.transports
def test_reader_on_an_empty_topic_has_no_message(client, topic):
    reader = client.create_reader(topic, MessageId.earliest)
    assert not reader.has_message_available()
    with pytest.raises(Timeout):
        reader.read_next(100)
