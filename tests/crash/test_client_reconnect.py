"""Clients ride through broker restarts (issue 12): the broker process is stopped with SIGTERM or killed with
SIGKILL while producers, consumers, readers and a pattern consumer work, then started again on the same port,
twice. Nothing acknowledged is lost, deduplication leaves no duplicate, consumers get every acknowledged
message at least once, readers miss and repeat nothing, and every wait is bounded.

Each test keeps its clients working until the restarts are over and they made progress after the last one
(a SIGTERM lets the broker finish for a grace second first: work must outlast it)."""
from __future__ import annotations

import logging
import re
import signal
import threading
import time

import pytest

from connector import Client, ConsumerType, InitialPosition, MessageId, Result
from tests.waiting import wait_until

pytestmark = pytest.mark.crash

TOPIC = "persistent://public/default/restarts"
RESTARTS = 2
SETTINGS = ("--set", "journalSyncMode=always", "--set", "brokerDeduplicationEnabled=true")
"""A receipt means stored and synced; deduplication on (so a re-sent entry is never stored twice)."""


@pytest.fixture(params=[signal.SIGTERM, signal.SIGKILL], ids=["sigterm", "sigkill"])
def stop_signal(request):
    return request.param


@pytest.fixture
def reconnections(caplog):
    """How many times the clients logged ``event=reconnected``."""
    caplog.set_level(logging.INFO, logger="connector.client.reconnect")
    return lambda: sum("event=reconnected" in r.getMessage() for r in caplog.records)


def restart(broker, sig: int) -> None:
    """Stop the broker process with ``sig``, then start it again on its port."""
    broker.proc.send_signal(sig)
    broker.proc.wait(30)
    broker.restart()


def restart_along(broker, sig: int, progress, step: int, times: int = RESTARTS) -> None:
    """Restart the broker ``times`` times while ``progress()`` grows: ``step`` more before each restart, and
    ``step`` more after the last one (the clients came back)."""
    for _ in range(times + 1):
        target = progress() + step
        assert wait_until(lambda: progress() >= target, 90), f"stuck at {progress()} (waiting for {target})"
        if _ < times:
            restart(broker, sig)


def _value(msg) -> int:
    return int(msg.data().split(b"-")[1])


def _read_back(service_url: str, topic: str = TOPIC) -> list[int]:
    with Client(service_url) as client:
        reader = client.create_reader(topic, MessageId.earliest)
        values = []
        while reader.has_message_available():
            values.append(_value(reader.read_next(timeout_millis=10_000)))
        return values


class Worker(threading.Thread):
    """Runs ``step(i)`` for i = 0, 1, ... until stopped; an exception ends it and is kept."""

    def __init__(self, step) -> None:
        super().__init__(daemon=True)
        self._step = step
        self.stop = threading.Event()
        self.done = 0
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            while not self.stop.is_set():
                self._step(self.done)
                self.done += 1
        except BaseException as exc:  # noqa: BLE001 - the test reports it
            self.error = exc

    def finish(self, timeout_s: float = 60) -> None:
        self.stop.set()
        self.join(timeout_s)
        assert not self.is_alive() and self.error is None, self.error


# Over the binary transport too (its own reconnection path: a lost PulsarConnection, a new lookup), with the
# harder of the two stops only, to keep the suite's time.
ON_BOTH_TRANSPORTS = pytest.mark.parametrize("stop_signal, transport", [
    (signal.SIGTERM, "grpc"), (signal.SIGKILL, "grpc"), (signal.SIGKILL, "binary")],
    ids=["sigterm-grpc", "sigkill-grpc", "sigkill-binary"])


@ON_BOTH_TRANSPORTS
def test_sync_sends_lose_no_acknowledged_message_and_store_none_twice(broker_process, stop_signal, reconnections,
                                                                      transport):
    broker = broker_process(*SETTINGS, restartable=True)
    with Client(broker.service_url, transport=transport) as client:
        producer = client.create_producer(TOPIC, producer_name="sync", send_timeout_millis=60_000)
        sender = Worker(lambda i: producer.send(b"m-%d" % i))
        sender.start()
        restart_along(broker, stop_signal, lambda: sender.done, 100)
        sender.finish()
    assert reconnections() >= RESTARTS
    assert _read_back(broker.service_url) == list(range(sender.done))  # each acknowledged one, once, in order


def test_send_async_callbacks_all_complete_ok_and_nothing_is_stored_twice(broker_process, stop_signal,
                                                                          reconnections):
    broker = broker_process(*SETTINGS, restartable=True)
    results: dict[int, Result] = {}
    with Client(broker.service_url) as client:
        producer = client.create_producer(TOPIC, producer_name="async", batching_enabled=True,
                                          batching_max_messages=100, send_timeout_millis=60_000,
                                          max_pending_messages=2000, block_if_queue_full=True)
        sender = Worker(lambda i: producer.send_async(b"m-%d" % i,
                                                      lambda result, mid, i=i: results.__setitem__(i, result)))
        sender.start()
        restart_along(broker, stop_signal, lambda: len(results), 3000)
        sender.finish()
        producer.flush()
    assert reconnections() >= RESTARTS
    assert len(results) == sender.done and set(results.values()) == {Result.Ok}
    assert _read_back(broker.service_url) == list(range(sender.done))


@ON_BOTH_TRANSPORTS
def test_a_consumer_receiving_and_acking_gets_every_acknowledged_message(broker_process, stop_signal,
                                                                         reconnections, transport):
    broker = broker_process(*SETTINGS, restartable=True)
    received: set[int] = set()
    with Client(broker.service_url, transport=transport) as client:
        consumer = client.subscribe(TOPIC, "work", consumer_type=ConsumerType.Shared,
                                    initial_position=InitialPosition.Earliest)
        producer = client.create_producer(TOPIC, producer_name="feed", send_timeout_millis=60_000)

        def consume(_: int) -> None:
            try:
                msg = consumer.receive(timeout_millis=200)
            except Exception:  # noqa: BLE001 - a Timeout while the broker is away
                return
            received.add(_value(msg))
            consumer.acknowledge(msg)

        sender, receiver = Worker(lambda i: producer.send(b"m-%d" % i)), Worker(consume)
        sender.start()
        receiver.start()
        restart_along(broker, stop_signal, lambda: len(received), 150)
        sender.finish()
        acknowledged = set(range(sender.done))
        assert wait_until(lambda: received >= acknowledged, 60), sorted(acknowledged - received)[:10]
        receiver.finish()
    assert reconnections() >= 2 * RESTARTS  # the producer's and the consumer's


@ON_BOTH_TRANSPORTS
def test_a_reader_resumes_after_the_last_message_it_returned(broker_process, stop_signal, reconnections, transport):
    broker = broker_process(*SETTINGS, restartable=True)
    read: list[int] = []
    with Client(broker.service_url, transport=transport) as client:
        producer = client.create_producer(TOPIC, producer_name="feed", send_timeout_millis=60_000)
        reader = client.create_reader(TOPIC, MessageId.earliest, receiver_queue_size=50)
        sender = Worker(lambda i: producer.send(b"m-%d" % i))
        receiver = Worker(lambda i: read.append(_value(reader.read_next(timeout_millis=60_000))))
        sender.start()
        receiver.start()
        restart_along(broker, stop_signal, lambda: len(read), 150)
        sender.finish()
        assert wait_until(lambda: len(read) >= sender.done, 60)
        receiver.stop.set()
    assert reconnections() >= 2 * RESTARTS
    assert read[:sender.done] == list(range(sender.done))  # no gap, no repeat


def test_a_pattern_consumer_keeps_receiving_and_discovering(broker_process, stop_signal, reconnections):
    broker = broker_process(*SETTINGS, restartable=True)
    base = "persistent://public/default/pattern"
    received: set[bytes] = set()
    expected: set[bytes] = set()
    with Client(broker.service_url) as client:
        consumer = client.subscribe(re.compile(f"{base}-.*"), "watch", initial_position=InitialPosition.Earliest,
                                    pattern_auto_discovery_period=1, consumer_type=ConsumerType.Shared)

        def consume(_: int) -> None:
            try:
                msg = consumer.receive(timeout_millis=200)
            except Exception:  # noqa: BLE001
                return
            received.add(msg.data())
            consumer.acknowledge(msg)

        receiver = Worker(consume)
        receiver.start()
        for round_ in range(RESTARTS + 1):  # a new topic each round: discovered after each restart too
            producer = client.create_producer(f"{base}-{round_}", send_timeout_millis=60_000)
            for i in range(20):
                producer.send(b"%d-%d" % (round_, i))
                expected.add(b"%d-%d" % (round_, i))
            producer.close()
            assert wait_until(lambda: received >= expected, 60), sorted(expected - received)[:5]
            if round_ < RESTARTS:
                restart(broker, stop_signal)
        receiver.finish()
    assert received == expected and reconnections() >= RESTARTS


def test_closing_a_client_while_it_reconnects_returns_promptly(broker_process):
    broker = broker_process(*SETTINGS, restartable=True)
    client = Client(broker.service_url)
    producer = client.create_producer(TOPIC, send_timeout_millis=60_000)
    client.subscribe(TOPIC, "sub")
    producer.send(b"m-0")
    broker.kill()
    assert wait_until(lambda: not producer.is_connected(), 10)
    results = []
    producer.send_async(b"m-1", lambda result, mid: results.append(result))  # waits for the broker
    started = time.monotonic()
    client.close()
    assert time.monotonic() - started < 3
    assert results == [Result.AlreadyClosed]
