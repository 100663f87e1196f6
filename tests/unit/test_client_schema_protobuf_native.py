"""ProtobufNativeSchema in our client against pulsar-client 3.13's: the same message class gives the same
registered definition, byte for byte, and a value encoded by either is decoded by the other."""
from __future__ import annotations

import pulsar.schema as official
import pytest

import pulsarlike
from connector.client import schema as ours
from tests.protobuf_messages import order_classes

CLASSES = order_classes()
Order, Money = CLASSES["Order"], CLASSES["Money"]


def an_order(cls=Order):
    order = cls(item="book", tags=["new", "paper"])
    order.price.cents, order.price.currency = 1250, "EUR"
    order.lines.add(sku="B-1")
    return order


@pytest.mark.parametrize("cls", [Order, Money, order_classes("other.pkg", extra_field=True)["Order"]],
                         ids=["importing", "imported", "packaged"])
def test_the_definition_text_is_the_one_pulsar_client_registers(cls):
    mine = ours.ProtobufNativeSchema(cls).schema_info()
    theirs = official.ProtobufNativeSchema(cls).schema_info()
    assert mine.schema() == theirs.schema()
    assert mine.name() == theirs.name() == "PROTOBUF_NATIVE"
    assert (mine.type_name, mine.schema_type().name, theirs.schema_type().name) == (
        "ProtobufNative", "PROTOBUF_NATIVE", "PROTOBUF_NATIVE")
    assert int(mine.schema_type()) == int(theirs.schema_type()) and str(mine.schema_type()) == str(theirs.schema_type())


def test_the_definition_names_the_root_message_and_its_file():
    definition = ours.ProtobufNativeSchema(Order).schema_info().schema()
    assert '"rootMessageTypeName": "shop.Order"' in definition
    assert '"rootFileDescriptorName": "shop/order.proto"' in definition


def test_a_value_encoded_by_either_client_is_decoded_by_the_other():
    mine, theirs = ours.ProtobufNativeSchema(Order), official.ProtobufNativeSchema(Order)
    assert mine.encode(an_order()) == theirs.encode(an_order())
    assert mine.decode(theirs.encode(an_order())) == an_order()
    assert theirs.decode(mine.encode(an_order())) == an_order()


def test_the_decoded_value_is_an_instance_of_the_message_class():
    mine = ours.ProtobufNativeSchema(Order)
    got = mine.decode(memoryview(mine.encode(an_order())))
    assert isinstance(got, Order) and got.lines[0].sku == "B-1"


def test_a_class_that_is_not_a_protobuf_message_is_refused():
    with pytest.raises(TypeError, match="protobuf Message subclass"):
        ours.ProtobufNativeSchema(dict)


def test_encoding_another_message_type_is_refused():
    with pytest.raises(TypeError, match="expected type"):
        ours.ProtobufNativeSchema(Order).encode(Money(cents=1))


def test_pulsarlike_schema_serves_it():
    assert pulsarlike.schema.ProtobufNativeSchema is ours.ProtobufNativeSchema
    assert "schema.ProtobufNativeSchema" not in pulsarlike._unsupported.REFUSED
    assert str(pulsarlike.schema.ProtobufNativeSchema(Order)) == "ProtobufNativeSchema(Order)"
