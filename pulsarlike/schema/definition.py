"""``pulsar.schema.definition`` as pulsar-client lays it out: the field types and ``Record``, the very objects
of :mod:`pulsarlike.schema`."""
from pulsarlike.schema import (
    Array, Boolean, Bytes, CustomEnum, Double, Field, Float, Integer, Long, Map, Null, Record, String)

__all__ = ["Array", "Boolean", "Bytes", "CustomEnum", "Double", "Field", "Float", "Integer", "Long", "Map", "Null",
           "Record", "String"]
