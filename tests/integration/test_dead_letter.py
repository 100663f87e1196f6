"""Dead letter and retry letter topics with a real broker (seed: "Dead letter topic", "Retry letter topic")."""
from __future__ import annotations

import time

import pytest

from broker_core import Broker
from connector import (
    Client, ConsumerDeadLetterPolicy, ConsumerType, InitialPosition, InvalidConfiguration, Timeout)
from tests.waiting import wait_for_backlog

NACK_MS = 100


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    # a 100 ms delayed-delivery tick keeps the retry delays short
    with Broker(data_dir=tmp_path_factory.mktemp("dead-letter"), port=0,
                delayedDeliveryTickTimeMillis=100) as running:
        yield running


def _consumer(client, topic, name="sub", **options):
    options.setdefault("consumer_type", ConsumerType.Shared)
    return client.subscribe(topic, name, initial_position=InitialPosition.Earliest,
                            negative_ack_redelivery_delay_ms=NACK_MS, **options)


def _drain(consumer, wait_ms=500):
    out = []
    while True:
        try:
            out.append(consumer.receive(timeout_millis=wait_ms))
        except Timeout:
            return out


def _nack_until_gone(consumer, wait_ms=700):
    """Receive and negatively acknowledge until nothing comes any more; the redelivery counts seen."""
    counts = []
    while True:
        try:
            msg = consumer.receive(timeout_millis=wait_ms)
        except Timeout:
            return counts
        counts.append(msg.redelivery_count())
        consumer.negative_acknowledge(msg)


def _wait_backlog_empty(admin, topic, subscription):
    return wait_for_backlog(admin, topic, subscription, 0, timeout_s=5)


@pytest.mark.transports
def test_dlq_after_max_redeliveries_with_the_default_name(client, admin, topic):
    dlq = client.subscribe(f"{topic}-orders-DLQ", "inspect", initial_position=InitialPosition.Earliest)
    consumer = _consumer(client, topic, "orders", dead_letter_policy=ConsumerDeadLetterPolicy(2))
    producer = client.create_producer(topic, batching_enabled=False)
    sent = producer.send(b"poison", properties={"kind": "test"}, partition_key="k1", event_timestamp=12345)
    counts = _nack_until_gone(consumer)  # receive, fail, nack: until it stops coming
    assert counts == [0, 1, 2]  # delivered max_redeliver_count + 1 times, then dead-lettered
    dead = dlq.receive(timeout_millis=5000)
    assert dead.data() == b"poison" and dead.partition_key() == "k1" and dead.event_timestamp() == 12345
    props = dead.properties()
    assert props["kind"] == "test" and props["REAL_TOPIC"] == topic
    assert props["ORIGIN_MESSAGE_ID"] == f"{sent.ledger_id()}:{sent.entry_id()}:{sent.partition()}"
    assert _wait_backlog_empty(admin, topic, "orders") == 0  # the original was acknowledged
    assert _drain(dlq, wait_ms=300) == []  # written once


def test_initial_subscription_keeps_every_dead_letter(client, topic):
    policy = ConsumerDeadLetterPolicy(1, dead_letter_topic=f"{topic}-dead", initial_subscription_name="init")
    consumer = _consumer(client, topic, dead_letter_policy=policy)
    client.create_producer(topic, batching_enabled=False).send(b"x")
    assert _nack_until_gone(consumer) == [0, 1]
    consumer.close()
    again = _consumer(client, topic, dead_letter_policy=policy)  # "init" exists now: created once, kept
    client.create_producer(topic, batching_enabled=False).send(b"y")
    assert _nack_until_gone(again) == [0, 1]
    # subscribing now at the *latest* position still finds them: "init" existed before they were written
    late = client.subscribe(f"{topic}-dead", "init")
    assert [late.receive(timeout_millis=5000).data() for _ in range(2)] == [b"x", b"y"]


@pytest.mark.transports
def test_a_batch_goes_to_the_dlq_whole(client, admin, topic):
    dlq = client.subscribe(f"{topic}-sub-DLQ", "inspect", initial_position=InitialPosition.Earliest)
    consumer = _consumer(client, topic, dead_letter_policy=ConsumerDeadLetterPolicy(1))
    producer = client.create_producer(topic, batching_max_publish_delay_ms=1000)
    for i in range(3):
        producer.send_async(b"m%d" % i, None)
    producer.flush()
    first = consumer.receive(timeout_millis=5000)
    consumer.negative_acknowledge(first)  # the whole entry comes back (count 1), then goes to the DLQ
    assert _nack_until_gone(consumer)[-3:] == [1, 1, 1]  # (m1, m2 of the first delivery,) then all again
    assert sorted(m.data() for m in _drain(dlq)) == [b"m0", b"m1", b"m2"]
    assert _wait_backlog_empty(admin, topic, "sub") == 0


def test_the_ack_timeout_also_leads_to_the_dlq(client, topic):
    dlq = client.subscribe(f"{topic}-sub-DLQ", "inspect", initial_position=InitialPosition.Earliest)
    consumer = _consumer(client, topic, dead_letter_policy=ConsumerDeadLetterPolicy(1),
                         unacked_messages_timeout_ms=1000, ack_timeout_tick_time_ms=100)
    client.create_producer(topic, batching_enabled=False).send(b"slow")
    counts = [m.redelivery_count() for m in _drain(consumer, wait_ms=2500)]  # never acknowledged
    assert counts == [0, 1]
    assert dlq.receive(timeout_millis=5000).data() == b"slow"


def test_a_message_redelivered_beyond_the_max_goes_straight_to_the_dlq(client, topic):
    dlq = client.subscribe(f"{topic}-sub-DLQ", "inspect", initial_position=InitialPosition.Earliest)
    policy = ConsumerDeadLetterPolicy(1)
    first = _consumer(client, topic, dead_letter_policy=policy)
    client.create_producer(topic, batching_enabled=False).send(b"x")
    first.negative_acknowledge(first.receive(timeout_millis=5000))
    assert first.receive(timeout_millis=5000).redelivery_count() == 1
    second = _consumer(client, topic, dead_letter_policy=policy)
    first.close()  # holding it unacknowledged: it comes back with count 2 > 1
    assert _drain(second, wait_ms=500) == []
    assert dlq.receive(timeout_millis=5000).data() == b"x"


# --- retry letter topic -------------------------------------------------------------------------------

@pytest.mark.transports
def test_reconsume_later_goes_through_the_retry_topic_then_to_the_dlq(client, admin, topic):
    dlq = client.subscribe(f"{topic}-billing-DLQ", "inspect", initial_position=InitialPosition.Earliest)
    consumer = _consumer(client, topic, "billing", retry_enable=True,
                         dead_letter_policy=ConsumerDeadLetterPolicy(2))
    sent = client.create_producer(topic, batching_enabled=False).send(
        b"job", properties={"origin": "app"}, partition_key="k")
    msg = consumer.receive(timeout_millis=5000)
    for times in (1, 2):
        asked = time.monotonic()
        consumer.reconsume_later(msg, 300, properties={"attempt": str(times)})
        msg = consumer.receive(timeout_millis=5000)
        assert time.monotonic() - asked >= 0.2  # the delay, less at most one delayed-delivery tick
        assert msg.topic_name() == f"{topic}-billing-RETRY" and msg.data() == b"job"
        assert msg.partition_key() == "k"
        assert msg.properties() == {
            "origin": "app", "attempt": str(times), "REAL_TOPIC": topic,
            "ORIGIN_MESSAGE_ID": f"{sent.ledger_id()}:{sent.entry_id()}:{sent.partition()}",
            "RECONSUMETIMES": str(times), "DELAY_TIME": "300"}
    consumer.reconsume_later(msg, 300)  # a third time: more than max_redeliver_count
    dead = dlq.receive(timeout_millis=5000)
    assert dead.data() == b"job" and dead.properties()["RECONSUMETIMES"] == "3"
    assert _drain(consumer, wait_ms=600) == []
    assert _wait_backlog_empty(admin, topic, "billing") == 0
    assert _wait_backlog_empty(admin, f"{topic}-billing-RETRY", "billing") == 0


def test_retry_enable_without_a_policy_allows_16_reconsumes(client, topic):
    consumer = _consumer(client, topic, retry_enable=True)
    assert consumer._dead_letters.max_redeliver_count == 16
    assert consumer._dead_letters.retry_letter_topic == f"{topic}-sub-RETRY"


@pytest.mark.parametrize("ctype", [ConsumerType.Exclusive, ConsumerType.Failover])
def test_letter_topics_need_a_shared_subscription(client, topic, ctype):
    with pytest.raises(InvalidConfiguration, match="Shared"):
        _consumer(client, topic, consumer_type=ctype, retry_enable=True)
    with pytest.raises(InvalidConfiguration, match="Shared"):
        _consumer(client, topic, consumer_type=ctype, dead_letter_policy=ConsumerDeadLetterPolicy(3))


def test_reconsume_later_needs_retry_enable(client, topic):
    consumer = _consumer(client, topic)
    client.create_producer(topic).send(b"x")
    with pytest.raises(InvalidConfiguration, match="retry_enable"):
        consumer.reconsume_later(consumer.receive(timeout_millis=5000), 100)


def test_reconsume_later_refuses_a_negative_delay(client, topic):
    consumer = _consumer(client, topic, retry_enable=True)
    client.create_producer(topic).send(b"x")
    with pytest.raises(ValueError, match="delay_ms"):
        consumer.reconsume_later(consumer.receive(timeout_millis=5000), -1)


@pytest.mark.transports
def test_letter_topics_of_a_partitioned_topic_are_named_after_it(client, admin, topic):
    admin.create_partitioned_topic(topic, 2)
    dlq = client.subscribe(f"{topic}-sub-DLQ", "inspect", initial_position=InitialPosition.Earliest)
    consumer = _consumer(client, topic, dead_letter_policy=ConsumerDeadLetterPolicy(1))
    producer = client.create_producer(topic, batching_enabled=False)
    for key in ("a", "b", "c", "d"):
        producer.send(key.encode(), partition_key=key)
    assert sorted(_nack_until_gone(consumer)) == [0, 0, 0, 0, 1, 1, 1, 1]
    dead = _drain(dlq)
    assert sorted(m.data() for m in dead) == [b"a", b"b", b"c", b"d"]
    assert {m.properties()["REAL_TOPIC"] for m in dead} == {topic}


def test_closing_the_client_closes_the_letter_producers(broker, topic):
    with Client(broker.service_url) as client:
        consumer = _consumer(client, topic, retry_enable=True)
        client.create_producer(topic).send(b"x")
        consumer.reconsume_later(consumer.receive(timeout_millis=5000), 0)
        assert consumer.receive(timeout_millis=5000).properties()["RECONSUMETIMES"] == "1"
