"""The client core's unary calls over Pulsar's binary protocol: :data:`CALLS` maps each pulsarlike RPC name to
the function carrying it, which answers the same ``broker_pb2`` reply the gRPC server does, with the same typed
errors (so the core cannot tell the transports apart).

- ``GetPartitionedTopicMetadata``: ``PARTITIONED_METADATA``; ``LookupTopic``: ``LOOKUP`` (the serving broker's
  URL); ``ListTopics``: ``GET_TOPICS_OF_NAMESPACE`` in mode ALL (the gRPC server lists both domains);
- ``GetSchema``: ``GET_SCHEMA``; ``GetOrCreateSchema``: ``GET_OR_CREATE_SCHEMA`` on pulsarlike, a producer
  carrying the schema elsewhere (every Pulsar broker registers that; not all answer the command); a consumer's
  (``check_only``) on a topic with a schema: a temporary consumer subscribing with it (the broker checks it);
- ``GetLastMessageId``: a temporary non-durable consumer (no permits: nothing is delivered), then
  ``GET_LAST_MESSAGE_ID``, then ``CLOSE_CONSUMER``; the ids are the broker's own, ``last_offset`` the
  position (:class:`~connector.client.transport.Positions`) of the last message;
- ``CreateTopic``: a consumer attaching creates a topic on a broker that auto-creates topics (pulsarlike and
  Pulsar's default); elsewhere ``NotSupported`` (the REST API creates it);
- ``CreateSubscription``: a durable ``SUBSCRIBE`` at the initial position, then ``CLOSE_CONSUMER``.
"""
from __future__ import annotations

import logging
import struct
import time
import uuid
from typing import TYPE_CHECKING, Any, Callable

from broker_core import errors
from broker_core.protocol import broker_pb2 as pb
from broker_core.protocol import pulsar_api_pb2 as api
from broker_core.protocol import pulsar_commands_pb2 as cmd
from broker_core.types import TopicName

from connector.client.binary.connection import PulsarConnection
from connector.client.message_id import MessageId
from connector.client.transport import Positions

if TYPE_CHECKING:
    from connector.client.binary.transport import BinaryTransport

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


def partitioned_metadata(transport: BinaryTransport, request: pb.TopicRequest,
                         deadline: float) -> pb.PartitionedTopicMetadata:
    conn = transport.service_connection()
    answer = ask(conn, T(type=T.PARTITIONED_METADATA, partitionMetadata=cmd.CommandPartitionedTopicMetadata(
        topic=request.topic, request_id=conn.next_request_id())), deadline)
    partitions = answer.partitionMetadataResponse.partitions
    if partitions > MAX_PARTITION_COUNT:  # uint32 on the wire, int32 in the reply: refused typed, never ValueError
        raise errors.NotSupported(f"the broker at {conn.address} says {request.topic} has {partitions} partitions,"
                                  f" more than any topic can have ({MAX_PARTITION_COUNT})", topic=request.topic,
                                  partitions=partitions, limit=MAX_PARTITION_COUNT)
    return pb.PartitionedTopicMetadata(partitions=partitions)

def list_topics(transport: BinaryTransport, request: pb.ListTopicsRequest, deadline: float) -> pb.TopicList:
    # the gRPC server lists both domains (persistent and non-persistent): mode ALL
    conn = transport.service_connection()
    if _unanswered(conn, T.GET_TOPICS_OF_NAMESPACE):
        raise errors.NotSupported(f"the broker at {conn.address} ({conn.server_version}) does not list a "
                                  "namespace's topics (GET_TOPICS_OF_NAMESPACE): name the topics instead of a "
                                  "pattern", namespace=request.namespace)
    answer = ask(conn, T(type=T.GET_TOPICS_OF_NAMESPACE, getTopicsOfNamespace=cmd.CommandGetTopicsOfNamespace(
        request_id=conn.next_request_id(), namespace=request.namespace,
        mode=cmd.CommandGetTopicsOfNamespace.ALL)), deadline)
    return pb.TopicList(topics=sorted(answer.getTopicsOfNamespaceResponse.topics))

def lookup_topic(transport: BinaryTransport, request: pb.TopicRequest, deadline: float) -> pb.LookupResult:
    TopicName.parse(request.topic)  # a bad name is refused here, as the gRPC server does
    conn = transport.connection_for(request.topic, max(deadline - time.monotonic(), 0.001))
    scheme = "pulsar+ssl" if transport.security.tls is not None else "pulsar"
    return pb.LookupResult(broker_url=f"{scheme}://{conn.address}")

def get_schema(transport: BinaryTransport, request: pb.SchemaRequest, deadline: float) -> pb.SchemaReply:
    conn = transport.service_connection()
    if _unanswered(conn, T.GET_SCHEMA):
        raise errors.TopicNotFound(f"topic {request.topic} has no schema the broker at {conn.address} "
                                   f"({conn.server_version}) gives (it does not answer GET_SCHEMA)",
                                   topic=request.topic)
    get = cmd.CommandGetSchema(request_id=conn.next_request_id(), topic=request.topic)
    if request.version >= 0:
        get.schema_version = SCHEMA_VERSION.pack(request.version)
    answer = ask(conn, T(type=T.GET_SCHEMA, getSchema=get), deadline).getSchemaResponse
    if not answer.HasField("schema"):
        raise errors.TopicNotFound(f"topic {request.topic} has no schema", topic=request.topic)
    return _schema_reply(answer.schema, answer.schema_version)

def get_or_create_schema(transport: BinaryTransport, request: pb.SchemaRequest, deadline: float) -> pb.SchemaReply:
    if request.type not in cmd.Schema.Type.keys():
        raise errors.InvalidMessage(f"schema type {request.type!r} is not one of Pulsar's: "
                                    f"{', '.join(cmd.Schema.Type.keys())}")
    if request.check_only:
        # A consumer's schema: registered only on a topic without a schema (as the gRPC server does), else
        # checked as Pulsar's brokers check it: a consumer subscribing with it (the binary protocol has no
        # check-only command), refused with IncompatibleSchema as GetOrCreateSchema's check_only is.
        try:
            get_schema(transport, pb.SchemaRequest(topic=request.topic, version=-1), deadline)
        except errors.TopicNotFound:
            pass
        else:
            # a partitioned topic's schema is its partitions' (a consumer attaches to a partition, not the base)
            partitions = partitioned_metadata(transport, pb.TopicRequest(topic=request.topic), deadline).partitions
            target = f"{request.topic}-partition-0" if partitions > 0 else request.topic
            with_consumer(transport, target, deadline, reader_subscription(
                force_topic_creation=False, schema=_wire_schema(request)))
            return pb.SchemaReply(version=-1, type=request.type)
    conn = transport.connection_for(request.topic, max(deadline - time.monotonic(), 0.001))
    if not conn.is_pulsarlike:
        # every Pulsar broker registers the schema a producer carries; not all answer GET_OR_CREATE_SCHEMA
        from connector.client.binary.producing import register_schema
        version = register_schema(transport, request, max(_remaining(deadline), 0.001))
        reply = pb.SchemaReply(type=request.type, data=request.data, name=request.name, version=version)
        reply.properties.update(request.properties)
        return reply
    answer = ask(conn, T(type=T.GET_OR_CREATE_SCHEMA, getOrCreateSchema=cmd.CommandGetOrCreateSchema(
        request_id=conn.next_request_id(), topic=request.topic, schema=_wire_schema(request))), deadline)
    reply = pb.SchemaReply(type=request.type, data=request.data, name=request.name)
    reply.properties.update(request.properties)
    reply.version = _version(answer.getOrCreateSchemaResponse.schema_version)
    return reply

def _wire_schema(request: pb.SchemaRequest) -> cmd.Schema:
    schema = cmd.Schema(name=request.name, schema_data=request.data, type=cmd.Schema.Type.Value(request.type))
    for key, value in request.properties.items():
        schema.properties.add(key=key, value=value)
    return schema

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

def last_message_id(transport: BinaryTransport, request: pb.TopicRequest, deadline: float) -> pb.LastMessageId:
    partition = TopicName.parse(request.topic).partition_index

    def last_ids(conn: PulsarConnection, consumer_id: int) -> cmd.CommandGetLastMessageIdResponse:
        return ask(conn, T(type=T.GET_LAST_MESSAGE_ID, getLastMessageId=cmd.CommandGetLastMessageId(
            consumer_id=consumer_id, request_id=conn.next_request_id())), deadline).getLastMessageIdResponse

    # force_topic_creation off: a topic that does not exist is TopicNotFound, as over gRPC
    try:
        answer = with_consumer(transport, request.topic, deadline, reader_subscription(
            read_compacted=request.read_compacted, force_topic_creation=False), last_ids)
    except errors.UnknownError as exc:
        if _NO_MESSAGES not in exc.message:
            raise
        # pulsar-lite answers an empty topic with this error instead of Pulsar's (ledger, -1)
        return pb.LastMessageId(last_offset=-1)
    return last_message_reply(answer, partition, transport.positions)

def create_topic(transport: BinaryTransport, request: pb.TopicRequest, deadline: float) -> pb.Empty:
    # Pulsar's binary protocol has no "create": a consumer attaching creates the topic on a broker that
    # auto-creates topics (pulsarlike and Pulsar's default). A broker that does not refuses with
    # TopicNotFound: the REST API creates it there.
    try:
        with_consumer(transport, request.topic, deadline, reader_subscription(force_topic_creation=True))
    except errors.TopicNotFound:
        raise errors.NotSupported(f"the broker does not create {request.topic} on use (topic auto-creation "
                                  "is off): create it with the broker's REST API (admin.url)",
                                  topic=request.topic) from None
    return pb.Empty()

def create_subscription(transport: BinaryTransport, request: pb.SubscriptionRequest,
                        deadline: float) -> pb.SubscriptionPosition:
    which = request.position.WhichOneof("position") if request.HasField("position") else "latest"
    if which == "offset":
        raise errors.NotSupported("CreateSubscription at an offset is not carried by the binary protocol: "
                                  "create it at the earliest or latest message, then seek")
    subscribe = cmd.CommandSubscribe(subscription=request.subscription, subType=cmd.CommandSubscribe.Shared,
                                     durable=True, initialPosition=cmd.CommandSubscribe.Earliest
                                     if which == "earliest" else cmd.CommandSubscribe.Latest)
    try:
        with_consumer(transport, request.topic, deadline, subscribe)
    except (errors.ConsumerBusy, errors.ConsumerAssignError) as exc:  # another type's consumers hold it
        raise errors.NotAllowedError(f"subscription {request.subscription} of {request.topic} already exists "
                                     f"({exc.message})", topic=request.topic) from None
    return pb.SubscriptionPosition()


CALLS: dict[str, Callable[["BinaryTransport", Any, float], Any]] = {
    "GetPartitionedTopicMetadata": partitioned_metadata,   # PARTITIONED_METADATA
    "ListTopics": list_topics,                            # GET_TOPICS_OF_NAMESPACE (mode ALL)
    "GetSchema": get_schema,                              # GET_SCHEMA
    "GetOrCreateSchema": get_or_create_schema,            # GET_OR_CREATE_SCHEMA
    "GetLastMessageId": last_message_id,                  # reader + GET_LAST_MESSAGE_ID
    "CreateTopic": create_topic,                          # a consumer attaching creates it
    "CreateSubscription": create_subscription,            # durable SUBSCRIBE + CLOSE_CONSUMER
    "LookupTopic": lookup_topic,                          # LOOKUP
}
"""The unary calls the client core makes, and how each is carried."""


def last_message_reply(answer: cmd.CommandGetLastMessageIdResponse, partition: int,
                       positions: Positions) -> pb.LastMessageId:
    """GET_LAST_MESSAGE_ID's answer as the gRPC server's ``LastMessageId``: the broker's real ids, the last
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
        return pb.LastMessageId(last_offset=-1, start_offset=start)
    batch_index = last.batch_index if last.HasField("batch_index") else -1
    position = positions.position(MessageId.of(ledger, entry, partition, batch_index))
    return pb.LastMessageId(ledger_id=ledger, entry_id=entry, batch_index=batch_index, last_offset=position,
                            start_offset=start)


_UNANSWERED = {"Pulsar-Lite": {T.GET_SCHEMA, T.GET_OR_CREATE_SCHEMA, T.GET_TOPICS_OF_NAMESPACE}}
"""Brokers (by ``CONNECTED.server_version`` prefix) known to leave these commands unanswered: asking would
only wait out the operation timeout (pulsar-lite 0.2.0 keeps no schemas and lists no namespaces)."""


def _unanswered(conn: PulsarConnection, kind: int) -> bool:
    return any(conn.server_version.startswith(prefix) and kind in kinds for prefix, kinds in _UNANSWERED.items())


def _schema_reply(schema: cmd.Schema, version: bytes) -> pb.SchemaReply:
    reply = pb.SchemaReply(version=_version(version), type=cmd.Schema.Type.Name(schema.type), data=schema.schema_data,
                           name=schema.name)
    reply.properties.update({p.key: p.value for p in schema.properties})
    return reply


def _version(data: bytes) -> int:
    return SCHEMA_VERSION.unpack(data)[0] if len(data) == SCHEMA_VERSION.size else -1


def _remaining(deadline: float) -> float:
    return deadline - time.monotonic()


def _left(deadline: float, what: str) -> float:
    left = _remaining(deadline)
    if left <= 0:
        raise errors.Timeout(f"{what}: the operation timeout passed")
    return left
