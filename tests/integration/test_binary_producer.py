"""Our producer over Pulsar's binary protocol (``Client(..., transport="binary")``: ProduceAdapter), against our
broker's process (deduplication on, a small maxMessageSize so chunks are cheap) and against pulsar-lite, a
Pulsar broker that is not ours. What it wrote is read back with the official client, so these tests check the
producing side alone: ids, batches, chunks, dedup, access modes, a broker restart, an Avro record."""
from __future__ import annotations

import threading
import uuid

import pulsar
import pytest

from connector import Client, ProducerAccessMode, ProducerFenced, Result
from connector.client import schema as ours
from tests.brokers import BrokerProcess

MAX_MESSAGE_SIZE = 64 * 1024


@pytest.fixture(scope="module")
def broker_proc(tmp_path_factory):
    proc = BrokerProcess(tmp_path_factory.mktemp("binary-producer"), "--set", "brokerDeduplicationEnabled=true",
                         "--set", f"maxMessageSize={MAX_MESSAGE_SIZE}").start()
    yield proc
    proc.stop()


@pytest.fixture(params=["pulsarlike", "pulsar-lite"])
def any_broker(request):
    """The service URL of our broker's process, then of pulsar-lite."""
    fixture = "broker_proc" if request.param == "pulsarlike" else "pulsar_lite_broker"
    return request.getfixturevalue(fixture).service_url


@pytest.fixture
def binary(broker_proc):
    client = Client(broker_proc.service_url, transport="binary")
    yield client
    client.close()


def official_client(service_url: str) -> pulsar.Client:
    return pulsar.Client(service_url, operation_timeout_seconds=10,
                         logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))


def read_all(service_url: str, topic: str, count: int, schema=None) -> list:
    """``count`` messages of ``topic`` from the start, read by the official client (payloads, or values with
    ``schema``), then nothing more within 300 ms."""
    client = official_client(service_url)
    try:
        kwargs = {"schema": schema} if schema is not None else {}
        consumer = client.subscribe(topic, f"check-{uuid.uuid4().hex[:6]}",
                                    initial_position=pulsar.InitialPosition.Earliest, **kwargs)
        out = []
        for _ in range(count):
            msg = consumer.receive(timeout_millis=10_000)
            out.append(msg.value() if schema is not None else msg.data())
            consumer.acknowledge(msg)
        with pytest.raises(Exception):
            consumer.receive(timeout_millis=300)
        return out
    finally:
        client.close()


class Results:
    """send_async callbacks, waited on."""

    def __init__(self) -> None:
        self.got: list = []
        self._changed = threading.Condition()

    def __call__(self, result, msg_id) -> None:
        with self._changed:
            self.got.append((result, msg_id))
            self._changed.notify_all()

    def wait_for(self, count: int, timeout_s: float = 15.0) -> list:
        with self._changed:
            assert self._changed.wait_for(lambda: len(self.got) >= count, timeout_s), self.got
            return list(self.got)


def test_a_sent_message_gets_the_brokers_id_and_is_read_by_the_official_client(any_broker, topic):
    with Client(any_broker, transport="binary") as client:
        producer = client.create_producer(topic)
        first, second = producer.send(b"one"), producer.send(b"two")
        producer.close()
    assert (second.ledger_id(), second.entry_id()) > (first.ledger_id(), first.entry_id())
    assert read_all(any_broker, topic, 2) == [b"one", b"two"]


def test_send_async_with_batching_completes_every_callback_with_its_batch_index(any_broker, topic):
    results = Results()
    with Client(any_broker, transport="binary") as client:
        producer = client.create_producer(topic, batching_enabled=True, batching_max_messages=10,
                                          batching_max_publish_delay_ms=50)
        for i in range(30):
            producer.send_async(b"m%d" % i, results)
        producer.flush()
        got = results.wait_for(30)
        producer.close()
    assert {result for result, _ in got} == {Result.Ok}
    assert [msg_id.batch_index() for _, msg_id in got[:10]] == list(range(10))
    assert read_all(any_broker, topic, 30) == [b"m%d" % i for i in range(30)]


def test_a_message_over_max_message_size_goes_out_in_chunks(binary, broker_proc, topic):
    payload = bytes(range(256)) * (3 * MAX_MESSAGE_SIZE // 256)
    producer = binary.create_producer(topic, chunking_enabled=True, batching_enabled=False)
    producer.send(payload)
    producer.send(b"after")
    producer.close()
    assert read_all(broker_proc.service_url, topic, 2) == [payload, b"after"]


def test_a_resent_sequence_id_is_dropped_as_a_duplicate(binary, broker_proc, topic):
    producer = binary.create_producer(topic, producer_name="dedup-writer", batching_enabled=False)
    for seq in range(3):
        producer.send(b"m%d" % seq, sequence_id=seq)
    duplicate = producer.send(b"m1-again", sequence_id=1)
    assert (duplicate.ledger_id(), duplicate.entry_id()) == (-1, -1)
    assert producer.last_sequence_id() == 2
    producer.close()
    reopened = binary.create_producer(topic, producer_name="dedup-writer")
    assert reopened.last_sequence_id() == 2  # PRODUCER_SUCCESS's last_sequence_id
    reopened.close()
    assert read_all(broker_proc.service_url, topic, 3) == [b"m0", b"m1", b"m2"]


def test_access_modes_a_second_exclusive_is_refused_and_fencing_takes_over(binary, topic):
    first = binary.create_producer(topic, access_mode=ProducerAccessMode.Exclusive)
    with pytest.raises(ProducerFenced, match="existing exclusive producer"):
        binary.create_producer(topic, access_mode=ProducerAccessMode.Exclusive)
    fencer = binary.create_producer(topic, access_mode=ProducerAccessMode.ExclusiveWithFencing)
    fencer.send(b"fenced-in")
    with pytest.raises(ProducerFenced):  # CLOSE_PRODUCER, then the reopening is refused for good
        first.send(b"late")
    with pytest.raises(ProducerFenced):
        first.send(b"later")
    fencer.close()


def test_wait_for_exclusive_opens_once_the_exclusive_producer_closes(binary, topic):
    holder = binary.create_producer(topic, access_mode=ProducerAccessMode.Exclusive)
    opened = []
    waiter = threading.Thread(target=lambda: opened.append(
        binary.create_producer(topic, access_mode=ProducerAccessMode.WaitForExclusive)))
    waiter.start()
    waiter.join(0.5)
    assert opened == []
    holder.close()
    waiter.join(15)
    assert len(opened) == 1
    opened[0].send(b"my turn")
    opened[0].close()


def test_a_producer_rides_through_a_broker_restart_resending_what_was_pending(broker_process, topic):
    proc = broker_process("--set", "brokerDeduplicationEnabled=true", restartable=True)
    results = Results()
    with Client(proc.service_url, transport="binary") as client:
        producer = client.create_producer(topic, producer_name="survivor", batching_enabled=False)
        producer.send(b"before")
        proc.kill()
        for i in range(5):
            producer.send_async(b"during-%d" % i, results)
        proc.restart()
        got = results.wait_for(5, timeout_s=30)
        producer.send(b"after")
        producer.close()
    assert {result for result, _ in got} == {Result.Ok}
    assert read_all(proc.service_url, topic, 7) == [b"before", *(b"during-%d" % i for i in range(5)), b"after"]


class Reading(ours.Record):
    name = ours.String(required=True)
    value = ours.Double()


class OfficialReading(pulsar.schema.Record):
    name = pulsar.schema.String(required=True)
    value = pulsar.schema.Double()


OfficialReading.__name__ = "Reading"  # the definitions are compared by record name


def test_an_avro_record_is_read_by_the_official_client(any_broker, topic, request):
    with Client(any_broker, transport="binary") as client:
        producer = client.create_producer(topic, schema=ours.AvroSchema(Reading))
        producer.send(Reading(name="t1", value=21.5))
        producer.close()
    official = pulsar.schema.AvroSchema(OfficialReading)
    if request.node.callspec.params["any_broker"] == "pulsarlike":
        [record] = read_all(any_broker, topic, 1, schema=official)
    else:  # pulsar-lite never answers the official consumer's GET_SCHEMA (10 s): its bytes, decoded
        [record] = [official.decode(data) for data in read_all(any_broker, topic, 1)]
    assert (record.name, record.value) == ("t1", 21.5)


def register(service_url: str, topic: str, registry: bool = True) -> tuple[int, int]:
    """register_with_producer's version for Reading's Avro schema on ``topic``, and the registry's latest version
    then (``registry=False``: not asked, -1)."""
    from connector.client.transport.binary.producing import register_with_producer
    from connector.client.transport.events import TopicSchema

    definition = ours.AvroSchema(Reading).schema_info().definition
    with Client(service_url, transport="binary") as client:
        transport = client._connection
        version = register_with_producer(transport, topic, TopicSchema("Avro", definition.encode(), "Reading"), 10.0)
        latest = transport.schema(topic).version if registry else -1
    return version, latest


def test_a_schema_registered_with_a_producer_carrying_it_gets_the_registrys_version(broker_proc, topic):
    assert register(broker_proc.service_url, topic) == (0, 0)


def test_a_partitioned_topics_schema_is_registered_through_its_first_partition(broker_proc, topic):
    from connector import Admin

    with Admin(broker_proc.service_url) as admin:
        admin.create_partitioned_topic(topic, 2)
    assert register(broker_proc.service_url, topic) == (0, 0)


def test_a_broker_without_a_registry_takes_the_producer_and_gives_no_version(pulsar_lite_broker, topic):
    """pulsar-lite never answers GET_OR_CREATE_SCHEMA; a producer carrying the schema it takes."""
    assert register(pulsar_lite_broker.service_url, topic, registry=False) == (-1, -1)
