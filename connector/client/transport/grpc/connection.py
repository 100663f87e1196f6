"""The gRPC transport (:class:`~connector.client.transport.Transport`): the channel to one broker: readiness,
unary calls, bidirectional streams. It translates ``broker_pb2`` to the client's events and plain values: the
unary calls here, the producer and consumer streams in :mod:`connector.client.transport.grpc.streams`.

Streams are fed from a queue by a request iterator (gRPC pulls it on its own thread); a daemon thread
per stream reads the responses. The channel itself reconnects after a broker restart (gRPC's own backoff,
set to start at 100 ms as Pulsar's clients do); what a lost stream means for the producer or consumer on it
is theirs to handle (:mod:`connector.client.reconnect`).

Security (:class:`~connector.client.security.Security`, transport-neutral; re-exported here for callers that
still import it from this module): a ``pulsar+ssl://`` URL is served over TLS (:mod:`connector.client.transport.grpc.tls`); a
token (:mod:`connector.client.security.authentication`) is sent as every call's and stream's ``authorization:
Bearer`` metadata, asked from its source each time. A stream the broker ends with ``AuthenticationError``
(its token expired) is reported as a lost connection -- reconnected -- only when the token source now gives
another token; otherwise the refusal is final.
"""
from __future__ import annotations

import logging
import queue
import threading
import time
from typing import Any, Callable, Iterator

import grpc

from broker_core import errors
from broker_core.protocol import broker_pb2 as pb
from broker_core.protocol import broker_pb2_grpc
from broker_core.protocol.status import CODE_KEY, error_from_rpc

from connector.client.transport.events import (ConsumerEvent, ConsumerSpec, LastMessage, ProducerEvent, ProducerSpec,
                                     TopicSchema)
from connector.client.transport.grpc.streams import GrpcConsumer, GrpcProducer
from connector.client.reconnect import INITIAL_BACKOFF_S, MAX_BACKOFF_S, retry_until
from connector.client.security import Security, is_tls_url, parse_service_url  # noqa: F401  (re-exported)
from connector.client.transport.grpc.tls import secure_channel
from connector.client.transport import DENSE

log = logging.getLogger(__name__)


class Connection:
    """One channel and stub; ``ready()`` is checked on first use."""

    def __init__(self, service_url: str, operation_timeout_s: float, connection_timeout_s: float,
                 security: Security | None = None) -> None:
        self.target = parse_service_url(service_url)
        self.operation_timeout_s = operation_timeout_s
        self.connection_timeout_s = connection_timeout_s
        self.security = security or Security.for_url(service_url)
        # No client-side caps: the broker's decide. Producers pack requests to the max_message_size the
        # broker announces, and a delivery may be as large as the broker's dispatcherMaxDeliveryBytes.
        self._channel_options = [
            ("grpc.max_send_message_length", -1),
            ("grpc.max_receive_message_length", -1),
            # One connection per Client, as Pulsar's clients have: the broker's per-connection limits
            # then apply to each Client, not to every Client of the process together.
            ("grpc.use_local_subchannel_pool", 1),
            # After a broker restart the channel connects again with Pulsar's backoff, not gRPC's 1 s start.
            ("grpc.initial_reconnect_backoff_ms", int(INITIAL_BACKOFF_S * 1000)),
            ("grpc.min_reconnect_backoff_ms", int(INITIAL_BACKOFF_S * 1000)),
            ("grpc.max_reconnect_backoff_ms", int(MAX_BACKOFF_S * 1000)),
        ]
        self._channel: grpc.Channel | None = None
        self._stub: broker_pb2_grpc.PulsarLikeStub | None = None
        self._ready = False
        self._lock = threading.Lock()
        self.closed = threading.Event()
        """Set by :meth:`close`: waits between retries end at once."""
        self.positions = DENSE
        if self.security.tls is None or (self.security.tls.validate_hostname and not self.security.tls.allow_insecure):
            self._open_channel()  # no network needed: gRPC connects on first use

    def _open_channel(self) -> grpc.Channel:
        with self._lock:
            if self._channel is None:
                tls = self.security.tls
                if tls is None:
                    self._channel = grpc.insecure_channel(self.target, options=self._channel_options)
                else:
                    self._channel = secure_channel(self.target, tls, self._channel_options,
                                                   self.connection_timeout_s)
                self._stub = broker_pb2_grpc.PulsarLikeStub(self._channel)
            return self._channel

    @property
    def channel(self) -> grpc.Channel:
        """The channel (a TLS one that checks another name than the URL's reads the broker's certificate
        first, so it is made on first use)."""
        return self._channel or self._open_channel()

    @property
    def stub(self) -> broker_pb2_grpc.PulsarLikeStub:
        if self._stub is None:
            self._open_channel()
        assert self._stub is not None
        return self._stub

    def ensure_ready(self) -> None:
        """Wait (``connection_timeout_s``) for the first connection; ``ConnectError`` if there is none."""
        if self.closed.is_set():
            raise errors.AlreadyClosed("the client is closed")
        if self._ready:
            return
        channel = self.channel
        with self._lock:
            if self._ready:
                return
            try:
                grpc.channel_ready_future(channel).result(timeout=self.connection_timeout_s)
            except grpc.FutureTimeoutError:
                raise errors.ConnectError(  # the call fails with it (reconnect.gives_up)
                    f"cannot connect to the broker at {self.target} within "
                    f"{self.connection_timeout_s:g}s; is it running?", target=self.target,
                    connection_timeout_s=self.connection_timeout_s) from None
            self._ready = True

    def unary(self, method: str, request: Any, timeout_s: float | None = None, retry: bool = False) -> Any:
        """Call ``method`` with a deadline (``timeout_s``, else the operation timeout); failures become typed
        errors. ``retry``: an idempotent call is tried again while the broker is unreachable or not ready,
        with backoff, until the deadline."""
        timeout_s = timeout_s or self.operation_timeout_s
        if not retry:
            self.ensure_ready()
            return self._call(method, request, timeout_s)
        deadline = time.monotonic() + timeout_s

        def attempt() -> Any:
            self.ensure_ready()
            return self._call(method, request, max(deadline - time.monotonic(), 0.001))
        return retry_until(deadline, attempt, self.closed)

    def _call(self, method: str, request: Any, timeout_s: float) -> Any:
        try:
            return getattr(self.stub, method)(request, timeout=timeout_s, metadata=self.security.metadata())
        except grpc.RpcError as exc:
            raise error_from_rpc(exc) from None

    # --- the client core's unary calls (the Transport protocol): broker_pb2 in, plain values out ------------
    def partitions(self, topic: str, timeout_s: float | None = None, retry: bool = False) -> int:
        return self.unary("GetPartitionedTopicMetadata", pb.TopicRequest(topic=topic), timeout_s, retry).partitions

    def list_topics(self, namespace: str, timeout_s: float | None = None, retry: bool = False) -> list[str]:
        return list(self.unary("ListTopics", pb.ListTopicsRequest(namespace=namespace), timeout_s, retry).topics)

    def last_message(self, topic: str, read_compacted: bool = False, timeout_s: float | None = None,
                     retry: bool = False) -> LastMessage:
        reply = self.unary("GetLastMessageId", pb.TopicRequest(topic=topic, read_compacted=read_compacted),
                           timeout_s, retry)
        if reply.last_offset < 0:  # no message: no ids (the reply's are zeros)
            return LastMessage(start_offset=reply.start_offset)
        return LastMessage(reply.ledger_id, reply.entry_id, reply.batch_index, reply.last_offset, reply.start_offset)

    def schema(self, topic: str, version: int = -1, timeout_s: float | None = None,
               retry: bool = False) -> TopicSchema:
        return _schema(self.unary("GetSchema", pb.SchemaRequest(topic=topic, version=version), timeout_s, retry))

    def register_schema(self, topic: str, schema: TopicSchema, check_only: bool = False,
                        timeout_s: float | None = None, retry: bool = False) -> int:
        request = pb.SchemaRequest(topic=topic, type=schema.type, data=schema.data, name=schema.name,
                                   check_only=check_only)
        request.properties.update(schema.properties)
        return self.unary("GetOrCreateSchema", request, timeout_s, retry).version

    def create_topic(self, topic: str, timeout_s: float | None = None, retry: bool = False) -> None:
        self.unary("CreateTopic", pb.TopicRequest(topic=topic), timeout_s, retry)

    def create_subscription(self, topic: str, subscription: str, timeout_s: float | None = None,
                            retry: bool = False) -> None:
        self.unary("CreateSubscription", pb.SubscriptionRequest(
            topic=topic, subscription=subscription, position=pb.Position(latest=True)), timeout_s, retry)

    # --- the client core's streams (:mod:`connector.client.transport.grpc.streams` translates them) --------------------
    def consume(self, spec: ConsumerSpec, on_event: Callable[[ConsumerEvent], None], name: str = "consumer",
                reconnecting: bool = False) -> GrpcConsumer:
        """A consumer's stream, not read yet: call its ``start()`` once it is stored where the handler looks for
        it. A first opening waits for the broker (``ConnectError`` after ``connection_timeout_s``); a
        ``reconnecting`` one does not block: gRPC holds it until the channel is connected again, and its
        ``close()`` abandons it."""
        self._check_streamable(reconnecting)
        return GrpcConsumer(self, spec, on_event, name, reconnecting)

    def produce(self, spec: ProducerSpec, on_event: Callable[[ProducerEvent], None], name: str = "producer",
                reconnecting: bool = False) -> GrpcProducer:
        """A producer's stream, not read yet (as :meth:`consume`)."""
        self._check_streamable(reconnecting)
        return GrpcProducer(self, spec, on_event, name, reconnecting)

    def _check_streamable(self, reconnecting: bool) -> None:
        if self.closed.is_set():
            raise errors.AlreadyClosed("the client is closed")
        if not reconnecting:
            self.ensure_ready()

    def close(self) -> None:
        self.closed.set()
        with self._lock:
            channel = self._channel
        if channel is not None:
            channel.close()


def health_status(service_url: str, service: str, timeout_s: float, security: Security) -> str:
    """What the broker's standard gRPC health service answers for ``service``: ``SERVING``, ``NOT_SERVING``,
    or ``SERVICE_UNKNOWN`` for a service it does not know; ``ConnectError`` when it gives no answer within
    ``timeout_s`` (the gRPC status and its details in the message)."""
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    connection = Connection(service_url, timeout_s, timeout_s, security)
    with connection.channel as channel:
        try:
            response = health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(service=service), timeout=timeout_s, wait_for_ready=True)
        except grpc.RpcError as exc:
            if exc.code() == grpc.StatusCode.NOT_FOUND:
                return "SERVICE_UNKNOWN"
            raise errors.ConnectError(f"{exc.code().name}: no answer from {connection.target} within "
                                      f"{timeout_s:g}s ({exc.details()})", target=connection.target) from None
    return health_pb2.HealthCheckResponse.ServingStatus.Name(response.status)


def _schema(reply: pb.SchemaReply) -> TopicSchema:
    return TopicSchema(reply.type, reply.data, reply.name, reply.version, dict(reply.properties))


_END = object()


def stream_error(exc: grpc.RpcError) -> errors.PulsarLikeError:
    """The typed error of a failed stream: the broker's own (it names its code), else a lost connection."""
    error = error_from_rpc(exc)
    metadata = dict(exc.trailing_metadata() or ()) if hasattr(exc, "trailing_metadata") else {}
    if CODE_KEY in metadata or isinstance(error, (errors.ConnectError, errors.MessageTooBig)):
        return error
    # No broker code: a transport failure (cancelled by the broker's shutdown, a reset, an internal error).
    return errors.ConnectError(f"the stream to the broker was lost: {error.message}")


class BidiStream:
    """A bidirectional stream: ``send(request)``, responses to ``on_response`` on a reader thread,
    ``on_end(error_or_None)`` once when the stream ends (``None`` after :meth:`close`). An end the client did
    not ask for is a ``ConnectError`` unless the broker named its error."""

    def __init__(self, connection: Connection, method: str, first_request: Any,
                 on_response: Callable[[Any], None], on_end: Callable[[errors.PulsarLikeError | None],
                                                                      None],
                 batch_requests: Callable[[list[Any]], Any] | None = None, name: str = "stream",
                 wait_for_ready: bool = False, start: bool = True) -> None:
        self._outbox: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._outbox.put(first_request)
        self._on_response = on_response
        self._on_end = on_end
        self._batch = batch_requests
        self._closing = False
        self._security = connection.security
        self._token = self._security.authorization()
        metadata = (("authorization", self._token),) if self._token else None
        self._call = getattr(connection.stub, method)(self._requests(), wait_for_ready=wait_for_ready,
                                                      metadata=metadata)
        self._thread = threading.Thread(target=self._read, name=f"pulsarlike-{name}", daemon=True)
        if start:
            self._thread.start()

    def start(self) -> None:
        """Start reading responses (a stream made with ``start=False``)."""
        self._thread.start()

    def send(self, request: Any) -> None:
        self._outbox.put(request)

    def _requests(self) -> Iterator[Any]:
        get, get_nowait = self._outbox.get, self._outbox.get_nowait
        while True:
            item = get()
            if item is _END:
                return
            if self._batch is None:
                yield item
                continue
            # Pack everything queued right now into one request (e.g. all ready entries in one SendBatch).
            items = [item]
            end = False
            while True:
                try:
                    nxt = get_nowait()
                except queue.Empty:
                    break
                if nxt is _END:
                    end = True
                    break
                items.append(nxt)
            yield from self._batch(items)
            if end:
                return

    def _read(self) -> None:
        error: errors.PulsarLikeError | None = None
        try:
            for response in self._call:
                self._on_response(response)
        except grpc.RpcError as exc:
            if not self._closing:
                error = self._renewable(stream_error(exc))
        except Exception as exc:  # a bug in a handler: end this stream, loudly
            log.exception("stream handler failed")
            error = errors.UnknownError(f"client stream handler failed: {exc!r}")
            self._call.cancel()
        else:
            if not self._closing:
                error = errors.ConnectError("the broker ended the stream")
        self._on_end(error)

    def _renewable(self, error: errors.PulsarLikeError) -> errors.PulsarLikeError:
        """An ``AuthenticationError`` becomes a lost connection (reconnected) when the token source now gives
        another token than the one this stream opened with; else it stays final."""
        if not isinstance(error, errors.AuthenticationError) or self._token is None:
            return error
        try:
            renewed = self._security.authorization() != self._token
        except errors.PulsarLikeError:
            renewed = False
        if not renewed:
            return error
        log.info("event=token_renewed cause=%r", error.message)
        return errors.ConnectError(f"the broker ended the stream ({error.message}); reconnecting with the new token")

    def half_close(self) -> None:
        """No more requests: ends the request iterator (the broker then ends the stream)."""
        self._outbox.put(_END)

    def close(self, wait_s: float = 2.0) -> None:
        """Half-close, give the broker ``wait_s`` to end the stream, then cancel it."""
        self._closing = True
        self.half_close()
        reading = self._thread.ident is not None and threading.current_thread() is not self._thread
        if reading:
            self._thread.join(timeout=wait_s)
        self._call.cancel()
        if reading:
            self._thread.join(timeout=wait_s)

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()
