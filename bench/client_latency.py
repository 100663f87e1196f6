"""Our client over each transport against the official client (issue 23's benchmark): latency and throughput.

Run it with ``python bench/client_latency.py [--messages N] [--size B] [--latency-messages N] [--warmup N]
[--latency-rate R] [--only raw,grpc,binary,official,lite,official-lite] [--rounds N] [--profile] [--json]
[--set KEY=VALUE ...]``.

One pulsarlike broker process (``journalSyncMode`` default, as bench/throughput.py starts it) serves, one after
the other on their own topics: our ``connector.Client`` with ``transport="grpc"``, the same with
``transport="binary"``, and the official ``pulsar-client`` (C++ core, binary protocol). Then pulsar-lite (started
as bench/pulsar_lite_compare.py starts it) serves our client over the binary transport and the official client
(``official-lite``: a broker in Rust that answers before any fsync, and the C++ client -- what this machine's
loopback, scheduler and a non-Python path give, the floor any client's e2e here stands on). For each:

- **raw socket**, pulsarlike only: the latency workload with no client library (a prebuilt SEND frame on one
  socket, a blocking read of its MESSAGE on another): about the broker's part of every client's e2e.
- **e2e latency**: sync ``send`` of one ``--size`` message at a time (batching off) at ``--latency-rate``
  msg/s while a thread ``receive``-s (cumulative ack per message); the time from just before ``send`` to
  ``receive`` returning, p50 and p99 over ``--latency-messages`` messages after ``--warmup`` unmeasured ones.
- **produce**: ``send_async`` of ``--messages`` messages with batching on (1,000 per batch,
  ``block_if_queue_full``), then ``flush``; msg/s.
- **consume**: ``receive`` of those messages from the earliest, ``acknowledge_cumulative`` every 1,000; msg/s.
- **CPU µs per message** of produce and consume, of this process (the client) and of the broker's process tree
  (with the worker that relays gRPC): on a shared machine msg/s moves with the load; CPU per message much less.

Targets (issue 23): our e2e p50 <= 0.5 ms against pulsarlike and no worse than the official client's through the
same broker; binary throughput >= 0.9x gRPC (produce and consume). ``--rounds N`` interleaves N runs of each
client (pulsar-lite's after, on its own process) and prints the medians: on this shared machine single runs vary
~2x. ``--profile`` runs the binary latency workload once more under cProfile (every thread,
``threading.setprofile``) and prints the functions with the most own time. Nothing is asserted.
"""
from __future__ import annotations

import argparse
import cProfile
import io
import json
import pstats
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

import pulsar  # noqa: E402

import throughput  # noqa: E402  (broker start/stop, our produce/consume workloads)
from connector import Client, InitialPosition  # noqa: E402
from pulsar_lite_compare import tree_cpu  # noqa: E402
from broker_core.protocol import pulsar_api_pb2  # noqa: E402
from broker_core.protocol.codec import encode_entry  # noqa: E402
from pulsar_protocol import T, _frame, _raw_connect, cmd, official_consume, official_produce, own_cpu  # noqa: E402

WHO = ("raw", "grpc", "binary", "official", "lite", "official-lite")
LABELS = {"raw": "raw socket, no client", "grpc": "ours, gRPC", "binary": "ours, binary",
          "official": "pulsar-client", "lite": "ours, binary -> pulsar-lite",
          "official-lite": "pulsar-client -> pulsar-lite"}


def latency(producer: Any, consumer: Any, n: int, warmup: int, size: int, rate: float) -> tuple[float, float]:
    """(p50, p99) in ms of ``n`` sync sends after ``warmup`` ones (module doc); either client's API."""
    total = warmup + n
    sent, received = [0] * total, [0] * total
    done = threading.Event()

    def receive_all() -> None:
        for _ in range(total):
            msg = consumer.receive(30_000)
            received[int.from_bytes(msg.data()[:8], "big")] = time.perf_counter_ns()
            consumer.acknowledge_cumulative(msg)
        done.set()

    receiver = threading.Thread(target=receive_all, daemon=True)
    receiver.start()
    padding = b"x" * max(0, size - 8)
    interval, next_at = 1.0 / rate, time.perf_counter()
    for seq in range(total):
        next_at += interval
        sent[seq] = time.perf_counter_ns()
        producer.send(seq.to_bytes(8, "big") + padding)
        pause = next_at - time.perf_counter()
        if pause > 0:
            time.sleep(pause)
    done.wait(60)
    measured = sorted((r - s) / 1e6 for s, r in list(zip(sent, received))[warmup:] if r)
    if len(measured) < n:
        print(f"  WARNING: only {len(measured)}/{n} latency messages received")
    if not measured:
        return float("nan"), float("nan")
    return measured[len(measured) // 2], measured[min(len(measured) - 1, int(len(measured) * 0.99))]


NAN = float("nan")


def measured(what: str, workload: Any, *args: Any) -> Any:
    """``workload(*args)``, or NaN(s) and the error printed: one failing workload does not end the run."""
    try:
        return workload(*args)
    except Exception as exc:  # a benchmark reports, it does not stop at the first failure
        print(f"  {what} FAILED: {type(exc).__name__}: {str(exc)[:300]}")
        return (NAN, NAN) if workload is latency or workload is ours_latency else NAN


def ours_latency(client: Client, prefix: str, args: argparse.Namespace) -> tuple[float, float]:
    consumer = client.subscribe(f"{prefix}-latency", "bench-latency", initial_position=InitialPosition.Earliest)
    producer = client.create_producer(f"{prefix}-latency", batching_enabled=False)
    try:
        return latency(producer, consumer, args.latency_messages, args.warmup, args.size, args.latency_rate)
    finally:
        producer.close()
        consumer.close()


def with_cpu(results: dict[str, float], what: str, pid: int, n: int, workload: Any, *args: Any) -> None:
    """``results[what + "_msg_s"]`` from ``workload(*args)``, and the CPU µs per message it cost this process
    (the client) and the broker process: figures that the machine's load moves less than msg/s."""
    client, broker = own_cpu(), tree_cpu(pid)  # the broker's process tree: its gRPC relay worker too
    results[f"{what}_msg_s"] = measured(what, workload, *args)
    results[f"{what}_client_us"] = (own_cpu() - client) / n * 1e6
    results[f"{what}_broker_us"] = (tree_cpu(pid) - broker) / n * 1e6


def run_ours(url: str, pid: int, transport: str, args: argparse.Namespace, prefix: str) -> dict[str, float]:
    payload, r = b"x" * args.size, {}
    with Client(url, transport=transport) as client:
        r["p50_ms"], r["p99_ms"] = measured(f"{prefix} latency", ours_latency, client, prefix, args)
        with_cpu(r, "produce", pid, args.messages, throughput.bench_produce, client, f"{prefix}-tput", args.messages,
                 payload)
        with_cpu(r, "consume", pid, args.messages, throughput.bench_consume, client, f"{prefix}-tput", args.messages)
    return r


def run_raw(url: str, pid: int, args: argparse.Namespace, prefix: str = "raw") -> dict[str, float]:
    """About the broker's own e2e latency: no client library, one socket SENDs a prebuilt frame, another blocks
    reading its MESSAGE (what a client adds is about its e2e minus this). Latency only."""
    address, topic = url[len("pulsar://"):], f"{prefix}-latency"
    producer, produced = _raw_connect(address)
    consumer, delivered = _raw_connect(address)
    try:
        producer.sendall(_frame(T(type=T.PRODUCER, producer=cmd.CommandProducer(topic=topic, producer_id=1,
                                                                                request_id=1))))
        produced.next()
        consumer.sendall(_frame(T(type=T.SUBSCRIBE, subscribe=cmd.CommandSubscribe(
            topic=topic, subscription="raw", subType=cmd.CommandSubscribe.Exclusive, consumer_id=1, request_id=2))))
        delivered.next()
        consumer.sendall(_frame(T(type=T.FLOW, flow=cmd.CommandFlow(consumer_id=1, messagePermits=1 << 30))))
        took, interval = [], 1.0 / args.latency_rate
        for seq in range(args.warmup + args.latency_messages):
            metadata = pulsar_api_pb2.MessageMetadata(producer_name="raw", sequence_id=seq,
                                                      publish_time=int(time.time() * 1000))
            frame = _frame(T(type=T.SEND, send=cmd.CommandSend(producer_id=1, sequence_id=seq, num_messages=1)),
                           encode_entry(metadata, b"x" * args.size))
            start = time.perf_counter_ns()
            producer.sendall(frame)
            while delivered.next()[0].type != T.MESSAGE:
                pass
            took.append((time.perf_counter_ns() - start) / 1e6)
            produced.next()  # its receipt
            time.sleep(interval)
    finally:
        producer.close()
        consumer.close()
    took = sorted(took[args.warmup:])
    return {"p50_ms": took[len(took) // 2], "p99_ms": took[min(len(took) - 1, int(len(took) * 0.99))],
            **{f"{w}_{k}": NAN for w in ("produce", "consume") for k in ("msg_s", "client_us", "broker_us")}}


def run_official(url: str, pid: int, args: argparse.Namespace, prefix: str = "official") -> dict[str, float]:
    client, r = pulsar.Client(url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error)), {}
    try:
        consumer = client.subscribe(f"{prefix}-latency", "bench-latency",
                                    initial_position=pulsar.InitialPosition.Earliest)
        producer = client.create_producer(f"{prefix}-latency", batching_enabled=False)
        r["p50_ms"], r["p99_ms"] = latency(producer, consumer, args.latency_messages, args.warmup, args.size,
                                           args.latency_rate)
        producer.close()
        consumer.close()
        with_cpu(r, "produce", pid, args.messages, official_produce, client, f"{prefix}-tput", args.messages,
                 b"x" * args.size)
        with_cpu(r, "consume", pid, args.messages, official_consume, client, f"{prefix}-tput", args.messages)
    finally:
        client.close()
    return r


def profile_binary(url: str, args: argparse.Namespace) -> None:
    """The binary latency workload under cProfile in every thread; prints the top functions by own time."""
    profiles: list[cProfile.Profile] = []
    lock = threading.Lock()

    def per_thread(frame: Any, event: str, arg: Any) -> None:  # installs a profiler in each new thread
        profile = cProfile.Profile()
        with lock:
            profiles.append(profile)
        sys.setprofile(None)  # this thread's hook; threading's stays for the threads started later
        profile.enable()

    main = cProfile.Profile()
    threading.setprofile(per_thread)
    main.enable()
    try:
        with Client(url, transport="binary") as client:
            consumer = client.subscribe("profile-latency", "p", initial_position=InitialPosition.Earliest)
            producer = client.create_producer("profile-latency", batching_enabled=False)
            latency(producer, consumer, args.latency_messages, args.warmup, args.size, args.latency_rate)
    finally:
        main.disable()
        threading.setprofile(None)
    for profile in profiles:
        profile.disable()
    out = io.StringIO()
    stats = pstats.Stats(main, stream=out)
    for profile in profiles:
        stats.add(profile)
    stats.sort_stats("tottime").print_stats(30)
    print(f"cProfile, binary latency workload ({args.warmup + args.latency_messages} messages, every thread):")
    print(out.getvalue())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--latency-messages", type=int, default=2000)
    parser.add_argument("--warmup", type=int, default=200)
    parser.add_argument("--latency-rate", type=float, default=500.0)
    parser.add_argument("--only", default=",".join(WHO), help="a comma-separated subset of " + ",".join(WHO))
    parser.add_argument("--rounds", type=int, default=1, help="interleaved runs of each client; medians printed")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="broker configuration for diagnosis, e.g. journalSyncMode=never (repeatable)")
    args = parser.parse_args()
    chosen = [w for w in args.only.split(",") if w]
    unknown = set(chosen) - set(WHO)
    if unknown:
        parser.error(f"--only: unknown {sorted(unknown)}; use some of {','.join(WHO)}")
    runs: dict[str, list[dict[str, float]]] = {who: [] for who in chosen}
    with tempfile.TemporaryDirectory(prefix="pulsarlike-bench-") as tmp:
        proc, url = throughput.start_broker(tmp, args.set)
        try:
            for round_ in range(args.rounds):  # interleaved: each client meets the same load as the others
                for who in ("raw", "grpc", "binary", "official"):
                    if who in chosen:
                        prefix = f"{who}-{round_}"
                        run = {"raw": run_raw, "official": run_official}.get(who)
                        runs[who].append(run(url, proc.pid, args, prefix) if run is not None
                                         else run_ours(url, proc.pid, who, args, prefix))
            if args.profile:
                profile_binary(url, args)
        finally:
            throughput.stop(proc)
        if "lite" in chosen or "official-lite" in chosen:
            from pulsar_lite_compare import LITE, start_serving

            lite, port = start_serving(LITE, tmp)
            try:
                for round_ in range(args.rounds):
                    if "lite" in chosen:
                        runs["lite"].append(run_ours(f"pulsar://127.0.0.1:{port}", lite.pid, "binary", args,
                                                     f"lite-{round_}"))
                    if "official-lite" in chosen:
                        runs["official-lite"].append(run_official(f"pulsar://127.0.0.1:{port}", lite.pid, args,
                                                                  f"official-lite-{round_}"))
            finally:
                throughput.stop(lite)
    results = {who: {key: statistics.median(r[key] for r in rs) for key in rs[0]} for who, rs in runs.items() if rs}
    report(results, args)
    if args.json:
        print(json.dumps(results, sort_keys=True))


def report(results: dict[str, dict[str, float]], args: argparse.Namespace) -> None:
    print(f"{args.messages:,} messages of {args.size} B (throughput); {args.latency_messages:,} sync sends at "
          f"{args.latency_rate:g}/s after {args.warmup} warm-up (latency); medians of {args.rounds} round(s); broker "
          f"{' '.join(args.set) or 'default config: journalSyncMode=group'}")
    print(f"  {'client':30} {'e2e p50 ms':>10} {'p99 ms':>8} {'produce msg/s':>14} {'consume msg/s':>14}"
          f"   CPU µs/msg client/broker: produce, consume")
    for who, r in results.items():
        print(f"  {LABELS[who]:30} {r['p50_ms']:>10.3f} {r['p99_ms']:>8.3f} {r['produce_msg_s']:>14,.0f} "
              f"{r['consume_msg_s']:>14,.0f}   {r['produce_client_us']:.2f}/{r['produce_broker_us']:.2f}, "
              f"{r['consume_client_us']:.2f}/{r['consume_broker_us']:.2f}")
    binary, grpc, official = results.get("binary"), results.get("grpc"), results.get("official")
    raw = results.get("raw")
    if raw is not None:
        print("e2e p50 above the raw socket's: " + ", ".join(
            f"{LABELS[w]} {r['p50_ms'] - raw['p50_ms']:+.3f} ms" for w, r in results.items()
            if w not in ("raw", "lite", "official-lite")))
    if binary is not None:
        print(f"our binary e2e p50 {binary['p50_ms']:.3f} ms (target <= 0.5 ms)"
              + (f"; official {official['p50_ms']:.3f} ms: ours/official {binary['p50_ms'] / official['p50_ms']:.2f}x"
                 " (target <= 1.0x)" if official is not None else ""))
    if binary is not None and grpc is not None:
        print(f"binary / gRPC: produce {binary['produce_msg_s'] / grpc['produce_msg_s']:.2f}x, consume "
              f"{binary['consume_msg_s'] / grpc['consume_msg_s']:.2f}x (target >= 0.9x); e2e p50 "
              f"{binary['p50_ms'] / grpc['p50_ms']:.2f}x")


if __name__ == "__main__":
    main()
