"""Message deduplication end to end (seed "Message deduplication"): broker config, namespace and topic
policies through Admin, producers resuming after a reconnect and across a killed broker."""
from __future__ import annotations

import uuid

import pytest

from broker_core import Broker
from connector import Admin, Client, InitialPosition


def received(client, topic, expected, sub="check"):
    """Every message on ``topic`` (from the start) as (payload, sequence id); expects ``expected`` of them
    and then checks nothing more arrives."""
    consumer = client.subscribe(topic, f"{sub}-{uuid.uuid4().hex[:6]}", initial_position=InitialPosition.Earliest)
    out = []
    try:
        for _ in range(expected):
            msg = consumer.receive(timeout_millis=10_000)
            out.append((msg.data(), msg.sequence_id()))
        with pytest.raises(Exception, match="no message"):
            consumer.receive(timeout_millis=300)
    finally:
        consumer.close()
    return out


@pytest.fixture(scope="module")
def dedup_broker(tmp_path_factory):
    with Broker(data_dir=tmp_path_factory.mktemp("dedup"), port=0, brokerDeduplicationEnabled=True) as running:
        yield running


@pytest.fixture
def dclient(dedup_broker):
    c = Client(dedup_broker.service_url)
    yield c
    c.close()


def test_a_resent_sequence_id_is_dropped_and_the_send_still_succeeds(dclient, topic):
    producer = dclient.create_producer(topic, producer_name="writer", batching_enabled=False)
    for seq in range(3):
        producer.send(f"m{seq}".encode(), sequence_id=seq)
    duplicate = producer.send(b"m1-again", sequence_id=1)
    assert (duplicate.ledger_id(), duplicate.entry_id()) == (-1, -1)  # Pulsar's id for a dropped duplicate
    producer.send(b"m3", sequence_id=3)
    assert producer.last_sequence_id() == 3
    producer.close()
    assert received(dclient, topic, 4) == [(b"m0", 0), (b"m1", 1), (b"m2", 2), (b"m3", 3)]


def test_a_batch_below_the_last_sequence_id_is_dropped_as_a_whole(dclient, topic):
    producer = dclient.create_producer(topic, producer_name="batcher", batching_enabled=True,
                                       batching_max_publish_delay_ms=1000)
    for i in range(10):
        producer.send_async(f"a{i}".encode(), None)
    producer.flush()
    producer.close()
    again = dclient.create_producer(topic, producer_name="batcher", batching_enabled=True,
                                    batching_max_publish_delay_ms=1000)
    assert again.last_sequence_id() == 9
    for i in range(5):  # the same ids again, as a retrying application would send them
        again.send_async(f"dup{i}".encode(), None, sequence_id=5 + i)
    again.flush()
    again.send(b"next")  # carries on after the broker's last sequence id
    again.close()
    got = received(dclient, topic, 11)
    assert [seq for _, seq in got] == list(range(11))
    assert got[-1] == (b"next", 10)


def test_a_reconnecting_producer_resumes_from_the_brokers_last_sequence_id(dclient, topic):
    first = dclient.create_producer(topic, producer_name="resumer", batching_enabled=False)
    for i in range(4):
        first.send(b"x%d" % i)
    first.close()
    second = dclient.create_producer(topic, producer_name="resumer", batching_enabled=False)
    assert second.last_sequence_id() == 3
    second.send(b"after")
    second.close()
    assert [seq for _, seq in received(dclient, topic, 5)] == [0, 1, 2, 3, 4]


def test_initial_sequence_id_sets_where_a_new_producer_starts(dclient, topic):
    producer = dclient.create_producer(topic, producer_name="from-100", initial_sequence_id=99,
                                       batching_enabled=False)
    producer.send(b"a")
    assert producer.last_sequence_id() == 100
    producer.close()
    assert received(dclient, topic, 1) == [(b"a", 100)]


def test_producers_are_deduplicated_per_producer_name(dclient, topic):
    a = dclient.create_producer(topic, producer_name="a", batching_enabled=False)
    b = dclient.create_producer(topic, producer_name="b", batching_enabled=False)
    a.send(b"a0", sequence_id=0)
    b.send(b"b0", sequence_id=0)  # same id, other producer: stored
    a.close()
    b.close()
    assert sorted(received(dclient, topic, 2)) == [(b"a0", 0), (b"b0", 0)]


def test_policies_turn_deduplication_on_and_off_per_namespace_and_topic(broker, client, admin, topic):
    """The shared broker has brokerDeduplicationEnabled=false: policies override it, topic over namespace."""
    admin.create_topic(topic)
    assert admin.get_topic_deduplication(topic) is None
    admin.set_topic_deduplication(topic, True)
    assert admin.get_topic_deduplication(topic) is True
    producer = client.create_producer(topic, producer_name="pol", batching_enabled=False)
    producer.send(b"one", sequence_id=5)
    producer.send(b"dup", sequence_id=5)
    admin.set_topic_deduplication(topic, False)  # applies to the loaded topic at once
    producer.send(b"kept", sequence_id=5)
    producer.close()
    assert [data for data, _ in received(client, topic, 2)] == [b"one", b"kept"]

    namespace = "public/default"
    other = f"persistent://{namespace}/ns-policy-{uuid.uuid4().hex[:8]}"
    admin.set_namespace_deduplication(namespace, True)
    try:
        assert admin.get_namespace_deduplication(namespace) is True
        producer = client.create_producer(other, producer_name="ns", batching_enabled=False)
        producer.send(b"x", sequence_id=1)
        producer.send(b"x-dup", sequence_id=1)
        producer.close()
        assert [data for data, _ in received(client, other, 1)] == [b"x"]
        admin.set_topic_deduplication(other, False)  # the topic's own setting wins over the namespace's
        producer = client.create_producer(other, producer_name="ns", batching_enabled=False)
        producer.send(b"y", sequence_id=1)
        producer.close()
        assert [data for data, _ in received(client, other, 2)] == [b"x", b"y"]
        admin.remove_topic_deduplication(other)
        assert admin.get_topic_deduplication(other) is None
    finally:
        admin.set_namespace_deduplication(namespace, None)
    assert admin.get_namespace_deduplication(namespace) is None


def test_bad_policy_requests_are_typed_errors(admin, topic):
    from connector import InvalidConfiguration, TopicNotFound

    with pytest.raises(TopicNotFound):
        admin.set_topic_deduplication("persistent://public/default/never-created-" + uuid.uuid4().hex, True)
    with pytest.raises(InvalidConfiguration, match="tenant/namespace"):
        admin.set_namespace_deduplication("no-slash", True)
    with pytest.raises(ValueError, match="True, False or None"):
        admin.set_namespace_deduplication("public/default", "yes")


def test_policies_survive_a_broker_restart(tmp_path):
    topic = "persistent://public/default/policy-restart"
    with Broker(data_dir=tmp_path, port=0) as first, Admin(first.service_url) as admin:
        admin.create_topic(topic)
        admin.set_topic_deduplication(topic, True)
        admin.set_namespace_deduplication("public/default", False)
    with Broker(data_dir=tmp_path, port=0) as second, Admin(second.service_url) as admin:
        assert admin.get_topic_deduplication(topic) is True
        assert admin.namespace_policies("public/default") == {"deduplicationEnabled": False}


def test_deduplication_survives_a_killed_broker(broker_process, tmp_path):
    """The broker is SIGKILLed (no snapshot on close): the restarted one rebuilds the producers' last
    sequence ids from its log, so a producer resending after the crash adds nothing twice."""
    data = tmp_path / "data"
    args = ("--set", "brokerDeduplicationEnabled=true", "--set", "brokerDeduplicationEntriesInterval=4")
    topic = "persistent://public/default/dedup-crash"
    proc = broker_process(*args, data_dir=data)
    with Client(proc.service_url) as client:
        producer = client.create_producer(topic, producer_name="survivor", batching_enabled=False)
        for seq in range(10):
            producer.send(b"m%d" % seq, sequence_id=seq)
    proc.kill()
    proc = broker_process(*args, data_dir=data)
    with Client(proc.service_url) as client:
        producer = client.create_producer(topic, producer_name="survivor", batching_enabled=False)
        assert producer.last_sequence_id() == 9
        for seq in range(5, 12):  # the application retries what it is unsure of, then goes on
            producer.send(b"m%d" % seq, sequence_id=seq)
        producer.close()
        got = received(client, topic, 12)
    assert got == [(b"m%d" % i, i) for i in range(12)]
