"""Schema evolution by Avro's own rules through real producers (issue 31): on a namespace whose strategy is
BACKWARD, pulsar-client registers a record, our client evolves it renaming a field with an alias (Avro
allows it) and both versions' messages are read with the new schema; renaming the record without an alias
is refused to either client, our client hearing the strategy applied and Avro's reason. The broker starts
without importing ``avro``, which the first check brings in."""
from __future__ import annotations

import subprocess
import sys
import uuid

import pytest

from connector import Client, IncompatibleSchema, MessageId
from connector.client import schema as ours
from tests.integration.test_http_admin_server import admin_http

pulsar = pytest.importorskip("pulsar")

ORDER_V1 = {"type": "record", "name": "Order", "namespace": "shop",
            "fields": [{"name": "item", "type": "string"}, {"name": "qty", "type": "int"}]}
ORDER_V2 = {**ORDER_V1, "fields": [{"name": "item", "type": "string"},
                                   {"name": "quantity", "type": "long", "aliases": ["qty"]}]}
PURCHASE = {**ORDER_V2, "name": "Purchase"}


@pytest.fixture(scope="module")
def http(tmp_path_factory):
    with admin_http(tmp_path_factory.mktemp("avro-rules")) as served:
        yield served


@pytest.fixture
def topic(http):
    namespace = f"public/evolving-{uuid.uuid4().hex[:8]}"
    assert http.put(f"/admin/v2/namespaces/{namespace}").status == 204
    assert http.put(f"/admin/v2/namespaces/{namespace}/schemaCompatibilityStrategy", "BACKWARD").status == 204
    return f"persistent://{namespace}/orders"


@pytest.fixture
def clients(http):
    official = pulsar.Client(http.broker.service_url, operation_timeout_seconds=10,
                             logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    client = Client(http.broker.service_url)
    yield official, client
    client.close()
    official.close()


def test_a_field_renamed_with_an_alias_evolves_and_so_does_a_record_renamed_without_one(http, topic, clients):
    official, client = clients
    producer = official.create_producer(topic, schema=pulsar.schema.AvroSchema(None, schema_definition=ORDER_V1))
    producer.send({"item": "pen", "qty": 3})
    evolved = client.create_producer(topic, schema=ours.AvroSchema(None, schema_definition=ORDER_V2))
    evolved.send({"item": "cup", "quantity": 4})

    reader = client.create_reader(topic, MessageId.earliest, schema=ours.AvroSchema(None, schema_definition=ORDER_V2))
    first, second = reader.read_next(10000), reader.read_next(10000)
    assert [first.value(), second.value()] == [{"item": "pen", "quantity": 3}, {"item": "cup", "quantity": 4}]
    assert [m.schema_version_bytes() for m in (first, second)] == [(0).to_bytes(8, "big"), (1).to_bytes(8, "big")]

    # a record renamed is taken, as Pulsar's validator (Avro's resolver) matches records by their fields
    client.create_producer(topic, schema=ours.AvroSchema(None, schema_definition=PURCHASE)).send(
        {"item": "box", "quantity": 5})
    official.create_producer(topic, schema=pulsar.schema.AvroSchema(None, schema_definition=PURCHASE))
    assert reader.read_next(10000).value() == {"item": "box", "quantity": 5}
    with pytest.raises(IncompatibleSchema, match=r"version 2 \(BACKWARD\): type_mismatch at /fields/1/type"):
        client.create_producer(topic, schema=ours.AvroSchema(None, schema_definition={
            **PURCHASE, "fields": [{"name": "item", "type": "string"}, {"name": "quantity", "type": "string"}]}))
    versions = http.get(f"/admin/v2/schemas/{topic.removeprefix('persistent://')}/schemas").body
    assert [v["version"] for v in versions["getSchemaResponses"]] == [0, 1, 2]


def test_avro_is_imported_at_the_first_check_not_at_broker_start(tmp_path):
    script = f"""
import sys
from broker_core import Broker
from broker_core.core.schema_compat import incompatibility
broker = Broker(data_dir={str(tmp_path)!r}, port=0, journalSyncMode="never").start()
started = "avro" in sys.modules
broker.stop()
incompatibility("Avro", b'"int"', b'"long"')
print(started, "avro" in sys.modules)
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[-2:] == ["False", "True"]
