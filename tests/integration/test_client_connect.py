"""Connecting: a stopped broker fails fast with a typed error; the admin API round trip."""
from __future__ import annotations

import socket
import time

import pytest

from broker_core import Broker
from connector import Admin, AlreadyClosed, Client, ConnectError, Timeout, TopicNotFound


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_client_to_a_stopped_broker_raises_connect_error_quickly():
    client = Client(f"pulsar://127.0.0.1:{_free_port()}", connection_timeout_ms=500,
                    operation_timeout_seconds=2)
    started = time.monotonic()
    with pytest.raises((ConnectError, Timeout)):
        client.create_producer("t")
    with pytest.raises((ConnectError, Timeout)):
        client.subscribe("t", "s")
    assert time.monotonic() - started < 5
    client.close()


def test_sends_after_the_broker_stops_fail_at_the_send_timeout_and_new_producers_at_the_operation_timeout(
        tmp_path):
    broker = Broker(data_dir=tmp_path, port=0).start()
    client = Client(broker.service_url, operation_timeout_seconds=2, connection_timeout_ms=500)
    producer = client.create_producer("t", send_timeout_millis=1000)
    producer.send(b"x")
    broker.stop()
    started = time.monotonic()
    with pytest.raises(Timeout):
        producer.send(b"y")  # it waited for the broker to come back, then its send timeout passed
    with pytest.raises((ConnectError, Timeout)):
        client.create_producer("t2")
    assert time.monotonic() - started < 10
    started = time.monotonic()
    client.close()
    assert time.monotonic() - started < 3  # closing while reconnecting does not wait for the broker


def test_admin_creates_lists_inspects_and_deletes_topics(broker, topic):
    with Admin(broker.service_url) as admin:
        admin.create_topic(topic)
        assert topic in admin.list_topics("public/default")
        assert isinstance(admin.topic_stats(topic), dict)
        admin.delete_topic(topic)
        assert topic not in admin.list_topics("public/default")


def test_admin_errors_are_typed(broker):
    with Admin(broker.service_url) as admin, pytest.raises(TopicNotFound):
        admin.delete_topic("persistent://public/default/never-created")


def test_client_close_closes_producers_and_consumers(broker, topic):
    client = Client(broker.service_url)
    producer = client.create_producer(topic)
    consumer = client.subscribe(topic, "s")
    client.close()
    with pytest.raises(AlreadyClosed):
        producer.send(b"x")
    with pytest.raises(AlreadyClosed):
        consumer.receive(10)
    with pytest.raises(AlreadyClosed):
        client.create_producer(topic)


@pytest.mark.parametrize("option", [{"replicate_subscription_state_enabled": True}])
def test_consumer_options_not_built_yet_are_refused_not_ignored(client, option):
    from connector import InvalidConfiguration

    with pytest.raises(InvalidConfiguration, match="not supported by pulsarlike yet"):
        client.subscribe("persistent://public/default/unsupported-options", "s", **option)

