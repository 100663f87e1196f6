"""Requests per second of the admin REST API on the web service port of a ``pulsarlike broker`` process on
this machine: ``GET /admin/v2/persistent/public/default/{topic}/stats`` of a topic with a subscription and
a backlog, and ``PUT /admin/v2/persistent/public/default/{topic}/partitions`` creating a new partitioned
topic (4 partitions) per request, each as the count of partitioned topics grows (the metadata write per
create was the cost that grew with it, issue 20).

Run it with ``python bench/http_admin.py [--seconds S] [--clients N] [--creates N]``. Each figure is the
requests answered in ``--seconds`` over ``--clients`` keep-alive connections (one request in flight per
connection), the broker started fresh (``--port 0``, ``webServicePort=0``, log level WARNING,
``journalSyncMode`` as configured by default). ``PUT .../partitions`` is measured over ``--creates``
topics, reported per thousand. Prints figures; asserts nothing.
"""
from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import aiohttp

REPO = Path(__file__).resolve().parent.parent
LISTENING, METRICS = "pulsarlike broker listening on ", "pulsarlike metrics on "


def start_broker(data_dir: Path) -> tuple[subprocess.Popen, str, str]:
    proc = subprocess.Popen([sys.executable, "-m", "broker_core.cli", "broker", "--data-dir", str(data_dir),
                             "--port", "0", "--set", "webServicePort=0", "--log-level", "WARNING"],
                            cwd=REPO, stdout=subprocess.PIPE, text=True)
    address = proc.stdout.readline().strip()
    web = proc.stdout.readline().strip()
    if not (address.startswith(LISTENING) and web.startswith(METRICS)):
        proc.kill()
        raise SystemExit(f"the broker did not start: {address!r} {web!r}")
    return proc, address[len(LISTENING):], web[len(METRICS):].rsplit("/metrics", 1)[0]


def fill(service_url: str, topic: str) -> None:
    import pulsar

    client = pulsar.Client(service_url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    client.subscribe(topic, "bench").close()
    producer = client.create_producer(topic, batching_enabled=False)
    for i in range(100):
        producer.send(b"m%d" % i)
    client.close()


async def rate(base: str, method: str, paths, clients: int, seconds: float) -> tuple[int, float, int]:
    """(requests answered 2xx, seconds, others) for ``seconds`` over ``clients`` connections."""
    done, failed = 0, 0
    deadline = time.perf_counter() + seconds
    started = time.perf_counter()

    async def one(session: aiohttp.ClientSession) -> None:
        nonlocal done, failed
        while time.perf_counter() < deadline:
            path, body = next(paths)
            async with session.request(method, base + path, json=body) as reply:
                await reply.read()
                if 200 <= reply.status < 300:
                    done += 1
                else:
                    failed += 1

    connector = aiohttp.TCPConnector(limit=clients)
    async with aiohttp.ClientSession(connector=connector) as session:
        await asyncio.gather(*(one(session) for _ in range(clients)))
    return done, time.perf_counter() - started, failed


async def creates(base: str, clients: int, total: int) -> list[tuple[int, float]]:
    """Requests/s of PUT .../partitions per thousand topics created, up to ``total``."""
    figures = []
    counter = iter(range(10 ** 9))
    connector = aiohttp.TCPConnector(limit=clients)
    async with aiohttp.ClientSession(connector=connector) as session:
        for thousand in range(total // 1000):
            started = time.perf_counter()

            async def one() -> None:
                for _ in range(1000 // clients):
                    path = f"/admin/v2/persistent/public/default/p-{next(counter)}/partitions"
                    async with session.put(base + path, json=4) as reply:
                        await reply.read()
                        assert reply.status == 204, reply.status

            await asyncio.gather(*(one() for _ in range(clients)))
            figures.append(((thousand + 1) * 1000, 1000 // clients * clients / (time.perf_counter() - started)))
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--creates", type=int, default=3000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as data:
        proc, address, base = start_broker(Path(data))
        try:
            topic = "persistent://public/default/bench-stats"
            fill(f"pulsar://{address}", topic)
            stats = iter(lambda: ("/admin/v2/persistent/public/default/bench-stats/stats", None), None)
            for clients in (1, args.clients):
                done, took, failed = asyncio.run(rate(base, "GET", stats, clients, args.seconds))
                print(f"GET .../stats           {clients} connection(s): {done / took:8.0f} requests/s"
                      f" ({done} in {took:.1f} s, {failed} not 2xx)")
            for count, per_s in asyncio.run(creates(base, args.clients, args.creates)):
                print(f"PUT .../partitions      {args.clients} connection(s): {per_s:8.0f} requests/s"
                      f" (topics {count - 999}-{count})")
        finally:
            proc.kill()
            proc.wait()


if __name__ == "__main__":
    main()
