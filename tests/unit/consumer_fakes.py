"""Fakes for consumer unit tests: a transport whose consumer streams subscribe when started and record what
the consumer sends (the client's events, :mod:`connector.client.transport.events`), a timer that runs its calls by hand, a clock to move, a lookup without a broker, and a
factory for a real Consumer over them (one partition); helpers deliver entries and read what was sent."""
from __future__ import annotations

import threading
from typing import Any

from broker_core.protocol import codec, pulsar_api_pb2
from connector.client.consumer import Consumer
from connector.client.enums import ConsumerType
from connector.client.transport.events import (Ack, AckCumulative, Closed, ConsumerSpec, Delivery, Entry, Flow,
                                               LastMessage, Redeliver, Seek, Subscribed, Unsubscribe)
from connector.client.consumer.partition import ConsumerSettings, PartitionConsumer, PartitionOpener
from connector.client.policies import RedeliveryOptions
from connector.client.consumer.positions import ReadPositions
from connector.client.transport import DENSE

TOPIC = "persistent://public/default/t"


REQUESTS = {"flow": Flow, "ack": (Ack, AckCumulative), "seek": Seek, "redeliver": Redeliver,
            "unsubscribe": Unsubscribe}
"""What ``Harness.sent(kind)`` picks."""


class FakeStream:
    """Subscribes when started (or ends with the connection's ``refuse`` error) and records requests."""

    def __init__(self, connection: "FakeConnection", spec: ConsumerSpec, on_event, reconnecting) -> None:
        self.sent: list = []
        self.spec = spec
        self.on_event = on_event
        self.reconnecting = reconnecting
        self.closed = False
        self._connection = connection
        self.service_epoch = connection.service_epoch
        """The service it was opened on, as a ``SwitchingTransport`` tags its ``Subscribed``."""

    def start(self) -> None:
        if self._connection.silent:
            return
        refuse = self._connection.refuse
        if refuse is not None:  # the broker's error ends the stream
            self.on_event(Closed(refuse))
            return
        self.on_event(Subscribed(self.spec.topic, self.spec.consumer_name or "c", service_epoch=self.service_epoch))

    def on_end(self, error) -> None:
        """The stream ends (a lost one: ``ConnectError``)."""
        self.on_event(Closed(error))

    def send(self, request) -> None:
        self.sent.append(request)

    def close(self, wait_s: float = 0) -> None:
        self.closed = True


class FakeConnection:
    operation_timeout_s = 5.0
    connection_timeout_s = 5.0
    positions = DENSE

    def __init__(self) -> None:
        self.service_epoch = 0
        """Bumped by a test: the client switched to another cluster (``SwitchingTransport``)."""
        self.closed = threading.Event()
        self.streams: list[FakeStream] = []
        self.refuse: Any = None
        """An error the next openings answer with (None: they subscribe)."""
        self.silent = False
        """The next openings get no answer at all (a channel holding them)."""

    def consume(self, spec, on_event, name="", reconnecting=False) -> FakeStream:
        stream = FakeStream(self, spec, on_event, reconnecting)
        self.streams.append(stream)
        return stream


class FakeTimer:
    def __init__(self) -> None:
        self.calls: list = []

    def call_later(self, delay, fn, *args) -> None:
        self.calls.append((delay, fn, args))

    def run(self, name: str) -> None:
        """Run (and forget) the pending calls of the function called ``name``."""
        due = [c for c in self.calls if c[1].__name__ == name]
        self.calls = [c for c in self.calls if c[1].__name__ != name]
        for _, fn, args in due:
            fn(*args)

    def names(self) -> list[str]:
        return [fn.__name__ for _, fn, _ in self.calls]


class FakeClock:
    def __init__(self, now: float = 0.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


class FakeLookup:
    operation_timeout_s = 5.0

    def expand(self, topics: list[str], deadline=None) -> list[tuple[str, int]]:
        return [(topic, -1) for topic in topics]

    def last_message(self, topic: str, *, read_compacted: bool = False, deadline=None) -> LastMessage:
        return LastMessage()


class FakeProducer:
    def __init__(self, topic: str, sent: list) -> None:
        self.topic, self._sent = topic, sent

    def send(self, content, **options) -> None:
        self._sent.append((self.topic, content, options))

    def close(self) -> None:
        pass


class Harness:
    """A Consumer on one partition over fakes, with what the tests look at."""

    def __init__(self, consumer_type: ConsumerType = ConsumerType.Shared, queue_size: int = 100,
                 redelivery: RedeliveryOptions | None = None, non_durable: bool = False,
                 settings: dict[str, Any] | None = None, **options: Any) -> None:
        self.connection = FakeConnection()
        self.timer = FakeTimer()
        self.clock = FakeClock()
        self.produced: list = []
        self.positions = ReadPositions() if non_durable else None
        template = ConsumerSpec(subscription="sub", sub_type=consumer_type, consumer_name="c",
                                durable=not non_durable)
        opener = PartitionOpener(self.connection, self.timer, FakeLookup(), template,  # type: ignore[arg-type]
                                 ConsumerSettings(queue_size, **(settings or {})), self.positions)
        self.consumer = Consumer(
            TOPIC, "sub", consumer_type, opener, [TOPIC], FakeLookup(), self.timer,  # type: ignore[arg-type]
            redelivery or RedeliveryOptions(negative_ack_redelivery_delay_ms=100), lambda consumer: None,
            create_producer=lambda topic, **kw: FakeProducer(topic, self.produced), positions=self.positions,
            clock=self.clock, **options)

    @property
    def sub(self) -> PartitionConsumer:
        return self.consumer._partitions.all[0]

    @property
    def stream(self) -> FakeStream:
        return self.connection.streams[-1]

    def deliver(self, *entries: Entry) -> None:
        self.stream.on_event(Delivery(list(entries)))

    def respond(self, event) -> None:
        self.stream.on_event(event)

    def sent(self, kind: str, stream: FakeStream | None = None) -> list:
        """The requests of ``kind`` (``flow``, ``ack``, ``seek``, ``redeliver``, ``unsubscribe``) sent."""
        return [r for r in (stream or self.stream).sent if isinstance(r, REQUESTS[kind])]

    def flows(self) -> list[int]:
        return [f.permits for f in self.sent("flow")]

    def redelivered(self) -> list[list[tuple[int, int]]]:
        return [list(req.ranges) for req in self.sent("redeliver")]

    def acked(self) -> list[int]:
        """Offsets acknowledged individually (grouped acks flushed first)."""
        self.sub.stream.flush_acks()
        return sorted(o for ack in self.sent("ack") if isinstance(ack, Ack) for start, end in ack.ranges
                      for o in range(start, end))

    def drain(self) -> list:
        out = []
        while self.consumer.buffered():
            try:
                out.append(self.consumer.receive(0))
            except Exception:
                break
        return out


def batch(entry_id: int, payloads: list, redelivery_count: int = 0, ack_set=()) -> Entry:
    meta = pulsar_api_pb2.MessageMetadata(producer_name="p", sequence_id=0, publish_time=1,
                                          num_messages_in_batch=len(payloads))
    data = codec.broker_entry_prefix(1, entry_id + len(payloads) - 1) + \
        codec.encode_entry(meta, codec.encode_batch(payloads))
    return Entry(data, 0, entry_id, len(payloads), redelivery_count, tuple(ack_set))


def single(entry_id: int, payload: bytes, redelivery_count: int = 0, **fields) -> Entry:
    fields.setdefault("producer_name", "p")
    fields.setdefault("sequence_id", 0)
    fields.setdefault("publish_time", 1)
    meta = pulsar_api_pb2.MessageMetadata(**fields)
    data = codec.broker_entry_prefix(1, entry_id) + codec.encode_entry(meta, payload)
    return Entry(data, 0, entry_id, 1, redelivery_count)
