"""Issue 10, finding 9: two brokers cannot serve one data dir. The second refuses to start, naming the pid of
the broker that holds the data dir; the lock goes with the holder (stopped or killed)."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from broker_core import Broker
from broker_core.errors import DataDirLocked
from tests.brokers import LISTENING


def _second_broker_process(data_dir) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "broker_core.cli", "broker", "--data-dir", str(data_dir),
                           "--port", "0"], capture_output=True, text=True, timeout=60)


def _round_trip(service_url: str) -> bytes:
    from connector import Client, MessageId

    client = Client(service_url)
    try:
        client.create_producer("lock-check").send(b"still serving")
        reader = client.create_reader("lock-check", MessageId.earliest)
        return reader.read_next(timeout_millis=5000).data()
    finally:
        client.close()


def test_a_second_broker_process_on_the_same_data_dir_exits_non_zero_naming_the_pid(broker_process):
    first = broker_process()
    second = _second_broker_process(first.data_dir)
    assert second.returncode != 0
    assert LISTENING not in second.stdout
    assert "DataDirLocked" in second.stderr and f"pid {first.proc.pid}" in second.stderr
    assert _round_trip(first.service_url) == b"still serving"


def test_a_killed_broker_process_leaves_the_data_dir_free(broker_process, tmp_path):
    broker_process(data_dir=tmp_path / "data").kill()
    assert broker_process(data_dir=tmp_path / "data").address


def test_a_second_in_process_broker_on_the_same_data_dir_refuses_to_start(tmp_path):
    with Broker(data_dir=tmp_path, port=0) as first:
        with pytest.raises(DataDirLocked, match=f"pid {os.getpid()}"):
            Broker(data_dir=tmp_path, port=0).start()
        assert _round_trip(first.service_url) == b"still serving"


def test_a_stopped_broker_frees_the_data_dir(tmp_path):
    Broker(data_dir=tmp_path, port=0).start().stop()
    with Broker(data_dir=tmp_path, port=0) as again:
        assert again.port
