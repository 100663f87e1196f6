"""Typed schemas for the client, as pulsar-client's ``pulsar.schema``: ``Record`` and its field types, and
the schemas producers, consumers and readers take (``schema=``)."""
from connector.client.schema.avro import AvroSchema
from connector.client.schema.fields import (Array, Boolean, Bytes, CustomEnum, Double, Field, Float, Integer, Long,
                                            Map, Null, String)
from connector.client.schema.protobuf_native import ProtobufNativeSchema
from connector.client.schema.record import Record
from connector.client.schema.schemas import BytesSchema, JsonSchema, Schema, SchemaInfo, StringSchema

__all__ = ["Array", "AvroSchema", "Boolean", "Bytes", "BytesSchema", "CustomEnum", "Double", "Field", "Float",
           "Integer", "JsonSchema", "Long", "Map", "Null", "ProtobufNativeSchema", "Record", "Schema", "SchemaInfo",
           "String", "StringSchema"]
