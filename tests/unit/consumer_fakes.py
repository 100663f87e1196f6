"""Fakes for consumer unit tests: a connection whose Consume streams subscribe when started and record what
the consumer sends, a timer that runs its calls by hand, a clock to move, a lookup without a broker, and a
factory for a real Consumer over them (one partition); helpers deliver entries and read what was sent."""
from __future__ import annotations

import threading
from typing import Any

from broker_core.errors import ConnectError
from broker_core.protocol import broker_pb2, codec, pulsar_api_pb2
from broker_core.protocol.status import error_to_proto
from connector.client.consumer import Consumer
from connector.client.enums import ConsumerType
from connector.client.events import LastMessage
from connector.client.partition_consumer import ConsumerSettings, PartitionConsumer, PartitionOpener
from connector.client.policies import RedeliveryOptions
from connector.client.positions import ReadPositions
from connector.client.transport import DENSE

TOPIC = "persistent://public/default/t"


class FakeStream:
    """Subscribes when started (or fails with the connection's ``refuse`` error) and records requests."""

    def __init__(self, connection: "FakeConnection", first_request, on_response, on_end, reconnecting) -> None:
        self.sent: list[broker_pb2.ConsumeRequest] = []
        self.first_request = first_request
        self.on_response = on_response
        self.on_end = on_end
        self.reconnecting = reconnecting
        self.closed = False
        self._connection = connection

    def start(self) -> None:
        if self._connection.silent:
            return
        refuse = self._connection.refuse
        if refuse is not None:  # the broker's error, then the end of the stream
            self.on_response(broker_pb2.ConsumeResponse(error=error_to_proto(refuse)))
            self.on_end(ConnectError("the broker ended the stream"))
            return
        subscribe = self.first_request.subscribe
        self.on_response(broker_pb2.ConsumeResponse(subscribed=broker_pb2.Subscribed(
            topic=subscribe.topic, consumer_name=subscribe.consumer_name or "c")))

    def send(self, request) -> None:
        self.sent.append(request)

    def close(self, wait_s: float = 0) -> None:
        self.closed = True


class FakeConnection:
    operation_timeout_s = 5.0
    connection_timeout_s = 5.0
    positions = DENSE

    def __init__(self) -> None:
        self.closed = threading.Event()
        self.streams: list[FakeStream] = []
        self.refuse: Any = None
        """An error the next openings answer with (None: they subscribe)."""
        self.silent = False
        """The next openings get no answer at all (a channel holding them)."""

    def stream(self, method, first_request, on_response, on_end, batch_requests=None, name="",
               reconnecting=False) -> FakeStream:
        stream = FakeStream(self, first_request, on_response, on_end, reconnecting)
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
        template = broker_pb2.Subscribe(subscription="sub", sub_type=int(consumer_type), consumer_name="c",
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

    def deliver(self, *entries: broker_pb2.DeliveredEntry) -> None:
        self.stream.on_response(broker_pb2.ConsumeResponse(deliveries=broker_pb2.Deliveries(entries=list(entries))))

    def respond(self, response: broker_pb2.ConsumeResponse) -> None:
        self.stream.on_response(response)

    def sent(self, kind: str, stream: FakeStream | None = None) -> list:
        return [getattr(r, kind) for r in (stream or self.stream).sent if r.WhichOneof("request") == kind]

    def flows(self) -> list[int]:
        return [f.permits for f in self.sent("flow")]

    def redelivered(self) -> list[list[tuple[int, int]]]:
        return [[(r.start, r.end) for r in req.ranges] for req in self.sent("redeliver")]

    def acked(self) -> list[int]:
        """Offsets acknowledged individually (grouped acks flushed first)."""
        self.sub.stream.flush_acks()
        return sorted(o for ack in self.sent("ack") for r in ack.ranges for o in range(r.start, r.end))

    def drain(self) -> list:
        out = []
        while self.consumer.buffered():
            try:
                out.append(self.consumer.receive(0))
            except Exception:
                break
        return out


def batch(entry_id: int, payloads: list, redelivery_count: int = 0, ack_set=()) -> broker_pb2.DeliveredEntry:
    meta = pulsar_api_pb2.MessageMetadata(producer_name="p", sequence_id=0, publish_time=1,
                                          num_messages_in_batch=len(payloads))
    data = codec.broker_entry_prefix(1, entry_id + len(payloads) - 1) + \
        codec.encode_entry(meta, codec.encode_batch(payloads))
    return broker_pb2.DeliveredEntry(data=data, entry_id=entry_id, num_messages=len(payloads),
                                     redelivery_count=redelivery_count, ack_set=list(ack_set))


def single(entry_id: int, payload: bytes, redelivery_count: int = 0, **fields) -> broker_pb2.DeliveredEntry:
    fields.setdefault("producer_name", "p")
    fields.setdefault("sequence_id", 0)
    fields.setdefault("publish_time", 1)
    meta = pulsar_api_pb2.MessageMetadata(**fields)
    data = codec.broker_entry_prefix(1, entry_id) + codec.encode_entry(meta, payload)
    return broker_pb2.DeliveredEntry(data=data, entry_id=entry_id, num_messages=1,
                                     redelivery_count=redelivery_count)
