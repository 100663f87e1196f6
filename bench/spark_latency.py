"""Streaming latency of the Spark source (issue 34): how long a message takes from its publish time to a row
in a streaming query's sink, with Spark's default trigger, beside the floor Spark itself imposes.

    python bench/spark_latency.py [--rate 1000] [--seconds 20] [--repeat 2] [--warmup 5] [--json]

1. **pulsarlike**: a producer in its own process sends ``--rate`` messages a second (unbatched
   ``send_async``, paced on the wall clock) to a non-partitioned topic of a pulsarlike broker process
   (``journalSyncMode=group``) for ``--seconds`` seconds. A streaming query (``startingOffsets=earliest`` of
   the topic, created empty before the query starts, so no message sent before the query's first trigger is
   missed; the
   default trigger: a new micro-batch as soon as the last one ended) reads it with
   ``readStream.format("pulsarlike")`` and writes to a ``foreachBatch`` sink that collects each batch's
   ``__publishTime`` and records the wall clock once the rows are in the driver: latency = arrival -
   publish time, per message.
2. **Floor**: the same query over a no-op Python streaming source (``bench_latency_noop``) that yields rows
   as fast as Spark asks: message ``i`` exists from ``start + i / rate`` (its publish time); ``latestOffset``
   answers what exists at that moment and ``read`` builds the rows without any I/O. What remains is Spark's
   own cost per micro-batch (trigger loop, offset and commit logs, planning, one task, the Python worker,
   the ``foreachBatch`` call).

Both queries start ``--warmup`` seconds before the first message; the figures count the messages published
from one second after the first row reached the sink (a query that started late catches up first); one untimed round of each side (``--warmup-seconds`` of messages) runs first, so the JVM
and Spark's Python workers are warm. Each round also prints Spark's mean ``durationMs`` per micro-batch phase
(``latestOffset``: the source's planning calls on the driver; ``addBatch``: the tasks' read and the sink;
``walCommit``/``commitOffsets``: the checkpoint), which says where a difference from the floor comes from. Rounds alternate (pulsarlike, floor, pulsarlike, ...)
so both see the same machine load; the broker, the producer, the JVM and the Python workers share the
machine's cores (``local[2]``). Prints p50/p90/p99/max per round and pooled, the batches per second, and
the ratio pulsarlike / floor (target: p50 and p99 within 1.5x the floor). Nothing is asserted.
"""
from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Iterator

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from throughput import start_broker, stop  # noqa: E402

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition  # noqa: E402

from connector import Admin  # noqa: E402

TARGET_RATIO = 1.5
SKIP_FIRST_S = 1.0


# --- the floor: a streaming source that yields what exists, without I/O ------------------------------
class ClockRange(InputPartition):
    def __init__(self, first: int, end: int) -> None:
        super().__init__(first)
        self.first = first
        self.end = end


class ClockStreamReader(DataSourceStreamReader):
    """Message ``i`` exists from ``start + i / rate`` (``i < total``); each offset is how many exist."""

    def __init__(self, options: dict[str, str]) -> None:
        self.start = float(options["start"])
        self.rate = float(options["rate"])
        self.total = int(options["total"])

    def _existing(self) -> int:
        return max(0, min(self.total, int((time.time() - self.start) * self.rate) + 1))

    def initialOffset(self) -> dict:
        return {"n": self._existing()}

    def latestOffset(self) -> dict:
        return {"n": self._existing()}

    def partitions(self, start: dict, end: dict) -> list[ClockRange]:
        return [ClockRange(start["n"], end["n"])] if end["n"] > start["n"] else []

    def read(self, partition: InputPartition) -> Iterator[tuple]:
        import datetime

        for i in range(partition.first, partition.end):  # type: ignore[attr-defined]
            published = self.start + i / self.rate
            yield (b"x" * 100, datetime.datetime.fromtimestamp(published, datetime.timezone.utc))

    def commit(self, end: dict) -> None:
        pass


class ClockDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "bench_latency_noop"

    def schema(self) -> str:
        return "value BINARY, __publishTime TIMESTAMP"

    def streamReader(self, schema: Any) -> ClockStreamReader:
        return ClockStreamReader(dict(self.options))


# --- the producer: its own process, paced on the wall clock -----------------------------------------
def produce_steadily(url: str, topic: str, start: float, rate: float, total: int, sent: Any) -> None:
    from connector import Client, Result

    client = Client(url)
    producer = client.create_producer(topic, max_pending_messages=10_000, block_if_queue_full=True)
    failures = []

    def done(result: Any, _msg_id: Any) -> None:
        if result is not Result.Ok:
            failures.append(result)

    payload = b"x" * 100
    for i in range(total):
        wait = start + i / rate - time.time()
        if wait > 0:
            time.sleep(wait)
        producer.send_async(payload, done)
    producer.flush()
    producer.close()
    client.close()
    sent.value = total - len(failures)


# --- one query ----------------------------------------------------------------------------------------
class Arrivals:
    """What the ``foreachBatch`` sink saw: per message, seconds from publish time to arrival."""

    def __init__(self) -> None:
        self.latencies: list[tuple[float, float]] = []
        """(publish time, latency) per message."""
        self.batches = 0
        self.first = float("inf")
        """When the first rows reached the sink (wall clock)."""
        self.lock = threading.Lock()

    def sink(self, df: Any, batch_id: int) -> None:
        from pyspark.sql import functions as F

        published = [row[0] for row in df.select(F.col("__publishTime").cast("double")).collect()]
        arrived = time.time()
        with self.lock:
            self.batches += 1
            if published:
                self.first = min(self.first, arrived)
            self.latencies.extend((p, arrived - p) for p in published)

    def count(self) -> int:
        with self.lock:
            return len(self.latencies)


def run_query(spark: Any, reader: Any, work: str, start: float, seconds: float, total: int,
              producer: Any = None) -> dict:
    checkpoint = tempfile.mkdtemp(prefix="latency-ckpt-", dir=work)
    arrivals = Arrivals()
    query = reader.load().writeStream.foreachBatch(arrivals.sink).option("checkpointLocation", checkpoint).start()
    try:
        if producer is not None:
            producer.start()
        deadline = start + seconds + 60
        while arrivals.count() < total and time.time() < deadline:
            if query.exception() is not None:
                raise SystemExit(f"query failed: {query.exception()}")
            time.sleep(0.1)
        if producer is not None:
            producer.join(timeout=60)
        durations = phases(query.recentProgress, arrivals.first + SKIP_FIRST_S)
    finally:
        query.stop()
        shutil.rmtree(checkpoint, ignore_errors=True)
    steady = [lat for published, lat in arrivals.latencies if published >= arrivals.first + SKIP_FIRST_S]
    return {"figures": figures(steady), "arrived": arrivals.count(), "expected": total,
            "batches_per_s": arrivals.batches / seconds, "phases_ms": durations, "latencies": steady}


def phases(progress: list, since: float) -> dict:
    """Mean ``durationMs`` of each micro-batch phase (Spark's progress: ``latestOffset`` and ``getBatch`` on
    the driver, ``addBatch`` the tasks' read and the sink, ``walCommit``/``commitOffsets`` the checkpoint)
    over the batches with rows that started after ``since``."""
    import datetime

    sums: dict[str, float] = {}
    n = 0
    for p in progress:
        started = datetime.datetime.fromisoformat(p["timestamp"].replace("Z", "+00:00")).timestamp()
        if p["numInputRows"] == 0 or started < since:
            continue
        n += 1
        for key, ms in p["durationMs"].items():
            sums[key] = sums.get(key, 0.0) + ms
    return {key: round(total / n, 1) for key, total in sorted(sums.items())} if n else {}


def figures(latencies: list[float]) -> dict:
    if not latencies:
        return {}
    ordered = sorted(latencies)

    def at(q: float) -> float:
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000

    return {"n": len(ordered), "p50_ms": at(0.50), "p90_ms": at(0.90), "p99_ms": at(0.99),
            "max_ms": ordered[-1] * 1000, "mean_ms": statistics.fmean(ordered) * 1000}


def spark_session() -> Any:
    os.environ.update({"PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable,
                       "SPARK_LOCAL_IP": "127.0.0.1"})
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master("local[2]").appName("pulsarlike-latency-bench")
             .config("spark.ui.enabled", "false").config("spark.driver.memory", "1g")
             .config("spark.sql.shuffle.partitions", "2").config("spark.python.worker.reuse", "true")
             .config("spark.ui.showConsoleProgress", "false")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    spark.dataSource.register(ClockDataSource)
    return spark


def shown(name: str, result: dict) -> str:
    f = result["figures"]
    if not f:
        return (f"{name}: {result['arrived']:,} of {result['expected']:,} arrived, none published later than "
                f"{SKIP_FIRST_S:.0f} s after the first row reached the sink")
    shown_phases = ", ".join(f"{k} {v:.0f}" for k, v in result["phases_ms"].items() if v >= 1)
    return (f"{name}: p50 {f['p50_ms']:.0f} ms, p90 {f['p90_ms']:.0f} ms, p99 {f['p99_ms']:.0f} ms, "
            f"max {f['max_ms']:.0f} ms over {f['n']:,} messages ({result['arrived']:,} of "
            f"{result['expected']:,} arrived), {result['batches_per_s']:.1f} batches/s; "
            f"mean ms per batch: {shown_phases}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=float, default=1000.0, help="messages a second (default 1000)")
    parser.add_argument("--seconds", type=float, default=20.0, help="seconds of messages per round (default 20)")
    parser.add_argument("--repeat", type=int, default=2, help="rounds of each (default 2)")
    parser.add_argument("--warmup", type=float, default=5.0,
                        help="seconds from a query's start to its first message (default 5)")
    parser.add_argument("--only", choices=("pulsarlike", "floor"), help="run one side only")
    parser.add_argument("--warmup-seconds", type=float, default=5.0,
                        help="an untimed round of each side first, this many seconds of messages (default 5)")
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON object too")
    args = parser.parse_args(argv)
    sides = [args.only] if args.only else ["pulsarlike", "floor"]
    pooled: dict[str, list[float]] = {side: [] for side in sides}
    rounds: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="spark-latency-") as work:
        proc, url = start_broker(work, ["journalSyncMode=group"])
        spark = spark_session()
        spawn = multiprocessing.get_context("spawn")
        try:
            for r in range(-1 if args.warmup_seconds > 0 else 0, args.repeat):
                for side in sides:
                    seconds = args.seconds if r >= 0 else args.warmup_seconds
                    total = int(args.rate * seconds)
                    start = time.time() + args.warmup
                    if side == "pulsarlike":
                        topic = f"persistent://public/default/latency-{time.monotonic_ns()}"
                        with Admin(url) as admin:
                            admin.create_topic(topic)
                        sent = spawn.Value("q", 0)
                        producer = spawn.Process(target=produce_steadily,
                                                 args=(url, topic, start, args.rate, total, sent))
                        reader = (spark.readStream.format("pulsarlike").option("service.url", url)
                                  .option("topic", topic).option("startingOffsets", "earliest"))
                        result = run_query(spark, reader, work, start, seconds, total, producer)
                    else:
                        reader = (spark.readStream.format("bench_latency_noop").option("start", repr(start))
                                  .option("rate", repr(args.rate)).option("total", str(total)))
                        result = run_query(spark, reader, work, start, seconds, total)
                    if r < 0:
                        print("warm-up " + shown(side, {**result, "latencies": []}), flush=True)
                        continue
                    pooled[side].extend(result.pop("latencies"))
                    rounds.append({"round": r + 1, "side": side, **result})
                    print(f"round {r + 1} " + shown(side, result), flush=True)
        finally:
            spark.stop()
            stop(proc)
    summary = {side: figures(values) for side, values in pooled.items()}
    for side in sides:
        print(f"pooled {side}: " + ", ".join(f"{k} {v:.0f}" for k, v in summary[side].items()))
    if len(sides) == 2 and summary["pulsarlike"] and summary["floor"]:
        for q in ("p50_ms", "p99_ms"):
            ratio = summary["pulsarlike"][q] / summary["floor"][q]
            verdict = "met" if ratio <= TARGET_RATIO else "missed"
            print(f"{q[:3]}: pulsarlike / floor = {ratio:.2f}x (target <= {TARGET_RATIO}x: {verdict})")
    if args.json:
        print(json.dumps({"rate": args.rate, "seconds": args.seconds, "rounds": rounds, "pooled": summary}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
