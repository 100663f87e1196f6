"""Producer features end to end: compression, key-based batching, delayed messages, chunking, send
semantics (timeouts, queue limits, metadata, sequence ids), through a real broker."""
from __future__ import annotations

import contextlib
import json
import os
import signal
import threading
import time
from datetime import timedelta

import pytest

from broker_core import Broker
from connector import (
    BatchingType, Client, CompressionType, InitialPosition, MessageTooBig, ProducerAccessMode,
    ProducerFenced, ProducerQueueIsFull, Result, Timeout)
from connector.client.producer.chunking import build_entries, message_metadata
from tests.integration.test_consumer_chunking import produce_raw


def _subscribe(client, topic, name="sub", **kwargs):
    kwargs.setdefault("initial_position", InitialPosition.Earliest)
    return client.subscribe(topic, name, **kwargs)


def _drain(consumer, timeout_ms=500):
    out = []
    while True:
        try:
            out.append(consumer.receive(timeout_ms))
        except Timeout:
            return out


def _json_payload(i: int) -> bytes:
    return json.dumps({"id": i, "user": f"user-{i % 13}", "active": i % 2 == 0,
                       "tags": ["alpha", "beta", "gamma"], "note": "x" * 40}).encode()


# --- compression --------------------------------------------------------------------------------------
def test_producers_with_every_codec_share_a_topic_and_the_consumer_needs_no_setting(client, topic):
    codecs = list(CompressionType)
    producers = [client.create_producer(topic, producer_name=f"p-{c.name}", compression_type=c,
                                        batching_max_publish_delay_ms=1000) for c in codecs]
    expected: dict[str, list[bytes]] = {f"p-{c.name}": [] for c in codecs}
    for round_ in range(3):
        for codec, producer in zip(codecs, producers):
            for i in range(10):  # one batch per producer per round: the topic's entries alternate codecs
                payload = _json_payload(round_ * 1000 + int(codec) * 10 + i)
                producer.send_async(payload, None)
                expected[f"p-{codec.name}"].append(payload)
            producer.flush()
            solo = b"unbatched %d from %s" % (round_, codec.name.encode()) * 20
            producer.send(solo, partition_key="solo")  # a compressed single-message entry
            expected[f"p-{codec.name}"].append(solo)
    consumer = _subscribe(client, topic)
    got: dict[str, list[bytes]] = {name: [] for name in expected}
    for msg in _drain(consumer):
        got[msg.producer_name()].append(msg.data())
    assert got == expected


def test_a_compressed_topic_stores_fewer_bytes(client, admin, topic):
    plain, packed = topic + "-plain", topic + "-lz4"
    for name, codec in ((plain, CompressionType.NONE), (packed, CompressionType.LZ4)):
        producer = client.create_producer(name, compression_type=codec, batching_enabled=True,
                                          batching_max_publish_delay_ms=1000)
        for i in range(200):
            producer.send_async(_json_payload(i), None)
        producer.flush()
    assert admin.topic_stats(packed)["storageSize"] < admin.topic_stats(plain)["storageSize"] / 2


# --- key-based batching and delayed messages ------------------------------------------------------------
def test_key_based_batches_hold_one_key_each_and_keep_per_key_order(client, topic):
    producer = client.create_producer(topic, batching_enabled=True, batching_type=BatchingType.KeyBased,
                                      batching_max_messages=30, batching_max_publish_delay_ms=1000)
    keys = ["red", "green", "blue", None]
    for i in range(60):
        producer.send_async(b"%d" % i, None, partition_key=keys[i % 4])
    producer.flush()
    got = _drain(_subscribe(client, topic))
    assert sorted(int(m.data()) for m in got) == list(range(60))
    by_entry: dict[int, set[str]] = {}
    for m in got:
        by_entry.setdefault(m.message_id().entry_id(), set()).add(m.partition_key())
    assert all(len(entry_keys) == 1 for entry_keys in by_entry.values())
    assert len(by_entry) == 8  # two flushes of 30 messages, four key batches each
    for key in keys:
        mine = [int(m.data()) for m in got if m.partition_key() == (key or "")]
        assert mine == sorted(mine) and len(mine) == 15
    ids = [m.sequence_id() for m in got]
    assert ids == sorted(ids) == list(range(60))  # entries in order, ids rising across entries


def test_delayed_messages_are_individual_entries_even_with_key_based_batching(client, topic):
    producer = client.create_producer(topic, batching_enabled=True, batching_type=BatchingType.KeyBased,
                                      batching_max_publish_delay_ms=1000)
    ids = {}
    for i in range(3):
        for j in range(3):
            producer.send_async(b"now-%d-%d" % (i, j), lambda r, mid, i=i, j=j: ids.update(
                {(i, j): mid}), partition_key="k")
        producer.send_async(b"later-%d" % i, lambda r, mid, i=i: ids.update({i: mid}),
                            partition_key="k", deliver_after=timedelta(milliseconds=300))
    producer.flush()
    assert len(ids) == 12
    assert [ids[i].batch_index() for i in range(3)] == [-1, -1, -1]  # unbatched, each its own entry
    for i in range(3):  # the batch before each delayed message went out first, as one entry
        assert len({ids[(i, j)].entry_id() for j in range(3)}) == 1
        assert [ids[(i, j)].batch_index() for j in range(3)] == [0, 1, 2]
        assert ids[i].offset() == ids[(i, 2)].offset() + 1
    consumer = _subscribe(client, topic)  # Exclusive: delayed messages are delivered at once
    got = {m.data(): m for m in _drain(consumer)}
    assert all(got[b"later-%d" % i].message_id() == ids[i] for i in range(3))


# --- chunking -------------------------------------------------------------------------------------------
SMALL_MAX = 64 * 1024


@pytest.fixture(scope="module")
def small_broker(tmp_path_factory):
    """A broker with maxMessageSize=64 KiB, so chunked messages stay small and quick."""
    with Broker(data_dir=tmp_path_factory.mktemp("small-broker"), port=0,
                maxMessageSize=SMALL_MAX) as running:
        yield running


@pytest.fixture
def small_client(small_broker):
    c = Client(small_broker.service_url)
    yield c
    c.close()


def test_a_20_mib_message_round_trips_in_chunks(client, topic):
    consumer = _subscribe(client, topic)
    producer = client.create_producer(topic, chunking_enabled=True, batching_enabled=False)
    payload = os.urandom(20 * 1024 * 1024)
    msg_id = producer.send(payload, properties={"name": "big"}, partition_key="k")
    producer.send(b"after")
    msg = consumer.receive(30_000)
    assert msg.data() == payload and msg.properties() == {"name": "big"} and msg.partition_key() == "k"
    assert msg.message_id() == msg_id and msg_id.batch_index() == -1
    assert msg_id.entry_id() == 4  # 20 MiB in chunks of just under the default 5 MiB: offsets 0..4
    consumer.acknowledge(msg)
    assert consumer.receive(5000).data() == b"after"


def test_chunked_messages_keep_their_order_with_small_ones_and_compress(small_client, topic):
    consumer = _subscribe(small_client, topic)
    producer = small_client.create_producer(topic, chunking_enabled=True, batching_enabled=False,
                                            compression_type=CompressionType.ZSTD)
    sent = [os.urandom(200_000), b"small", _json_payload(1) * 4000, os.urandom(SMALL_MAX + 1)]
    ids = []
    for payload in sent:
        producer.send_async(payload, lambda r, mid: ids.append((r, mid)))
    producer.flush()
    assert [r for r, _ in ids] == [Result.Ok] * 4
    got = [consumer.receive(10_000) for _ in sent]
    assert [m.data() for m in got] == sent
    assert [m.message_id() for m in got] == [mid for _, mid in ids]


def test_interwoven_chunks_of_two_producers_are_reassembled_per_message(small_broker, small_client, topic):
    """The seed's example: M1-C1, M2-C1, M1-C2, M2-C2, ... in the log; each message comes out whole. The
    chunk entries are the ones a chunking producer builds, stored interleaved through a raw Produce stream."""
    consumer = _subscribe(small_client, topic)
    payloads = [os.urandom(3 * SMALL_MAX), os.urandom(3 * SMALL_MAX)]
    built = [build_entries(message_metadata(f"p{i + 1}", 0, int(time.time() * 1000), 0, len(payload), None,
                                            None, None, 0, None), payload, SMALL_MAX)
             for i, payload in enumerate(payloads)]
    assert len(built[0]) == len(built[1]) == 4
    offsets = produce_raw(small_broker, topic, [entry for pair in zip(*built) for entry in pair])
    got = {m.producer_name(): m for m in (consumer.receive(10_000) for _ in range(2))}
    assert got["p1"].data() == payloads[0] and got["p2"].data() == payloads[1]
    # each message's id is its last chunk's: neighbours, as the chunks are interwoven
    assert [got["p1"].message_id().entry_id(), got["p2"].message_id().entry_id()] == offsets[-2:]


def test_without_chunking_an_oversized_message_fails_at_send(small_client, topic):
    producer = small_client.create_producer(topic)
    with pytest.raises(MessageTooBig):
        producer.send(b"x" * (SMALL_MAX + 1))
    assert producer.send(b"fits").entry_id() == 0  # nothing of the refused message reached the topic


# --- send semantics ------------------------------------------------------------------------------------
@contextlib.contextmanager
def _paused(proc):
    """The broker process stopped (SIGSTOP): requests queue up unanswered until SIGCONT."""
    os.kill(proc.proc.pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(proc.proc.pid, signal.SIGCONT)


class _Results:
    """send_async callbacks, waited on as real events."""

    def __init__(self) -> None:
        self.results: list = []
        self._changed = threading.Condition()

    def __call__(self, result, msg_id) -> None:
        with self._changed:
            self.results.append(result)
            self._changed.notify_all()

    def wait_for(self, count: int, timeout_s: float = 10.0) -> list:
        with self._changed:
            assert self._changed.wait_for(lambda: len(self.results) >= count, timeout_s), self.results
            return list(self.results)


def test_a_send_not_acknowledged_in_time_fails_with_timeout(broker_process, topic):
    proc = broker_process()
    with Client(proc.service_url) as client:
        producer = client.create_producer(topic, send_timeout_millis=500, batching_enabled=False)
        producer.send(b"before")
        results = _Results()
        with _paused(proc):
            producer.send_async(b"async", results)
            started = time.monotonic()
            with pytest.raises(Timeout, match="send_timeout_millis=500"):
                producer.send(b"sync")
            assert 0.4 < time.monotonic() - started < 3
            assert results.wait_for(1) == [Result.Timeout]
        producer.send(b"after")  # the producer goes on once the broker answers again
        assert producer.last_sequence_id() == 3


def test_a_full_queue_fails_the_send_at_once_without_block_if_queue_full(broker_process, topic):
    proc = broker_process()
    with Client(proc.service_url) as client:
        producer = client.create_producer(topic, max_pending_messages=3, block_if_queue_full=False,
                                          batching_enabled=False)
        producer.send(b"warm-up")
        results = _Results()
        with _paused(proc):
            for i in range(3):
                producer.send_async(b"%d" % i, results)
            producer.send_async(b"refused", results)
            assert results.wait_for(1) == [Result.ProducerQueueIsFull]  # at once, while paused
            with pytest.raises(ProducerQueueIsFull, match="max_pending_messages=3"):
                producer.send(b"refused too")
        producer.flush()
        assert results.wait_for(4) == [Result.ProducerQueueIsFull] + [Result.Ok] * 3


def test_a_full_queue_blocks_the_send_with_block_if_queue_full(broker_process, topic):
    proc = broker_process()
    with Client(proc.service_url) as client:
        producer = client.create_producer(topic, max_pending_messages=3, block_if_queue_full=True,
                                          batching_enabled=False)
        producer.send(b"warm-up")
        results = _Results()
        with _paused(proc):
            for i in range(3):
                producer.send_async(b"%d" % i, results)
            blocked = threading.Thread(target=producer.send_async, args=(b"waits", results))
            blocked.start()
            blocked.join(0.5)
            assert blocked.is_alive() and results.results == []  # blocked while the broker is stopped
        blocked.join(10)
        assert not blocked.is_alive()
        producer.flush()
        assert results.wait_for(4) == [Result.Ok] * 4


def test_message_and_producer_metadata_reach_consumers_and_stats(client, admin, topic):
    consumer = _subscribe(client, topic)
    producer = client.create_producer(topic, properties={"app": "billing", "version": "7"})
    producer.send_async(b"a", None, ordering_key=b"order-1", event_timestamp=1_700_000_000_000,
                        properties={"trace": "t1"})
    producer.send(b"b", ordering_key="order-2", partition_key="pk")
    a, b = consumer.receive(5000), consumer.receive(5000)
    assert (a.ordering_key(), a.event_timestamp(), a.properties()) == \
        ("order-1", 1_700_000_000_000, {"trace": "t1"})
    assert (b.ordering_key(), b.partition_key(), b.event_timestamp(), b.properties()) == \
        ("order-2", "pk", 0, {})
    (publisher,) = admin.topic_stats(topic)["publishers"]
    assert publisher["metadata"] == {"app": "billing", "version": "7"}
    assert publisher["producerName"] == producer.producer_name()


def test_default_producer_names_are_unique(client, topic):
    names = {client.create_producer(topic).producer_name() for _ in range(3)}
    names.add(client.create_producer(topic + "-other").producer_name())
    assert len(names) == 4 and all(names)


def test_flush_returns_once_every_pending_message_is_acknowledged(client, topic):
    producer = client.create_producer(topic, batching_max_messages=50,
                                      batching_max_publish_delay_ms=10_000)
    results = _Results()
    for i in range(520):
        producer.send_async(b"%d" % i, results)
    producer.flush()
    assert results.results == [Result.Ok] * 520  # complete when flush returns: nothing to wait for
    assert producer.last_sequence_id() == 519


def test_explicit_sequence_ids_reach_the_entries(client, topic):
    consumer = _subscribe(client, topic)
    producer = client.create_producer(topic, initial_sequence_id=1000,
                                      batching_max_publish_delay_ms=10_000)
    producer.send(b"auto")
    producer.send(b"explicit", sequence_id=5000)
    for seq in (6000, 6001, 7000):
        producer.send_async(b"batched %d" % seq, None, sequence_id=seq)
    producer.flush()
    with pytest.raises(ValueError, match="sequence_id=-1 is not valid"):
        producer.send(b"bad", sequence_id=-1)
    got = [consumer.receive(5000) for _ in range(5)]
    assert [m.sequence_id() for m in got] == [1001, 5000, 6000, 6001, 7000]
    assert producer.last_sequence_id() == 7000


def test_wait_for_exclusive_waits_longer_than_the_operation_timeout(broker, admin, topic):
    with Client(broker.service_url, operation_timeout_seconds=0.5) as client:
        leader = client.create_producer(topic, access_mode=ProducerAccessMode.Exclusive)
        created: list = []
        waiter = threading.Thread(target=lambda: created.append(client.create_producer(
            topic, access_mode=ProducerAccessMode.WaitForExclusive, batching_enabled=False)))
        waiter.start()
        waiter.join(1.5)  # three operation timeouts
        assert waiter.is_alive() and created == []
        leader.close()
        waiter.join(10)
        assert created and created[0].send(b"leader now").entry_id() == 0


def test_a_fenced_producer_refuses_every_later_send(client, topic):
    old = client.create_producer(topic, access_mode=ProducerAccessMode.Exclusive)
    client.create_producer(topic, access_mode=ProducerAccessMode.ExclusiveWithFencing)
    with pytest.raises(ProducerFenced):
        old.send(b"x")
    with pytest.raises(ProducerFenced):
        old.send_async(b"payload only", None)  # the fast path too
    with pytest.raises(ProducerFenced):
        old.send_async(b"keyed", None, partition_key="k")
