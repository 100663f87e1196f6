"""A producer's or consumer's schema bound to the broker's registry: registered (a producer's) or checked (a
consumer's) once it is open, values encoded on send, and messages decoded on ``msg.value()`` with
the version their producer wrote them with (fetched once per topic and version, then cached).

``schema=None`` binds nothing: bytes go as they are and nothing is registered, exactly as before typed
schemas. A ``BytesSchema`` registers nothing either (as pulsar-client, whose default it is). pulsar-client's
own schema objects (``pulsar.schema.AvroSchema(...)``...) are taken as they are: they encode and decode the
same way and describe themselves with the same definitions.
"""
from __future__ import annotations

import logging
import struct
import threading
from typing import Any

from broker_core import errors
from broker_core.types import TopicName

from connector.client.transport.events import TopicSchema
from connector.client.schema.schemas import Schema, SchemaInfo
from connector.client.transport import Transport

log = logging.getLogger(__name__)

VERSION = struct.Struct(">q")
"""A schema version in a message: Pulsar's 8-byte big-endian number."""

_OFFICIAL_TYPES = {"AVRO": "Avro", "JSON": "Json", "STRING": "String", "PROTOBUF": "Protobuf",
                   "PROTOBUF_NATIVE": "ProtobufNative", "BYTES": "None", "NONE": "None"}
"""pulsar-client's SchemaType names as the registry's (Pulsar's wire ``Schema.Type``)."""


def _describe(schema: Any) -> SchemaInfo:
    info = schema.schema_info()
    if isinstance(info, SchemaInfo):
        return info
    kind = getattr(info.schema_type(), "name", str(info.schema_type()))
    if kind not in _OFFICIAL_TYPES:
        raise errors.InvalidConfiguration(f"schema={schema}: its type {kind} is not supported by pulsarlike")
    return SchemaInfo(_OFFICIAL_TYPES[kind], info.name(), info.schema())


def bind(schema: Any, connection: Transport) -> "SchemaBinding | None":
    """The binding of a ``schema=`` argument; None for no schema (bytes as they are)."""
    if schema is None:
        return None
    if not isinstance(schema, Schema) and not all(hasattr(schema, m) for m in ("encode", "decode", "schema_info")):
        raise errors.InvalidConfiguration(f"schema={schema!r} is not a schema; use one of pulsarlike.schema's "
                                          "(StringSchema(), JsonSchema(MyRecord), AvroSchema(MyRecord), ...)")
    return SchemaBinding(schema, _describe(schema), connection)


class SchemaBinding:
    def __init__(self, schema: Any, info: SchemaInfo, connection: Transport) -> None:
        self.schema = schema
        self.info = info
        self._connection = connection
        self._ours = isinstance(schema, Schema)
        self._resolves = self._ours and type(schema).decode_message is not Schema.decode_message
        """Whether decoding needs the writer's definition (Avro's resolution); the others read any version."""
        self._writers: dict[tuple[str, int], SchemaInfo | None] = {}
        self._lock = threading.Lock()

    @property
    def registered(self) -> bool:
        return self.info.type_name != "None"

    def register(self, topic: str, *, consumer: bool = False) -> bytes:
        """The version of this schema on ``topic`` (b"" when none is registered: bytes, or a consumer's schema
        checked compatible); ``IncompatibleSchema`` when the registry refuses it."""
        if not self.registered:
            return b""
        version = self._connection.register_schema(topic, TopicSchema(
            self.info.type_name, self.info.definition.encode(), self.info.schema_name), check_only=consumer)
        log.debug("event=schema_bound topic=%s type=%s version=%d consumer=%s", topic, self.info.type_name,
                  version, consumer)
        return b"" if version < 0 else VERSION.pack(version)

    def encode(self, value: Any) -> bytes:
        return self.schema.encode(value)

    def decode(self, data: bytes, version: bytes, topic: str) -> Any:
        if not self._resolves or len(version) != VERSION.size:
            return self.schema.decode(data)
        return self.schema.decode_message(data, self._writer(topic, VERSION.unpack(version)[0]))

    def _writer(self, topic: str, version: int) -> SchemaInfo | None:
        """The definition a message was written with (None: unknown, read with our own, as pulsar-client)."""
        key = (str(TopicName.parse(topic).partitioned_base), version)
        with self._lock:
            if key in self._writers:
                return self._writers[key]
        try:
            reply = self._connection.schema(key[0], version)
            found: SchemaInfo | None = SchemaInfo(reply.type, reply.name, reply.data.decode())
        except errors.PulsarLikeError as exc:
            log.warning("event=schema_writer_unknown topic=%s version=%d error=%s", key[0], version, exc)
            found = None
        if found is not None:  # a failed fetch is tried again with the next message
            with self._lock:
                self._writers[key] = found
        return found
