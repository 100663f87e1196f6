"""Option ``minPartitions`` (issue 34): a one-partition topic read by a batch query with ``local[2]``, once
with ``minPartitions=1`` (one Spark task: ``maxMessagesPerPartition`` is set to the topic's size, as a
backlog below the default 1,000,000 is planned) and once with ``minPartitions=2`` (two contiguous slices read
at the same time).

    python bench/spark_min_partitions.py [--messages 2000000] [--size 100] [--repeat 3]

``--messages`` messages of ``--size`` bytes are produced to a non-partitioned topic of a pulsarlike broker
process (``journalSyncMode=group``); then ``spark.read.format("pulsarlike")`` of the whole topic is written
to Spark's ``noop`` sink, alternating the two settings, ``--repeat`` times each after one untimed warm-up of
each. Prints the best time of each and the speed-up; the broker, the JVM and the Python workers share the
machine's cores. Nothing is asserted.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from spark_throughput import produce, spark_session  # noqa: E402
from throughput import start_broker, stop  # noqa: E402


def read_seconds(spark, url: str, topic: str, min_partitions: int, expected: int) -> float:
    df = (spark.read.format("pulsarlike").option("service.url", url).option("topic", topic)
          .option("minPartitions", str(min_partitions)).option("maxMessagesPerPartition", str(expected)).load())
    if df.rdd.getNumPartitions() != min_partitions:
        raise SystemExit(f"minPartitions={min_partitions} planned {df.rdd.getNumPartitions()} Spark partitions")
    started = time.perf_counter()
    df.write.format("noop").mode("overwrite").save()
    elapsed = time.perf_counter() - started
    if df.count() != expected:
        raise SystemExit(f"minPartitions={min_partitions}: read {df.count()} rows, expected {expected}")
    return elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=2_000_000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="spark-min-partitions-") as work:
        proc, url = start_broker(work, ["journalSyncMode=group"])
        try:
            topic = f"persistent://public/default/min-partitions-{time.monotonic_ns()}"
            seconds = produce(url, topic, args.messages, args.size, 1)
            print(f"produced {args.messages:,} x {args.size} B in {seconds:.1f} s")
            spark = spark_session()
            times: dict[int, list[float]] = {1: [], 2: []}
            for n in (1, 2):
                read_seconds(spark, url, topic, n, args.messages)  # warm-up
            for _ in range(args.repeat):
                for n in (1, 2):
                    times[n].append(read_seconds(spark, url, topic, n, args.messages))
            one, two = min(times[1]), min(times[2])
            print(f"minPartitions=1: {one:.2f} s ({args.messages / one:,.0f} rows/s); "
                  f"minPartitions=2: {two:.2f} s ({args.messages / two:,.0f} rows/s); speed-up {one / two:.2f}x")
            spark.stop()
        finally:
            stop(proc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
