"""The streaming demo: an embedded broker, a sample event stream, and Spark Structured Streaming over it.

    python -m jobs.stream_demo [--messages N] [--per-trigger N] [--data-dir DIR] [--service-url URL]

1. Starts a real broker in this process (port 0) -- or, with ``--service-url`` (or the environment variable
   ``PULSARLIKE_SERVICE_URL``, as docker/compose.yaml sets it), uses that broker, with topic names made
   unique to the run.
2. Feeds ``sensor-readings``: N JSON readings of four sensors, keyed by sensor, with properties (``unit``,
   ``site``) and event times over one simulated minute, then one ``clock`` heartbeat 20 s later (it moves
   the event-time watermark past the last window); every 10th reading is sent with ``deliver_after``
   (5 s). The broker holds a delayed message back from Shared and Key_Shared subscriptions only: Spark's
   source reads by offset, so for it a delayed message is just a stored one.
3. Runs two Structured Streaming queries over ``spark.readStream.format("pulsarlike")`` (each with its own
   durable subscription), at most ``--per-trigger`` messages a micro-batch, ``availableNow``: readings per
   sensor and 10-second event-time window (count, mean, max; 5 s watermark), written
   - to the topic ``sensor-windows`` by the pulsarlike sink, append mode: each window once, when the
     watermark closes it (effectively-once; key = sensor, event time = window end, value = JSON), and
   - to the console, the same way (each micro-batch prints the windows it closed).
   (A Python data source sink takes append mode only: Spark refuses update and complete mode for it.)
4. Reads ``sensor-windows`` back, checks every reading is counted once, prints a summary and exits.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import sys
import tempfile
import time
import uuid
from datetime import timedelta
from typing import Any, Iterator, Sequence

from connector.cli import security_flags
from jobs._common import client_kwargs, spark_options, use_security

EVENTS = "persistent://public/default/sensor-readings"
RESULTS = "persistent://public/default/sensor-windows"
SENSORS = ("s0", "s1", "s2", "s3")
START_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z: event times are simulated, not wall clock
SPREAD_MS = 60_000
DELAY_EVERY = 10
CLOCK = "clock"


def reading(i: int, messages: int) -> tuple[bytes, str, dict[str, str], int]:
    """(payload, key, properties, event time in ms) of reading ``i`` of ``messages``."""
    sensor = SENSORS[i % len(SENSORS)]
    celsius = round(18 + (i * 7 % 70) / 10, 1)
    payload = json.dumps({"sensor": sensor, "seq": i, "celsius": celsius}).encode()
    return payload, sensor, {"unit": "celsius", "site": "north" if i % 2 else "south"}, \
        START_MS + i * SPREAD_MS // messages


def feed(client: Any, messages: int, events: str = EVENTS) -> int:
    """Produce the readings; returns how many were sent with a delivery delay."""
    producer = client.create_producer(events, batching_enabled=True, block_if_queue_full=True)
    failures: list[Any] = []

    def sent(result: Any, _msg_id: Any) -> None:
        if getattr(result, "name", "Ok") != "Ok":
            failures.append(result)
    delayed = 0
    for i in range(messages):
        payload, key, properties, event_ms = reading(i, messages)
        extra = {}
        if i % DELAY_EVERY == DELAY_EVERY - 1:
            extra["deliver_after"] = timedelta(seconds=5)
            delayed += 1
        producer.send_async(payload, sent, partition_key=key, properties=properties,
                            event_timestamp=event_ms, **extra)
    # the heartbeat: not a reading, only an event time past the last window plus the watermark delay
    producer.send_async(b"{}", sent, partition_key=CLOCK, event_timestamp=START_MS + SPREAD_MS + 20_000)
    producer.flush()
    producer.close()
    if failures:
        raise RuntimeError(f"{len(failures)} readings were not stored: {failures[0]}")
    return delayed


def windows(events: Any) -> Any:
    """The pure transform: readings per sensor and 10-second event-time window."""
    from pyspark.sql import functions as F

    reading_schema = "sensor STRING, seq BIGINT, celsius DOUBLE"
    parsed = events.select(F.col("__key").cast("string").alias("sensor"), F.col("__eventTime").alias("event_time"),
                           F.from_json(F.col("value").cast("string"), reading_schema).alias("r"))
    # The heartbeat ("{}": no celsius) is dropped by a filter on an aggregate: Spark would push a filter on
    # the sensor below the watermark, which would then never see the heartbeat's event time.
    return (parsed.withWatermark("event_time", "5 seconds")
            .groupBy(F.window("event_time", "10 seconds").alias("window"), "sensor")
            .agg(F.count("r.celsius").alias("readings"), F.round(F.avg("r.celsius"), 2).alias("mean_celsius"),
                 F.max("r.celsius").alias("max_celsius"))
            .where(F.col("readings") > 0))


def as_messages(results: Any) -> Any:
    """Aggregate rows in the sink's columns: value (JSON), __key, __eventTime, __messageProperties."""
    from pyspark.sql import functions as F

    return results.select(
        F.to_json(F.struct(F.col("window.start").cast("string").alias("window_start"), "sensor", "readings",
                           "mean_celsius", "max_celsius")).alias("value"),
        F.col("sensor").alias("__key"), F.col("window.end").alias("__eventTime"),
        F.create_map(F.lit("window_start"), F.col("window.start").cast("string")).alias("__messageProperties"))


def spark_session() -> Any:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    session = (SparkSession.builder.master("local[2]").appName("pulsarlike-stream-demo")
               .config("spark.ui.enabled", "false").config("spark.driver.memory", "512m")
               .config("spark.sql.shuffle.partitions", "2").config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.session.timeZone", "UTC").getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    return session


@contextlib.contextmanager
def broker_url(service_url: str | None, data_dir: str) -> Iterator[str]:
    """``service_url`` as it is, or an embedded broker's for the duration."""
    if service_url:
        yield service_url
        return
    from broker_core import Broker

    with Broker(data_dir=os.path.join(data_dir, "broker"), port=0) as broker:
        yield broker.service_url


def run(messages: int, data_dir: str, per_trigger: int | None = None, spark: Any = None,
        service_url: str | None = None) -> dict[str, Any]:
    """The whole demo; returns its summary. ``spark``: a session to use (else one is made and stopped);
    ``service_url``: a running broker to use (else an embedded one)."""
    from connector import Client
    from connector.spark.spark_versions import SPARK_VERSION, TRIGGER_AVAILABLE_NOW

    if not TRIGGER_AVAILABLE_NOW:
        # Spark's own AvailableNow wrapper (before 4.2) runs no last micro-batch for the watermark, so the
        # windows the demo counts would never close (docs/spark.md, Spark versions)
        raise RuntimeError(f"the demo needs Spark 4.2 or newer (Trigger.AvailableNow through the source, whose "
                           f"last micro-batch closes the event-time windows), and this is Spark "
                           f"{'.'.join(map(str, SPARK_VERSION))}: pip install 'pyspark>=4.2,<5'")
    per_trigger = per_trigger or max(1, messages // 3)
    # On a broker of its own the topics have fixed names; on a shared one, names of this run.
    suffix = f"-{uuid.uuid4().hex[:8]}" if service_url else ""
    events, results = EVENTS + suffix, RESULTS + suffix
    started = time.perf_counter()
    own_spark = spark is None
    spark = spark or spark_session()  # first: the JVM is forked before any gRPC thread exists
    try:
        with broker_url(service_url, data_dir) as url:
            print(f"broker: {url}" + ("" if service_url else f" (embedded, data in {data_dir})"))
            client = Client(url, **(client_kwargs(url) if service_url else {}))
            try:
                delayed = feed(client, messages, events)
                print(f"fed {messages} readings to {events} ({delayed} with deliver_after=5s: held back from "
                      "Shared/Key_Shared subscriptions only -- Spark reads by offset and sees them at once)")
                progress = stream(spark, url, per_trigger, os.path.join(data_dir, f"run{suffix}"), events,
                                  results)
                summary = summarize(client, messages, delayed, progress, results)
            finally:
                client.close()
    finally:
        if own_spark:
            spark.stop()
    summary["seconds"] = round(time.perf_counter() - started, 1)
    print_summary(summary)
    return summary


def stream(spark: Any, url: str, per_trigger: int, data_dir: str, events: str = EVENTS,
           results: str = RESULTS) -> dict[str, Any]:
    """Run both queries to the end of what is in the topic; returns their progress figures."""
    def source(subscription: str) -> Any:
        return (spark.readStream.format("pulsarlike").option("service.url", url).options(**spark_options())
                .option("topic", events)
                .option("startingOffsets", "earliest").option("subscriptionName", subscription)
                .option("maxMessagesPerTrigger", str(per_trigger)).load())

    to_topic = (as_messages(windows(source("demo-to-topic"))).writeStream.format("pulsarlike")
                .outputMode("append").option("service.url", url).options(**spark_options()).option("topic", results)
                .option("checkpointLocation", os.path.join(data_dir, "checkpoint-topic"))
                .trigger(availableNow=True).start())
    to_console = (windows(source("demo-to-console")).writeStream.format("console").outputMode("append")
                  .option("truncate", "false").option("numRows", "100")
                  .option("checkpointLocation", os.path.join(data_dir, "checkpoint-console"))
                  .trigger(availableNow=True).start())
    for query in (to_topic, to_console):
        query.awaitTermination()
        if query.exception() is not None:
            raise RuntimeError(f"query {query.name or query.id} failed: {query.exception()}")
    return {"micro_batches": sum(1 for p in to_topic.recentProgress if p["numInputRows"]),
            "rows_read": sum(p["numInputRows"] for p in to_topic.recentProgress)}


def summarize(client: Any, messages: int, delayed: int, progress: dict[str, Any],
              results: str = RESULTS) -> dict[str, Any]:
    from connector import MessageId

    reader = client.create_reader(results, MessageId.earliest)
    rows = []
    producers = set()
    try:
        while reader.has_message_available():
            msg = reader.read_next(timeout_millis=5000)
            rows.append(json.loads(msg.data()))
            producers.add(msg.producer_name())
    finally:
        reader.close()
    windows_seen = {(r["window_start"], r["sensor"]) for r in rows}
    per_sensor = {s: sum(r["readings"] for r in rows if r["sensor"] == s) for s in SENSORS}
    return {"produced": messages, "delayed": delayed, "rows_read": progress["rows_read"],
            "micro_batches": progress["micro_batches"], "result_messages": len(rows),
            "windows": len(windows_seen), "readings_per_sensor": per_sensor,
            "all_counted_once": sum(per_sensor.values()) == messages and len(windows_seen) == len(rows),
            "results_topic": results,
            "sink_producers": sorted(producers)}


def print_summary(summary: dict[str, Any]) -> None:
    print(f"Spark read {summary['rows_read']} messages ({summary['produced']} readings + the heartbeat) in "
          f"{summary['micro_batches']} micro-batches; {summary['result_messages']} closed windows went to "
          f"{summary['results_topic']}; every reading counted once: {summary['all_counted_once']}")
    print(f"readings per sensor, from the results topic: {summary['readings_per_sensor']}")
    print(f"sink producers (one per Spark partition, named after the query): {summary['sink_producers']}")
    print(f"done in {summary['seconds']} s")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="stream_demo", description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=2_000)
    parser.add_argument("--per-trigger", type=int, default=None,
                        help="maxMessagesPerTrigger (default: a third of --messages)")
    parser.add_argument("--data-dir", default=None, help="default: a new temporary folder, removed at the end")
    parser.add_argument("--service-url", default=os.environ.get("PULSARLIKE_SERVICE_URL") or None,
                        help="use this broker instead of an embedded one (default: $PULSARLIKE_SERVICE_URL)")
    security_flags.add(parser)  # defaults from $PULSARLIKE_AUTH_PLUGIN ... (the compose file sets them)
    args = parser.parse_args(argv)
    use_security(args)
    if args.messages < 1 or (args.per_trigger is not None and args.per_trigger < 1):
        parser.error("--messages and --per-trigger must be at least 1")
    data_dir = args.data_dir or tempfile.mkdtemp(prefix="pulsarlike-demo-")
    try:
        run(args.messages, data_dir, args.per_trigger, service_url=args.service_url)
    finally:
        if args.data_dir is None:
            shutil.rmtree(data_dir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
