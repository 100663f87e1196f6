"""The ``pulsarlike`` source and sink on a topic named ``tenant/namespace/topic`` (Pulsar's short form):
written, read back in a batch and matched by a ``tenant/namespace/<regex>`` pattern."""
from __future__ import annotations

import uuid

import pytest

pytestmark = pytest.mark.spark


def test_the_sink_and_the_source_take_tenant_namespace_topic(spark, broker, admin, source):
    admin.create_tenant("spark-acme")
    admin.create_namespace("spark-acme/orders")
    name = f"spark-acme/orders/t-{uuid.uuid4().hex[:8]}"
    spark.createDataFrame([("a",), ("b",), ("c",)], "value STRING").write.format("pulsarlike") \
        .option("service.url", broker.service_url).option("topic", name).mode("append").save()
    rows = source(stream=False, topic=name).load().collect()
    assert sorted(row["value"] for row in rows) == [b"a", b"b", b"c"]
    assert {row["__topic"] for row in rows} == {f"persistent://{name}"}
    matched = source(stream=False, topicsPattern="spark-acme/orders/t-.*").load().collect()
    assert sorted(row["value"] for row in matched) == [b"a", b"b", b"c"]
