"""Values our client hands over in the shape pulsar-client 3.13 hands them (its Python sources are the
reference): ``MessageId.wrap``, ``_pulsar.SchemaType`` and ``schema_info().schema_type()``, a message's
``schema_version()`` as a str, the message a custom ``message_router`` gets having ``value()``, and the base
``Record`` refusing to be made. The official client runs beside ours on the same broker process where the
comparison needs it."""
from __future__ import annotations

import uuid

import pytest

from tests.brokers import BrokerProcess

pulsar = pytest.importorskip("pulsar")
_pulsar = pytest.importorskip("_pulsar")


@pytest.fixture(scope="module")
def broker_proc(tmp_path_factory):
    proc = BrokerProcess(tmp_path_factory.mktemp("client-shapes")).start()
    yield proc
    proc.stop()


@pytest.fixture
def topic():
    return f"shapes-{uuid.uuid4().hex[:10]}"


def test_message_id_wrap_gives_the_id_itself_which_acknowledges_and_orders(ours, topic):
    from connector import MessageId

    producer = ours.create_producer(topic)
    consumer = ours.subscribe(topic, "s")
    sent = [MessageId.wrap(producer.send(b"m%d" % i)) for i in range(3)]
    received = [MessageId.wrap(consumer.receive(5000).message_id()) for _ in range(3)]
    assert sent == received and sent[0] < sent[1] < sent[2]
    for mid in received:
        consumer.acknowledge(mid)
    with pytest.raises(ValueError):
        MessageId.wrap(b"not an id")


def test_schema_type_is_the_bindings_enum_with_its_names_and_numbers():
    import pulsarlike._pulsar as ours_binding

    theirs = {name: int(member) for name, member in _pulsar.SchemaType.__members__.items()}
    mine = {member.name: int(member) for member in ours_binding.SchemaType}
    assert mine == theirs
    assert str(ours_binding.SchemaType.AVRO) == str(_pulsar.SchemaType.AVRO) == "SchemaType.AVRO"


@pytest.mark.parametrize("kind", ["StringSchema", "BytesSchema", "JsonSchema", "AvroSchema"])
def test_each_schemas_schema_type_is_pulsar_clients(kind):
    import pulsarlike.schema as ours_schema

    class Mine(ours_schema.Record):
        a = ours_schema.Integer()

    class Theirs(pulsar.schema.Record):
        a = pulsar.schema.Integer()

    record = kind in ("JsonSchema", "AvroSchema")
    mine = getattr(ours_schema, kind)(*([Mine] if record else [])).schema_info().schema_type()
    theirs = getattr(pulsar.schema, kind)(*([Theirs] if record else [])).schema_info().schema_type()
    assert (mine.name, int(mine)) == (theirs.name, int(theirs))


def test_schema_version_is_a_str_of_the_version_bytes_as_pulsar_client_gives_it(ours, official, topic):
    from connector import InitialPosition
    from pulsarlike.schema import StringSchema

    ours.create_producer(topic, schema=StringSchema()).send("v")
    mine = ours.subscribe(topic, "ours", schema=StringSchema(), initial_position=InitialPosition.Earliest)
    theirs = official.subscribe(topic, "official", schema=pulsar.schema.StringSchema(),
                                initial_position=pulsar.InitialPosition.Earliest)
    got, expected = mine.receive(5000), theirs.receive(5000)
    assert isinstance(got.schema_version(), str)
    assert got.schema_version() == expected.schema_version() == "\x00" * 8
    assert got.schema_version_bytes() == (0).to_bytes(8, "big")


def test_a_custom_router_gets_a_message_with_value(ours, broker_proc, topic):
    from connector import Admin, InitialPosition

    with Admin(broker_proc.service_url) as admin:
        admin.create_partitioned_topic(topic, 3)
    seen = []

    def router(msg, num_partitions):
        seen.append(msg.value())
        return 2 if msg.value().startswith(b"hello") else 0

    producer = ours.create_producer(topic, message_router=router)
    for payload in (b"hello-0", b"world-0"):
        producer.send(payload)
    consumer = ours.subscribe(topic, "s", initial_position=InitialPosition.Earliest)
    partitions = {m.data(): m.message_id().partition() for m in (consumer.receive(5000) for _ in range(2))}
    assert seen == [b"hello-0", b"world-0"]
    assert partitions == {b"hello-0": 2, b"world-0": 0}


def test_the_base_record_cannot_be_made_a_declared_one_can():
    from pulsarlike.schema import Integer, Record

    class Example(Record):
        a = Integer()

    with pytest.raises(TypeError):
        Record(a=1, c=8)
    with pytest.raises(AttributeError):
        Example(a=1).c = 3
    assert Example(a=1).a == 1
