"""Typed schemas in our client against a broker process: JSON and Avro records go between pulsar-client
(binary protocol) and our client (gRPC and binary) both ways, registered once in the broker's registry; a compatible
evolution gets a new version that both versions' messages are read with, an incompatible one is refused with
IncompatibleSchema; StringSchema; no schema is bytes as before."""
from __future__ import annotations

import uuid

import pulsar
import pytest

from connector import Admin, BatchingType, Client, IncompatibleSchema, MessageId
from connector.client import schema as ours
from tests.brokers import BrokerProcess


@pytest.fixture(scope="module")
def broker_proc(tmp_path_factory):
    proc = BrokerProcess(tmp_path_factory.mktemp("schema-broker")).start()
    yield proc
    proc.stop()


@pytest.fixture
def client(broker_proc, transport):
    c = Client(broker_proc.service_url, transport=transport)
    yield c
    c.close()


@pytest.fixture
def official(broker_proc):
    c = pulsar.Client(broker_proc.service_url, operation_timeout_seconds=10)
    yield c
    c.close()


@pytest.fixture
def topic():
    return f"persistent://public/default/schema-{uuid.uuid4().hex[:12]}"


class Inner(ours.Record):
    n = ours.Integer(required=True)


class Order(ours.Record):
    item = ours.String(required=True)
    qty = ours.Long()
    tags = ours.Array(ours.String())
    inner = Inner()


class OfficialInner(pulsar.schema.Record):
    n = pulsar.schema.Integer(required=True)


class OfficialOrder(pulsar.schema.Record):
    item = pulsar.schema.String(required=True)
    qty = pulsar.schema.Long()
    tags = pulsar.schema.Array(pulsar.schema.String())
    inner = OfficialInner()


# the record names must match (the definitions are compared by name): the official classes are renamed
OfficialInner.__name__, OfficialOrder.__name__ = "Inner", "Order"

KINDS = {"json": (ours.JsonSchema, pulsar.schema.JsonSchema), "avro": (ours.AvroSchema, pulsar.schema.AvroSchema)}


def _read(consumer, count):
    out = []
    for _ in range(count):
        msg = consumer.receive(timeout_millis=10000)
        consumer.acknowledge(msg)
        out.append(msg.value())
    return out


@pytest.mark.transports
@pytest.mark.parametrize("kind", KINDS)
def test_records_sent_by_our_client_are_read_by_pulsar_client(client, official, topic, kind):
    mine, theirs = KINDS[kind]
    producer = client.create_producer(topic, schema=mine(Order))
    consumer = official.subscribe(topic, "s", schema=theirs(OfficialOrder),
                                  initial_position=pulsar.InitialPosition.Earliest)
    producer.send(Order(item="book", qty=2, tags=["a"], inner=Inner(n=7)))
    [got] = _read(consumer, 1)
    assert (got.item, got.qty, got.tags, got.inner.n) == ("book", 2, ["a"], 7)


@pytest.mark.transports
@pytest.mark.parametrize("kind", KINDS)
def test_records_sent_by_pulsar_client_are_read_by_our_client(client, official, topic, kind):
    mine, theirs = KINDS[kind]
    producer = official.create_producer(topic, schema=theirs(OfficialOrder))
    consumer = client.subscribe(topic, "s", schema=mine(Order), initial_position=pulsar.InitialPosition.Earliest)
    producer.send(OfficialOrder(item="pen", qty=3, tags=[], inner=OfficialInner(n=1)))
    [got] = _read(consumer, 1)
    assert isinstance(got, Order)
    assert (got.item, got.qty, got.tags, got.inner.n) == ("pen", 3, [], 1)
    # both clients registered the same definition: one version, stamped on the message by either
    reader = client.create_reader(topic, MessageId.earliest, schema=mine(Order))
    msg = reader.read_next(10000)
    assert msg.schema_version_bytes() == (0).to_bytes(8, "big")
    assert msg.schema_version() == "\x00" * 8 and msg.schema_version().encode() == (0).to_bytes(8, "big")  # a str


class V1(ours.Record):
    a = ours.Integer(required=True)


class V2(ours.Record):
    a = ours.Integer(required=True)
    b = ours.String(default="added", required_default=True)


class V3(ours.Record):
    a = ours.String(required=True)


for _cls in (V2, V3):
    _cls.__name__ = "V1"  # one record evolving under its name


@pytest.mark.transports
def test_a_compatible_evolution_gets_a_new_version_and_old_messages_read_with_their_own(client, topic):
    old = client.create_producer(topic, schema=ours.AvroSchema(V1))
    old.send(V1(a=1))
    new = client.create_producer(topic, schema=ours.AvroSchema(V2))
    new.send(V2(a=2, b="two"))
    reader = client.create_reader(topic, MessageId.earliest, schema=ours.AvroSchema(V2))
    first, second = reader.read_next(10000), reader.read_next(10000)
    assert (first.schema_version_bytes(), second.schema_version_bytes()) == ((0).to_bytes(8, "big"),
                                                                            (1).to_bytes(8, "big"))
    assert second.schema_version().encode("latin-1") == (1).to_bytes(8, "big")
    assert [(v.a, v.b) for v in (first.value(), second.value())] == [(1, "added"), (2, "two")]


@pytest.mark.transports
def test_an_incompatible_evolution_is_refused_to_a_producer_with_incompatible_schema(client, topic):
    client.create_producer(topic, schema=ours.AvroSchema(V1)).send(V1(a=1))
    with pytest.raises(IncompatibleSchema):
        client.create_producer(topic, schema=ours.AvroSchema(V3))


@pytest.mark.transports
def test_an_incompatible_evolution_is_refused_to_a_consumer_with_incompatible_schema(client, topic):
    client.create_producer(topic, schema=ours.AvroSchema(V1)).send(V1(a=1))
    with pytest.raises(IncompatibleSchema):
        client.subscribe(topic, "s", schema=ours.AvroSchema(V3))


@pytest.mark.transports
def test_an_incompatible_consumer_schema_is_refused_on_a_partitioned_topic_too(client, broker_proc, topic):
    with Admin(broker_proc.service_url) as admin:
        admin.create_partitioned_topic(topic, 2)
    client.create_producer(topic, schema=ours.AvroSchema(V1)).send(V1(a=1))
    client.subscribe(topic, "compatible", schema=ours.AvroSchema(V2))
    with pytest.raises(IncompatibleSchema):
        client.subscribe(topic, "s", schema=ours.AvroSchema(V3))


@pytest.mark.transports
def test_a_compatible_consumer_schema_is_accepted_without_registering_a_new_version(client, broker_proc, topic):
    client.create_producer(topic, schema=ours.AvroSchema(V1)).send(V1(a=1))
    consumer = client.subscribe(topic, "s", schema=ours.AvroSchema(V2),
                                initial_position=pulsar.InitialPosition.Earliest)
    assert consumer.receive(10000).value().a == 1
    with Admin(broker_proc.service_url) as admin:  # as Pulsar's brokers: a consumer's schema adds no version
        assert [s["version"] for s in admin.get_all_schemas(topic)] == [0]


@pytest.mark.transports
def test_string_schema_between_both_clients(client, official, topic):
    client.create_producer(topic, schema=ours.StringSchema()).send("héllo")
    official.create_producer(topic, schema=pulsar.schema.StringSchema()).send("wörld")
    reader = client.create_reader(topic, MessageId.earliest, schema=ours.StringSchema())
    assert [reader.read_next(10000).value() for _ in range(2)] == ["héllo", "wörld"]
    theirs = official.create_reader(topic, pulsar.MessageId.earliest, schema=pulsar.schema.StringSchema())
    assert [theirs.read_next(10000).value() for _ in range(2)] == ["héllo", "wörld"]


def test_without_a_schema_values_are_bytes_and_nothing_is_registered(client, topic):
    client.create_producer(topic).send(b"raw")
    reader = client.create_reader(topic, MessageId.earliest)
    msg = reader.read_next(10000)
    assert msg.value() == b"raw" and msg.schema_version() == "" and msg.schema_version_bytes() == b""
    # the topic has no schema: any typed producer may register the first one
    client.create_producer(topic, schema=ours.AvroSchema(V1)).send(V1(a=1))


def test_our_client_takes_pulsar_client_s_own_schema_objects(client, topic):
    producer = client.create_producer(topic, schema=pulsar.schema.AvroSchema(OfficialOrder))
    producer.send(OfficialOrder(item="cup", qty=1, tags=["x"], inner=OfficialInner(n=2)))
    reader = client.create_reader(topic, MessageId.earliest, schema=ours.AvroSchema(Order))
    got = reader.read_next(10000).value()
    assert (got.item, got.qty, got.tags, got.inner.n) == ("cup", 1, ["x"], 2)


@pytest.mark.transports
def test_the_namespace_s_compatibility_strategy_decides(client, broker_proc):
    from broker_core.protocol import broker_pb2

    from connector import Admin

    namespace = f"public/strict-{uuid.uuid4().hex[:8]}"
    with Admin(broker_proc.service_url) as admin:  # the admin speaks gRPC whatever the client's transport
        admin.create_namespace(namespace)
        admin._connection.unary("SetPolicy", broker_pb2.PolicyRequest(
            scope=broker_pb2.PolicyScope(namespace=namespace), key="schemaCompatibilityStrategy",
            value_json='"ALWAYS_INCOMPATIBLE"'))
    topic = f"persistent://{namespace}/evolving"
    client.create_producer(topic, schema=ours.AvroSchema(V1)).send(V1(a=1))
    with pytest.raises(IncompatibleSchema, match="ALWAYS_INCOMPATIBLE"):
        client.create_producer(topic, schema=ours.AvroSchema(V2))  # compatible under the default FULL


@pytest.mark.transports
def test_a_table_view_holds_the_values_its_schema_decodes(client, topic):
    producer = client.create_producer(topic, schema=ours.JsonSchema(V1))
    producer.send(V1(a=1), partition_key="k")
    producer.send(V1(a=2), partition_key="k")
    view = client.create_table_view(topic, schema=ours.JsonSchema(V1))
    assert view.get("k") == V1(a=2)
    view.close()


@pytest.mark.parametrize("options", [
    {"batching_enabled": True}, {"batching_enabled": True, "batching_type": BatchingType.KeyBased},
    {"chunking_enabled": True}], ids=["batched", "key-based", "chunked"])
@pytest.mark.transports
def test_every_entry_a_producer_builds_carries_its_schema_version(client, topic, options):
    producer = client.create_producer(topic, schema=ours.StringSchema(), **options)
    for text in ("a", "b"):
        producer.send_async(text, None, partition_key=text)
    producer.send("x" * (6 << 20) if "chunking_enabled" in options else "c")
    reader = client.create_reader(topic, MessageId.earliest, schema=ours.StringSchema())
    messages = [reader.read_next(10000) for _ in range(3)]
    assert {m.schema_version_bytes() for m in messages} == {(0).to_bytes(8, "big")}
    assert [m.value()[:1] for m in messages] == ["a", "b", "c" if "chunking_enabled" not in options else "x"]
