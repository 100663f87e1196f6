"""ProtobufNative schema data (Pulsar's ``ProtobufNativeSchemaData``): what the registry checks of it.

The data is JSON with three keys, as Pulsar's clients generate it::

    {"fileDescriptorSet": "<base64 of a google.protobuf.FileDescriptorSet>",
     "rootMessageTypeName": "shop.Order",          # the message's full name
     "rootFileDescriptorName": "shop/order.proto"}  # the file of the set declaring it

:func:`root_message` validates it as Pulsar's ``ProtobufNativeSchemaDataValidator`` does before a schema is
registered (the set parses, holds the root file, and the root file declares the root message) and returns
the root message's name. Compatibility is Pulsar's default ``ProtobufNativeSchemaCompatibilityCheck``: a new
version keeps the root message's name, whatever its fields do (:func:`root_change`); Pulsar's opt-in
field-level checker is not implemented. The strategy still decides the rest: ``ALWAYS_COMPATIBLE`` takes
any new version, ``ALWAYS_INCOMPATIBLE`` none (:mod:`.schema_compat`).
"""
from __future__ import annotations

import base64
import json

from google.protobuf.message import DecodeError

from broker_core.errors import InvalidSchema

__all__ = ["TYPE", "root_change", "root_message"]

TYPE = "ProtobufNative"
"""The type's name in Pulsar's ``Schema.Type``."""
KEY_VALUE_PART_TYPE = "PROTOBUF_NATIVE"
"""The type's name as a KeyValue schema's properties spell it (Java's ``SchemaType``)."""


def _messages(prefix: str, messages: list) -> list[str]:
    """The full names of ``messages`` and of the messages nested in them."""
    names = []
    for message in messages:
        name = f"{prefix}.{message.name}" if prefix else message.name
        names.append(name)
        names.extend(_messages(name, list(message.nested_type)))
    return names


def root_message(data: bytes) -> str:
    """The root message's full name of ProtobufNative schema ``data``; ``InvalidSchema`` saying what is
    wrong when it is not Pulsar's ``ProtobufNativeSchemaData``."""
    try:
        fields = json.loads(data)
    except ValueError:
        raise InvalidSchema("ProtobufNative schema data is JSON (fileDescriptorSet, rootMessageTypeName, "
                            "rootFileDescriptorName), as Pulsar's clients send it") from None
    if not isinstance(fields, dict) or not all(
            isinstance(fields.get(key), str) for key in ("fileDescriptorSet", "rootMessageTypeName",
                                                         "rootFileDescriptorName")):
        raise InvalidSchema("ProtobufNative schema data needs the strings fileDescriptorSet, "
                            "rootMessageTypeName and rootFileDescriptorName")
    from google.protobuf import descriptor_pb2  # ~50 ms of imports: at the first such schema, not at start

    try:
        files = descriptor_pb2.FileDescriptorSet.FromString(base64.b64decode(fields["fileDescriptorSet"],
                                                                             validate=True))
    except (ValueError, DecodeError):  # binascii.Error is a ValueError; so is a non-ASCII text
        raise InvalidSchema("ProtobufNative schema data: fileDescriptorSet is not a base64 "
                            "google.protobuf.FileDescriptorSet") from None
    root, file_name = fields["rootMessageTypeName"], fields["rootFileDescriptorName"]
    declaring = [f for f in files.file if f.name == file_name]
    if not declaring:
        raise InvalidSchema(f"ProtobufNative schema data: the fileDescriptorSet has no file {file_name!r}"[:300])
    if root not in _messages(declaring[0].package, list(declaring[0].message_type)):
        raise InvalidSchema(f"ProtobufNative schema data: {file_name!r} declares no message {root!r}"[:300])
    return root


def root_change(old_data: bytes, new_data: bytes) -> str | None:
    """Why ``new_data`` cannot follow ``old_data`` (its root message is another), or None. Data registered
    before the broker validated it is not held against a new version."""
    try:
        old = root_message(old_data)
    except InvalidSchema:
        return None
    try:
        new = root_message(new_data)
    except InvalidSchema as exc:
        return str(exc)
    if old != new:
        return f"the root message changed from {old} to {new} (Pulsar's ProtobufNative check keeps it)"
    return None
