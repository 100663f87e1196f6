"""The binary transport: :class:`BinaryTransport`, the :class:`~connector.client.transport.Transport` over
Pulsar's binary protocol, to pulsarlike's binary front end or to any Pulsar broker.

- Connections: one :class:`~connector.client.binary.connection.PulsarConnection` per broker address (and per
  proxied broker, see below), opened on first use, dropped from the pool when it ends.
- Lookups (:meth:`BinaryTransport.connection_for`): ``LOOKUP`` on the service URL's connection, as Pulsar's
  clients do it: a ``Redirect`` answer is looked up again on the broker it names (with the ``authoritative``
  flag it carries), a ``Connect`` answer names the broker serving the topic (its ``brokerServiceUrlTls`` on
  TLS, its ``brokerServiceUrl`` otherwise). With ``proxy_through_service_url`` the connection goes to the
  service URL (a Pulsar proxy) and ``CONNECT`` names the broker (``proxy_to_broker_url``). The answer is
  cached per topic until its connection ends (or :meth:`~BinaryTransport.forget` is told the broker moved it).
- Unary calls (:meth:`BinaryTransport.unary`): the client core's calls (``broker_pb2`` requests and replies,
  as the gRPC server answers them) carried by Pulsar's commands: see :data:`CALLS`. Anything else (Admin's
  calls) is ``NotSupported``: over another broker, Admin is its REST API (``admin.url``).
- Streams (:meth:`BinaryTransport.stream`): ``Produce`` and ``Consume`` go to the adapters of
  :mod:`connector.client.binary.producing` and :mod:`connector.client.binary.consuming`.
"""
from __future__ import annotations

import logging
import struct
import threading
import time
import uuid
from typing import Any, Callable

from broker_core import errors
from broker_core.protocol import broker_pb2 as pb
from broker_core.protocol import pulsar_api_pb2 as api
from broker_core.protocol import pulsar_commands_pb2 as cmd
from broker_core.types import TopicName

from connector.client.binary.connection import PulsarConnection
from connector.client.connection import Security, is_tls_url, parse_service_url
from connector.client.message_id import MessageId
from connector.client.reconnect import retry_until
from connector.client.tls import TlsOptions
from connector.client.transport import DENSE, Positions

log = logging.getLogger(__name__)

T = cmd.BaseCommand
Lookup = cmd.CommandLookupTopicResponse
MAX_REDIRECTS = 20
"""Pulsar's clients give up after this many lookup redirects (a loop between misconfigured brokers)."""
SCHEMA_VERSION = struct.Struct(">q")
U64 = 1 << 64
_NO_MESSAGES = "Topic has no messages"


def _signed(value: int) -> int:
    return value - U64 if value >= 1 << 63 else value


class BinaryTransport:
    """See the module docstring. The constructor takes what
    :class:`connector.client.connection.Connection`'s does; nothing is sent before the first use."""

    timer = None
    """The adapters bring their own timers."""

    def __init__(self, service_url: str, operation_timeout_s: float, connection_timeout_s: float,
                 security: Security | None = None) -> None:
        self.target = parse_service_url(service_url)
        self.operation_timeout_s = operation_timeout_s
        self.connection_timeout_s = connection_timeout_s
        self.security = security or (Security(tls=TlsOptions()) if is_tls_url(service_url) else Security())
        self.closed = threading.Event()
        self._positions: Positions | None = None
        self._lock = threading.Lock()
        self._pool: dict[tuple[str, str], PulsarConnection] = {}
        self._opening: dict[tuple[str, str], threading.Lock] = {}
        self._topics: dict[str, PulsarConnection] = {}

    # ------------------------------------------------------------------ connections
    def connection(self, address: str, proxy_to: str = "") -> PulsarConnection:
        """The pooled connection to ``address`` (``host:port``), opened when there is none; ``proxy_to``: the
        broker a proxy at ``address`` is to forward it to."""
        if self.closed.is_set():
            raise errors.AlreadyClosed("the client is closed")
        key = (address, proxy_to)
        with self._lock:
            conn = self._pool.get(key)
            if conn is not None and not conn.closed:
                return conn
            opening = self._opening.setdefault(key, threading.Lock())
        with opening:  # one opening per address at a time: the others wait for it and share it
            with self._lock:
                conn = self._pool.get(key)
                if conn is not None and not conn.closed:
                    return conn
            conn = self._open(address, proxy_to)
            with self._lock:
                if self.closed.is_set():
                    conn.close()
                    raise errors.AlreadyClosed("the client is closed")
                self._pool[key] = conn
            conn.add_lost_listener(lambda error, conn=conn, key=key: self._lost(key, conn))
            if self._positions is None:
                self._positions = self._positions_for(conn)
            return conn

    def _open(self, address: str, proxy_to: str) -> PulsarConnection:
        return PulsarConnection(address, self.security, self.connection_timeout_s, proxy_to_broker_url=proxy_to or None)

    def _lost(self, key: tuple[str, str], conn: PulsarConnection) -> None:
        with self._lock:
            if self._pool.get(key) is conn:
                del self._pool[key]
            for topic in [t for t, c in self._topics.items() if c is conn]:
                del self._topics[topic]

    def service_connection(self) -> PulsarConnection:
        return self.connection(self.target)

    @staticmethod
    def _positions_for(conn: PulsarConnection) -> Positions:
        if conn.is_pulsarlike:
            return DENSE
        try:
            from connector.client.binary.positions import PackedPositions
        except ImportError:  # TODO(issue 23, T3): positions.py not there yet
            log.warning("event=packed_positions_missing server_version=%s", conn.server_version)
            return DENSE
        return PackedPositions()

    @property
    def positions(self) -> Positions:
        """DENSE on pulsarlike, packed ``(ledger, entry, batch index)`` positions on another broker: known once
        the first connection is up (asking opens it)."""
        if self._positions is None:
            self.ensure_ready()
        assert self._positions is not None
        return self._positions

    def ensure_ready(self) -> None:
        """The service URL's connection, within ``connection_timeout_s``; ``ConnectError`` naming it if not."""
        if self.closed.is_set():
            raise errors.AlreadyClosed("the client is closed")
        try:
            self.service_connection()
        except errors.ConnectError as exc:
            raise errors.ConnectError(f"cannot connect to the broker at {self.target} within "
                                      f"{self.connection_timeout_s:g}s: {exc.message}", target=self.target) from None

    # ------------------------------------------------------------------ lookups
    def connection_for(self, topic: str, timeout_s: float | None = None) -> PulsarConnection:
        """The connection to the broker serving ``topic`` (see the module docstring); typed errors."""
        with self._lock:
            conn = self._topics.get(topic)
        if conn is not None and not conn.closed:
            return conn
        deadline = time.monotonic() + (timeout_s or self.operation_timeout_s)
        conn = self._lookup(topic, deadline)
        with self._lock:
            if not conn.closed:
                self._topics[topic] = conn
        return conn

    def forget(self, topic: str) -> None:
        """Look ``topic`` up again next time (the broker said it is not served there any more)."""
        with self._lock:
            self._topics.pop(topic, None)

    def _lookup(self, topic: str, deadline: float) -> PulsarConnection:
        conn = self.service_connection()
        authoritative = False
        for _ in range(MAX_REDIRECTS):
            request_id = conn.next_request_id()
            answer = conn.request(T(type=T.LOOKUP, lookupTopic=cmd.CommandLookupTopic(
                topic=topic, request_id=request_id, authoritative=authoritative)), _left(deadline, topic)
            ).lookupTopicResponse
            url = answer.brokerServiceUrlTls if self.security.tls is not None else answer.brokerServiceUrl
            if not url:
                raise errors.ServiceNotReady(f"the lookup of {topic} named no broker "
                                             f"{'TLS ' if self.security.tls is not None else ''}URL", topic=topic)
            address = parse_service_url(url)
            via_proxy = answer.proxy_through_service_url
            if answer.response == Lookup.Connect:
                log.debug("event=lookup topic=%s broker=%s proxied=%s", topic, address, via_proxy)
                return self.connection(self.target, address) if via_proxy else self.connection(address)
            authoritative = answer.authoritative  # Redirect: ask that broker
            conn = self.connection(self.target, address) if via_proxy else self.connection(address)
        raise errors.ServiceNotReady(f"the lookup of {topic} was redirected {MAX_REDIRECTS} times", topic=topic)

    # ------------------------------------------------------------------ unary calls
    def unary(self, method: str, request: Any, timeout_s: float | None = None, retry: bool = False) -> Any:
        """``method`` with ``request`` as the gRPC server would answer it (see :data:`CALLS`); ``retry``: tried
        again while the broker is unreachable or not ready, with backoff, until the deadline."""
        call = CALLS.get(method)
        if call is None:
            raise errors.NotSupported(f"{method} is not carried by the binary protocol: Admin calls to a broker "
                                      "other than pulsarlike go through its REST API (admin.url)", method=method)
        timeout_s = timeout_s or self.operation_timeout_s
        deadline = time.monotonic() + timeout_s
        if not retry:
            self.ensure_ready()
            return call(self, request, deadline)

        def attempt() -> Any:
            self.ensure_ready()
            return call(self, request, deadline)
        return retry_until(deadline, attempt, self.closed)

    def _request(self, conn: PulsarConnection, command: cmd.BaseCommand, deadline: float) -> cmd.BaseCommand:
        return conn.request(command, _left(deadline, T.Type.Name(command.type)))

    def _partitioned_metadata(self, request: pb.TopicRequest, deadline: float) -> pb.PartitionedTopicMetadata:
        conn = self.service_connection()
        answer = self._request(conn, T(type=T.PARTITIONED_METADATA, partitionMetadata=cmd.CommandPartitionedTopicMetadata(
            topic=request.topic, request_id=conn.next_request_id())), deadline)
        return pb.PartitionedTopicMetadata(partitions=answer.partitionMetadataResponse.partitions)

    def _list_topics(self, request: pb.ListTopicsRequest, deadline: float) -> pb.TopicList:
        # the gRPC server lists both domains (persistent and non-persistent): mode ALL
        conn = self.service_connection()
        if _unanswered(conn, T.GET_TOPICS_OF_NAMESPACE):
            raise errors.NotSupported(f"the broker at {conn.address} ({conn.server_version}) does not list a "
                                      "namespace's topics (GET_TOPICS_OF_NAMESPACE): name the topics instead of a "
                                      "pattern", namespace=request.namespace)
        answer = self._request(conn, T(type=T.GET_TOPICS_OF_NAMESPACE, getTopicsOfNamespace=cmd.CommandGetTopicsOfNamespace(
            request_id=conn.next_request_id(), namespace=request.namespace,
            mode=cmd.CommandGetTopicsOfNamespace.ALL)), deadline)
        return pb.TopicList(topics=sorted(answer.getTopicsOfNamespaceResponse.topics))

    def _lookup_topic(self, request: pb.TopicRequest, deadline: float) -> pb.LookupResult:
        TopicName.parse(request.topic)  # a bad name is refused here, as the gRPC server does
        conn = self.connection_for(request.topic, max(deadline - time.monotonic(), 0.001))
        scheme = "pulsar+ssl" if self.security.tls is not None else "pulsar"
        return pb.LookupResult(broker_url=f"{scheme}://{conn.address}")

    def _get_schema(self, request: pb.SchemaRequest, deadline: float) -> pb.SchemaReply:
        conn = self.service_connection()
        if _unanswered(conn, T.GET_SCHEMA):
            raise errors.TopicNotFound(f"topic {request.topic} has no schema the broker at {conn.address} "
                                       f"({conn.server_version}) gives (it does not answer GET_SCHEMA)",
                                       topic=request.topic)
        get = cmd.CommandGetSchema(request_id=conn.next_request_id(), topic=request.topic)
        if request.version >= 0:
            get.schema_version = SCHEMA_VERSION.pack(request.version)
        answer = self._request(conn, T(type=T.GET_SCHEMA, getSchema=get), deadline).getSchemaResponse
        if not answer.HasField("schema"):
            raise errors.TopicNotFound(f"topic {request.topic} has no schema", topic=request.topic)
        return _schema_reply(answer.schema, answer.schema_version)

    def _get_or_create_schema(self, request: pb.SchemaRequest, deadline: float) -> pb.SchemaReply:
        if request.type not in cmd.Schema.Type.keys():
            raise errors.InvalidMessage(f"schema type {request.type!r} is not one of Pulsar's: "
                                        f"{', '.join(cmd.Schema.Type.keys())}")
        if request.check_only:
            # A consumer's schema: Pulsar's brokers check it when the consumer subscribes with it; here it is
            # registered only on a topic without a schema (as the gRPC server does), else left to SUBSCRIBE.
            try:
                self._get_schema(pb.SchemaRequest(topic=request.topic, version=-1), deadline)
                return pb.SchemaReply(version=-1, type=request.type)
            except errors.TopicNotFound:
                pass
        conn = self.connection_for(request.topic, max(deadline - time.monotonic(), 0.001))
        if not conn.is_pulsarlike:
            # every Pulsar broker registers the schema a producer carries; not all answer GET_OR_CREATE_SCHEMA
            from connector.client.binary.producing import register_schema
            version = register_schema(self, request, max(_remaining(deadline), 0.001))
            reply = pb.SchemaReply(type=request.type, data=request.data, name=request.name, version=version)
            reply.properties.update(request.properties)
            return reply
        schema = cmd.Schema(name=request.name, schema_data=request.data, type=cmd.Schema.Type.Value(request.type))
        for key, value in request.properties.items():
            schema.properties.add(key=key, value=value)
        answer = self._request(conn, T(type=T.GET_OR_CREATE_SCHEMA, getOrCreateSchema=cmd.CommandGetOrCreateSchema(
            request_id=conn.next_request_id(), topic=request.topic, schema=schema)), deadline)
        reply = pb.SchemaReply(type=request.type, data=request.data, name=request.name)
        reply.properties.update(request.properties)
        reply.version = _version(answer.getOrCreateSchemaResponse.schema_version)
        return reply

    def _with_consumer(self, topic: str, deadline: float, subscribe: cmd.CommandSubscribe,
                       then: Callable[[PulsarConnection, int], Any] | None = None) -> Any:
        """Open a consumer with ``subscribe`` (no permits: nothing is delivered), run ``then(conn,
        consumer_id)``, close it."""
        conn = self.connection_for(topic, max(deadline - time.monotonic(), 0.001))
        consumer_id = conn.next_consumer_id()
        subscribe.topic, subscribe.consumer_id, subscribe.request_id = topic, consumer_id, conn.next_request_id()
        self._request(conn, T(type=T.SUBSCRIBE, subscribe=subscribe), deadline)
        try:
            return then(conn, consumer_id) if then is not None else None
        finally:
            try:
                conn.request(T(type=T.CLOSE_CONSUMER, close_consumer=cmd.CommandCloseConsumer(
                    consumer_id=consumer_id, request_id=conn.next_request_id())), max(_remaining(deadline), 1.0))
            except errors.PulsarLikeError as exc:  # the broker drops it with the connection anyway
                log.debug("event=temporary_consumer_close_failed topic=%s error=%r", topic, exc)

    def _reader_subscription(self, **fields: Any) -> cmd.CommandSubscribe:
        return cmd.CommandSubscribe(subscription=f"__pulsarlike-{uuid.uuid4().hex[:12]}",
                                    subType=cmd.CommandSubscribe.Exclusive, durable=False,
                                    start_message_id=api.MessageIdData(ledgerId=U64 - 1, entryId=U64 - 1),
                                    initialPosition=cmd.CommandSubscribe.Earliest, **fields)

    def _last_message_id(self, request: pb.TopicRequest, deadline: float) -> pb.LastMessageId:
        partition = TopicName.parse(request.topic).partition_index

        def ask(conn: PulsarConnection, consumer_id: int) -> cmd.CommandGetLastMessageIdResponse:
            return self._request(conn, T(type=T.GET_LAST_MESSAGE_ID, getLastMessageId=cmd.CommandGetLastMessageId(
                consumer_id=consumer_id, request_id=conn.next_request_id())), deadline).getLastMessageIdResponse

        # force_topic_creation off: a topic that does not exist is TopicNotFound, as over gRPC
        try:
            answer = self._with_consumer(request.topic, deadline, self._reader_subscription(
                read_compacted=request.read_compacted, force_topic_creation=False), ask)
        except errors.UnknownError as exc:
            if _NO_MESSAGES not in exc.message:
                raise
            # pulsar-lite answers an empty topic with this error instead of Pulsar's (ledger, -1)
            return pb.LastMessageId(last_offset=-1)
        return last_message_reply(answer, partition, self.positions)

    def _create_topic(self, request: pb.TopicRequest, deadline: float) -> pb.Empty:
        # Pulsar's binary protocol has no "create": a consumer attaching creates the topic on a broker that
        # auto-creates topics (pulsarlike and Pulsar's default). A broker that does not refuses with
        # TopicNotFound: the REST API creates it there.
        try:
            self._with_consumer(request.topic, deadline, self._reader_subscription(force_topic_creation=True))
        except errors.TopicNotFound:
            raise errors.NotSupported(f"the broker does not create {request.topic} on use (topic auto-creation "
                                      "is off): create it with the broker's REST API (admin.url)",
                                      topic=request.topic) from None
        return pb.Empty()

    def _create_subscription(self, request: pb.SubscriptionRequest, deadline: float) -> pb.SubscriptionPosition:
        which = request.position.WhichOneof("position") if request.HasField("position") else "latest"
        if which == "offset":
            raise errors.NotSupported("CreateSubscription at an offset is not carried by the binary protocol: "
                                      "create it at the earliest or latest message, then seek")
        subscribe = cmd.CommandSubscribe(subscription=request.subscription, subType=cmd.CommandSubscribe.Shared,
                                         durable=True, initialPosition=cmd.CommandSubscribe.Earliest
                                         if which == "earliest" else cmd.CommandSubscribe.Latest)
        try:
            self._with_consumer(request.topic, deadline, subscribe)
        except (errors.ConsumerBusy, errors.ConsumerAssignError) as exc:  # another type's consumers hold it
            raise errors.NotAllowedError(f"subscription {request.subscription} of {request.topic} already exists "
                                         f"({exc.message})", topic=request.topic) from None
        return pb.SubscriptionPosition()

    # ------------------------------------------------------------------ streams
    def stream(self, method: str, first_request: Any, on_response: Callable[[Any], None],
               on_end: Callable[[errors.PulsarLikeError | None], None],
               batch_requests: Callable[[list[Any]], Any] | None = None, name: str = "stream",
               reconnecting: bool = False) -> Any:
        """A ``Produce`` or ``Consume`` stream (not started: the caller calls ``start()``); ``batch_requests`` is
        not used (the producer adapter writes several SEND frames per write itself)."""
        if method not in ("Produce", "Consume"):
            raise errors.NotSupported(f"stream {method} is not carried by the binary protocol", method=method)
        if not reconnecting:  # a first opening fails at once when there is no broker, as over gRPC
            self.ensure_ready()
        elif self.closed.is_set():
            raise errors.AlreadyClosed("the client is closed")
        try:
            if method == "Produce":
                from connector.client.binary.producing import ProduceAdapter
                return ProduceAdapter(self, first_request, on_response, on_end, name)
            from connector.client.binary.consuming import ConsumeAdapter
            return ConsumeAdapter(self, first_request, on_response, on_end, name)
        except ImportError as exc:  # an adapter not written yet (issue 23 is being built)
            raise errors.NotSupported(f"the binary transport cannot carry {method} streams yet ({exc}): use "
                                      "transport='grpc'", method=method) from None

    def close(self) -> None:
        self.closed.set()
        with self._lock:
            connections, self._pool, self._topics = list(self._pool.values()), {}, {}
        for conn in connections:
            conn.close()


CALLS: dict[str, Callable[[BinaryTransport, Any, float], Any]] = {
    "GetPartitionedTopicMetadata": BinaryTransport._partitioned_metadata,   # PARTITIONED_METADATA
    "ListTopics": BinaryTransport._list_topics,                            # GET_TOPICS_OF_NAMESPACE (mode ALL)
    "GetSchema": BinaryTransport._get_schema,                              # GET_SCHEMA
    "GetOrCreateSchema": BinaryTransport._get_or_create_schema,            # GET_OR_CREATE_SCHEMA
    "GetLastMessageId": BinaryTransport._last_message_id,                  # reader + GET_LAST_MESSAGE_ID
    "CreateTopic": BinaryTransport._create_topic,                          # a consumer attaching creates it
    "CreateSubscription": BinaryTransport._create_subscription,            # durable SUBSCRIBE + CLOSE_CONSUMER
    "LookupTopic": BinaryTransport._lookup_topic,                          # LOOKUP
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
            start = positions.position(MessageId.of(mark.ledgerId, mark.entryId, partition,
                                                    _signed(mark.batch_index) if mark.HasField("batch_index") else -1)) + 1
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
