"""ProtobufNativeSchema against a broker process: protobuf messages go between pulsar-client (binary
protocol) and our client (gRPC) both ways, under one registered version; a new version must keep the root
message (Pulsar's default ProtobufNative check)."""
from __future__ import annotations

import pulsar
import pytest

from connector import IncompatibleSchema, MessageId
from connector.client.schema import ProtobufNativeSchema
from tests.brokers import BrokerProcess
from tests.protobuf_messages import order_classes

Order, Money = order_classes()["Order"], order_classes()["Money"]
EVOLVED = order_classes(extra_field=True)["Order"]
VERSION_0 = (0).to_bytes(8, "big")


def ours_schema(cls=Order) -> ProtobufNativeSchema:
    return ProtobufNativeSchema(cls)


@pytest.fixture(scope="module")
def broker_proc(tmp_path_factory):
    proc = BrokerProcess(tmp_path_factory.mktemp("protobuf-native-broker")).start()
    yield proc
    proc.stop()


def an_order(item: str):
    order = Order(item=item, tags=["x"])
    order.price.cents = 999
    order.lines.add(sku="S-1")
    return order


def test_messages_sent_by_our_client_are_read_by_pulsar_client(ours, official, topic):
    producer = ours.create_producer(topic, schema=ours_schema())
    consumer = official.subscribe(topic, "s", schema=pulsar.schema.ProtobufNativeSchema(Order),
                                  initial_position=pulsar.InitialPosition.Earliest)
    producer.send(an_order("book"))
    msg = consumer.receive(timeout_millis=10000)
    assert msg.value() == an_order("book")
    assert msg.schema_version().encode("latin-1") == VERSION_0  # pulsar-client hands it over as a str


def test_messages_sent_by_pulsar_client_are_read_by_our_client_under_the_same_version(ours, official, topic):
    producer = official.create_producer(topic, schema=pulsar.schema.ProtobufNativeSchema(Order))
    consumer = ours.subscribe(topic, "s", schema=ours_schema(), initial_position=pulsar.InitialPosition.Earliest)
    producer.send(an_order("pen"))
    msg = consumer.receive(timeout_millis=10000)
    assert isinstance(msg.value(), Order) and msg.value() == an_order("pen")
    # our client's definition is pulsar-client's: it finds version 0, it does not add one
    ours.create_producer(topic, schema=ours_schema()).send(an_order("ink"))
    reader = ours.create_reader(topic, MessageId.earliest, schema=ours_schema())
    assert [reader.read_next(10000).schema_version_bytes() for _ in range(2)] == [VERSION_0, VERSION_0]


def test_a_new_field_is_a_new_version_another_root_message_is_refused(ours, topic):
    ours.create_producer(topic, schema=ours_schema())
    evolved = ours.create_producer(topic, schema=ours_schema(EVOLVED))
    evolved.send(EVOLVED(item="v2", note="added"))
    with pytest.raises(IncompatibleSchema, match="root message changed"):
        ours.create_producer(topic, schema=ours_schema(Money))
