"""A full disk under the official client (issue 18 point 5): its sends fail within ``send_timeout_millis``,
without a reconnection storm or a log flood, the same producer works again once space is freed, and
nothing acknowledged before is lost. A real broker process keeps its data on a tiny tmpfs (root only)."""
from __future__ import annotations

import threading
import time

import pytest

pulsar = pytest.importorskip("pulsar")

from broker_core.protocol import pulsar_commands_pb2 as cmd  # noqa: E402
from tests.broker_watch import BrokerWatch  # noqa: E402
from tests.integration.test_storage_faults import fill, small_disk  # noqa: E402,F401  (the 4 MiB tmpfs fixture)
from tests.pulsar_wire import RawPulsar, entry, frame  # noqa: E402

TOPIC = "persistent://public/default/disk-full"
SEND_TIMEOUT_MS = 3000
QUIET = pulsar.ConsoleLogger(pulsar.LoggerLevel.Error)
T = cmd.BaseCommand


def send_within(producer, data: bytes, limit_s: float) -> tuple[object, float]:
    """``producer.send(data)`` on a thread: (its message id or the exception it raised, seconds taken);
    ``(None, limit_s)`` when it had not returned after ``limit_s`` (a hang)."""
    outcome: list = []

    def send() -> None:
        try:
            outcome.append(producer.send(data))
        except Exception as exc:  # what the test looks at
            outcome.append(exc)
    started = time.monotonic()
    sender = threading.Thread(target=send, daemon=True)
    sender.start()
    sender.join(limit_s)
    return (outcome[0] if outcome else None), time.monotonic() - started


@pytest.fixture
def watched_broker(small_disk, broker_process):  # noqa: F811
    proc = broker_process(data_dir=small_disk / "data")
    watch = BrokerWatch(proc, small_disk, rss_limit_mb=1024)
    yield watch
    watch.close()


def test_a_full_disk_times_out_official_sends_quietly_and_the_producer_works_once_space_is_freed(
        small_disk, watched_broker):  # noqa: F811
    client = pulsar.Client(watched_broker.proc.service_url, operation_timeout_seconds=10, logger=QUIET)
    try:
        producer = client.create_producer(TOPIC, batching_enabled=False, send_timeout_millis=SEND_TIMEOUT_MS)
        acknowledged = [f"before-{i}".encode() for i in range(20)]
        for data in acknowledged:
            producer.send(data)
        filler = small_disk / "filler"
        fill(filler)
        mark = watched_broker.log_mark()

        outcome, took = send_within(producer, b"x" * 200_000, limit_s=3 * SEND_TIMEOUT_MS / 1000)
        assert isinstance(outcome, pulsar.Timeout), f"send gave {outcome!r} after {took:.1f}s (None: blocked)"
        events = [line for line in watched_broker.log_lines(mark) if "event=" in line]
        assert len(events) <= 12, "\n".join(events[:40])
        assert any("event=topic_cannot_write" in line and "No space left" in line for line in events)

        filler.unlink()
        outcome, took = send_within(producer, b"after", limit_s=3 * SEND_TIMEOUT_MS / 1000)
        assert outcome is not None and not isinstance(outcome, Exception), f"send after freeing: {outcome!r}"

        reader = client.create_reader(TOPIC, pulsar.MessageId.earliest)
        got = [reader.read_next(5000).data() for _ in range(len(acknowledged) + 1)]
        assert got == [*acknowledged, b"after"]
        assert not reader.has_message_available()
    finally:
        client.close()


def test_on_the_wire_a_send_that_cannot_be_stored_closes_its_producer_which_is_ready_again_once_space_is_freed(
        small_disk, watched_broker):  # noqa: F811
    with RawPulsar(watched_broker.proc.address) as raw:
        raw.connect()
        opened = raw.producer(TOPIC, producer_id=1, request_id=1)
        name = opened.producer_success.producer_name
        assert raw.send_entry(entry(b"kept", producer_name=name), sequence_id=0).type == T.SEND_RECEIPT
        filler = small_disk / "filler"
        fill(filler)

        answer = raw.send_entry(entry(b"x" * 200_000, producer_name=name, sequence_id=1), sequence_id=1)
        assert answer.type == T.CLOSE_PRODUCER and answer.close_producer.producer_id == 1  # no SEND_ERROR
        raw.send(frame(T(type=T.SEND, send=cmd.CommandSend(producer_id=1, sequence_id=2)),
                       entry(b"late", producer_name=name, sequence_id=2)))  # on its way: dropped unanswered
        refused = raw.producer(TOPIC, producer_id=2, request_id=2)  # a new producer (epoch 0)
        assert refused.type == T.ERROR and refused.error.error == cmd.ServiceNotReady
        assert "cannot store messages now (No space left on device)" in refused.error.message
        held = raw.producer(TOPIC, producer_id=1, request_id=3, epoch=1, producer_name=name)  # reconnecting
        assert held.type == T.PRODUCER_SUCCESS and not held.producer_success.producer_ready

        filler.unlink()
        ready = raw.expect(T.PRODUCER_SUCCESS)  # within the probe interval (1 s)
        assert ready.producer_success.producer_ready and ready.producer_success.request_id == 3
        back = raw.send_entry(entry(b"back", producer_name=name, sequence_id=1), sequence_id=1)
        assert back.type == T.SEND_RECEIPT
