"""Issue 22's "same program, two imports": a typical pulsar-client program -- a JsonSchema ``Record``, a
message listener, ``batch_receive``, negative acks, a dead letter policy, a reader -- written once as a
function of the ``pulsar`` module, run against one broker process with the official client (``import
pulsar``, Pulsar's binary protocol) and with ours (``import pulsarlike as pulsar``): each step observes the
same thing with both."""
from __future__ import annotations

import json
import logging
import threading
import uuid
from types import ModuleType
from typing import Any

import pytest

official_pulsar = pytest.importorskip("pulsar")

from tests.waiting import wait_until  # noqa: E402

RECEIVE_TIMEOUT_MS = 10_000


def typical_program(pulsar: ModuleType, url: str) -> dict[str, Any]:
    """What each step of the program observed, by step name (values that can be compared across clients:
    records as dicts, message ids left out)."""
    JsonSchema = pulsar.schema.JsonSchema  # the schema classes of the module under test

    class Order(pulsar.schema.Record):
        order_id = pulsar.schema.Integer()
        customer = pulsar.schema.String()

    def fields(msg) -> dict:
        record = msg.value()
        return {"order_id": record.order_id, "customer": record.customer}

    run = uuid.uuid4().hex[:10]
    topic = f"persistent://public/default/typical-{run}"
    orders = [Order(order_id=i, customer=f"c-{i}") for i in range(5)]
    observed: dict[str, Any] = {}
    client = pulsar.Client(url, operation_timeout_seconds=10, logger=logging.getLogger("typical"))
    try:
        # the subscriptions exist before the records are sent: each gets all of them
        heard: list[dict] = []
        done = threading.Event()

        def listener(consumer, msg) -> None:
            heard.append(fields(msg))
            consumer.acknowledge(msg)
            if len(heard) == len(orders):
                done.set()

        listening = client.subscribe(topic, "listener", schema=JsonSchema(Order), message_listener=listener)
        batching = client.subscribe(topic, "batches", schema=JsonSchema(Order),
                                    batch_receive_policy=pulsar.ConsumerBatchReceivePolicy(10, -1, 200))
        nacking = client.subscribe(topic, "nacks", schema=JsonSchema(Order), consumer_type=pulsar.ConsumerType.Shared,
                                   negative_ack_redelivery_delay_ms=100)
        raw = client.subscribe(topic, "raw")  # no schema= : pulsar-client's default BytesSchema
        dlq_topic = f"{topic}-dlq"
        dlq = client.subscribe(dlq_topic, "ops", initial_position=pulsar.InitialPosition.Earliest)
        dead = client.subscribe(topic, "dead", schema=JsonSchema(Order), consumer_type=pulsar.ConsumerType.Shared,
                                negative_ack_redelivery_delay_ms=100,
                                dead_letter_policy=pulsar.ConsumerDeadLetterPolicy(
                                    max_redeliver_count=1, dead_letter_topic=dlq_topic))

        producer = client.create_producer(topic, schema=JsonSchema(Order), batching_enabled=False)
        for order in orders:
            producer.send(order, partition_key=order.customer)
        producer.flush()
        observed["send"] = len(orders)

        observed["listener"] = done.wait(RECEIVE_TIMEOUT_MS / 1000) and sorted(
            heard, key=lambda record: record["order_id"])

        batched: list[dict] = []
        wait_until(lambda: batched.extend(fields(msg) for msg in batching.batch_receive())
                   or len(batched) >= len(orders), timeout_s=RECEIVE_TIMEOUT_MS / 1000)
        observed["batch_receive"] = batched

        as_bytes = []
        for _ in orders:
            msg = raw.receive(RECEIVE_TIMEOUT_MS)
            as_bytes.append({"record": json.loads(msg.data()), "key": msg.partition_key()})
            raw.acknowledge(msg)
        observed["bytes_by_default"] = as_bytes

        batching.seek(pulsar.MessageId.earliest)  # back to the first record, on the same subscription
        observed["seek"] = fields(batching.receive(RECEIVE_TIMEOUT_MS))

        first = nacking.receive(RECEIVE_TIMEOUT_MS)
        nacking.negative_acknowledge(first)
        again = nacking.receive(RECEIVE_TIMEOUT_MS)
        while fields(again) != fields(first):  # the others, already queued, come first
            nacking.acknowledge(again)
            again = nacking.receive(RECEIVE_TIMEOUT_MS)
        observed["negative_ack"] = {"first": fields(first), "again": fields(again),
                                    "redelivery_count": again.redelivery_count()}
        nacking.acknowledge(again)

        # every record negatively acknowledged twice: over max_redeliver_count=1, each goes to the DLQ
        for _ in range(2 * len(orders)):
            dead.negative_acknowledge(dead.receive(RECEIVE_TIMEOUT_MS))
        letters = []
        for _ in orders:
            letter = dlq.receive(RECEIVE_TIMEOUT_MS)
            letters.append({"record": json.loads(letter.data()), "key": letter.partition_key(),
                            "from_the_topic": letter.properties().get("REAL_TOPIC") == topic})
            dlq.acknowledge(letter)
        observed["dead_letters"] = sorted(letters, key=lambda letter: letter["record"]["order_id"])

        reader = client.create_reader(topic, pulsar.MessageId.earliest, schema=JsonSchema(Order))
        read = []
        while reader.has_message_available():
            read.append(fields(reader.read_next(RECEIVE_TIMEOUT_MS)))
        observed["reader"] = read

        notes = client.create_producer(f"{topic}-notes", schema=pulsar.schema.StringSchema())
        notes_reader = client.create_reader(f"{topic}-notes", pulsar.MessageId.earliest,
                                            schema=pulsar.schema.StringSchema())
        notes.send("shipped", properties={"order_id": "3"}, event_timestamp=1_700_000_000_000)
        note = notes_reader.read_next(RECEIVE_TIMEOUT_MS)
        observed["string_schema"] = {"value": note.value(), "properties": note.properties(),
                                     "event_time": note.event_timestamp()}
    finally:
        client.close()
    return observed


def test_the_typical_program_observes_the_same_with_pulsarlike_as_with_pulsar_client(broker_process):
    broker = broker_process()
    import pulsarlike

    official = typical_program(official_pulsar, broker.service_url)
    ours = typical_program(pulsarlike, broker.service_url)
    expected_records = [{"order_id": i, "customer": f"c-{i}"} for i in range(5)]
    assert official["listener"] == expected_records  # the program itself does what it says
    assert official["reader"] == expected_records
    assert official["negative_ack"]["redelivery_count"] == 1
    assert official["seek"] == expected_records[0]
    assert [letter["record"] for letter in official["dead_letters"]] == expected_records
    for step in official:
        assert ours.get(step) == official[step], step
    assert ours == official
