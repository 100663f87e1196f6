"""Producer features end to end: compression, key-based batching, delayed messages, chunking, send
semantics (timeouts, queue limits, metadata, sequence ids), through a real broker."""
from __future__ import annotations

import json
import os
import time
from datetime import timedelta

import pytest

from broker_core import Broker
from connector import (
    BatchingType, Client, CompressionType, InitialPosition, MessageTooBig, Result, Timeout)


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
        producer = client.create_producer(name, compression_type=codec, batching_max_publish_delay_ms=1000)
        for i in range(200):
            producer.send_async(_json_payload(i), None)
        producer.flush()
    assert admin.topic_stats(packed)["storageSize"] < admin.topic_stats(plain)["storageSize"] / 2


# --- key-based batching and delayed messages ------------------------------------------------------------
def test_key_based_batches_hold_one_key_each_and_keep_per_key_order(client, topic):
    producer = client.create_producer(topic, batching_type=BatchingType.KeyBased,
                                      batching_max_messages=30, batching_max_publish_delay_ms=1000)
    keys = ["red", "green", "blue", None]
    for i in range(60):
        producer.send_async(b"%d" % i, None, partition_key=keys[i % 4])
    producer.flush()
    got = _drain(_subscribe(client, topic))
    assert sorted(int(m.data()) for m in got) == list(range(60))
    by_entry: dict[int, set[str]] = {}
    for m in got:
        by_entry.setdefault(m.message_id().entry_id, set()).add(m.partition_key())
    assert all(len(entry_keys) == 1 for entry_keys in by_entry.values())
    assert len(by_entry) == 8  # two flushes of 30 messages, four key batches each
    for key in keys:
        mine = [int(m.data()) for m in got if m.partition_key() == (key or "")]
        assert mine == sorted(mine) and len(mine) == 15
    ids = [m.sequence_id() for m in got]
    assert ids == sorted(ids) == list(range(60))  # entries in order, ids rising across entries


def test_delayed_messages_are_individual_entries_even_with_key_based_batching(client, topic):
    producer = client.create_producer(topic, batching_type=BatchingType.KeyBased,
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
    assert [ids[i].batch_index for i in range(3)] == [-1, -1, -1]  # unbatched, each its own entry
    for i in range(3):  # the batch before each delayed message went out first, as one entry
        assert len({ids[(i, j)].entry_id for j in range(3)}) == 1
        assert [ids[(i, j)].batch_index for j in range(3)] == [0, 1, 2]
        assert ids[i].offset == ids[(i, 2)].offset + 1
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


def _wait_receipts(part, pending_before, timeout_s=10.0):
    deadline = time.monotonic() + timeout_s
    while len(part._pending) >= pending_before:
        assert time.monotonic() < deadline, "no receipt from the broker"
        time.sleep(0.002)


def test_a_20_mib_message_round_trips_in_chunks(client, topic):
    consumer = _subscribe(client, topic)
    producer = client.create_producer(topic, chunking_enabled=True, batching_enabled=False)
    payload = os.urandom(20 * 1024 * 1024)
    msg_id = producer.send(payload, properties={"name": "big"}, partition_key="k")
    producer.send(b"after")
    msg = consumer.receive(30_000)
    assert msg.data() == payload and msg.properties() == {"name": "big"} and msg.partition_key() == "k"
    assert msg.message_id() == msg_id and msg_id.batch_index == -1
    assert msg_id.entry_id == 4  # 20 MiB in chunks of just under the default 5 MiB: offsets 0..4
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


def test_interwoven_chunks_of_two_producers_are_reassembled_per_message(small_client, topic):
    """The seed's example: M1-C1, M2-C1, M1-C2, M2-C2, ... in the log; each message comes out whole."""
    consumer = _subscribe(small_client, topic)
    producers = [small_client.create_producer(topic, producer_name=f"p{i}", chunking_enabled=True,
                                              batching_enabled=False) for i in (1, 2)]
    payloads = [os.urandom(3 * SMALL_MAX), os.urandom(3 * SMALL_MAX)]
    held: list[list] = [[], []]
    parts = [p._partitions[0] for p in producers]
    real_sends = [part._stream.send for part in parts]
    results: list = []
    for i, (part, producer) in enumerate(zip(parts, producers)):
        part._stream.send = held[i].append  # hold the chunks, to release them interleaved
        producer.send_async(payloads[i], lambda r, mid, i=i: results.append((i, r, mid)))
        part._stream.send = real_sends[i]
    assert len(held[0]) == len(held[1]) == 4
    for chunk in range(4):
        for i in (0, 1):
            pending = len(parts[i]._pending)
            real_sends[i](held[i][chunk])
            _wait_receipts(parts[i], pending)
    assert sorted((i, r) for i, r, _ in results) == [(0, Result.Ok), (1, Result.Ok)]
    ids = {i: mid for i, _, mid in results}
    assert ids[1].entry_id == ids[0].entry_id + 1  # the last chunks are neighbours: interwoven
    got = {m.producer_name(): m for m in (consumer.receive(10_000) for _ in range(2))}
    assert got["p1"].data() == payloads[0] and got["p2"].data() == payloads[1]
    assert got["p1"].message_id() == ids[0] and got["p2"].message_id() == ids[1]


def test_without_chunking_an_oversized_message_fails_at_send(small_client, topic):
    producer = small_client.create_producer(topic)
    with pytest.raises(MessageTooBig):
        producer.send(b"x" * (SMALL_MAX + 1))
    assert producer.send(b"fits").entry_id == 0  # nothing of the refused message reached the topic
