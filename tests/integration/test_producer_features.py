"""Producer features end to end: compression, key-based batching, delayed messages, chunking, send
semantics (timeouts, queue limits, metadata, sequence ids), through a real broker."""
from __future__ import annotations

import json
from datetime import timedelta

import pytest

from connector import BatchingType, CompressionType, InitialPosition, Timeout


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
