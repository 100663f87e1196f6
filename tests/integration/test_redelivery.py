"""Negative acks, ack timeout, redelivery counts and batch index acks with a real broker (seed: "Negative
acknowledgment", "Acknowledgment timeout", "Batching")."""
from __future__ import annotations

import time

import pytest

from broker_core import Broker
from connector import (
    Client, ConsumerType, InitialPosition, InvalidConfiguration, MultiplierRedeliveryBackoff, Timeout)
from tests.waiting import wait_for_backlog

NACK_MS = 100  # Pulsar's least negative-ack delay: redelivered 100..133 ms later


def _send(client, topic, payloads, batched=False):
    producer = client.create_producer(topic, batching_enabled=batched, batching_max_publish_delay_ms=1000)
    for payload in payloads:
        producer.send_async(payload, None)
    producer.flush()
    producer.close()


def _drain(consumer, wait_ms=300):
    out = []
    while True:
        try:
            out.append(consumer.receive(timeout_millis=wait_ms))
        except Timeout:
            return out


def _shared(client, topic, name="s", **options):
    options.setdefault("consumer_type", ConsumerType.Shared)
    options.setdefault("negative_ack_redelivery_delay_ms", NACK_MS)
    return client.subscribe(topic, name, initial_position=InitialPosition.Earliest, **options)


# --- negative acks ------------------------------------------------------------------------------------

@pytest.mark.transports
def test_shared_nack_redelivers_only_that_message_and_redelivery_count_counts(client, topic):
    consumer = _shared(client, topic)
    _send(client, topic, [b"m%d" % i for i in range(5)])
    got = [consumer.receive(timeout_millis=5000) for _ in range(5)]
    for msg in got:
        if msg.data() == b"m2":
            consumer.negative_acknowledge(msg)
        else:
            consumer.acknowledge(msg)
    for count in (1, 2, 3):
        again = consumer.receive(timeout_millis=5000)
        assert (again.data(), again.redelivery_count()) == (b"m2", count)
        if count < 3:
            consumer.negative_acknowledge(again)
    consumer.acknowledge(again)
    assert _drain(consumer) == []


def test_nack_waits_for_the_redelivery_delay(client, topic):
    consumer = _shared(client, topic, negative_ack_redelivery_delay_ms=600)
    _send(client, topic, [b"x"])
    msg = consumer.receive(timeout_millis=5000)
    nacked_at = time.monotonic()
    consumer.negative_acknowledge(msg)
    again = consumer.receive(timeout_millis=5000)
    assert again.data() == b"x" and time.monotonic() - nacked_at >= 0.6


@pytest.mark.transports
def test_exclusive_nack_rewinds_to_the_first_unacknowledged_message(client, topic):
    consumer = client.subscribe(topic, "ex", initial_position=InitialPosition.Earliest,
                                negative_ack_redelivery_delay_ms=NACK_MS)
    _send(client, topic, [b"a", b"b", b"c"])
    a, b, c = (consumer.receive(timeout_millis=5000) for _ in range(3))
    consumer.acknowledge(a)
    consumer.negative_acknowledge(b)  # the last one the application gave up on
    again = _drain(consumer, wait_ms=700)
    assert [m.data() for m in again] == [b"b", b"c"]  # in order, c too: the broker rewound
    assert all(m.redelivery_count() == 1 for m in again)


def test_nack_backoff_delays_grow_with_the_redelivery_count(client, topic):
    consumer = _shared(client, topic, negative_ack_redelivery_backoff=MultiplierRedeliveryBackoff(150, 2000, 2))
    _send(client, topic, [b"x"])
    msg = consumer.receive(timeout_millis=5000)
    gaps = []
    for _ in range(3):
        nacked_at = time.monotonic()
        consumer.negative_acknowledge(msg)
        msg = consumer.receive(timeout_millis=5000)
        gaps.append(time.monotonic() - nacked_at)
    assert msg.redelivery_count() == 3
    assert gaps[0] >= 0.15 and gaps[1] >= 0.3 and gaps[2] >= 0.6, gaps


@pytest.mark.transports
def test_buffered_messages_of_a_nacked_batch_are_dropped_not_delivered_twice(client, topic):
    consumer = _shared(client, topic)
    _send(client, topic, [b"m%d" % i for i in range(5)], batched=True)  # one entry of 5 messages
    first = consumer.receive(timeout_millis=5000)
    consumer.negative_acknowledge(first)  # its four siblings are still buffered
    deadline = time.monotonic() + 5
    while consumer.buffered() < 9 and time.monotonic() < deadline:  # the redelivered batch arrives
        time.sleep(0.01)
    got = _drain(consumer)
    assert sorted(m.data() for m in got) == [b"m%d" % i for i in range(5)]
    assert {m.redelivery_count() for m in got} == {1}


@pytest.mark.transports
def test_redeliver_unacknowledged_messages_works_on_shared(client, topic):
    consumer = _shared(client, topic)
    _send(client, topic, [b"a", b"b", b"c"])
    got = [consumer.receive(timeout_millis=5000) for _ in range(3)]
    consumer.acknowledge(got[0])
    consumer.redeliver_unacknowledged_messages()
    again = _drain(consumer)
    assert sorted(m.data() for m in again) == [b"b", b"c"]


# --- ack timeout --------------------------------------------------------------------------------------

@pytest.mark.transports
def test_unacknowledged_messages_come_again_after_the_ack_timeout(client, topic):
    consumer = _shared(client, topic, unacked_messages_timeout_ms=1000, ack_timeout_tick_time_ms=100)
    _send(client, topic, [b"acked", b"forgotten"])
    got = {m.data(): m for m in (consumer.receive(timeout_millis=5000) for _ in range(2))}
    received_at = time.monotonic()
    consumer.acknowledge(got[b"acked"])
    again = consumer.receive(timeout_millis=5000)
    assert (again.data(), again.redelivery_count()) == (b"forgotten", 1)
    waited = time.monotonic() - received_at
    assert waited >= 1.0  # not before the timeout (the upper bound is receive's own 5 s)
    consumer.acknowledge(again)
    assert _drain(consumer, wait_ms=1300) == []


def test_a_nacked_message_is_not_also_redelivered_by_the_ack_timeout(client, topic):
    consumer = _shared(client, topic, unacked_messages_timeout_ms=1000, ack_timeout_tick_time_ms=100,
                       negative_ack_redelivery_delay_ms=60_000)
    _send(client, topic, [b"x"])
    consumer.negative_acknowledge(consumer.receive(timeout_millis=5000))
    assert _drain(consumer, wait_ms=1500) == []


@pytest.mark.parametrize("option", [{"unacked_messages_timeout_ms": 999}, {"ack_timeout_tick_time_ms": 99},
                                    {"negative_ack_redelivery_backoff": 5}])
def test_bad_redelivery_options_are_refused(client, topic, option):
    with pytest.raises(ValueError, match=next(iter(option))):
        client.subscribe(topic, "bad", **option)


def test_key_shared_policy_needs_a_key_shared_consumer(client, topic):
    from connector import ConsumerKeySharedPolicy

    with pytest.raises(InvalidConfiguration, match="KeyShared"):
        client.subscribe(topic, "s", consumer_type=ConsumerType.Shared,
                         key_shared_policy=ConsumerKeySharedPolicy())


# --- batch index acknowledgment -----------------------------------------------------------------------

@pytest.fixture(scope="module")
def batch_index_broker(tmp_path_factory):
    with Broker(data_dir=tmp_path_factory.mktemp("batch-index"), port=0,
                acknowledgmentAtBatchIndexLevelEnabled=True) as running:
        yield running


def _ack_two_nack_one(consumer):
    """Of a batch of four: ack m0 and m1, nack m2, leave m3; returns what comes again."""
    got = {m.data(): m for m in (consumer.receive(timeout_millis=5000) for _ in range(4))}
    consumer.acknowledge(got[b"m0"])
    consumer.acknowledge(got[b"m1"])
    consumer.negative_acknowledge(got[b"m2"])
    return sorted(m.data() for m in _drain(consumer, wait_ms=700))


@pytest.mark.transports
def test_batch_index_ack_redelivers_only_the_unacknowledged_messages(batch_index_broker, topic, transport):
    with Client(batch_index_broker.service_url, transport=transport) as client:
        consumer = _shared(client, topic, batch_index_ack_enabled=True)
        _send(client, topic, [b"m%d" % i for i in range(4)], batched=True)
        assert _ack_two_nack_one(consumer) == [b"m2", b"m3"]


@pytest.mark.transports
def test_without_batch_index_ack_on_the_consumer_the_whole_batch_comes_again(batch_index_broker, topic, transport):
    with Client(batch_index_broker.service_url, transport=transport) as client:
        consumer = _shared(client, topic)  # batch_index_ack_enabled=False: acks held until the batch is done
        _send(client, topic, [b"m%d" % i for i in range(4)], batched=True)
        assert _ack_two_nack_one(consumer) == [b"m0", b"m1", b"m2", b"m3"]


def test_without_batch_index_ack_on_the_broker_the_whole_batch_comes_again(client, topic):
    consumer = _shared(client, topic, batch_index_ack_enabled=True)
    _send(client, topic, [b"m%d" % i for i in range(4)], batched=True)
    assert _ack_two_nack_one(consumer) == [b"m0", b"m1", b"m2", b"m3"]


@pytest.mark.transports
def test_held_batch_acks_acknowledge_the_batch_once_every_message_is_acked(client, admin, topic):
    consumer = _shared(client, topic)
    _send(client, topic, [b"m%d" % i for i in range(3)], batched=True)
    _send(client, topic, [b"single"])
    got = [consumer.receive(timeout_millis=5000) for _ in range(4)]
    consumer.acknowledge(got[0])
    consumer.acknowledge(got[1])
    consumer.acknowledge(got[3])  # the grouped acks go out: the single message's, none for the partial batch
    assert wait_for_backlog(admin, topic, "s", 3) == 3
    consumer.acknowledge(got[2])
    deadline = time.monotonic() + 5
    while admin.topic_stats(topic)["subscriptions"]["s"]["msgBacklog"] and time.monotonic() < deadline:
        time.sleep(0.01)
    assert admin.topic_stats(topic)["subscriptions"]["s"]["msgBacklog"] == 0
