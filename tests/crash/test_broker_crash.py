"""Kill a broker process while a producer sends synchronously; after restart, every message whose send
returned is readable, in order, exactly once."""
from __future__ import annotations

import threading

import pytest

from connector import Client, MessageId

pytestmark = pytest.mark.crash

TOPIC = "persistent://public/default/crash-topic"


def _send_until_failure(service_url: str, sent: list[int], stop_after: int, started: threading.Event) -> None:
    client = Client(service_url, operation_timeout_seconds=10)
    try:
        producer = client.create_producer(TOPIC, producer_name="crash-producer", send_timeout_millis=5000,
                                          batching_enabled=False)
        for i in range(stop_after):
            producer.send(f"message-{i}".encode())
            sent.append(i)
            if i == 50:
                started.set()
    except Exception:  # the broker died under us: expected
        pass
    finally:
        started.set()
        try:
            client.close()
        except Exception:
            pass


def _read_all(service_url: str) -> list[int]:
    client = Client(service_url)
    try:
        reader = client.create_reader(TOPIC, MessageId.earliest)
        values = []
        while reader.has_message_available():
            values.append(int(reader.read_next(timeout_millis=5000).data().decode().split("-")[1]))
        return values
    finally:
        client.close()


def _assert_exact_prefix(values: list[int], acknowledged: list[int]) -> None:
    assert values == list(range(len(values))), "messages must be in order, exactly once, none invented"
    assert len(values) >= len(acknowledged), f"lost acknowledged messages: read {len(values)}, sent {len(acknowledged)}"
    # at most the one in-flight send may be stored without its receipt having reached the producer
    assert len(values) <= len(acknowledged) + 1


def test_sigkill_during_synchronous_sends_loses_no_acknowledged_message(broker_process, tmp_path):
    data_dir = tmp_path / "data"
    first = broker_process("--set", "journalSyncMode=always", data_dir=data_dir)
    sent: list[int] = []
    started = threading.Event()
    sender = threading.Thread(target=_send_until_failure, args=(first.service_url, sent, 100_000, started))
    sender.start()
    assert started.wait(60)
    first.kill()  # SIGKILL while the producer is sending
    sender.join(60)
    assert not sender.is_alive()
    acknowledged = list(sent)
    assert len(acknowledged) > 50

    second = broker_process("--set", "journalSyncMode=always", data_dir=data_dir)
    _assert_exact_prefix(_read_all(second.service_url), acknowledged)


@pytest.mark.parametrize("crash_at", [1, 2, 7, 20])
def test_broker_killed_halfway_through_its_nth_write_recovers_an_exact_prefix(broker_process, tmp_path, crash_at):
    data_dir = tmp_path / "data"
    first = broker_process("--set", "journalSyncMode=always", data_dir=data_dir,
                           env={"PULSARLIKE_CRASH_AT_WRITE": str(crash_at)})
    sent: list[int] = []
    _send_until_failure(first.service_url, sent, 40, threading.Event())
    assert first.proc.wait(30) == -9  # it killed itself mid-write
    assert len(sent) == crash_at - 1

    second = broker_process("--set", "journalSyncMode=always", data_dir=data_dir)
    values = _read_all(second.service_url)
    _assert_exact_prefix(values, sent)
    assert len(values) == crash_at - 1  # the torn write is gone
    # the next append works and lands right after the recovered prefix
    client = Client(second.service_url)
    try:
        producer = client.create_producer(TOPIC)
        msg_id = producer.send(b"after-recovery")
        assert msg_id.entry_id() == len(values)
    finally:
        client.close()
