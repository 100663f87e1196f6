"""``send(None)``: a null value, Pulsar's ``null_value`` flag (``MessageMetadata`` unbatched,
``SingleMessageMetadata`` in a batch), received as pulsar-client receives it -- ``has_null_value()`` True,
``data() == b""``, key and properties kept -- distinct from an empty payload, and a tombstone for table views.
One in-process broker on port 0."""
from __future__ import annotations

import time
import uuid

import pytest

from broker_core import Broker
from broker_core.protocol import codec
from connector import BatchingType, Client, InitialPosition
from connector.client.producer.batching import NULL_VALUE, BatchContainer


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    with Broker(data_dir=tmp_path_factory.mktemp("null"), port=0, journalSyncMode="never") as broker:
        c = Client(broker.service_url)
        yield c
        c.close()


@pytest.mark.parametrize("batching", [
    {"batching_enabled": False},
    {"batching_enabled": True},
    {"batching_enabled": True, "batching_type": BatchingType.KeyBased},
], ids=["unbatched", "batched", "key-based"])
def test_a_null_value_is_received_with_its_flag_key_and_properties(client, batching):
    topic = f"null-{uuid.uuid4().hex[:8]}"
    consumer = client.subscribe(topic, "sub", initial_position=InitialPosition.Earliest)
    producer = client.create_producer(topic, **batching)
    producer.send_async(b"value", None, partition_key="k1")
    producer.send_async(None, None, partition_key="k2", properties={"action": "delete"})
    producer.send_async(b"", None, partition_key="k3")
    producer.flush()
    received = {m.partition_key(): m for m in (consumer.receive(10_000) for _ in range(3))}
    assert (received["k1"].data(), received["k1"].has_null_value()) == (b"value", False)
    assert (received["k2"].data(), received["k2"].has_null_value()) == (b"", True)
    assert received["k2"].properties() == {"action": "delete"}
    assert (received["k3"].data(), received["k3"].has_null_value()) == (b"", False)


def test_a_synchronous_null_send_bypasses_the_schema(client):
    from pulsarlike.schema import StringSchema

    topic = f"null-schema-{uuid.uuid4().hex[:8]}"
    consumer = client.subscribe(topic, "sub", schema=StringSchema())
    producer = client.create_producer(topic, schema=StringSchema())
    producer.send(None, partition_key="gone")
    assert consumer.receive(10_000).has_null_value()


def test_a_null_value_removes_its_key_from_a_table_view(client):
    topic = f"null-tv-{uuid.uuid4().hex[:8]}"
    producer = client.create_producer(topic)
    producer.send(b"hello", partition_key="key1")
    view = client.create_table_view(topic)
    try:
        assert view.get("key1") == b"hello"
        producer.send(None, partition_key="key1")
        for _ in range(100):  # the view follows the topic on its own thread
            if view.get("key1") is None:
                break
            time.sleep(0.05)
        assert view.get("key1") is None
    finally:
        view.close()


def test_the_batch_header_of_a_null_value_carries_the_flag():
    container = BatchContainer(10, 1 << 20)
    container.add(b"a", 0, None)
    container.add(NULL_VALUE, 1, None, partition_key="k")
    entry = container.build("p", 1)
    meta, payload = codec.decode_entry(entry.data)
    singles = codec.decode_batch(payload, meta.num_messages_in_batch)
    assert [(single.null_value, bytes(data)) for single, data in singles] == [(False, b"a"), (True, b"")]


def test_a_single_null_value_is_flagged_in_the_message_metadata():
    container = BatchContainer(10, 1 << 20)
    container.add(NULL_VALUE, 0, None)
    meta, payload = codec.decode_entry(container.build("p", 1).data)
    assert meta.null_value and bytes(payload) == b""
