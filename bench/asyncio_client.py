"""An asyncio producer/consumer pair (issue 33): ``pulsarlike.asyncio`` against the official pulsar-client's
``pulsar.asyncio``, both on one ``pulsarlike broker`` process, in the same run.

Run it with ``python bench/asyncio_client.py [--messages N] [--size BYTES] [--window W] [--transport T]``.
Prints figures; asserts nothing.

For each client (ours over ``--transport``, default ``auto``, then the official one, when installed), on a
fresh topic: one consumer task (``receive`` + ``acknowledge``) and one producer task that keeps ``--window``
sends in flight (batching on, the asyncio API's default) run on one event loop. Each payload carries its
send time (``time.perf_counter``); the consumer takes the end-to-end latency of every message. Printed:
messages per second from the first send to the last receive, and e2e p50 / p99 in ms.
"""
from __future__ import annotations

import argparse
import asyncio
import importlib
import statistics
import struct
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

STAMP = struct.Struct("<d")
"""The payload's head: the send time, ``time.perf_counter()`` seconds (one process: one clock)."""


def start_broker(data_dir: str) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, "-m", "broker_core.cli", "broker", "--data-dir", data_dir,
                             "--port", "0", "--set", "webServicePort=0"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = proc.stdout.readline()
    address = line.rsplit(" ", 1)[-1].strip()
    return proc, f"pulsar://{address}"


async def pair(module, url: str, messages: int, size: int, window: int, **client_kwargs) -> tuple[float, list]:
    client = module.Client(url, **client_kwargs)
    topic = f"persistent://public/default/aio-bench-{uuid.uuid4().hex[:8]}"
    consumer = await client.subscribe(topic, "bench")
    producer = await client.create_producer(topic)
    filler = b"x" * max(0, size - STAMP.size)
    latencies: list[float] = []

    async def consume() -> None:
        for _ in range(messages):
            msg = await consumer.receive()
            latencies.append(time.perf_counter() - STAMP.unpack_from(msg.data())[0])
            await consumer.acknowledge(msg)

    async def produce() -> None:
        in_flight: set[asyncio.Task] = set()
        for _ in range(messages):
            if len(in_flight) >= window:
                _, in_flight = await asyncio.wait(in_flight, return_when=asyncio.FIRST_COMPLETED)
            in_flight.add(asyncio.ensure_future(producer.send(STAMP.pack(time.perf_counter()) + filler)))
        await asyncio.gather(*in_flight)

    start = time.perf_counter()
    await asyncio.gather(consume(), produce())
    elapsed = time.perf_counter() - start
    await client.close()
    return messages / elapsed, latencies


def report(name: str, rate: float, latencies: list[float]) -> None:
    ordered = sorted(latencies)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    print(f"{name:<28} {rate:>10,.0f} msg/s   e2e p50 {statistics.median(ordered) * 1000:7.2f} ms   "
          f"p99 {p99 * 1000:7.2f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=20000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--window", type=int, default=1000)
    parser.add_argument("--transport", default="auto")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as data_dir:
        proc, url = start_broker(data_dir)
        try:
            print(f"broker {url}; {args.messages} messages of {args.size} B, {args.window} sends in flight")
            ours = importlib.import_module("pulsarlike.asyncio")
            rate, lat = asyncio.run(pair(ours, url, args.messages, args.size, args.window,
                                         transport=args.transport))
            report(f"pulsarlike.asyncio ({args.transport})", rate, lat)
            try:
                official = importlib.import_module("pulsar.asyncio")
                import pulsar
            except ImportError:
                print("pulsar-client is not installed: no comparison")
                return
            rate2, lat2 = asyncio.run(pair(official, url, args.messages, args.size, args.window,
                                           logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error)))
            report("pulsar.asyncio (official)", rate2, lat2)
            print(f"ours / official: throughput {rate / rate2:.2f}x, "
                  f"e2e p50 {statistics.median(lat2) / statistics.median(lat):.2f}x (>1: ours faster)")
        finally:
            proc.terminate()
            proc.wait(30)


if __name__ == "__main__":
    main()
