"""``ProtobufNativeSchema`` (pulsar-client's): values are instances of a generated protobuf message class,
sent in protobuf's own binary encoding (``SerializeToString``) and read back with the class's ``FromString``.

The registered definition is Pulsar's ``ProtobufNativeSchemaData`` as JSON, the text pulsar-client 3.13
generates for the same class, byte for byte, so the two clients register one version:

- ``fileDescriptorSet``: base64 of a ``FileDescriptorSet`` holding the message's file and every file it
  imports, each file after its own imports (depth first, each once), as Java's
  ``ProtobufNativeSchemaUtils.serialize`` lays them out;
- ``rootMessageTypeName``: the message's full name (``package.Message``);
- ``rootFileDescriptorName``: the name of the ``.proto`` file declaring it.

The broker's registry checks a new version as Pulsar's default checker does: same root message name
(:mod:`broker_core.core.schema_compat`).
"""
from __future__ import annotations

import base64
from typing import Any

from connector.client.schema.schemas import Schema

__all__ = ["ProtobufNativeSchema", "schema_definition"]


def _file_descriptor_set(file: Any) -> Any:
    """The ``FileDescriptorSet`` of ``file`` and its imports, imports first (each file once)."""
    from google.protobuf import descriptor_pb2

    found = descriptor_pb2.FileDescriptorSet()
    seen: set[str] = set()

    def add(current: Any) -> None:
        if current.name in seen:
            return
        for imported in current.dependencies:
            add(imported)
        seen.add(current.name)
        current.CopyToProto(found.file.add())

    add(file)
    return found


def schema_definition(descriptor: Any) -> dict[str, str]:
    """Pulsar's ``ProtobufNativeSchemaData`` of a message descriptor (``MyMessage.DESCRIPTOR``)."""
    files = _file_descriptor_set(descriptor.file).SerializeToString()
    return {"fileDescriptorSet": base64.b64encode(files).decode("ascii"),
            "rootMessageTypeName": descriptor.full_name,
            "rootFileDescriptorName": descriptor.file.name}


class ProtobufNativeSchema(Schema):
    def __init__(self, record_cls: Any) -> None:
        from google.protobuf.message import Message

        if not (isinstance(record_cls, type) and issubclass(record_cls, Message)):
            raise TypeError(f"record_cls must be a protobuf Message subclass, got {record_cls!r}")
        super().__init__(record_cls, "ProtobufNative", schema_definition(record_cls.DESCRIPTOR), "PROTOBUF_NATIVE")

    def encode(self, obj: Any) -> bytes:
        self._validate_object_type(obj)
        return obj.SerializeToString()

    def decode(self, data: bytes) -> Any:
        return self._record_cls.FromString(bytes(data))

    def __str__(self) -> str:
        return f"ProtobufNativeSchema({self._record_cls.__name__})"
