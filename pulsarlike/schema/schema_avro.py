"""``pulsar.schema.schema_avro`` as pulsar-client lays it out: ``AvroSchema``, the very objects of
:mod:`pulsarlike.schema`."""
from pulsarlike.schema import AvroSchema

__all__ = ["AvroSchema"]
