"""Delayed message delivery end to end (seed "Delayed message delivery"): honoured on Shared and
Key_Shared, delivered at once on Exclusive/Failover, strict mode never early, and the delay index rebuilt
after a broker restart."""
from __future__ import annotations

import datetime
import time
import uuid

import pytest

from broker_core import Broker
from connector import Client, ConsumerType, InitialPosition, Timeout

STRICT = {"isDelayedDeliveryDeliverAtTimeStrict": True, "delayedDeliveryTickTimeMillis": 100}


@pytest.fixture(scope="module")
def strict_broker(tmp_path_factory):
    with Broker(data_dir=tmp_path_factory.mktemp("delayed"), port=0, **STRICT) as running:
        yield running


@pytest.fixture
def sclient(strict_broker):
    c = Client(strict_broker.service_url)
    yield c
    c.close()


def fresh_topic():
    return f"persistent://public/default/delayed-{uuid.uuid4().hex[:10]}"


@pytest.mark.parametrize("ctype", [ConsumerType.Shared, ConsumerType.KeyShared])
def test_a_delayed_message_arrives_after_its_time_and_others_flow_meanwhile(sclient, ctype):
    topic = fresh_topic()
    consumer = sclient.subscribe(topic, "sub", consumer_type=ctype)
    producer = sclient.create_producer(topic)
    deliver_at = int(time.time() * 1000) + 800
    producer.send(b"later", deliver_at=deliver_at, partition_key="k")
    producer.send(b"now", partition_key="k")
    first = consumer.receive(timeout_millis=5000)
    assert first.data() == b"now"
    second = consumer.receive(timeout_millis=5000)
    arrived = int(time.time() * 1000)
    assert second.data() == b"later"
    assert arrived >= deliver_at  # strict: never early
    assert arrived - deliver_at < 1000  # and about on time (tick 100 ms; generous for a loaded machine)


def test_deliver_after_takes_a_timedelta(sclient):
    topic = fresh_topic()
    consumer = sclient.subscribe(topic, "sub", consumer_type=ConsumerType.Shared)
    producer = sclient.create_producer(topic)
    sent = time.time()
    producer.send(b"x", deliver_after=datetime.timedelta(milliseconds=500))
    assert consumer.receive(timeout_millis=5000).data() == b"x"
    assert time.time() - sent >= 0.5


def test_exclusive_and_failover_deliver_delayed_messages_at_once(sclient):
    for ctype in (ConsumerType.Exclusive, ConsumerType.Failover):
        topic = fresh_topic()
        consumer = sclient.subscribe(topic, "sub", consumer_type=ctype)
        producer = sclient.create_producer(topic)
        producer.send(b"x", deliver_after=datetime.timedelta(minutes=10))
        assert consumer.receive(timeout_millis=5000).data() == b"x"


def test_deliver_at_in_the_past_is_delivered_now(sclient):
    topic = fresh_topic()
    consumer = sclient.subscribe(topic, "sub", consumer_type=ConsumerType.Shared)
    sclient.create_producer(topic).send(b"x", deliver_at=1000)
    assert consumer.receive(timeout_millis=5000).data() == b"x"


def test_negative_delays_are_refused(sclient):
    producer = sclient.create_producer(fresh_topic())
    with pytest.raises(ValueError, match="negative"):
        producer.send(b"x", deliver_after=datetime.timedelta(seconds=-1))
    with pytest.raises(ValueError, match="deliver_at"):
        producer.send(b"x", deliver_at=-5)


def test_delayed_delivery_disabled_delivers_at_once(tmp_path):
    with Broker(data_dir=tmp_path, port=0, delayedDeliveryEnabled=False) as broker, \
            Client(broker.service_url) as client:
        topic = fresh_topic()
        consumer = client.subscribe(topic, "sub", consumer_type=ConsumerType.Shared)
        client.create_producer(topic).send(b"x", deliver_after=datetime.timedelta(minutes=10))
        assert consumer.receive(timeout_millis=5000).data() == b"x"


def test_the_delay_index_is_rebuilt_after_a_restart(tmp_path):
    """Not stored: rebuilt by reading again from the subscription's first unacknowledged message."""
    topic = fresh_topic()
    with Broker(data_dir=tmp_path, port=0, **STRICT) as broker, Client(broker.service_url) as client:
        client.subscribe(topic, "sub", consumer_type=ConsumerType.Shared,
                         initial_position=InitialPosition.Earliest).close()
        deliver_at = int(time.time() * 1000) + 1500
        client.create_producer(topic).send(b"later", deliver_at=deliver_at)
    with Broker(data_dir=tmp_path, port=0, **STRICT) as broker, Client(broker.service_url) as client:
        consumer = client.subscribe(topic, "sub", consumer_type=ConsumerType.Shared)
        if int(time.time() * 1000) < deliver_at - 300:
            with pytest.raises(Timeout):
                consumer.receive(timeout_millis=100)
        msg = consumer.receive(timeout_millis=5000)
        assert msg.data() == b"later" and int(time.time() * 1000) >= deliver_at


def test_a_delayed_message_comes_due_on_a_broker_that_never_syncs(tmp_path):
    """Due messages are read again by offset: up to what the journal confirmed, not the log's synced end,
    which journalSyncMode=never leaves at 0 (they were taken for messages retention removed, and lost)."""
    with Broker(data_dir=tmp_path, port=0, journalSyncMode="never", delayedDeliveryTickTimeMillis=100) as broker, \
            Client(broker.service_url) as client:
        topic = fresh_topic()
        consumer = client.subscribe(topic, "sub", consumer_type=ConsumerType.Shared)
        client.create_producer(topic).send(b"later", deliver_after=300)
        assert consumer.receive(timeout_millis=5000).data() == b"later"
