"""Producer features end to end: compression, key-based batching, delayed messages, chunking, send
semantics (timeouts, queue limits, metadata, sequence ids), through a real broker."""
from __future__ import annotations

import json

import pytest

from connector import CompressionType, InitialPosition, Timeout


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
