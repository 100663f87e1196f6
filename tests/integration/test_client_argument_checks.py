"""pulsar-client's checks of a message's arguments and of seek: a payload that is not bytes is a TypeError, a
wrong type for properties, key, sequence id, replication, times a ValueError, raised before anything is sent;
``seek`` takes a MessageId or an int publish time only. One in-process broker on port 0."""
from __future__ import annotations

import uuid

import pytest

from broker_core import Broker
from connector import Client, MessageId


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    with Broker(data_dir=tmp_path_factory.mktemp("args"), port=0, journalSyncMode="never") as broker:
        c = Client(broker.service_url)
        yield c
        c.close()


@pytest.fixture(scope="module")
def producer(client):
    return client.create_producer(f"args-{uuid.uuid4().hex[:8]}")


def test_a_payload_that_is_not_bytes_is_a_type_error(producer):
    with pytest.raises(TypeError):
        producer.send(5)


@pytest.mark.parametrize("kwargs", [
    {"properties": "test"}, {"partition_key": 5}, {"sequence_id": "test"}, {"replication_clusters": 5},
    {"disable_replication": "test"}, {"event_timestamp": "test"}, {"deliver_at": "test"},
    {"deliver_after": "test"}])
@pytest.mark.parametrize("send", ["send", "send_async"])
def test_a_message_argument_of_the_wrong_type_is_a_value_error(producer, send, kwargs):
    args = (b"x",) if send == "send" else (b"x", None)
    with pytest.raises(ValueError):
        getattr(producer, send)(*args, **kwargs)


def test_seek_takes_a_message_id_or_an_int_time_only(client):
    topic = f"seek-args-{uuid.uuid4().hex[:8]}"
    consumer = client.subscribe(topic, "s")
    reader = client.create_reader(topic, MessageId.earliest)
    for target in (1.5, "0", None):
        with pytest.raises(ValueError, match="invalid seek_arg type"):
            consumer.seek(target)
        with pytest.raises(ValueError, match="invalid seek_arg type"):
            reader.seek(target)
    consumer.seek(0)
    reader.seek(MessageId.earliest)


@pytest.mark.parametrize("ranges", [[(0, 65536)], [(-1, 10)], [(500, 100)], [(0, 100), (50, 150)]])
def test_sticky_ranges_wrong_in_themselves_are_a_value_error_before_subscribing(client, ranges):
    from connector import ConsumerAssignError, ConsumerKeySharedPolicy, ConsumerType, KeySharedMode

    policy = ConsumerKeySharedPolicy(KeySharedMode.Sticky, sticky_ranges=ranges)
    with pytest.raises(ValueError) as refused:
        client.subscribe(f"sticky-{uuid.uuid4().hex[:8]}", "s", consumer_type=ConsumerType.KeyShared,
                         key_shared_policy=policy)
    assert isinstance(refused.value, ConsumerAssignError)


def test_a_dead_letter_policy_names_no_topic_or_subscription_as_empty_strings():
    from connector import ConsumerDeadLetterPolicy

    policy = ConsumerDeadLetterPolicy(10)
    assert (policy.dead_letter_topic, policy.initial_subscription_name) == ("", "")
    assert ConsumerDeadLetterPolicy(3, "dlq", "init").initial_subscription_name == "init"
