"""The client's public offset calls (Admin.get_offset_bounds, offset_for_timestamp,
create_subscription_at_offset, retry_while_unavailable, Admin.on_connection) and its raw entry stream
(connector.client.entry_stream) decoded with connector.client.entries: what the Spark source reads through."""
from __future__ import annotations

import queue
import threading

import pytest

from connector import Admin, ConnectError, NotAllowedError, Timeout, TopicNotFound
from connector.client import entries
from connector.client.admin import OffsetBounds
from connector.client.transport.grpc.connection import Connection, Security
from connector.client.entry_stream import open_entry_stream
from connector.client.timer import TimerThread


def fill(client, topic, n, **producer_options):
    producer = client.create_producer(topic, **producer_options)
    ids = [producer.send(b"m%d" % i) for i in range(n)]
    producer.close()
    return ids


def backlog(admin, topic, sub):
    return admin.topic_stats(topic)["subscriptions"][sub]["msgBacklog"]


def test_offset_bounds_are_the_first_stored_offset_and_the_next_one(client, admin, topic):
    admin.create_topic(topic)
    assert admin.get_offset_bounds(topic) == OffsetBounds(0, 0)
    fill(client, topic, 5, batching_enabled=False)
    assert admin.get_offset_bounds(topic) == (0, 5)
    with pytest.raises(TopicNotFound):
        admin.get_offset_bounds(topic + "-missing")


def test_offset_for_timestamp_is_the_first_message_published_then_or_later(client, admin, topic):
    ids = fill(client, topic, 3, batching_enabled=False)
    assert admin.offset_for_timestamp(topic, 0) == 0
    assert admin.offset_for_timestamp(topic, 2**62) == 3  # none: the end
    assert ids[2].offset() == 2
    with pytest.raises(ValueError):
        admin.offset_for_timestamp(topic, -1)


def test_a_subscription_created_at_an_offset_has_the_rest_as_backlog(client, admin, topic):
    fill(client, topic, 5, batching_enabled=False)
    admin.create_subscription_at_offset(topic, "at-2", 2)
    assert backlog(admin, topic, "at-2") == 3
    with pytest.raises(NotAllowedError):
        admin.create_subscription_at_offset(topic, "at-2", 0)
    assert backlog(admin, topic, "at-2") == 3  # left as it was


class Collected:
    """Entry stream events, decoded as the Spark source decodes them."""

    def __init__(self):
        self.messages: queue.SimpleQueue = queue.SimpleQueue()

    def on_entries(self, delivered, window):
        for entry in delivered:
            meta, payload, _ = entries.open_entry(entry.data)
            decoded = entries.decode(meta, payload, entry.ledger_id, entry.entry_id)
            for i, value in enumerate(decoded.payloads):
                self.messages.put((entry.entry_id + i, value))
        window.took(sum(max(1, e.num_messages) for e in delivered))

    def on_disconnected(self, cause):
        pass

    def on_reconnected(self):
        pass

    def on_failed(self, error):
        self.messages.put(error)

    def on_end_of_topic(self):
        pass


def test_an_entry_stream_on_a_shared_connection_delivers_raw_entries_from_an_offset(client, broker, topic):
    fill(client, topic, 10, batching_enabled=True, batching_max_messages=4)
    connection = Connection(broker.service_url, 10, 10, Security.of(broker.service_url))
    admin = Admin.on_connection(connection, retry_while_unavailable=True)
    timer = TimerThread(name="test-entry-stream")
    events = Collected()
    start, end = admin.get_offset_bounds(topic)
    stream = open_entry_stream(connection, timer, topic, -1, 6, 100, events)
    try:
        stream.open()
        got = []
        while not got or got[-1][0] < end - 1:
            got.append(events.messages.get(timeout=10))
    finally:
        stream.close()
        timer.stop()
        admin.close()
    kept = [value for offset, value in got if offset >= 6]  # a batch may start before the offset
    assert (start, end) == (0, 10) and kept == [b"m6", b"m7", b"m8", b"m9"]
    assert connection.closed.is_set()  # the admin closed the connection it shared


def test_retry_while_unavailable_waits_for_a_restarting_broker(broker_process, tmp_path):
    proc = broker_process(restartable=True)
    topic = "persistent://public/default/restarting"
    with Admin(proc.service_url, operation_timeout_seconds=30, retry_while_unavailable=True) as patient, \
            Admin(proc.service_url, operation_timeout_seconds=30) as impatient:
        patient.create_topic(topic)
        proc.terminate()
        with pytest.raises((ConnectError, Timeout)):
            impatient.get_offset_bounds(topic)  # not retried: fails while the broker is away
        restarted = threading.Timer(1.0, proc.restart)
        restarted.start()
        try:
            assert patient.get_offset_bounds(topic) == (0, 0)  # waited for the broker to come back
        finally:
            restarted.join()
