"""The registry and ProtobufNative schemas (broker_core.core.schema_protobuf_native): the data is validated
as Pulsar's ProtobufNativeSchemaData, and a new version keeps the root message's name (Pulsar's default
ProtobufNative checker), whatever its fields do, unless the strategy says otherwise."""
from __future__ import annotations

import asyncio
import base64
import json

import pytest

from broker_core.clock import FakeClock
from broker_core.core.schema_compat import incompatibility, strategy_problem
from broker_core.core.schema_protobuf_native import root_message
from broker_core.core.schemas import SchemaRegistry
from broker_core.errors import IncompatibleSchema, InvalidSchema
from broker_core.types import TopicName
from connector.client.schema import ProtobufNativeSchema
from tests.protobuf_messages import order_classes
from tests.unit.test_schema_compat import key_value, kv_properties

TOPIC = TopicName.parse("persistent://public/default/proto")


def data(cls) -> bytes:
    return ProtobufNativeSchema(cls).schema_info().schema().encode()


ORDER = data(order_classes()["Order"])
ORDER_WITH_NOTE = data(order_classes(extra_field=True)["Order"])
MONEY = data(order_classes()["Money"])


def changed(**fields) -> bytes:
    definition = json.loads(ORDER)
    definition.update(fields)
    return json.dumps(definition).encode()


def test_the_root_message_is_read_from_the_data():
    assert root_message(ORDER) == "shop.Order"
    assert root_message(changed(rootMessageTypeName="shop.Order.Line")) == "shop.Order.Line"  # nested


@pytest.mark.parametrize("bad, why", [
    (b"not json", "is JSON"),
    (b"[]", "needs the strings"),
    (changed(rootMessageTypeName=7), "needs the strings"),
    (changed(fileDescriptorSet="%%%"), "not a base64"),
    (changed(fileDescriptorSet="é"), "not a base64"),
    (changed(fileDescriptorSet=base64.b64encode(b"\xff\xff").decode()), "not a base64"),
    (changed(rootFileDescriptorName="shop/none.proto"), "has no file 'shop/none.proto'"),
    (changed(rootMessageTypeName="shop.Money"), "declares no message 'shop.Money'"),
])
def test_data_that_is_not_protobuf_native_schema_data_is_refused(bad, why):
    with pytest.raises(InvalidSchema, match=why):
        root_message(bad)


def test_a_new_version_keeps_its_root_message():
    assert incompatibility("ProtobufNative", ORDER, ORDER_WITH_NOTE) is None
    assert incompatibility("ProtobufNative", ORDER_WITH_NOTE, ORDER) is None  # fields are not compared
    assert "root message changed from shop.Order to shop.Money" in incompatibility("ProtobufNative", ORDER, MONEY)


def test_the_strategy_still_decides():
    assert strategy_problem("ALWAYS_COMPATIBLE", "ProtobufNative", "ProtobufNative", ORDER, MONEY) is None
    assert "ALWAYS_INCOMPATIBLE" in strategy_problem("ALWAYS_INCOMPATIBLE", "ProtobufNative", "ProtobufNative",
                                                     ORDER, ORDER_WITH_NOTE)
    assert "forward" in strategy_problem("FORWARD", "ProtobufNative", "ProtobufNative", ORDER, MONEY)


def test_a_key_value_part_of_protobuf_native_keeps_its_root_message():
    props = kv_properties("STRING", "PROTOBUF_NATIVE")
    old = key_value(b"", ORDER)
    assert incompatibility("KeyValue", old, key_value(b"", ORDER_WITH_NOTE), props, props) is None
    assert incompatibility("KeyValue", old, key_value(b"", MONEY), props, props).startswith("value schema: the root")


def test_the_registry_stores_versions_and_refuses_another_root_or_bad_data(tmp_path):
    registry = SchemaRegistry(tmp_path, FakeClock())

    def register(schema: bytes):
        return asyncio.run(registry.get_or_create(TOPIC, "ProtobufNative", schema, name="PROTOBUF_NATIVE"))
    assert register(ORDER).version == 0
    assert register(ORDER).version == 0
    assert register(ORDER_WITH_NOTE).version == 1
    with pytest.raises(IncompatibleSchema, match="root message changed"):
        register(MONEY)
    with pytest.raises(InvalidSchema, match="is JSON"):
        register(b"{oops")
    assert registry.latest(TOPIC).data == ORDER_WITH_NOTE
    assert SchemaRegistry(tmp_path, FakeClock()).latest(TOPIC).schema_type == "ProtobufNative"  # after a restart
