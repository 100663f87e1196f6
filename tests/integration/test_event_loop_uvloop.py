"""A broker on uvloop (``eventLoop=uvloop``) serves as one on asyncio's loop: a broker process with the official
client, and an in-process ``Broker`` with ours."""
from __future__ import annotations

import pytest

pulsar = pytest.importorskip("pulsar")
uvloop = pytest.importorskip("uvloop")


def test_a_broker_process_on_uvloop_serves_the_official_client_and_stops_cleanly(broker_process):
    proc = broker_process("--set", "eventLoop=uvloop")
    client = pulsar.Client(proc.service_url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        consumer = client.subscribe("uvloop-official", "s", initial_position=pulsar.InitialPosition.Earliest)
        producer = client.create_producer("uvloop-official", batching_enabled=True)
        for i in range(100):
            producer.send_async(f"m-{i}".encode(), None)
        producer.flush()
        got = [consumer.receive(10_000) for _ in range(100)]
        assert [m.data() for m in got] == [f"m-{i}".encode() for i in range(100)]
        consumer.acknowledge_cumulative(got[-1])
    finally:
        client.close()
    assert proc.terminate() == 0


def test_an_in_process_broker_runs_its_loop_on_uvloop(tmp_path):
    from broker_core import Broker
    from connector import Client

    with Broker(data_dir=tmp_path / "data", port=0, eventLoop="uvloop") as broker:
        assert isinstance(broker._loop, uvloop.Loop)
        client = Client(broker.service_url)
        try:
            consumer = client.subscribe("uvloop-ours", "s")
            client.create_producer("uvloop-ours").send(b"hello")
            assert consumer.receive(timeout_millis=10_000).data() == b"hello"
        finally:
            client.close()
