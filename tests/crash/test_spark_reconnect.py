"""The Spark source and sink ride through broker restarts shorter than their timeouts (issue 12): the broker
process is stopped (SIGTERM) or killed (SIGKILL) and started again on the same port while a streaming query
reads and while a batch write writes. The query neither dies nor misses an acknowledged message; the write
completes and stores each row once."""
from __future__ import annotations

import signal
import threading
import uuid

import pytest

from connector import Admin, Client, MessageId
from tests.crash.test_client_reconnect import SETTINGS, Worker, restart, restart_along
from tests.spark.conftest import spark  # noqa: F401  (the session fixture)
from tests.waiting import wait_until

pytestmark = [pytest.mark.crash, pytest.mark.spark]


@pytest.fixture(params=[signal.SIGTERM, signal.SIGKILL], ids=["sigterm", "sigkill"])
def stop_signal(request):
    return request.param


def _topic() -> str:
    return f"persistent://public/default/spark-restart-{uuid.uuid4().hex[:8]}"


def test_a_streaming_query_reads_every_acknowledged_message_across_restarts(spark, broker_process, stop_signal,
                                                                            tmp_path):
    """One restart while messages stream in (range reads in flight), one while the query waits for more
    (its driver asks for offsets every trigger): the query survives both."""
    broker = broker_process(*SETTINGS, restartable=True)
    topic, name = _topic(), f"restarts_{uuid.uuid4().hex[:8]}"

    def stored() -> set[str]:
        return {r.v for r in spark.sql(f"SELECT v FROM {name}").collect()}

    with Client(broker.service_url) as client:
        producer = client.create_producer(topic, send_timeout_millis=60_000)
        producer.send(b"m-0")  # the topic exists before the query plans
        query = (spark.readStream.format("pulsarlike").option("service.url", broker.service_url)
                 .option("topic", topic).option("startingOffsets", "earliest").option("pollTimeoutMs", "60000")
                 .load().selectExpr("CAST(value AS STRING) AS v").writeStream.format("memory").queryName(name)
                 .option("checkpointLocation", str(tmp_path / "checkpoint")).trigger(processingTime="100 milliseconds")
                 .start())
        try:
            sender = Worker(lambda i: producer.send(b"m-%d" % (i + 1)))
            sender.start()
            restart_along(broker, stop_signal, lambda: sender.done, 300, times=1)  # while messages flow
            sender.finish()
            acknowledged = {f"m-{i}" for i in range(sender.done + 1)}
            assert wait_until(lambda: stored() >= acknowledged, 60)
            restart(broker, stop_signal)  # while the query only polls for more
            for i in range(sender.done + 1, sender.done + 101):
                producer.send(b"m-%d" % i)
                acknowledged.add(f"m-{i}")
            query.processAllAvailable()
            assert query.isActive and query.exception() is None
            rows = [r.v for r in spark.sql(f"SELECT v FROM {name}").collect()]
        finally:
            query.stop()
    assert set(rows) >= acknowledged  # every acknowledged message, at least once
    assert len(rows) == len(set(rows))  # and, offsets replaying deterministically, once


def test_a_batch_write_completes_across_a_restart_and_stores_each_row_once(spark, broker_process, stop_signal):
    broker = broker_process(*SETTINGS, restartable=True)
    topic, rows = _topic(), 200_000
    df = spark.range(0, rows, numPartitions=2).selectExpr("CAST(id AS STRING) AS value")
    restarted: list[bool] = []

    def restart_mid_write() -> None:  # on a thread: Spark wants the write on the thread of its session
        with Admin(broker.service_url) as admin:
            written = wait_until(lambda: admin.topic_stats(topic)["storageSize"] > 200_000, 120)
        if written:
            restart(broker, stop_signal)
            restarted.append(True)

    with Admin(broker.service_url) as admin:
        admin.create_topic(topic)
    restarter = threading.Thread(target=restart_mid_write)
    restarter.start()
    # small entries, few pending: slow enough (with journalSyncMode=always) to be cut in the middle
    (df.write.format("pulsarlike").mode("append").option("service.url", broker.service_url).option("topic", topic)
     .option("batchingMaxMessages", "20").option("maxPendingMessages", "200").option("sendTimeoutMs", "60000")
     .save())
    restarter.join(60)
    assert restarted == [True], "the write ended before the restart: give it more rows"
    with Client(broker.service_url) as client:
        reader = client.create_reader(topic, MessageId.earliest, receiver_queue_size=5000)
        stored = []
        while reader.has_message_available():
            stored.append(int(reader.read_next(timeout_millis=10_000).data()))
    assert len(stored) == rows and set(stored) == set(range(rows))
