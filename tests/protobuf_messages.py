"""Generated-style protobuf message classes for the ProtobufNative schema tests, built from descriptors at
run time (no ``protoc`` needed): ``shop/order.proto`` declares ``Order`` (with a nested ``Line``) and imports
``shop/money.proto``'s ``Money``, so a schema's descriptor set holds two files in import order."""
from __future__ import annotations

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

F = descriptor_pb2.FieldDescriptorProto


def _field(message, name: str, number: int, kind: int, *, repeated: bool = False, type_name: str = "") -> None:
    field = message.field.add(name=name, number=number, type=kind,
                              label=F.LABEL_REPEATED if repeated else F.LABEL_OPTIONAL)
    if type_name:  # set only for message fields: an empty one still counts as set
        field.type_name = type_name


def order_classes(package: str = "shop", *, extra_field: bool = False) -> dict[str, type]:
    """``{"Order": ..., "Money": ...}`` of a fresh pool; ``extra_field`` adds ``Order.note`` (an evolution)."""
    pool = descriptor_pool.DescriptorPool()
    money_file = descriptor_pb2.FileDescriptorProto(name=f"{package}/money.proto", package=package, syntax="proto3")
    money = money_file.message_type.add(name="Money")
    _field(money, "cents", 1, F.TYPE_INT64)
    _field(money, "currency", 2, F.TYPE_STRING)
    order_file = descriptor_pb2.FileDescriptorProto(name=f"{package}/order.proto", package=package, syntax="proto3",
                                                    dependency=[f"{package}/money.proto"])
    order = order_file.message_type.add(name="Order")
    _field(order, "item", 1, F.TYPE_STRING)
    _field(order, "price", 2, F.TYPE_MESSAGE, type_name=f".{package}.Money")
    _field(order, "tags", 3, F.TYPE_STRING, repeated=True)
    line = order.nested_type.add(name="Line")
    _field(line, "sku", 1, F.TYPE_STRING)
    _field(order, "lines", 4, F.TYPE_MESSAGE, repeated=True, type_name=f".{package}.Order.Line")
    if extra_field:
        _field(order, "note", 5, F.TYPE_STRING)
    pool.Add(money_file)
    pool.Add(order_file)
    return {name: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{package}.{name}"))
            for name in ("Order", "Money")}
