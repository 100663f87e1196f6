"""Throughput and latency benchmark of pulsarlike, with Redis Streams as the peer (ARCHITECTURE.md §9).

Run it with ``make bench`` or ``python bench/throughput.py [--messages N] [--size B] [--latency-messages N]
[--skip-redis] [--json] [--set journalSyncMode=never ...]`` (``--set`` passes broker configuration, for
diagnosis only; the reported figures use the default configuration). ``--messages 200000`` iterates faster.

What it measures, in this order:

1. **Produce**: one producer, persistent topic, batched ``send_async`` (1000 messages per batch) then
   ``flush()``. ``max_pending_messages`` is raised to 100,000 with ``block_if_queue_full=True``, so the figure
   is the pipeline's throughput, not the pending-queue limit.
2. **Consume**: separately, after the topic is fully produced (so the two figures do not interfere), one
   consumer subscribes at ``Earliest`` and calls ``receive()`` once per message, ``acknowledge_cumulative``
   every 1000 messages. Subscribing is inside the timed window.
3. **End-to-end latency** at a low rate: sync ``send()`` of single messages at ``--latency-rate`` msg/s on a
   fresh topic while a consumer thread receives; latency = receive time - send start time, both
   ``time.perf_counter_ns()`` in this process, matched by the sequence number carried in the payload.
4. **Redis Streams peer**: a ``redis-server`` subprocess (in memory, ``--save '' --appendonly no``); redis-py
   pipelined ``XADD`` in batches of 1000, then ``XREADGROUP COUNT 1000`` + ``XACK`` per batch.

The broker runs as a separate process (``python -m broker_core.cli broker --port 0``, default
``journalSyncMode=group``: receipts wait for fsync) so client and broker each get a core. Redis runs without
any persistence, so the ratio favours Redis. Figures are printed next to the targets; nothing is asserted.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from connector import Client, InitialPosition, Result  # noqa: E402

BATCH = 1000
TARGETS = {  # name: (threshold, "min" means figure >= threshold, "max" means figure < threshold)
    "produce_msg_s": (1_000_000, "min"),
    "produce_vs_redis": (4.0, "min"),
    "consume_msg_s": (1_000_000, "min"),
    "e2e_p50_ms": (1.0, "max"),
    "e2e_p99_ms": (5.0, "max"),
}


def start_broker(data_dir: str, settings: list[str]) -> tuple[subprocess.Popen, str]:
    """Start ``pulsarlike broker --port 0 [--set k=v ...]``; return (process, URL) from its first line."""
    log = open(os.path.join(data_dir, "broker.log"), "wb")  # noqa: SIM115 - lives as long as the process
    proc = subprocess.Popen(
        [sys.executable, "-m", "broker_core.cli", "broker", "--data-dir", os.path.join(data_dir, "data"),
         "--port", "0", "--log-level", "WARNING", *(a for kv in settings for a in ("--set", kv))],
        cwd=REPO, stdout=subprocess.PIPE, stderr=log, text=True)
    line = proc.stdout.readline().strip()
    if not line.startswith("pulsarlike broker listening on "):
        proc.kill()
        raise SystemExit(f"broker did not start: {line!r}; see {log.name}")
    return proc, "pulsar://" + line.rsplit(" ", 1)[1]


def stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def bench_produce(client: Client, topic: str, n: int, payload: bytes) -> float:
    producer = client.create_producer(
        topic, batching_enabled=True, batching_max_messages=BATCH, batching_max_publish_delay_ms=10,
        max_pending_messages=100_000, block_if_queue_full=True)
    failures = []

    def done(result, _msg_id) -> None:
        if result is not Result.Ok:  # identity: the cheapest check, the callback runs per message
            failures.append(result)

    start = time.perf_counter()
    for _ in range(n):
        producer.send_async(payload, done)
    producer.flush()
    elapsed = time.perf_counter() - start
    producer.close()
    if failures:
        print(f"  WARNING: {len(failures)} send_async callbacks reported {failures[0]}")
    return n / elapsed


def bench_consume(client: Client, topic: str, n: int) -> float:
    start = time.perf_counter()
    consumer = client.subscribe(topic, "bench-consume", initial_position=InitialPosition.Earliest,
                                receiver_queue_size=BATCH * 10)
    msg = None
    for i in range(1, n + 1):
        msg = consumer.receive(timeout_millis=30_000)
        if i % BATCH == 0:
            consumer.acknowledge_cumulative(msg)
    if n % BATCH:
        consumer.acknowledge_cumulative(msg)
    elapsed = time.perf_counter() - start
    consumer.close()
    return n / elapsed


def bench_latency(client: Client, topic: str, n: int, size: int, rate: float) -> tuple[float, float]:
    """Sync sends at ``rate`` msg/s while a thread receives; returns (p50, p99) in ms."""
    consumer = client.subscribe(topic, "bench-latency", initial_position=InitialPosition.Earliest)
    producer = client.create_producer(topic)
    sent, received = [0] * n, [0] * n

    def receive_all() -> None:
        for _ in range(n):
            msg = consumer.receive(timeout_millis=30_000)
            received[int.from_bytes(msg.data()[:8], "big")] = time.perf_counter_ns()
            consumer.acknowledge_cumulative(msg)

    receiver = threading.Thread(target=receive_all, daemon=True)
    receiver.start()
    padding = b"x" * max(0, size - 8)
    interval, next_at = 1.0 / rate, time.perf_counter()
    for seq in range(n):
        next_at += interval
        sent[seq] = time.perf_counter_ns()
        producer.send(seq.to_bytes(8, "big") + padding)
        pause = next_at - time.perf_counter()
        if pause > 0:
            time.sleep(pause)
    receiver.join(timeout=60)
    producer.close()
    consumer.close()
    latencies = sorted((r - s) / 1e6 for s, r in zip(sent, received) if r)
    if len(latencies) < n:
        print(f"  WARNING: only {len(latencies)}/{n} latency messages received")
    return latencies[len(latencies) // 2], latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def bench_redis(n: int, payload: bytes) -> tuple[float, float]:
    """Returns (produce msg/s, consume msg/s) of Redis Streams through redis-py."""
    import redis

    port = free_port()
    proc = subprocess.Popen(["redis-server", "--bind", "127.0.0.1", "--port", str(port), "--save", "",
                             "--appendonly", "no"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        r = redis.Redis(host="127.0.0.1", port=port)
        deadline = time.monotonic() + 10
        while True:
            try:
                r.ping()
                break
            except redis.ConnectionError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.02)
        start = time.perf_counter()
        for first in range(0, n, BATCH):
            pipe = r.pipeline(transaction=False)
            for _ in range(min(BATCH, n - first)):
                pipe.xadd("bench", {"d": payload})
            pipe.execute()
        produce = n / (time.perf_counter() - start)

        start = time.perf_counter()
        r.xgroup_create("bench", "g", id="0")
        done = 0
        while done < n:
            [(_stream, entries)] = r.xreadgroup("g", "c", {"bench": ">"}, count=BATCH)
            r.xack("bench", "g", *[entry_id for entry_id, _fields in entries])
            done += len(entries)
        consume = n / (time.perf_counter() - start)
        return produce, consume
    finally:
        stop(proc)


def verdict(name: str, value: float | None) -> str:
    if value is None:
        return "n/a"
    threshold, kind = TARGETS[name]
    met = value >= threshold if kind == "min" else value < threshold
    return ("MET" if met else "NOT MET") + f" (target {'>=' if kind == 'min' else '<'} {threshold:,})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=1_000_000, help="messages to produce and consume")
    parser.add_argument("--size", type=int, default=100, help="payload size in bytes")
    parser.add_argument("--latency-messages", type=int, default=2000, help="sync sends for e2e latency")
    parser.add_argument("--latency-rate", type=float, default=200.0, help="sync sends per second")
    parser.add_argument("--skip-redis", action="store_true", help="do not run the Redis Streams peer")
    parser.add_argument("--json", action="store_true", help="also print a JSON summary")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="broker configuration for diagnosis, e.g. journalSyncMode=never (repeatable)")
    args = parser.parse_args()
    n, payload = args.messages, b"x" * args.size
    results: dict[str, float | None] = dict.fromkeys(
        ["produce_msg_s", "consume_msg_s", "e2e_p50_ms", "e2e_p99_ms", "redis_produce_msg_s",
         "redis_consume_msg_s", "produce_vs_redis", "consume_vs_redis"])

    tmp = tempfile.mkdtemp(prefix="pulsarlike-bench-")
    broker, url = start_broker(tmp, args.set)
    print(f"pulsarlike broker pid {broker.pid} at {url} (separate process, "
          f"{' '.join(args.set) or 'default config: journalSyncMode=group'}); bench pid {os.getpid()}")
    print(f"{n:,} messages of {args.size} B, batches of {BATCH}; max_pending_messages=100000, "
          "block_if_queue_full=True (measures throughput, not the pending-queue limit)")
    client = Client(url)
    try:
        results["produce_msg_s"] = bench_produce(client, "bench-throughput", n, payload)
        print(f"produce  {results['produce_msg_s']:>12,.0f} msg/s  send_async + flush, one producer")
        results["consume_msg_s"] = bench_consume(client, "bench-throughput", n)
        print(f"consume  {results['consume_msg_s']:>12,.0f} msg/s  receive() per message from the fully "
              f"produced topic (measured after produce), ack_cumulative every {BATCH}")
        results["e2e_p50_ms"], results["e2e_p99_ms"] = bench_latency(
            client, "bench-latency", args.latency_messages, args.size, args.latency_rate)
        print(f"e2e      p50 {results['e2e_p50_ms']:.3f} ms, p99 {results['e2e_p99_ms']:.3f} ms  "
              f"({args.latency_messages} sync send() at {args.latency_rate:g} msg/s, receive - send start)")
    finally:
        client.close()
        stop(broker)
        shutil.rmtree(tmp, ignore_errors=True)

    if args.skip_redis:
        print("redis    skipped (--skip-redis)")
    elif shutil.which("redis-server") is None:
        print("redis    skipped: redis-server not found; install it with `apt-get install redis-server`")
    else:
        results["redis_produce_msg_s"], results["redis_consume_msg_s"] = bench_redis(n, payload)
        results["produce_vs_redis"] = results["produce_msg_s"] / results["redis_produce_msg_s"]
        results["consume_vs_redis"] = results["consume_msg_s"] / results["redis_consume_msg_s"]
        print(f"redis    produce {results['redis_produce_msg_s']:>10,.0f} msg/s  (pipelined XADD x{BATCH}, "
              "in memory, no persistence)")
        print(f"redis    consume {results['redis_consume_msg_s']:>10,.0f} msg/s  (XREADGROUP COUNT {BATCH} + XACK)")
        print(f"ratio    produce {results['produce_vs_redis']:.2f}x Redis, consume "
              f"{results['consume_vs_redis']:.2f}x Redis")

    print("\ntargets")
    for name in TARGETS:
        value = results[name]
        shown = "-" if value is None else f"{value:,.3f}" if value < 100 else f"{value:,.0f}"
        print(f"  {name:<18} {shown:>12}  {verdict(name, value)}")
    if args.json:
        print(json.dumps({"messages": n, "size": args.size, "broker_settings": args.set, **results,
                          "targets_met": {k: verdict(k, results[k]).startswith("MET") for k in TARGETS
                                          if results[k] is not None}}, indent=2))


if __name__ == "__main__":
    main()
