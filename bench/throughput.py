"""Throughput and latency benchmark of pulsarlike, with Redis Streams as the peer (ARCHITECTURE.md §9).

Run it with ``make bench`` or ``python bench/throughput.py [--messages N] [--size B] [--latency-messages N]
[--skip-redis] [--json] [--set journalSyncMode=never ...] [--sections base,codecs,key-based,chunked]
[--skip SECTION ...]`` (``--set`` passes broker configuration, for diagnosis only; the reported figures use
the default configuration). ``--messages 200000`` iterates faster.

What it measures, in this order (sections 1-4 are ``base``):

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
5. **Codecs** (``codecs``): produce then consume ``--codec-messages`` JSON-like messages of ~1 KB (1,000
   distinct documents, cycled) with each ``CompressionType``, as in 1-2 but with the default
   ``batching_max_allowed_size_in_bytes`` (128 KiB: ~125 messages per batch); msg/s, MB/s of payload and the
   ratio to ``NONE``. Target: LZ4 costs at most 15% of produce throughput.
6. **Key-based batching** (``key-based``): ``--key-messages`` messages of ``--size`` B over 1,000 distinct
   partition keys, ``BatchingType.KeyBased`` against ``BatchingType.Default`` (same keys); produce msg/s and
   entries written. With 1,000 keys and batches of 1,000 messages, most key batches hold one message.
8. **TLS + token** (``security``): a second broker with ``brokerServicePortTls`` (certificates made for the
   run), token authentication and authorization on; ``--security-messages`` produced then consumed as in 1-2
   over ``pulsar+ssl://`` with ``AuthenticationToken``, and the same over the first broker's plain port in the
   same run; the ratio TLS+token / plain (target >= 0.8).
7. **Chunked message** (``chunked``): a ``--chunk-mib`` MiB (default 50) random message, ``chunking_enabled``,
   sent with ``send()`` and received whole by a consumer that subscribed first; round-trip time (send start
   to ``receive()`` return) of each of ``--chunk-rounds`` rounds, and the median.

The broker runs as a separate process (``python -m broker_core.cli broker --port 0``, default
``journalSyncMode=group``: receipts wait for fsync) so client and broker each get a core. Redis runs without
any persistence, so the ratio favours Redis. Figures are printed next to the targets; nothing is asserted.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from connector import BatchingType, Client, CompressionType, InitialPosition, Result  # noqa: E402

BATCH = 1000
SECTIONS = ("base", "codecs", "key-based", "chunked", "security")
TARGETS = {  # name: (threshold, "min" means figure >= threshold, "max" means figure < threshold)
    "produce_msg_s": (1_000_000, "min"),
    "produce_vs_redis": (4.0, "min"),
    "consume_msg_s": (1_000_000, "min"),
    "e2e_p50_ms": (1.0, "max"),
    "e2e_p99_ms": (5.0, "max"),
    "lz4_produce_vs_none": (0.85, "min"),
    "tls_token_produce_vs_plain": (0.8, "min"),
    "tls_token_consume_vs_plain": (0.8, "min"),
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


def bench_produce(client: Client, topic: str, n: int, payload: bytes, **options) -> float:
    """``send_async`` of ``n`` messages then ``flush()``; ``payload`` or, when ``options`` has ``payloads``
    (a list) or ``keys``, those cycled."""
    payloads, keys = options.pop("payloads", None), options.pop("keys", None)
    producer = client.create_producer(
        topic, batching_enabled=True, batching_max_messages=BATCH, batching_max_publish_delay_ms=10,
        max_pending_messages=100_000, block_if_queue_full=True, **options)
    failures = []

    def done(result, _msg_id) -> None:
        if result is not Result.Ok:  # identity: the cheapest check, the callback runs per message
            failures.append(result)

    start = time.perf_counter()
    if payloads is not None:
        count = len(payloads)
        for i in range(n):
            producer.send_async(payloads[i % count], done)
    elif keys is not None:
        count = len(keys)
        for i in range(n):
            producer.send_async(payload, done, partition_key=keys[i % count])
    else:
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
    try:
        return measure_latency(producer, consumer, n, size, rate)
    finally:
        producer.close()
        consumer.close()


def measure_latency(producer: Any, consumer: Any, n: int, size: int, rate: float) -> tuple[float, float]:
    """(p50, p99) in ms of ``n`` sync sends at ``rate`` msg/s, received on a thread: from the start of
    ``send`` to ``receive`` returning. Takes pulsarlike's producer and consumer or pulsar-client's (one API)."""
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
    latencies = sorted((r - s) / 1e6 for s, r in zip(sent, received) if r)
    if len(latencies) < n:
        print(f"  WARNING: only {len(latencies)}/{n} latency messages received")
    return latencies[len(latencies) // 2], latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))]


def json_documents(count: int = 1000, size: int = 1024) -> list[bytes]:
    """``count`` distinct JSON-like documents of about ``size`` bytes (deterministic)."""
    rng = random.Random(42)
    words = ["alpha", "beta", "gamma", "delta", "order", "invoice", "shipped", "pending", "paris",
             "berlin", "tokyo", "lima", "card", "transfer", "refund", "premium", "basic", "mobile"]
    docs = []
    for i in range(count):
        doc = {"id": i, "user": f"user-{rng.randrange(100_000)}", "ts": 1_700_000_000_000 + i * 137,
               "status": rng.choice(words), "amount": round(rng.uniform(1, 5000), 2), "items": []}
        while len(json.dumps(doc)) < size - 60:
            doc["items"].append({"sku": f"SKU-{rng.randrange(10_000):05d}", "qty": rng.randrange(1, 9),
                                 "tag": rng.choice(words), "price": round(rng.uniform(1, 300), 2)})
        docs.append(json.dumps(doc).encode())
    return docs


def bench_codecs(client: Client, n: int) -> dict[str, tuple[float, float, float]]:
    """Per codec: (produce msg/s, consume msg/s, payload MB/s of produce)."""
    docs = json_documents()
    mean_size = sum(map(len, docs)) / len(docs)
    out = {}
    for codec in (CompressionType.NONE, CompressionType.LZ4, CompressionType.ZLib, CompressionType.ZSTD,
                  CompressionType.SNAPPY):
        topic = f"bench-codec-{codec.name.lower()}"
        produce = bench_produce(client, topic, n, b"", payloads=docs, compression_type=codec,
                                batching_max_allowed_size_in_bytes=128 * 1024)
        out[codec.name] = (produce, bench_consume(client, topic, n), produce * mean_size / 1e6)
    return out


def bench_key_based(client: Client, n: int, payload: bytes, url: str) -> dict[str, tuple[float, float]]:
    """Per batching type, with 1,000 keys: (produce msg/s, stored bytes per message -- entry overhead)."""
    from connector import Admin

    keys = [f"key-{i}" for i in range(1000)]
    out = {}
    with Admin(url) as admin:
        for batching in (BatchingType.Default, BatchingType.KeyBased):
            topic = f"bench-keys-{batching.name.lower()}"
            rate = bench_produce(client, topic, n, payload, keys=keys, batching_type=batching)
            out[batching.name] = (rate, admin.topic_stats(topic)["storageSize"] / n)
    return out


def bench_chunked(client: Client, mib: int, rounds: int) -> list[float]:
    """Round-trip seconds of a ``mib`` MiB chunked message, ``rounds`` times."""
    topic = "bench-chunked"
    consumer = client.subscribe(topic, "bench-chunked", initial_position=InitialPosition.Earliest)
    producer = client.create_producer(topic, chunking_enabled=True, batching_enabled=False,
                                      send_timeout_millis=120_000)
    payload = os.urandom(mib * 1024 * 1024)
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        producer.send(payload)
        msg = consumer.receive(timeout_millis=120_000)
        times.append(time.perf_counter() - start)
        if len(msg.data()) != len(payload):
            print(f"  WARNING: received {len(msg.data())} bytes, sent {len(payload)}")
        consumer.acknowledge(msg)
    producer.close()
    consumer.close()
    return times


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
    parser.add_argument("--sections", default=",".join(SECTIONS),
                        help=f"comma-separated sections to run, of {', '.join(SECTIONS)} (default: all)")
    parser.add_argument("--skip", action="append", default=[], choices=SECTIONS, metavar="SECTION",
                        help="a section not to run (repeatable)")
    parser.add_argument("--codec-messages", type=int, default=100_000, help="~1 KB messages per codec")
    parser.add_argument("--key-messages", type=int, default=200_000, help="messages per batching type")
    parser.add_argument("--chunk-mib", type=int, default=50, help="size of the chunked message in MiB")
    parser.add_argument("--chunk-rounds", type=int, default=3, help="chunked round trips to time")
    parser.add_argument("--security-messages", type=int, default=500_000,
                        help="messages produced and consumed per transport in the security section")
    args = parser.parse_args()
    sections = [s for s in args.sections.split(",") if s and s not in args.skip]
    unknown = set(sections) - set(SECTIONS)
    if unknown:
        parser.error(f"--sections: unknown {', '.join(sorted(unknown))}; use {', '.join(SECTIONS)}")
    n, payload = args.messages, b"x" * args.size
    results: dict[str, float | None] = dict.fromkeys(
        ["produce_msg_s", "consume_msg_s", "e2e_p50_ms", "e2e_p99_ms", "redis_produce_msg_s",
         "redis_consume_msg_s", "produce_vs_redis", "consume_vs_redis", "lz4_produce_vs_none",
         "tls_token_produce_vs_plain", "tls_token_consume_vs_plain"])

    tmp = tempfile.mkdtemp(prefix="pulsarlike-bench-")
    broker, url = start_broker(tmp, args.set)
    print(f"pulsarlike broker pid {broker.pid} at {url} (separate process, "
          f"{' '.join(args.set) or 'default config: journalSyncMode=group'}); bench pid {os.getpid()}")
    print(f"sections: {', '.join(sections)}")
    client = Client(url)
    try:
        if "base" in sections:
            run_base(client, args, n, payload, results)
        if "codecs" in sections:
            run_codecs(client, args.codec_messages, results)
        if "key-based" in sections:
            run_key_based(client, args.key_messages, payload, url, results)
        if "chunked" in sections:
            times = bench_chunked(client, args.chunk_mib, args.chunk_rounds)
            results["chunked_round_trip_s"] = statistics.median(times)
            print(f"chunked  {args.chunk_mib} MiB message round trip (send() start to receive() return): "
                  f"median {results['chunked_round_trip_s']:.2f} s, "
                  f"{args.chunk_mib / results['chunked_round_trip_s']:.0f} MiB/s; rounds "
                  + ", ".join(f"{t:.2f} s" for t in times))
        if "security" in sections:
            run_security(client, tmp, args.security_messages, payload, results)
    finally:
        client.close()
        stop(broker)
        shutil.rmtree(tmp, ignore_errors=True)

    if "base" not in sections:
        pass
    elif args.skip_redis:
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
        print(f"  {name:<20} {shown:>12}  {verdict(name, value)}")
    if args.json:
        print(json.dumps({"messages": n, "size": args.size, "broker_settings": args.set,
                          "sections": sections, **results,
                          "targets_met": {k: verdict(k, results[k]).startswith("MET") for k in TARGETS
                                          if results[k] is not None}}, indent=2))


def run_base(client: Client, args: argparse.Namespace, n: int, payload: bytes, results: dict) -> None:
    print(f"{n:,} messages of {args.size} B, batches of {BATCH}; max_pending_messages=100000, "
          "block_if_queue_full=True (measures throughput, not the pending-queue limit)")
    results["produce_msg_s"] = bench_produce(client, "bench-throughput", n, payload)
    print(f"produce  {results['produce_msg_s']:>12,.0f} msg/s  send_async + flush, one producer")
    results["consume_msg_s"] = bench_consume(client, "bench-throughput", n)
    print(f"consume  {results['consume_msg_s']:>12,.0f} msg/s  receive() per message from the fully "
          f"produced topic (measured after produce), ack_cumulative every {BATCH}")
    results["e2e_p50_ms"], results["e2e_p99_ms"] = bench_latency(
        client, "bench-latency", args.latency_messages, args.size, args.latency_rate)
    print(f"e2e      p50 {results['e2e_p50_ms']:.3f} ms, p99 {results['e2e_p99_ms']:.3f} ms  "
          f"({args.latency_messages} sync send() at {args.latency_rate:g} msg/s, receive - send start)")


def run_codecs(client: Client, n: int, results: dict) -> None:
    figures = bench_codecs(client, n)
    produce_none, consume_none, _ = figures["NONE"]
    print(f"codecs   {n:,} JSON-like messages of ~1 KB per codec, 128 KiB batches; ratio = msg/s vs NONE")
    for name, (produce, consume, mb_s) in figures.items():
        results[f"{name.lower()}_produce_msg_s"] = produce
        results[f"{name.lower()}_consume_msg_s"] = consume
        print(f"  {name:<7} produce {produce:>10,.0f} msg/s {mb_s:>7,.1f} MB/s  ratio {produce / produce_none:.2f}"
              f"   consume {consume:>10,.0f} msg/s  ratio {consume / consume_none:.2f}")
    results["lz4_produce_vs_none"] = figures["LZ4"][0] / produce_none


def run_key_based(client: Client, n: int, payload: bytes, url: str, results: dict) -> None:
    figures = bench_key_based(client, n, payload, url)
    default_rate = figures["Default"][0]
    print(f"keys     {n:,} messages of {len(payload)} B over 1,000 partition keys, batches of {BATCH}")
    for name, (rate, stored) in figures.items():
        results[f"key_{name.lower()}_produce_msg_s"] = rate
        print(f"  {name:<8} produce {rate:>10,.0f} msg/s  ratio {rate / default_rate:.2f}  "
              f"{stored:,.0f} stored bytes per message")


def run_security(plain: Client, tmp: str, n: int, payload: bytes, results: dict) -> None:
    """Produce and consume over the plain port, then over TLS with a token on a broker that requires it."""
    import base64

    sys.path.insert(0, str(REPO / "tests"))
    from security_certs import make_tls  # noqa: E402 - the tests' certificate maker

    from broker_core.security.tokens import create_token, generate_secret_key
    from connector import AuthenticationToken

    tls = make_tls(Path(tmp) / "tls")
    secret = generate_secret_key()
    settings = [f"{k}={v}" for k, v in tls.broker_settings().items()] + [
        "brokerServicePortTls=0", "authenticationEnabled=true", "authenticationProviders=token",
        "authorizationEnabled=true", "superUserRoles=bench",
        "tokenSecretKey=data:;base64," + base64.b64encode(secret).decode()]
    os.makedirs(os.path.join(tmp, "secured"), exist_ok=True)
    secured, _ = start_broker(os.path.join(tmp, "secured"), settings)
    tls_url = secured.stdout.readline().strip().rsplit(" ", 1)[1]
    client = Client(tls_url, tls_trust_certs_file_path=tls.ca,
                    authentication=AuthenticationToken(create_token(secret, "bench")))
    try:
        figures = {}
        for name, c in (("plain", plain), ("tls+token", client)):
            produce = bench_produce(c, f"bench-security-{name.replace('+', '-')}", n, payload)
            consume = bench_consume(c, f"bench-security-{name.replace('+', '-')}", n)
            figures[name] = (produce, consume)
    finally:
        client.close()
        stop(secured)
    (p_plain, c_plain), (p_tls, c_tls) = figures["plain"], figures["tls+token"]
    results["tls_token_produce_vs_plain"] = p_tls / p_plain
    results["tls_token_consume_vs_plain"] = c_tls / c_plain
    print(f"security {n:,} messages of {len(payload)} B per transport (TLS terminated in the relay process, "
          "token checked per stream)")
    print(f"  plain      produce {p_plain:>10,.0f} msg/s   consume {c_plain:>10,.0f} msg/s")
    print(f"  tls+token  produce {p_tls:>10,.0f} msg/s   consume {c_tls:>10,.0f} msg/s   ratio produce "
          f"{p_tls / p_plain:.2f}, consume {c_tls / c_plain:.2f}")


if __name__ == "__main__":
    main()
