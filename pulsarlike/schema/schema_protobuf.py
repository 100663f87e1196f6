"""``pulsar.schema.schema_protobuf`` as pulsar-client lays it out: ``ProtobufNativeSchema``, the very
objects of :mod:`pulsarlike.schema`."""
from pulsarlike.schema import ProtobufNativeSchema

__all__ = ["ProtobufNativeSchema"]
