"""Fakes for producer unit tests: a transport whose producer streams open at once (``ProducerReady``) and
record what the producer sends (:class:`~connector.client.producer.batching.PendingEntry` items), a timer that only records, a clock to move by hand, and a factory for (Producer,
[PartitionProducer]); helpers reach each partition producer's fakes."""
from __future__ import annotations

import threading
import weakref
from typing import Any

from broker_core.protocol import broker_pb2
from connector.client.producer import batching
from connector.client.transport.grpc import streams as grpc_streams
from connector.client.producer import partition as partition_producer
from connector.client.producer import channel as produce_channel
from connector.client.enums import HashingScheme, PartitionsRoutingMode
from connector.client.transport.events import Closed, ProducerReady, Receipt
from connector.client.producer.partition import PartitionProducer
from connector.client.producer import Producer
from connector.client.producer.conf import ProducerConf
from connector.client.producer.routing import Router

TOPIC = "persistent://public/default/t"


class FakeStream:
    """Opens when started (``opened`` with its connection's settings) and records what is sent."""

    def __init__(self, connection: "FakeConnection", spec, on_event) -> None:
        self.sent: list = []
        self.alive = True
        self.spec = spec
        self.on_event = on_event
        self._connection = connection

    def start(self) -> None:
        if self._connection.open_reply:
            self.on_event(ProducerReady("prod", self._connection.last_sequence_id,
                                        self._connection.max_message_size))

    def on_end(self, error) -> None:
        """The stream ends (a lost one: ``ConnectError``)."""
        self.on_event(Closed(error))

    def send(self, request) -> None:
        self.sent.append(request)

    def close(self, wait_s: float = 0) -> None:
        self.alive = False


class FakeConnection:
    operation_timeout_s = 5.0
    connection_timeout_s = 5.0

    def __init__(self, max_message_size: int = 0, open_reply: bool = True, last_sequence_id: int = -1) -> None:
        self.max_message_size = max_message_size  # 0: the producer keeps its default
        self.open_reply = open_reply
        self.last_sequence_id = last_sequence_id
        self.closed = threading.Event()
        self.streams: list[FakeStream] = []

    def produce(self, spec, on_event, name="", reconnecting=False) -> FakeStream:
        stream = FakeStream(self, spec, on_event)
        self.streams.append(stream)
        return stream


class FakeTimer:
    def __init__(self) -> None:
        self.calls: list = []

    def call_later(self, delay_s, fn, *args) -> None:
        self.calls.append((delay_s, fn, args))

    def fire_all(self) -> None:
        calls, self.calls = self.calls, []
        for _, fn, args in calls:
            fn(*args)


class FakeClock:
    """Stands in for the ``time`` module inside the producer modules (see :func:`use_clock`)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now

    def time(self) -> float:
        return self.now


def use_clock(monkeypatch, clock: FakeClock | None = None) -> FakeClock:
    clock = clock or FakeClock()
    monkeypatch.setattr(partition_producer, "time", clock)
    monkeypatch.setattr(produce_channel, "time", clock)
    return clock


def conf(**overrides: Any) -> ProducerConf:
    values: dict[str, Any] = dict(
        producer_name=None, initial_sequence_id=None, send_timeout_ms=0, compression=0,
        max_pending_messages=0, block_if_queue_full=False, batching_enabled=True,
        batching_max_messages=10, batching_max_bytes=100_000, batching_max_publish_delay_ms=10,
        key_based_batching=False, properties={}, access_mode=0)
    values.update(overrides)
    return ProducerConf(**values)


_FAKES: "weakref.WeakKeyDictionary[PartitionProducer, tuple[FakeConnection, FakeTimer]]" = \
    weakref.WeakKeyDictionary()


def make_part(connection: FakeConnection | None = None, timer: FakeTimer | None = None, topic: str = TOPIC,
              partition: int = -1, **overrides: Any) -> PartitionProducer:
    connection = connection or FakeConnection()
    timer = timer or FakeTimer()
    part = PartitionProducer(connection, timer, topic, partition, conf(**overrides))  # type: ignore[arg-type]
    _FAKES[part] = (connection, timer)
    return part


def make_producer(monkeypatch, partitions: int = 0, max_message_size: int = 0,
                  routing: PartitionsRoutingMode = PartitionsRoutingMode.RoundRobinDistribution,
                  scheme: HashingScheme = HashingScheme.JavaStringHash, message_router=None,
                  start: int = 0, **overrides: Any) -> tuple[Producer, list[PartitionProducer]]:
    """A Producer over fake streams: ``partitions=0`` is a non-partitioned topic."""
    timer = FakeTimer()
    targets = [(f"{TOPIC}-partition-{i}", i) for i in range(partitions)] or [(TOPIC, -1)]
    parts = [make_part(FakeConnection(max_message_size), timer, name, index, **overrides)
             for name, index in targets]
    router = Router(max(partitions, 1), routing, scheme, message_router, start=start)
    return Producer(TOPIC, parts, router, 0), parts


def connection(part: PartitionProducer) -> FakeConnection:
    return _FAKES[part][0]


def stream(part: PartitionProducer) -> FakeStream:
    """The producer's current stream (the last one it opened)."""
    return connection(part).streams[-1]


def timer(part: PartitionProducer) -> FakeTimer:
    return _FAKES[part][1]


def respond(part: PartitionProducer, event) -> None:
    """The transport reports ``event`` (:mod:`connector.client.transport.events`) on the producer's stream."""
    stream(part).on_event(event)


def pending(part: PartitionProducer) -> list[batching.PendingEntry]:
    """Entries sent and waiting for their receipt."""
    return list(part._channel.pending)


def sent_entries(part: PartitionProducer) -> list[broker_pb2.SendEntry]:
    """Every entry the producer has handed to its stream, as gRPC's SendBatch requests carry them."""
    out: list[broker_pb2.SendEntry] = []
    for request in grpc_streams.pack_requests(stream(part).sent):
        if request.WhichOneof("request") == "send":
            out.extend(request.send.entries)
    return out


def entry(sequence_id: int, highest_sequence_id: int, num_messages: int, data: bytes) -> batching.PendingEntry:
    """A pending entry as the producer hands it to its stream."""
    return batching.PendingEntry(sequence_id, highest_sequence_id, num_messages, num_messages > 1, data, [])


def receipt(entry, ledger_id: int = 7, entry_id: int = 100) -> Receipt:
    return Receipt(entry.sequence_id, entry.highest_sequence_id, ledger_id, entry_id)
