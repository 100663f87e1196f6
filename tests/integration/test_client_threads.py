"""No thread outlives a client: ``close()`` stops and joins what the client started (the timer, the partitions
updater, the connections' readers, listener threads), and a client dropped without ``close()`` stops them when
it is collected (:mod:`connector.client.unclosed`) -- pulsar-client's threads are C++ ones that Python does not
count, so a program counting ``threading.active_count()`` sees the same with ours. The broker is a separate
process (``broker_proc``), so that every thread counted here is the client's."""
from __future__ import annotations

import gc
import logging
import threading
import time
import uuid

import pytest

from tests.brokers import BrokerProcess

pytestmark = pytest.mark.transports


@pytest.fixture(scope="module")
def broker_proc(tmp_path_factory):
    proc = BrokerProcess(tmp_path_factory.mktemp("client-threads")).start()
    yield proc
    proc.stop()


def _threads() -> set[threading.Thread]:
    return set(threading.enumerate())


def _left(before: set[threading.Thread]) -> list[str]:
    """Threads started since ``before`` still alive (a thread stopping may take a moment to end: 2 s)."""
    deadline = time.monotonic() + 2
    while True:
        left = sorted(t.name for t in _threads() - before if t.is_alive())
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.02)


def _use(client) -> None:
    client.get_topic_partitions(f"persistent://public/default/threads-{uuid.uuid4().hex[:8]}")


def test_a_closed_client_leaves_no_thread(broker_proc, transport):
    from connector import Client, MessageId

    before = _threads()
    client = Client(broker_proc.service_url, transport=transport, logger=logging.getLogger("threads-test"))
    topic = f"threads-{uuid.uuid4().hex[:8]}"
    producer = client.create_producer(topic)
    got = threading.Event()
    client.subscribe(topic, "s", message_listener=lambda consumer, msg: got.set())
    reader = client.create_reader(topic, MessageId.earliest)
    producer.send(b"x")
    assert got.wait(10)
    assert reader.read_next(5000).data() == b"x"
    client.close()
    assert _left(before) == []


def test_a_client_dropped_without_close_leaves_no_thread(broker_proc, transport):
    from connector import Client

    before = _threads()
    _use(Client(broker_proc.service_url, transport=transport, operation_timeout_seconds=5))
    assert _left(before) == []  # collected when the last reference went, without gc


def test_a_dropped_client_with_an_open_producer_keeps_working_until_both_are_collected(broker_proc, transport):
    from connector import Client

    before = _threads()
    topic = f"threads-{uuid.uuid4().hex[:8]}"
    producer = Client(broker_proc.service_url, transport=transport).create_producer(topic)
    gc.collect()
    assert producer.send(b"still open") is not None
    producer.close()
    del producer
    gc.collect()
    assert _left(before) == []
