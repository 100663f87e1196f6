"""Spark connector throughput against no-op Python Arrow peers in the same run (issue 5, ARCHITECTURE §9).

    python bench/spark_throughput.py [--messages 2000000] [--sink-rows 1000000] [--size 100]
        [--partitions 2] [--sections source,sink,lite] [--transports grpc,binary] [--repeat 3]
        [--at-least-once] [--json]

1. **Source** (``source``): ``--messages`` messages of ``--size`` bytes are produced to a topic with
   ``--partitions`` partitions; then ``spark.readStream.format("pulsarlike")`` (``startingOffsets=earliest``)
   runs into Spark's ``noop`` sink with ``availableNow``, once per source option ``transport`` of
   ``--transports`` (the ranges read over gRPC, or over Pulsar's binary protocol). The peer is a Python Arrow
   stream source that reads nothing: it yields the same number of rows, in the same schema (the source's
   eleven columns) and the same Spark partitions, from one prebuilt record batch. Ratio = peer time /
   pulsarlike time (target >= 0.6), per transport.
2. **Sink** (``sink``): ``--sink-rows`` rows of one ``--size``-byte ``value`` column, made by the same
   no-op source, written with ``writeStream.format("pulsarlike")`` (effectively-once unless
   ``--at-least-once``) to a non-partitioned topic with ``availableNow``; the peer is a
   ``DataSourceStreamArrowWriter`` that only counts the rows. Ratio = peer time / sink time (target >= 0.6).
3. **Any broker** (``lite``, not run by default): the same read of ``--messages`` messages on a
   non-partitioned topic of pulsar-lite (the source's message-id path over the binary protocol) against the
   same peer with one partition.

Times are wall clock from ``start()`` to the end of the ``availableNow`` query, the best of ``--repeat``
runs (peer and pulsarlike alternate, so both see the same load, in an order that turns each run), after
one untimed warm-up query of each kind (Python workers and the JVM's code warm). The broker runs in its own
process (``journalSyncMode=group``), Spark is ``local[2]``: broker, JVM and Python workers share this
machine's two cores. Each section also prints the CPU µs per row of the best runs, the broker's
process tree and Spark's (this process's tree: the JVM and its Python workers), which the machine's load moves
less than the times. Nothing is asserted.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Iterator

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from throughput import start_broker, stop  # noqa: E402
from pulsar_lite_compare import tree_cpu  # noqa: E402

from pyspark.sql.datasource import (  # noqa: E402
    DataSource, DataSourceStreamArrowWriter, DataSourceStreamReader, InputPartition, WriterCommitMessage)
from pyspark.sql.streaming.datasource import ReadLimit, SupportsTriggerAvailableNow  # noqa: E402

from connector import Admin, Client, Result  # noqa: E402
from connector.spark.options import DEFAULT_MAX_MESSAGES_PER_PARTITION  # noqa: E402
from connector.spark.schema import SCHEMA_DDL  # noqa: E402

TARGET_RATIO = 0.6
SECTIONS = ("source", "sink", "lite")
DEFAULT_SECTIONS = ("source", "sink")
TRANSPORTS = ("grpc", "binary")


# --- the no-op peers: a Python Arrow stream source that reads nothing, a writer that writes nothing ---------
class NoopRange(InputPartition):
    def __init__(self, rows: int, first_offset: int) -> None:
        super().__init__(rows)
        self.rows = rows
        self.first_offset = first_offset


class NoopStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """``partitions`` topic-partition-like ranges of ``rows // partitions`` rows, split like the pulsarlike
    source splits them; ``read`` yields slices of one prebuilt batch."""

    def __init__(self, options: dict[str, str]) -> None:
        self.rows = int(options["rows"])
        self.partitions_n = int(options.get("partitions", "1"))
        self.size = int(options.get("size", "100"))
        self.split = int(options.get("split", str(DEFAULT_MAX_MESSAGES_PER_PARTITION)))
        self.columns = options.get("columns", "all")

    def initialOffset(self) -> dict:
        return {"rows": 0}

    def prepareForTriggerAvailableNow(self) -> None:
        pass

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        return {"rows": self.rows}

    def partitions(self, start: dict, end: dict) -> list[NoopRange]:
        if end["rows"] <= start["rows"]:
            return []
        per = self.rows // self.partitions_n
        out = []
        for p in range(self.partitions_n):
            count = per if p < self.partitions_n - 1 else self.rows - per * (self.partitions_n - 1)
            for lo in range(0, count, self.split):
                out.append(NoopRange(min(self.split, count - lo), lo))
        return out

    def read(self, partition: InputPartition) -> Iterator[Any]:
        import pyarrow as pa

        template = template_batch(self.size, self.columns)
        left = partition.rows  # type: ignore[attr-defined]
        while left > 0:
            piece = template if left >= template.num_rows else template.slice(0, left)
            left -= piece.num_rows
            yield piece
        del pa

    def commit(self, end: dict) -> None:
        pass


def template_batch(size: int, columns: str, rows: int = 10_000) -> Any:
    """One Arrow batch shaped like what the pulsarlike source yields (or just ``value`` for the sink)."""
    import pyarrow as pa

    from connector.spark.schema import ARROW_SCHEMA

    value = pa.array([(b"%010d" % i).ljust(size, b"x")[:size] for i in range(rows)], pa.binary())
    if columns == "value":
        return pa.record_batch([value], names=["value"])
    now = int(time.time() * 1_000_000)
    arrays = [value, pa.nulls(rows, pa.string()), pa.array(["persistent://public/default/bench"] * rows),
              pa.array([0] * rows, pa.int32()), pa.array(range(rows), pa.int64()),
              pa.array([b"\x08\x00\x10\x00" + bytes(12)] * rows, pa.binary()),
              pa.array([now] * rows, pa.timestamp("us", tz="UTC")), pa.nulls(rows, pa.timestamp("us", tz="UTC")),
              pa.array([[]] * rows, pa.map_(pa.string(), pa.string())),
              pa.array(["bench-producer"] * rows), pa.array(range(rows), pa.int64())]
    return pa.record_batch(arrays, schema=ARROW_SCHEMA)


class NoopCount(WriterCommitMessage):
    def __init__(self, rows: int) -> None:
        self.rows = rows


class NoopStreamWriter(DataSourceStreamArrowWriter):
    def __init__(self, options: dict[str, str]) -> None:
        self.options = options

    def write(self, iterator: Iterator[Any]) -> NoopCount:
        return NoopCount(sum(batch.num_rows for batch in iterator))

    def commit(self, messages: list, batchId: int) -> None:
        pass

    def abort(self, messages: list, batchId: int) -> None:
        pass


class NoopArrowDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "bench_arrow_noop"

    def schema(self) -> str:
        return "value BINARY" if self.options.get("columns") == "value" else SCHEMA_DDL

    def streamReader(self, schema: Any) -> NoopStreamReader:
        return NoopStreamReader(dict(self.options))

    def streamWriter(self, schema: Any, overwrite: bool) -> NoopStreamWriter:
        return NoopStreamWriter(dict(self.options))


# --- runs ----------------------------------------------------------------------------------------------
CPU_OF: dict[str, int] = {}
"""Processes whose CPU seconds each timed query records: ``broker`` (its pid), ``spark`` (this process's tree:
the JVM and its Python workers)."""
LAST_CPU: dict[str, float] = {}
"""CPU seconds of each of :data:`CPU_OF` during the last :func:`timed` query."""


def timed(start_query: Any, work: str) -> tuple[float, int]:
    """(seconds, input rows) of one availableNow query started by ``start_query(checkpoint)``."""
    checkpoint = tempfile.mkdtemp(prefix="spark-bench-ckpt-", dir=work)
    cpu = {name: tree_cpu(pid) for name, pid in CPU_OF.items()}
    started = time.perf_counter()
    query = start_query(checkpoint)
    query.awaitTermination()
    elapsed = time.perf_counter() - started
    LAST_CPU.update({name: tree_cpu(pid) - cpu[name] for name, pid in CPU_OF.items()})
    if query.exception() is not None:
        raise SystemExit(f"query failed: {query.exception()}")
    rows = sum(p["numInputRows"] for p in query.recentProgress)
    shutil.rmtree(checkpoint, ignore_errors=True)
    return elapsed, rows


def best_of_pairs(ours: Any, peer: Any, work: str, repeat: int, expected: int) -> tuple[float, float]:
    """Best times of ``repeat`` runs of each, alternating peer and ours so both see the same load."""
    best = best_of({"peer": peer, "ours": ours}, work, repeat, expected)
    return best["ours"], best["peer"]


def best_of(queries: dict[str, Any], work: str, repeat: int, expected: int) -> dict[str, float]:
    """Best time of ``repeat`` runs of each query, taking turns so that all see the same load. The order turns
    round each run: a query that always came right after the same other one (e.g. ``binary`` after ``grpc``,
    whose channels close in the background) may pay for it in every run (issue 32: on the busy
    2-core machine binary's ratio was 0.58 and 0.63 in runs where it came after grpc, 0.90 in one where it came
    first)."""
    times: dict[str, list[float]] = {label: [] for label in queries}
    cpu: dict[str, list[dict[str, float]]] = {label: [] for label in queries}
    labels = list(queries)
    for run in range(repeat):
        turn = run % len(labels)
        for label in labels[turn:] + labels[:turn]:
            seconds, rows = timed(queries[label], work)
            if rows != expected:
                raise SystemExit(f"{label}: the query read {rows} rows, expected {expected}")
            times[label].append(seconds)
            cpu[label].append(dict(LAST_CPU))
    for label, values in times.items():  # CPU of the best run: what the machine's load moves less than time
        used = cpu[label][values.index(min(values))]
        print(f"  {label}: CPU µs/row " + ", ".join(f"{name} {seconds / expected * 1e6:.2f}"
                                                   for name, seconds in sorted(used.items())))
    return {label: min(values) for label, values in times.items()}


def produce(url: str, topic: str, n: int, size: int, partitions: int, transport: str = "auto") -> float:
    if partitions > 1:
        admin = Admin(url)
        admin.create_partitioned_topic(topic, partitions)
        admin.close()
    client = Client(url, transport=transport)
    producer = client.create_producer(topic, batching_enabled=True, batching_max_messages=1000,
                                      max_pending_messages=100_000,
                                      block_if_queue_full=True)
    failures = []

    def done(result: Any, _msg_id: Any) -> None:
        if result is not Result.Ok:
            failures.append(result)
    payloads = [(b"%010d" % i).ljust(size, b"x")[:size] for i in range(1000)]
    started = time.perf_counter()
    for i in range(n):
        producer.send_async(payloads[i % 1000], done)
    producer.flush()
    elapsed = time.perf_counter() - started
    producer.close()
    client.close()
    if failures:
        raise SystemExit(f"producing failed: {failures[0]}")
    return elapsed


def bench_source(spark: Any, url: str, args: argparse.Namespace, work: str) -> dict[str, float]:
    topic = "persistent://public/default/spark-bench-source"
    seconds = produce(url, topic, args.messages, args.size, args.partitions)
    print(f"produced {args.messages:,} messages of {args.size} B to {args.partitions} partition(s) in "
          f"{seconds:.1f} s")

    queries = {"peer": noop_peer(spark, args.messages, args.partitions, args.size)}
    for transport in args.transports:
        queries[transport] = source_query(spark, url, topic, transport)
    for start_query in queries.values():  # warm-ups
        timed(start_query, work)
    best = best_of(queries, work, args.repeat, args.messages)
    figures: dict[str, float] = {}
    for transport in args.transports:
        figures.update(report(f"source_{transport}", args.messages, best[transport], best["peer"],
                              f"pulsarlike (transport={transport}) -> noop", "no-op Arrow source -> noop"))
    return figures


def source_query(spark: Any, url: str, topic: str, transport: str | None) -> Any:
    """A query reading ``topic`` from the earliest message into the ``noop`` sink (option ``transport``)."""
    def start(checkpoint: str) -> Any:
        reader = spark.readStream.format("pulsarlike").option("service.url", url).option("topic", topic)
        if transport is not None:
            reader = reader.option("transport", transport)
        return (reader.option("startingOffsets", "earliest").load()
                .writeStream.format("noop").option("checkpointLocation", checkpoint)
                .trigger(availableNow=True).start())
    return start


def noop_peer(spark: Any, rows: int, partitions: int, size: int) -> Any:
    def start(checkpoint: str) -> Any:
        return (spark.readStream.format("bench_arrow_noop").option("rows", str(rows))
                .option("partitions", str(partitions)).option("size", str(size)).load()
                .writeStream.format("noop").option("checkpointLocation", checkpoint)
                .trigger(availableNow=True).start())
    return start


def bench_lite(spark: Any, args: argparse.Namespace, work: str) -> dict[str, float]:
    """The message-id path: pulsar-lite's non-partitioned topic read over the binary protocol."""
    from pulsar_lite_compare import LITE, start_serving

    lite_dir = tempfile.mkdtemp(prefix="lite-", dir=work)
    proc, port = start_serving(LITE, lite_dir)
    url = f"pulsar://127.0.0.1:{port}"
    broker_pid = CPU_OF.get("broker")
    CPU_OF["broker"] = proc.pid
    try:
        topic = "persistent://public/default/spark-bench-lite"
        seconds = produce(url, topic, args.messages, args.size, 1, transport="binary")
        print(f"produced {args.messages:,} messages of {args.size} B to pulsar-lite in {seconds:.1f} s")
        queries = {"peer": noop_peer(spark, args.messages, 1, args.size),
                   "lite": source_query(spark, url, topic, None)}
        for start_query in queries.values():
            timed(start_query, work)
        best = best_of(queries, work, args.repeat, args.messages)
    finally:
        stop(proc)
        if broker_pid is not None:
            CPU_OF["broker"] = broker_pid
    return report("lite", args.messages, best["lite"], best["peer"], "pulsar-lite (message ids) -> noop",
                  "no-op Arrow source (1 partition) -> noop")


def bench_sink(spark: Any, url: str, args: argparse.Namespace, work: str) -> dict[str, float]:
    runs = [0]

    def rows() -> Any:
        return (spark.readStream.format("bench_arrow_noop").option("rows", str(args.sink_rows))
                .option("partitions", str(args.partitions)).option("size", str(args.size))
                .option("columns", "value").load())

    def pulsarlike(checkpoint: str) -> Any:
        runs[0] += 1
        return (rows().writeStream.format("pulsarlike").option("service.url", url)
                .option("topic", f"persistent://public/default/spark-bench-sink-{runs[0]}")
                .option("effectivelyOnce", "false" if args.at_least_once else "true")
                .option("checkpointLocation", checkpoint).trigger(availableNow=True).start())

    def peer(checkpoint: str) -> Any:
        return (rows().writeStream.format("bench_arrow_noop").option("checkpointLocation", checkpoint)
                .trigger(availableNow=True).start())

    timed(peer, work)
    timed(pulsarlike, work)
    ours_s, peer_s = best_of_pairs(pulsarlike, peer, work, args.repeat, args.sink_rows)
    admin = Admin(url)
    stored = admin.topic_stats(f"persistent://public/default/spark-bench-sink-{runs[0]}")["msgInCounter"]
    admin.close()
    if stored != args.sink_rows:
        raise SystemExit(f"the sink's topic holds {stored} messages, expected {args.sink_rows}")
    mode = "at-least-once" if args.at_least_once else "effectively-once"
    return report("sink", args.sink_rows, ours_s, peer_s, f"no-op source -> pulsarlike sink ({mode})",
                  "no-op source -> no-op Arrow writer")


def report(section: str, rows: int, ours_s: float, peer_s: float, ours: str, peer: str) -> dict[str, float]:
    ratio = peer_s / ours_s
    verdict = "meets" if ratio >= TARGET_RATIO else "MISSES"
    print(f"[{section}] {ours:48s} {rows / ours_s:>12,.0f} rows/s ({ours_s:.2f} s)")
    print(f"[{section}] {peer:48s} {rows / peer_s:>12,.0f} rows/s ({peer_s:.2f} s)")
    print(f"[{section}] ratio {ratio:.2f} ({verdict} the target >= {TARGET_RATIO})")
    return {f"{section}_rows_s": rows / ours_s, f"{section}_peer_rows_s": rows / peer_s,
            f"{section}_ratio": ratio}


def spark_session() -> Any:
    os.environ.update({"PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable,
                       "SPARK_LOCAL_IP": "127.0.0.1"})
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master("local[2]").appName("pulsarlike-bench")
             .config("spark.ui.enabled", "false").config("spark.driver.memory", "1g")
             .config("spark.sql.shuffle.partitions", "2").config("spark.python.worker.reuse", "true")
             .config("spark.ui.showConsoleProgress", "false")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    spark.dataSource.register(NoopArrowDataSource)
    return spark


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=2_000_000, help="source section (default 2,000,000)")
    parser.add_argument("--sink-rows", type=int, default=1_000_000, help="sink section (default 1,000,000)")
    parser.add_argument("--size", type=int, default=100, help="bytes per message (default 100)")
    parser.add_argument("--partitions", type=int, default=2,
                        help="topic partitions read, and Spark partitions written (default 2)")
    parser.add_argument("--sections", default=",".join(DEFAULT_SECTIONS),
                        help="source,sink,lite (default source,sink; lite: pulsar-lite's message-id path)")
    parser.add_argument("--transports", default=",".join(TRANSPORTS),
                        help="the source's option transport for each pulsarlike read (default grpc,binary)")
    parser.add_argument("--repeat", type=int, default=3,
                        help="timed runs of each query, peer and pulsarlike alternating; the best counts")
    parser.add_argument("--at-least-once", action="store_true", help="sink with effectivelyOnce=false")
    parser.add_argument("--json", action="store_true", help="print a JSON summary too")
    args = parser.parse_args(argv)
    sections = [s.strip() for s in args.sections.split(",") if s.strip()]
    args.transports = [t.strip() for t in args.transports.split(",") if t.strip()]
    unknown = sorted(set(sections) - set(SECTIONS)) + sorted(set(args.transports) - {"auto", *TRANSPORTS})
    if unknown or min(args.messages, args.sink_rows, args.size, args.partitions, args.repeat) < 1:
        parser.error(f"unknown sections or transports {unknown}" if unknown else "sizes and counts must be >= 1")
    work = tempfile.mkdtemp(prefix="pulsarlike-spark-bench-")
    broker, url = start_broker(work, [])
    CPU_OF.update(broker=broker.pid, spark=os.getpid())
    print(f"broker {url} (pid {broker.pid}), bench pid {os.getpid()}")
    spark = spark_session()
    figures: dict[str, float] = {}
    try:
        if "source" in sections:
            figures.update(bench_source(spark, url, args, work))
        if "sink" in sections:
            figures.update(bench_sink(spark, url, args, work))
        if "lite" in sections:
            figures.update(bench_lite(spark, args, work))
    finally:
        spark.stop()
        stop(broker)
        shutil.rmtree(work, ignore_errors=True)
    if args.json:
        print(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
