"""Ctrl-C during a blocking ``receive()``: pulsar-client raises ``pulsar.Interrupted``, and so does our client
(:mod:`connector.client.interrupts`) -- with a real SIGINT, sent to a child process by another of its threads
or from outside, while its main thread waits with or without a timeout; the consumer goes on working after.
The in-process broker on port 0 serves the child."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest

pytestmark = pytest.mark.transports

REPO = Path(__file__).resolve().parents[2]

CHILD = textwrap.dedent('''
    import signal, sys, threading, time
    import pulsarlike as pulsar

    url, transport, how, timeout, topic = sys.argv[1:6]
    client = pulsar.Client(url, transport=transport)
    consumer = client.subscribe(topic, "s")
    if how == "thread":
        threading.Timer(0.5, signal.raise_signal, (signal.SIGINT,)).start()
    print("waiting", flush=True)
    started = time.monotonic()
    try:
        consumer.receive(None if timeout == "none" else int(timeout))
        print("received")
    except pulsar.Interrupted as exc:
        print("interrupted", round(time.monotonic() - started, 2), isinstance(exc, pulsar.PulsarException))
    producer = client.create_producer(topic)
    producer.send(b"after")
    print("after", consumer.receive(5000).data().decode())
    client.close()
''')


def _run(url: str, transport: str, how: str, timeout: str) -> list[str]:
    topic = f"interrupted-{uuid.uuid4().hex[:10]}"
    child = subprocess.Popen([sys.executable, "-c", CHILD, url, transport, how, timeout, topic], cwd=REPO,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "waiting"
        if how == "kill":
            time.sleep(0.5)
            os.kill(child.pid, signal.SIGINT)
        out, err = child.communicate(timeout=30)
    finally:
        child.kill()
    assert child.returncode == 0, err
    return out.split()


@pytest.mark.parametrize("how", ["thread", "kill"])
def test_ctrl_c_in_a_blocking_receive_raises_interrupted(broker, transport, how):
    words = _run(broker.service_url, transport, how, "none")
    assert words[0] == "interrupted" and words[2] == "True"
    assert 0.4 <= float(words[1]) < 1.5
    assert words[3:] == ["after", "after"]


def test_ctrl_c_in_a_receive_with_a_timeout_raises_interrupted(broker, transport):
    words = _run(broker.service_url, transport, "thread", "20000")
    assert words[0] == "interrupted" and 0.4 <= float(words[1]) < 1.5
