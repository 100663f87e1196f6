"""Scripted brokers for tests of what the client does with answers no honest broker gives: an absurd
partition count, slow lookups, entries whose ids or batch sizes are beyond what the client numbers.

:class:`HostileBroker` speaks just enough of Pulsar's binary protocol for our client's binary transport:
``CONNECT``, ``PING``, ``PARTITIONED_METADATA`` (answering :attr:`~HostileBroker.partitions`), ``LOOKUP``
(itself, after :attr:`~HostileBroker.lookup_delay_s`, on a timer: slow answers do not hold up the others),
``PRODUCER``/``CLOSE_PRODUCER``, ``SUBSCRIBE``/``CLOSE_CONSUMER`` (it keeps the producers and consumers open),
and, on a consumer's first ``FLOW``, the ``MESSAGE`` s of :attr:`~HostileBroker.messages`; it records every
``ACK``. Many connections, each read on its own thread (unlike the one-connection ``FakeBroker`` of
``tests/unit/test_binary_connection.py``, which this follows). ``GET_TOPICS_OF_NAMESPACE`` answers
:attr:`~HostileBroker.topics`.

:class:`HostileGrpcBroker` is the same for the gRPC transport: pulsarlike's service answering
``GetPartitionedTopicMetadata`` with its ``partitions``, ``ListTopics`` with its ``topics``, and opening each
``Produce`` and ``Consume`` stream after ``open_delay_s``; every other call is UNIMPLEMENTED.
"""
from __future__ import annotations

import socket
import threading
import time
from concurrent import futures
from dataclasses import dataclass, field

import grpc

from broker_core.protocol import broker_pb2, broker_pb2_grpc
from broker_core.protocol import pulsar_api_pb2 as api
from broker_core.protocol import pulsar_commands_pb2 as cmd
from broker_core.protocol.codec.entries import encode_entry
from broker_core.protocol.frames import FrameReader, encode

from connector.client.transport.binary.wire import payload_frame

T = cmd.BaseCommand


@dataclass
class Scripted:
    """One MESSAGE to deliver: the entry's real ids and its bytes (:func:`batch` or :func:`single`)."""

    ledger_id: int
    entry_id: int
    data: bytes


def single(payload: bytes, sequence_id: int = 0) -> bytes:
    return encode_entry(api.MessageMetadata(producer_name="hostile", sequence_id=sequence_id, publish_time=1),
                        payload)


def batch(payloads: list[bytes], sequence_id: int = 0) -> bytes:
    """A batch entry of ``payloads`` (each framed ``u32 size | SingleMessageMetadata | bytes``)."""
    parts = []
    for data in payloads:
        meta = api.SingleMessageMetadata(payload_size=len(data)).SerializeToString()
        parts.append(len(meta).to_bytes(4, "big") + meta + data)
    metadata = api.MessageMetadata(producer_name="hostile", sequence_id=sequence_id, publish_time=1,
                                   num_messages_in_batch=len(payloads))
    return encode_entry(metadata, b"".join(parts))


@dataclass
class Acked:
    """One message id of an ``ACK`` the broker got."""

    ack_type: int
    ledger_id: int
    entry_id: int
    ack_set: list[int] = field(default_factory=list)


class HostileBroker:
    """See the module docstring. ``address`` is ``127.0.0.1:<port>``; :meth:`close` ends it."""

    def __init__(self, partitions: int = 0, lookup_delay_s: float = 0.0,
                 messages: list[Scripted] | None = None, topics: list[str] | None = None) -> None:
        self.partitions = partitions
        self.lookup_delay_s = lookup_delay_s
        self.messages = list(messages or [])
        self.topics = list(topics or [])
        """What ``GET_TOPICS_OF_NAMESPACE`` answers (a pattern subscription's topics)."""
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.address = f"127.0.0.1:{self.listener.getsockname()[1]}"
        self.service_url = f"pulsar://{self.address}"
        self._lock = threading.Lock()
        self.counts: dict[str, int] = {}
        """Commands received, by type name."""
        self.producers: set[tuple[int, int]] = set()
        """(connection number, producer id) of the producers open."""
        self.consumers: set[tuple[int, int]] = set()
        self.acks: list[Acked] = []
        self.lookups_pending = 0
        """LOOKUPs received and not answered yet (:attr:`lookup_delay_s`)."""
        self._socks: list[socket.socket] = []
        self._timers: list[threading.Timer] = []
        self._closed = False
        threading.Thread(target=self._accept, daemon=True, name="hostile-broker").start()

    # --- serving ----------------------------------------------------------------------------------------
    def _accept(self) -> None:
        number = 0
        while True:
            try:
                sock, _ = self.listener.accept()
            except OSError:
                return
            number += 1
            with self._lock:
                self._socks.append(sock)
            threading.Thread(target=self._serve, args=(sock, number, threading.Lock()), daemon=True).start()

    def _serve(self, sock: socket.socket, number: int, write: threading.Lock) -> None:
        reader = FrameReader(1 << 24)
        try:
            while True:
                data = sock.recv(1 << 16)
                if not data:
                    return
                for command, _ in reader.feed(data):
                    self._answer(sock, number, write, command)
        except OSError:
            return

    def _send(self, sock: socket.socket, write: threading.Lock, command: cmd.BaseCommand,
              payload: bytes | None = None) -> None:
        parts = [encode(command)] if payload is None else payload_frame(command, payload)
        try:
            with write:
                sock.sendall(b"".join(parts))
        except OSError:
            pass

    def _answer(self, sock: socket.socket, number: int, write: threading.Lock, command: cmd.BaseCommand) -> None:
        kind = command.type
        with self._lock:
            name = T.Type.Name(kind)
            self.counts[name] = self.counts.get(name, 0) + 1
        send = lambda answer, payload=None: self._send(sock, write, answer, payload)  # noqa: E731
        if kind == T.CONNECT:
            send(T(type=T.CONNECTED, connected=cmd.CommandConnected(
                server_version="hostile-broker", protocol_version=20, max_message_size=5 << 20)))
        elif kind == T.PING:
            send(T(type=T.PONG, pong=cmd.CommandPong()))
        elif kind == T.PARTITIONED_METADATA:
            send(T(type=T.PARTITIONED_METADATA_RESPONSE,
                   partitionMetadataResponse=cmd.CommandPartitionedTopicMetadataResponse(
                       request_id=command.partitionMetadata.request_id, partitions=self.partitions)))
        elif kind == T.GET_TOPICS_OF_NAMESPACE:
            send(T(type=T.GET_TOPICS_OF_NAMESPACE_RESPONSE,
                   getTopicsOfNamespaceResponse=cmd.CommandGetTopicsOfNamespaceResponse(
                       request_id=command.getTopicsOfNamespace.request_id, topics=self.topics)))
        elif kind == T.LOOKUP:
            answer = T(type=T.LOOKUP_RESPONSE, lookupTopicResponse=cmd.CommandLookupTopicResponse(
                request_id=command.lookupTopic.request_id, brokerServiceUrl=self.service_url,
                response=cmd.CommandLookupTopicResponse.Connect, authoritative=True))
            if self.lookup_delay_s > 0:
                with self._lock:
                    self.lookups_pending += 1

                def answer_late(answer: cmd.BaseCommand = answer) -> None:
                    send(answer)
                    with self._lock:
                        self.lookups_pending -= 1
                timer = threading.Timer(self.lookup_delay_s, answer_late)
                timer.daemon = True
                with self._lock:
                    self._timers.append(timer)
                timer.start()
            else:
                send(answer)
        elif kind == T.PRODUCER:
            producer = command.producer
            with self._lock:
                self.producers.add((number, producer.producer_id))
            send(T(type=T.PRODUCER_SUCCESS, producer_success=cmd.CommandProducerSuccess(
                request_id=producer.request_id, producer_name=producer.producer_name or f"hostile-{number}",
                last_sequence_id=-1)))
        elif kind == T.CLOSE_PRODUCER:
            with self._lock:
                self.producers.discard((number, command.close_producer.producer_id))
            send(T(type=T.SUCCESS, success=cmd.CommandSuccess(request_id=command.close_producer.request_id)))
        elif kind == T.SUBSCRIBE:
            with self._lock:
                self.consumers.add((number, command.subscribe.consumer_id))
            send(T(type=T.SUCCESS, success=cmd.CommandSuccess(request_id=command.subscribe.request_id)))
        elif kind == T.CLOSE_CONSUMER:
            with self._lock:
                self.consumers.discard((number, command.close_consumer.consumer_id))
            send(T(type=T.SUCCESS, success=cmd.CommandSuccess(request_id=command.close_consumer.request_id)))
        elif kind == T.FLOW:
            with self._lock:
                first = self.counts["FLOW"] == 1
                messages = list(self.messages) if first else []
            for scripted in messages:
                send(T(type=T.MESSAGE, message=cmd.CommandMessage(
                    consumer_id=command.flow.consumer_id,
                    message_id=api.MessageIdData(ledgerId=scripted.ledger_id, entryId=scripted.entry_id))),
                    scripted.data)
        elif kind == T.ACK:
            with self._lock:
                for mid in command.ack.message_id:
                    self.acks.append(Acked(command.ack.ack_type, mid.ledgerId, mid.entryId, list(mid.ack_set)))

    # --- what it saw ------------------------------------------------------------------------------------
    def count(self, kind: str) -> int:
        with self._lock:
            return self.counts.get(kind, 0)

    def open_producers(self) -> int:
        with self._lock:
            return len(self.producers)

    def open_consumers(self) -> int:
        with self._lock:
            return len(self.consumers)

    def settled(self) -> bool:
        """Every lookup answered, every topic looked up got its producer or consumer, and none is open: what
        a client opened was closed, also what it was still opening when it gave up."""
        with self._lock:
            counts = self.counts
            return (self.lookups_pending == 0 and not self.producers and not self.consumers
                    and counts.get("LOOKUP", 0) == counts.get("PRODUCER", 0) + counts.get("SUBSCRIBE", 0))

    def acked(self) -> list[tuple[int, int]]:
        with self._lock:
            return [(a.ledger_id, a.entry_id) for a in self.acks]

    def close(self) -> None:
        with self._lock:
            socks, self._socks = self._socks, []
            timers, self._timers = self._timers, []
        for timer in timers:
            timer.cancel()
        self.listener.close()
        for sock in socks:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()


class HostileGrpcBroker(broker_pb2_grpc.PulsarLikeServicer):
    """See the module docstring; ``open_streams()`` counts the producers and consumers open."""

    def __init__(self, partitions: int = 0, open_delay_s: float = 0.0, topics: list[str] | None = None) -> None:
        self.partitions = partitions
        self.open_delay_s = open_delay_s
        self.topics = list(topics or [])
        self._lock = threading.Lock()
        self._open = 0
        self._handling = 0
        self.opened = 0
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=256))
        broker_pb2_grpc.add_PulsarLikeServicer_to_server(self, self.server)
        port = self.server.add_insecure_port("127.0.0.1:0")
        self.service_url = f"pulsar://127.0.0.1:{port}"
        self.server.start()

    def GetPartitionedTopicMetadata(self, request, context):  # noqa: N802 -- gRPC's names
        return broker_pb2.PartitionedTopicMetadata(partitions=self.partitions)

    def ListTopics(self, request, context):  # noqa: N802
        return broker_pb2.TopicList(topics=self.topics)

    def Produce(self, request_iterator, context):  # noqa: N802
        with self._lock:
            self._handling += 1
        first = next(request_iterator)
        yield from self._opened(request_iterator, context, broker_pb2.ProduceResponse(opened=broker_pb2.ProducerOpened(
            producer_name=first.open.producer_name or "hostile", last_sequence_id=-1, max_message_size=5 << 20,
            topic=first.open.topic)))

    def Consume(self, request_iterator, context):  # noqa: N802
        with self._lock:
            self._handling += 1
        first = next(request_iterator).subscribe
        yield from self._opened(request_iterator, context, broker_pb2.ConsumeResponse(subscribed=broker_pb2.Subscribed(
            topic=first.topic, consumer_name=first.consumer_name or "hostile", partition_index=first.partition_index)))

    def _opened(self, request_iterator, context, answer):
        try:
            if self.open_delay_s and context.is_active():
                time.sleep(self.open_delay_s)
            with self._lock:
                self._open += 1
                self.opened += 1
            try:
                yield answer
                for request in request_iterator:  # until the client closes or cancels the stream
                    if request.WhichOneof("request") == "close":
                        return
            finally:
                with self._lock:
                    self._open -= 1
        finally:
            with self._lock:
                self._handling -= 1

    def open_streams(self) -> int:
        with self._lock:
            return self._open

    def settled(self) -> bool:
        """No stream open nor being opened: what a client opened was closed, also what it was still opening
        when it gave up."""
        with self._lock:
            return self._open == 0 and self._handling == 0

    def close(self) -> None:
        self.server.stop(0)
