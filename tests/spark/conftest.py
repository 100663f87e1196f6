"""Spark fixtures: one SparkSession for the whole test session (``local[2]``), a real broker per module.

The session is started once (about 5 s) and shared; tests give every query its own checkpoint folder and
topics so they never see each other's data. Spark's Python workers are this venv's python, so they import
the same ``connector`` as the tests.
"""
from __future__ import annotations

import os
import sys
import uuid

import pytest

from tests.pulsar_lite import pulsar_lite_broker  # noqa: F401  (pulsar-lite for modules that ask for it)


# Settings measured on the 2-core test machine: small driver heap, no UI, loopback only.
SPARK_CONF = {
    "spark.ui.enabled": "false",
    "spark.driver.memory": "512m",
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.sql.streaming.stopTimeout": "30s",
    "spark.python.worker.reuse": "true",
}


def spark_env() -> dict[str, str]:
    """What every Spark process of the tests needs (driver, executors, their Python workers)."""
    return {"PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable,
            "SPARK_LOCAL_IP": "127.0.0.1"}


@pytest.fixture(scope="session")
def spark():
    os.environ.update(spark_env())
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master("local[2]").appName("pulsarlike-tests")
    for key, value in SPARK_CONF.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture
def topic():
    """A fresh topic name per test."""
    return f"persistent://public/default/spark-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def produce(client):
    """``produce(topic, n, start=0, **send_kwargs) -> [MessageId]``: sends values ``m<start>..`` and
    waits for every receipt (one batching producer per call)."""
    def send(topic: str, n: int, start: int = 0, **kwargs):
        producer = client.create_producer(topic, batching_enabled=True, block_if_queue_full=True)
        ids = []
        for i in range(start, start + n):
            producer.send_async(f"m{i}".encode(), lambda res, mid: ids.append(mid), **kwargs)
        producer.flush()
        producer.close()
        return ids
    return send


@pytest.fixture
def source(spark, broker):
    """``source(stream=True, options=None, **more)``: a ``format("pulsarlike")`` reader with service.url
    set and the given options (values turned into strings)."""
    def make(stream: bool = True, options: dict | None = None, **kwargs):
        reader = (spark.readStream if stream else spark.read).format("pulsarlike")
        reader = reader.option("service.url", broker.service_url)
        for key, value in {**(options or {}), **kwargs}.items():
            reader = reader.option(key, str(value))
        return reader
    return make
