"""The client core's unary calls over Pulsar's binary protocol (the methods of
:class:`~connector.client.transport.binary.transport.BinaryTransport` the :class:`~connector.client.transport.Transport`
protocol names), answering plain values with the same typed errors as the gRPC transport:

- partition counts: ``PARTITIONED_METADATA``; a topic's broker: ``LOOKUP``; a namespace's topics:
  ``GET_TOPICS_OF_NAMESPACE`` in mode ALL (the gRPC server lists both domains);
- schemas: ``GET_SCHEMA``; registering one: ``GET_OR_CREATE_SCHEMA`` on pulsarlike, a producer carrying the
  schema elsewhere (every Pulsar broker registers that; not all answer the command); a consumer's
  (``check_only``) on a topic with a schema: a temporary consumer subscribing with it (the broker checks it);
- the last message: a temporary non-durable consumer (no permits: nothing is delivered), then
  ``GET_LAST_MESSAGE_ID``, then ``CLOSE_CONSUMER``; the ids are the broker's own, ``last_offset`` the
  position (:class:`~connector.client.transport.Positions`) of the last message;
- creating a topic: a consumer attaching creates it on a broker that auto-creates topics (pulsarlike and
  Pulsar's default); elsewhere ``NotSupported`` (the REST API creates it);
- creating a subscription: a durable ``SUBSCRIBE`` at the initial position, then ``CLOSE_CONSUMER``.

Each function takes the transport and a ``deadline`` (``time.monotonic()``) and is called by
:meth:`BinaryTransport._call`, which retries it when asked.
"""
from __future__ import annotations

import logging
import struct
import time
import uuid
from typing import TYPE_CHECKING, Any, Callable

from broker_core import errors
from broker_core.protocol import pulsar_api_pb2 as api
from broker_core.protocol import pulsar_commands_pb2 as cmd
from broker_core.types import TopicName

from connector.client.transport.binary.connection import PulsarConnection
from connector.client.transport.events import LastMessage, TopicSchema
from connector.client.message_id import MessageId
from connector.client.transport import Positions

if TYPE_CHECKING:
    from connector.client.transport.binary.transport import BinaryTransport

log = logging.getLogger(__name__)

T = cmd.BaseCommand
SCHEMA_VERSION = struct.Struct(">q")
"""Pulsar's schema versions: 8 bytes, big-endian."""
U64 = 1 << 64
_NO_MESSAGES = "Topic has no messages"


def _signed(value: int) -> int:
    return value - U64 if value >= 1 << 63 else value


def ask(conn: PulsarConnection, command: cmd.BaseCommand, deadline: float) -> cmd.BaseCommand:
    return conn.request(command, _left(deadline, T.Type.Name(command.type)))


MAX_PARTITION_COUNT = (1 << 31) - 1
"""The reply's field is an int32: a larger count is a hostile answer (the client's own, lower limit is checked
by :class:`~connector.client.lookup.Lookup`)."""


def partitions(transport: BinaryTransport, topic: str, deadline: float) -> int:
    conn = transport.service_connection()
    answer = ask(conn, T(type=T.PARTITIONED_METADATA, partitionMetadata=cmd.CommandPartitionedTopicMetadata(
        topic=topic, request_id=conn.next_request_id())), deadline)
    count = answer.partitionMetadataResponse.partitions
    if count > MAX_PARTITION_COUNT:  # uint32 on the wire, int32 in the reply: refused typed, never ValueError
        raise errors.NotSupported(f"the broker at {conn.address} says {topic} has {count} partitions,"
                                  f" more than any topic can have ({MAX_PARTITION_COUNT})", topic=topic,
                                  partitions=count, limit=MAX_PARTITION_COUNT)
    return count


def list_topics(transport: BinaryTransport, namespace: str, deadline: float) -> list[str]:
    # the gRPC server lists both domains (persistent and non-persistent): mode ALL
    conn = transport.service_connection()
    if _unanswered(conn, T.GET_TOPICS_OF_NAMESPACE):
        raise errors.NotSupported(f"the broker at {conn.address} ({conn.server_version}) does not list a "
                                  "namespace's topics (GET_TOPICS_OF_NAMESPACE): name the topics instead of a "
                                  "pattern", namespace=namespace)
    answer = ask(conn, T(type=T.GET_TOPICS_OF_NAMESPACE, getTopicsOfNamespace=cmd.CommandGetTopicsOfNamespace(
        request_id=conn.next_request_id(), namespace=namespace,
        mode=cmd.CommandGetTopicsOfNamespace.ALL)), deadline)
    return sorted(answer.getTopicsOfNamespaceResponse.topics)


def broker_url(transport: BinaryTransport, topic: str, deadline: float) -> str:
    TopicName.parse(topic)  # a bad name is refused here, as the gRPC server does
    conn = transport.connection_for(topic, max(deadline - time.monotonic(), 0.001))
    scheme = "pulsar+ssl" if transport.security.tls is not None else "pulsar"
    return f"{scheme}://{conn.address}"


def get_schema(transport: BinaryTransport, topic: str, version: int, deadline: float) -> TopicSchema:
    conn = transport.service_connection()
    if _unanswered(conn, T.GET_SCHEMA):
        raise errors.TopicNotFound(f"topic {topic} has no schema the broker at {conn.address} "
                                   f"({conn.server_version}) gives (it does not answer GET_SCHEMA)", topic=topic)
    get = cmd.CommandGetSchema(request_id=conn.next_request_id(), topic=topic)
    if version >= 0:
        get.schema_version = SCHEMA_VERSION.pack(version)
    answer = ask(conn, T(type=T.GET_SCHEMA, getSchema=get), deadline).getSchemaResponse
    if not answer.HasField("schema"):
        raise errors.TopicNotFound(f"topic {topic} has no schema", topic=topic)
    schema = answer.schema
    return TopicSchema(cmd.Schema.Type.Name(schema.type), schema.schema_data, schema.name,
                       _version(answer.schema_version), {p.key: p.value for p in schema.properties})


def register_schema(transport: BinaryTransport, topic: str, schema: TopicSchema, check_only: bool,
                    deadline: float) -> int:
    if schema.type not in cmd.Schema.Type.keys():
        raise errors.InvalidMessage(f"schema type {schema.type!r} is not one of Pulsar's: "
                                    f"{', '.join(cmd.Schema.Type.keys())}")
    if check_only:
        # A consumer's schema: registered only on a topic without a schema (as the gRPC server does), else
        # checked as Pulsar's brokers check it: a consumer subscribing with it (the binary protocol has no
        # check-only command), refused with IncompatibleSchema as GetOrCreateSchema's check_only is.
        try:
            get_schema(transport, topic, -1, deadline)
        except errors.TopicNotFound:
            pass
        else:
            # a partitioned topic's schema is its partitions' (a consumer attaches to a partition, not the base)
            target = f"{topic}-partition-0" if partitions(transport, topic, deadline) > 0 else topic
            with_consumer(transport, target, deadline, reader_subscription(
                force_topic_creation=False, schema=wire_schema(schema)))
            return -1
    conn = transport.connection_for(topic, max(deadline - time.monotonic(), 0.001))
    if not conn.is_pulsarlike:
        # every Pulsar broker registers the schema a producer carries; not all answer GET_OR_CREATE_SCHEMA
        from connector.client.transport.binary.producing import register_with_producer
        return register_with_producer(transport, topic, schema, max(_remaining(deadline), 0.001))
    answer = ask(conn, T(type=T.GET_OR_CREATE_SCHEMA, getOrCreateSchema=cmd.CommandGetOrCreateSchema(
        request_id=conn.next_request_id(), topic=topic, schema=wire_schema(schema))), deadline)
    return _version(answer.getOrCreateSchemaResponse.schema_version)


def wire_schema(schema: TopicSchema) -> cmd.Schema:
    """A registry schema as Pulsar's ``Schema`` command field."""
    wire = cmd.Schema(name=schema.name, schema_data=schema.data, type=cmd.Schema.Type.Value(schema.type))
    for key, value in schema.properties.items():
        wire.properties.add(key=key, value=value)
    return wire


def with_consumer(transport: BinaryTransport, topic: str, deadline: float, subscribe: cmd.CommandSubscribe,
                   then: Callable[[PulsarConnection, int], Any] | None = None) -> Any:
    """Open a consumer with ``subscribe`` (no permits: nothing is delivered), run ``then(conn,
    consumer_id)``, close it."""
    conn = transport.connection_for(topic, max(deadline - time.monotonic(), 0.001))
    consumer_id = conn.next_consumer_id()
    subscribe.topic, subscribe.consumer_id, subscribe.request_id = topic, consumer_id, conn.next_request_id()
    ask(conn, T(type=T.SUBSCRIBE, subscribe=subscribe), deadline)
    try:
        return then(conn, consumer_id) if then is not None else None
    finally:
        try:
            conn.request(T(type=T.CLOSE_CONSUMER, close_consumer=cmd.CommandCloseConsumer(
                consumer_id=consumer_id, request_id=conn.next_request_id())), max(_remaining(deadline), 1.0))
        except errors.PulsarLikeError as exc:  # the broker drops it with the connection anyway
            log.debug("event=temporary_consumer_close_failed topic=%s error=%r", topic, exc)


def reader_subscription(**fields: Any) -> cmd.CommandSubscribe:
    return cmd.CommandSubscribe(subscription=f"__pulsarlike-{uuid.uuid4().hex[:12]}",
                                subType=cmd.CommandSubscribe.Exclusive, durable=False,
                                start_message_id=api.MessageIdData(ledgerId=U64 - 1, entryId=U64 - 1),
                                initialPosition=cmd.CommandSubscribe.Earliest, **fields)


def last_message(transport: BinaryTransport, topic: str, read_compacted: bool, deadline: float) -> LastMessage:
    partition = TopicName.parse(topic).partition_index

    def last_ids(conn: PulsarConnection, consumer_id: int) -> cmd.CommandGetLastMessageIdResponse:
        return ask(conn, T(type=T.GET_LAST_MESSAGE_ID, getLastMessageId=cmd.CommandGetLastMessageId(
            consumer_id=consumer_id, request_id=conn.next_request_id())), deadline).getLastMessageIdResponse

    # force_topic_creation off: a topic that does not exist is TopicNotFound, as over gRPC
    try:
        answer = with_consumer(transport, topic, deadline, reader_subscription(
            read_compacted=read_compacted, force_topic_creation=False), last_ids)
    except errors.UnknownError as exc:
        if _NO_MESSAGES not in exc.message:
            raise
        # pulsar-lite answers an empty topic with this error instead of Pulsar's (ledger, -1)
        return LastMessage()
    return last_message_of(answer, partition, transport.positions)


def create_topic(transport: BinaryTransport, topic: str, deadline: float) -> None:
    # Pulsar's binary protocol has no "create": a consumer attaching creates the topic on a broker that
    # auto-creates topics (pulsarlike and Pulsar's default). A broker that does not refuses with
    # TopicNotFound: the REST API creates it there.
    try:
        with_consumer(transport, topic, deadline, reader_subscription(force_topic_creation=True))
    except errors.TopicNotFound:
        raise errors.NotSupported(f"the broker does not create {topic} on use (topic auto-creation "
                                  "is off): create it with the broker's REST API (admin.url)", topic=topic) from None


def create_subscription(transport: BinaryTransport, topic: str, subscription: str, earliest: bool,
                        deadline: float) -> None:
    subscribe = cmd.CommandSubscribe(subscription=subscription, subType=cmd.CommandSubscribe.Shared, durable=True,
                                     initialPosition=cmd.CommandSubscribe.Earliest if earliest
                                     else cmd.CommandSubscribe.Latest)
    try:
        with_consumer(transport, topic, deadline, subscribe)
    except (errors.ConsumerBusy, errors.ConsumerAssignError) as exc:  # another type's consumers hold it
        raise errors.NotAllowedError(f"subscription {subscription} of {topic} already exists "
                                     f"({exc.message})", topic=topic) from None


def last_message_of(answer: cmd.CommandGetLastMessageIdResponse, partition: int, positions: Positions) -> LastMessage:
    """GET_LAST_MESSAGE_ID's answer: the broker's real ids, the last
    message's position (``positions``), -1 when the topic holds none; ``start_offset``: the position after
    the reader's mark-delete point when the broker says it (else 0)."""
    last = answer.last_message_id
    ledger, entry = _signed(last.ledgerId), _signed(last.entryId)
    start = 0
    if answer.HasField("consumer_mark_delete_position"):
        mark = answer.consumer_mark_delete_position
        if _signed(mark.ledgerId) >= 0 and _signed(mark.entryId) >= 0:
            index = _signed(mark.batch_index) if mark.HasField("batch_index") else -1
            start = positions.position(MessageId.of(mark.ledgerId, mark.entryId, partition, index)) + 1
    if ledger < 0 or entry < 0:
        return LastMessage(start_offset=start)
    batch_index = last.batch_index if last.HasField("batch_index") else -1
    position = positions.position(MessageId.of(ledger, entry, partition, batch_index))
    return LastMessage(ledger, entry, batch_index, position, start)


_UNANSWERED = {"Pulsar-Lite": {T.GET_SCHEMA, T.GET_OR_CREATE_SCHEMA, T.GET_TOPICS_OF_NAMESPACE}}
"""Brokers (by ``CONNECTED.server_version`` prefix) known to leave these commands unanswered: asking would
only wait out the operation timeout (pulsar-lite 0.2.0 keeps no schemas and lists no namespaces)."""


def _unanswered(conn: PulsarConnection, kind: int) -> bool:
    return any(conn.server_version.startswith(prefix) and kind in kinds for prefix, kinds in _UNANSWERED.items())


def _version(data: bytes) -> int:
    return SCHEMA_VERSION.unpack(data)[0] if len(data) == SCHEMA_VERSION.size else -1


def _remaining(deadline: float) -> float:
    return deadline - time.monotonic()


def _left(deadline: float, what: str) -> float:
    left = _remaining(deadline)
    if left <= 0:
        raise errors.Timeout(f"{what}: the operation timeout passed")
    return left
