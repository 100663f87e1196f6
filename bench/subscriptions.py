"""Shared and Key_Shared consumption against one consumer, on the same topic in the same run (issue 4).

``python bench/subscriptions.py [--messages N] [--keys K] [--consumers C] [--size B] [--json]``

1. A topic is filled once with ``--messages`` messages of ``--size`` B over ``--keys`` distinct keys,
   produced with key-based batching (what Key_Shared consumers need; with many keys most batches hold a
   message or a few, so this is the per-entry path of the broker).
2. Each figure drains the whole topic on a fresh subscription from ``Earliest`` and times from subscribe
   to the last message received (and acknowledged individually, in groups, as applications do):
   - ``single``: one Exclusive consumer -- the reference;
   - ``shared``: ``--consumers`` Shared consumers, one thread each, one client;
   - ``key_shared``: ``--consumers`` Key_Shared consumers (AUTO_SPLIT), one thread each; per-key order
     is checked on the way (the figure is void if it breaks).
3. Prints msg/s, the ratio to ``single`` (target: ≥ 0.70 for both) and the broker's CPU use (of one core)
   while draining.

The broker runs as a separate process (as in throughput.py). Consumers share this process's GIL, so the
ratio measures the broker's dispatch cost of spreading messages, not extra client CPU. Nothing is asserted.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from throughput import start_broker, stop  # noqa: E402

from connector import BatchingType, Client, ConsumerType, InitialPosition, Timeout  # noqa: E402


def fill(client: Client, topic: str, n: int, keys: int, size: int) -> None:
    producer = client.create_producer(topic, batching_enabled=True, batching_type=BatchingType.KeyBased,
                                      max_pending_messages=100_000,
                                      block_if_queue_full=True, batching_max_publish_delay_ms=50)
    pad = b"x" * max(0, size - 16)
    for i in range(n):
        key = f"key-{i % keys}"
        producer.send_async(b"%d:%s" % (i // keys, pad), None, partition_key=key)
    producer.flush()
    producer.close()


def drain(client: Client, topic: str, sub: str, ctype: ConsumerType, consumers: int, n: int) -> tuple[float, bool]:
    """Seconds to receive all ``n`` messages with ``consumers`` consumers; and whether per-key order held."""
    handles = [client.subscribe(topic, sub, consumer_type=ctype, initial_position=InitialPosition.Earliest,
                                receiver_queue_size=1000, consumer_name=f"c{i}") for i in range(consumers)]
    count = [0]
    lock = threading.Lock()
    done = threading.Event()
    ordered = [True]
    start = time.perf_counter()

    def run(consumer) -> None:
        last: dict[str, int] = {}
        while not done.is_set():
            try:
                msg = consumer.receive(timeout_millis=200)
            except Timeout:
                continue
            consumer.acknowledge(msg)
            if ctype == ConsumerType.KeyShared:
                key = msg.partition_key()
                seq = int(msg.data().split(b":", 1)[0])
                if last.get(key, -1) >= seq:
                    ordered[0] = False
                last[key] = seq
            with lock:
                count[0] += 1
                if count[0] >= n:
                    done.set()

    threads = [threading.Thread(target=run, args=(c,), daemon=True) for c in handles]
    for t in threads:
        t.start()
    done.wait(600)
    elapsed = time.perf_counter() - start
    for t in threads:
        t.join(5)
    for c in handles:
        c.close()
    return elapsed, ordered[0]


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (Linux /proc)."""
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=200_000)
    parser.add_argument("--keys", type=int, default=10_000)
    parser.add_argument("--consumers", type=int, default=4)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as data:
        proc, url = start_broker(data, [])
        try:
            client = Client(url)
            topic = "persistent://public/default/bench-subscriptions"
            names = ("single", "shared", "key_shared")
            for name in names:  # durable subscriptions first: a topic without any keeps nothing consumed
                client.subscribe(topic, f"bench-{name}", initial_position=InitialPosition.Earliest).close()
            t0 = time.perf_counter()
            fill(client, topic, args.messages, args.keys, args.size)
            print(f"filled {args.messages:,} messages over {args.keys:,} keys in {time.perf_counter() - t0:.1f}s")
            results = {}
            for name, ctype, consumers in (("single", ConsumerType.Exclusive, 1),
                                           ("shared", ConsumerType.Shared, args.consumers),
                                           ("key_shared", ConsumerType.KeyShared, args.consumers)):
                cpu = cpu_seconds(proc.pid)
                elapsed, ordered = drain(client, topic, f"bench-{name}", ctype, consumers, args.messages)
                results[name] = {"msg_per_s": args.messages / elapsed, "seconds": elapsed, "ordered": ordered,
                                 "broker_cpu": (cpu_seconds(proc.pid) - cpu) / elapsed}
            client.close()
        finally:
            stop(proc)
    base = results["single"]["msg_per_s"]
    print(f"{'figure':<12} {'consumers':>9} {'msg/s':>12} {'ratio':>7} {'broker CPU':>10}  target")
    for name, consumers in (("single", 1), ("shared", args.consumers), ("key_shared", args.consumers)):
        r = results[name]
        ratio = r["msg_per_s"] / base
        target = "" if name == "single" else ("≥ 0.70: met" if ratio >= 0.70 else "≥ 0.70: missed")
        note = "" if r["ordered"] else "  (per-key order broken!)"
        print(f"{name:<12} {consumers:>9} {r['msg_per_s']:>12,.0f} {ratio:>7.2f} {r['broker_cpu']:>9.0%}  "
              f"{target}{note}")
        r["ratio"] = ratio
    if args.json:
        print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
