"""The job the cluster tests submit (:mod:`tests.spark.test_cluster_standalone`) and its helpers: ``JOB``
streams a partitioned topic to parquet with availableNow, reads it back in batch twice, and prints what it
saw as one ``RESULT`` JSON line; the tests check that record."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest

from tests.spark.conftest import spark_env

MESSAGES = 1000

JOB = r'''
import json, os, sys
from pyspark.sql import SparkSession

url, topic, workdir = sys.argv[1:4]
builder = SparkSession.builder.appName("pulsarlike-cluster-test")
if len(sys.argv) > 4:
    builder = builder.master(sys.argv[4])
for key, value in json.loads(os.environ["PULSARLIKE_TEST_SPARK_CONF"]).items():
    builder = builder.config(key, value)
spark = builder.getOrCreate()
spark.sparkContext.setLogLevel("ERROR")

stream = (spark.readStream.format("pulsarlike").option("service.url", url).option("topic", topic)
          .option("startingOffsets", "earliest").option("maxMessagesPerTrigger", "250").load())
query = (stream.select("__partition", "__offset", "value").writeStream.format("parquet")
         .option("path", workdir + "/out").option("checkpointLocation", workdir + "/ck")
         .trigger(availableNow=True).start())
query.awaitTermination()
streamed = [(r["__partition"], r["__offset"]) for r in spark.read.parquet(workdir + "/out").collect()]
batch = (spark.read.format("pulsarlike").option("service.url", url).option("topic", topic)
         .option("maxMessagesPerPartition", "200").load())
first = sorted(tuple(r) for r in batch.select("__partition", "__offset", "value", "__messageId").collect())
second = sorted(tuple(r) for r in batch.select("__partition", "__offset", "value", "__messageId").collect())
pids = batch.rdd.mapPartitions(lambda rows: [os.getpid()]).distinct().collect()
record = {
    "batches": [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]],
    "streamed": sorted(streamed),
    "batch_rows": len(first),
    "replay_identical": first == second,
    "values": sorted(v.decode() for _, _, v, _ in first),
    "worker_pids": len(pids),
    "driver_pid": os.getpid() in pids,
    "executors": spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size() - 1,
}
print("RESULT " + json.dumps(record), flush=True)
spark.stop()
'''

CLUSTER_CONF = {"spark.ui.enabled": "false", "spark.driver.memory": "512m", "spark.sql.shuffle.partitions": "2",
                "spark.executor.memory": "1g"}


def job_env() -> dict[str, str]:
    return {**os.environ, **spark_env(), "PULSARLIKE_TEST_SPARK_CONF": json.dumps(CLUSTER_CONF)}


def fill(broker, topic: str) -> None:
    from connector import Admin, Client

    with Admin(broker.service_url) as admin:
        admin.create_partitioned_topic(topic, 2)
    client = Client(broker.service_url)
    producer = client.create_producer(topic, batching_enabled=False, block_if_queue_full=True)
    for i in range(MESSAGES):
        producer.send_async(f"m{i}".encode(), None, partition_key=f"k{i}")
    producer.flush()
    client.close()


def run_in_own_group(args: list[str], timeout: float, cwd=None) -> str:
    """Run a command in its own process group; the whole group is killed if it outlives ``timeout``."""
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=job_env(),
                            cwd=cwd, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        pytest.fail(f"{args[0]} did not finish within {timeout}s:\n{out[-4000:]}")
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 0, out[-4000:]
    return out


def result_of(output: str) -> dict:
    lines = [line for line in output.splitlines() if line.startswith("RESULT ")]
    assert lines, output[-4000:]
    return json.loads(lines[-1][len("RESULT "):])
