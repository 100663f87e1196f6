"""A start inside a batch (issue 22): the official ``pulsar-client`` started at message 700 of batches of 500
begins at 701 (700 inclusive), not at the batch's first message, 500; our client's readers, a reader resumed
after a reconnection and a consumer's seek do the same."""
from __future__ import annotations

import uuid

import pytest

pulsar = pytest.importorskip("pulsar")

from tests.brokers import broker_process  # noqa: E402,F401  (fixture)

QUIET = pulsar.ConsoleLogger(pulsar.LoggerLevel.Error)
MESSAGES = 1000
BATCH = 500


@pytest.fixture
def batched(broker_process):
    """A broker holding a topic of 1000 messages b"0".."999" in two batches of 500, and the official
    client's ids of them: ``(broker, topic, ids)``."""
    proc = broker_process()
    topic = f"persistent://public/default/batch-index-{uuid.uuid4().hex[:10]}"
    client = pulsar.Client(proc.service_url, operation_timeout_seconds=10, logger=QUIET)
    try:
        producer = client.create_producer(topic, batching_enabled=True, batching_max_messages=BATCH,
                                          batching_max_publish_delay_ms=60_000)
        for i in range(MESSAGES):
            producer.send_async(str(i).encode(), None)
        producer.flush()
        reader = client.create_reader(topic, pulsar.MessageId.earliest)
        ids = [reader.read_next(5000).message_id() for _ in range(MESSAGES)]
    finally:
        client.close()
    assert ids[700].batch_index() == 200  # the scenario: 700 sits inside the second batch
    return proc, topic, ids


def first_read(reader) -> int:
    return int(reader.read_next(5000).data())


def test_the_official_client_starts_after_a_message_inside_a_batch(batched):
    proc, topic, ids = batched
    client = pulsar.Client(proc.service_url, operation_timeout_seconds=10, logger=QUIET)
    try:
        assert first_read(client.create_reader(topic, ids[700])) == 701
        assert first_read(client.create_reader(topic, ids[700], start_message_id_inclusive=True)) == 700
    finally:
        client.close()


def test_our_reader_starts_after_a_message_inside_a_batch_as_the_official_client(batched):
    from connector import Client, MessageId

    proc, topic, ids = batched
    start = MessageId.deserialize(ids[700].serialize())
    client = Client(proc.service_url)
    try:
        reader = client.create_reader(topic, start)
        assert [first_read(reader) for _ in range(3)] == [701, 702, 703]
        assert first_read(client.create_reader(topic, start, start_message_id_inclusive=True)) == 700
        # an id of our own client's, of the same message, starts at the same place
        ours = client.create_reader(topic, MessageId.earliest)
        own_id = [ours.read_next(5000) for _ in range(701)][-1].message_id()
        assert first_read(client.create_reader(topic, own_id)) == 701
    finally:
        client.close()


def test_our_reader_seeking_inside_a_batch_starts_after_that_message(batched):
    from connector import Client, MessageId

    proc, topic, ids = batched
    client = Client(proc.service_url)
    try:
        reader = client.create_reader(topic, MessageId.earliest)
        first_read(reader)
        reader.seek(MessageId.deserialize(ids[700].serialize()))  # not inclusive: the message after it
        assert first_read(reader) == 701
        inclusive = client.create_reader(topic, MessageId.earliest, start_message_id_inclusive=True)
        inclusive.seek(MessageId.deserialize(ids[700].serialize()))
        assert first_read(inclusive) == 700
    finally:
        client.close()


def test_our_consumer_seeking_inside_a_batch_gets_nothing_before_that_message(batched):
    from connector import Client, ConsumerType, InitialPosition, MessageId

    proc, topic, ids = batched
    client = Client(proc.service_url)
    try:
        consumer = client.subscribe(topic, "s", consumer_type=ConsumerType.Exclusive,
                                    initial_position=InitialPosition.Earliest)
        assert int(consumer.receive(5000).data()) == 0
        consumer.seek(MessageId.deserialize(ids[700].serialize()))  # not inclusive: from the message after it
        received = [int(consumer.receive(5000).data()) for _ in range(MESSAGES - 701)]
        assert received == list(range(701, MESSAGES))
    finally:
        client.close()


def test_our_reader_resumed_after_a_broker_restart_inside_a_batch_repeats_nothing(broker_process):
    from connector import Client, MessageId

    proc = broker_process(restartable=True)
    topic = f"persistent://public/default/batch-resume-{uuid.uuid4().hex[:10]}"
    official = pulsar.Client(proc.service_url, operation_timeout_seconds=10, logger=QUIET)
    try:
        producer = official.create_producer(topic, batching_enabled=True, batching_max_messages=BATCH,
                                            batching_max_publish_delay_ms=60_000)
        for i in range(BATCH):
            producer.send_async(str(i).encode(), None)
        producer.flush()
    finally:
        official.close()
    client = Client(proc.service_url, operation_timeout_seconds=30)
    try:
        reader = client.create_reader(topic, MessageId.earliest, receiver_queue_size=1)
        assert [first_read(reader) for _ in range(300)] == list(range(300))
        proc.terminate()
        proc.restart()
        rest = [first_read(reader) for _ in range(BATCH - 300)]
        assert rest == list(range(300, BATCH))
    finally:
        client.close()


def test_our_reader_at_latest_inclusive_reads_only_the_last_message_of_the_last_batch(batched):
    from connector import Client, MessageId

    proc, topic, _ = batched
    client = Client(proc.service_url)
    try:
        reader = client.create_reader(topic, MessageId.latest, start_message_id_inclusive=True)
        assert first_read(reader) == MESSAGES - 1  # pulsar-client's meaning: the last message, not its batch
        assert not reader.has_message_available()
    finally:
        client.close()
