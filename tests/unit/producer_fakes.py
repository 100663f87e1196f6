"""Fakes for producer unit tests: a Produce stream that opens at once and records what is sent, a timer
that only records, a clock to move by hand, and a factory for (Producer, [PartitionProducer])."""
from __future__ import annotations

from typing import Any

from broker_core.protocol import broker_pb2
from connector.client import batching, partition_producer
from connector.client.enums import HashingScheme, PartitionsRoutingMode
from connector.client.partition_producer import PartitionProducer
from connector.client.producer_conf import ProducerConf
from connector.client.producer import Producer
from connector.client.routing import Router

TOPIC = "persistent://public/default/t"


class FakeStream:
    """Opens at once (``opened`` with the class's settings) and records what the producer sends."""

    max_message_size = 0  # 0: the producer keeps its default
    open_reply = True

    def __init__(self, connection, method, first_request, on_response, on_end, batch_requests=None,
                 name=""):
        self.sent: list = []
        self.alive = True
        self.first_request = first_request
        self.on_response = on_response
        if self.open_reply:
            on_response(broker_pb2.ProduceResponse(opened=broker_pb2.ProducerOpened(
                producer_name="prod", last_sequence_id=-1, max_message_size=self.max_message_size)))

    def send(self, request) -> None:
        self.sent.append(request)

    def close(self, wait_s: float = 0) -> None:
        self.alive = False


class FakeConnection:
    operation_timeout_s = 5.0


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
    """Stands in for the ``time`` module inside partition_producer."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now

    def time(self) -> float:
        return self.now


def conf(**overrides: Any) -> ProducerConf:
    values: dict[str, Any] = dict(
        producer_name=None, initial_sequence_id=None, send_timeout_ms=0, compression=0,
        max_pending_messages=0, block_if_queue_full=False, batching_enabled=True,
        batching_max_messages=10, batching_max_bytes=100_000, batching_max_publish_delay_ms=10,
        key_based_batching=False, properties={}, access_mode=0)
    values.update(overrides)
    return ProducerConf(**values)


def make_producer(monkeypatch, partitions: int = 0, max_message_size: int = 0,
                  routing: PartitionsRoutingMode = PartitionsRoutingMode.RoundRobinDistribution,
                  scheme: HashingScheme = HashingScheme.JavaStringHash, message_router=None,
                  start: int = 0, **overrides: Any) -> tuple[Producer, list[PartitionProducer]]:
    """A Producer over fake streams: ``partitions=0`` is a non-partitioned topic."""
    stream = type("Stream", (FakeStream,), {"max_message_size": max_message_size})
    monkeypatch.setattr(partition_producer, "BidiStream", stream)
    timer = FakeTimer()
    targets = [(f"{TOPIC}-partition-{i}", i) for i in range(partitions)] or [(TOPIC, -1)]
    parts = [PartitionProducer(FakeConnection(), timer, name, index, conf(**overrides))
             for name, index in targets]
    router = Router(max(partitions, 1), routing, scheme, message_router, start=start)
    return Producer(None, TOPIC, parts, router, 0, partitions > 0), parts


def sent_entries(part: PartitionProducer) -> list[broker_pb2.SendEntry]:
    """Every entry the producer has handed to its stream, as the SendBatch requests carry them."""
    out: list[broker_pb2.SendEntry] = []
    for request in batching.pack_requests(part._stream.sent):
        if request.WhichOneof("request") == "send":
            out.extend(request.send.entries)
    return out


def receipt(entry, ledger_id: int = 7, entry_id: int = 100) -> broker_pb2.ProduceResponse:
    return broker_pb2.ProduceResponse(receipts=broker_pb2.Receipts(receipts=[broker_pb2.SendReceipt(
        sequence_id=entry.sequence_id, highest_sequence_id=entry.highest_sequence_id,
        ledger_id=ledger_id, entry_id=entry_id)]))
