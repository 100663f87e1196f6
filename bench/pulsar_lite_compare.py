"""pulsarlike against pulsar-lite (a Rust Pulsar-compatible embedded broker), both driven by the official client
(issue 19's "faster on the official client's path").

Run it with ``python bench/pulsar_lite_compare.py [--messages N] [--size B] [--start-runs N] [--rounds N]
[--latency-messages N] [--skip-nosync] [--only BROKER] [--baseline DIR] [--start-only] [--json]`` (``--rounds``:
every broker that many times, interleaved, each figure the median of its rounds: this machine's 2 cores are shared,
single runs vary 2x; ``--baseline DIR``: our broker from another checkout too, e.g. ``git archive`` of the commit
before a change, as a ``pulsarlike-base`` column of the same rounds; ``--start-only``: step 1 below only). Needs
``pulsar-client`` and ``pulsar-lite`` (the dev extra).

Both brokers run as separate processes started by this script: ours as ``python -m broker_core.cli broker
--data-dir DIR --port 0 --log-level WARNING --set webServicePort=0`` (the port read from its first stdout line;
its metrics endpoint on a free port, as pulsar-lite's below: the default 8080 may be taken), pulsar-lite as its
wheel's binary ``pulsar_lite/bin/pulsar-lite --addr 127.0.0.1:PORT --db-path DIR/db`` (its metrics endpoint
on a free port too). For each broker, in this order:

1. **Start** (``--start-runs`` fresh processes, fresh data folders, median and range, after one unmeasured
   start of each broker, so both run from warm files: our broker then imports from Python's bytecode cache as
   after ``pip install``, which compiles it; its environment is this one without ``PYTHONDONTWRITEBYTECODE``,
   which would have every start compile ~200 modules from source, ~2x the start). Defined precisely:
   a free port P is picked first (bound and released by this script); the clock starts immediately before
   ``subprocess.Popen`` of the broker command with P on its command line (``--port P`` / ``--addr
   127.0.0.1:P``); from then on this script loops: open a TCP connection to 127.0.0.1:P, send Pulsar's
   ``CONNECT`` (protocol version 20), read one frame; a refused connection, a closed one or any answer but
   ``CONNECTED`` is retried after 1 ms. **start→CONNECTED** is the clock when the first ``CONNECTED`` frame is
   read. On that same connection a ``PRODUCER`` for a new persistent topic follows; **start→producer** is the
   clock when its ``PRODUCER_SUCCESS`` is read (the broker then really serves: topic created, log open).
   No stdout line or log of the broker is looked at, so printing "listening" early gains nothing; the
   process's interpreter start, imports and everything the broker does before answering count.
2. **RSS idle**: the resident set of the broker's process tree (``VmRSS`` of the broker and of every
   descendant, e.g. our relay worker process), 1 s after its first CONNECTED answer, with no client connected.
3. **Produce**: official client, one producer, ``send_async`` of ``--messages`` messages of ``--size`` B with
   batching on (1,000 messages per batch, 10 ms delay, ``max_pending_messages=100,000``,
   ``block_if_queue_full``), then ``flush``; msg/s.
   Before it, **first use**: a producer and a consumer on another topic, one message, the broker's CPU for
   it printed apart (ms): what a broker does once (our broker imports its command handlers and topic model
   at the first such command, ~60 ms), so that 3 and 5 are per-message costs (before issue 35 that one-time
   cost was inside the produce figure: ~0.3 us of it at 200k messages).
4. **Consume**: a consumer subscribing at Earliest (inside the timed window), ``receive`` per message and an
   **individual** ``acknowledge`` of each; receiver queue 10,000; msg/s.
5. **Broker CPU per message**: user+system CPU seconds of the broker's process tree (``/proc/PID/stat``
   utime+stime of the broker and each live descendant, plus cutime+cstime of reaped children) over each of 3
   and 4, divided by the messages.
6. **End-to-end latency**: ``--latency-messages`` sync ``send`` (batching off) at ``--latency-rate`` msg/s
   received on a thread, p50/p99 (``bench/throughput.py``'s ``measure_latency``).
7. **RSS after** the workloads (as 2, clients closed).

The CPU seconds of this process (the client: its Python thread and the C++ client's threads) per message
are printed too: when they are about the wall time per message, the client bounds the figure, not the broker.

Our broker runs twice: as configured by default (``journalSyncMode=group``: a receipt waits for the fsync
covering its entry), and as ``pulsarlike-nosync`` with ``journalSyncMode=never`` (page cache only), which is
what pulsar-lite does (RocksDB written without sync: ``strace -c`` counts 5 fsync/fdatasync calls for 100
batches, at its start and stop). Compare like with like: the default column is the durable one.

With ``--uvloop`` it runs a third time as ``pulsarlike-uvloop``, on uvloop's event loop (``eventLoop=uvloop``).

Then a table and the ratios pulsarlike / pulsar-lite (for times and CPU: lower is better; the ratios are
printed as measured). Targets (issues 19 and 35): consume >= 1.0x, produce >= 1.0x, broker CPU per message
(produce + consume) <= 1.0x, start <= 150 ms, RSS idle <= 32 MB, p50 no worse. Nothing is asserted. Both brokers run on the same 2 cores as the client: run on a quiet machine.
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

import pulsar  # noqa: E402

import throughput  # noqa: E402  (measure_latency, free_port, stop)
from pulsar_protocol import BATCH, T, _Frames, _frame, cmd, official_produce, own_cpu  # noqa: E402

CLK_TCK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")
OURS, NEVER, LITE, BASE, UV = "pulsarlike", "pulsarlike-nosync", "pulsar-lite", "pulsarlike-base", "pulsarlike-uvloop"
BASELINE: dict[str, Path] = {}
"""``BASE``'s checkout (``--baseline DIR``): our broker as of another commit, run in the same rounds, so a
change is measured against what it changes under the same load (this machine's load moves every figure)."""
"""``NEVER``: our broker with ``journalSyncMode=never`` (receipts before fsync, as pulsar-lite answers: it
writes RocksDB without syncing -- 5 fsyncs for 100 batches, at its start and stop)."""
CONNECT_RETRY_S = 0.001
START_TIMEOUT_S = 30.0


# ------------------------------------------------------------------------------------------- brokers
def lite_binary() -> str:
    from pulsar_lite.binary_finder import find_pulsar_lite_binary

    return str(find_pulsar_lite_binary())


def broker_command(who: str, data_dir: str, port: int) -> list[str]:
    if who != LITE:
        return [sys.executable, "-m", "broker_core.cli", "broker", "--data-dir", os.path.join(data_dir, "data"),
                "--port", str(port), "--log-level", "WARNING",
                # its metrics endpoint on a free port too (the default 8080 may be taken on a shared machine)
                "--set", "webServicePort=0", *(["--set", "journalSyncMode=never"] if who == NEVER else []),
                *(["--set", "eventLoop=uvloop"] if who == UV else [])]
    config = os.path.join(data_dir, "pulsar-lite.toml")
    with open(config, "w") as out:  # its metrics endpoint defaults to the fixed 0.0.0.0:8080
        out.write('[metrics]\nenabled = true\naddr = "127.0.0.1:0"\n')
    return [lite_binary(), "--config", config, "--addr", f"127.0.0.1:{port}", "--db-path",
            os.path.join(data_dir, "db"), "--log-level", "warn"]


def launch(who: str, data_dir: str, port: int) -> subprocess.Popen:
    log = open(os.path.join(data_dir, "broker.log"), "wb")  # noqa: SIM115 - lives as long as the process
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    cwd = BASELINE[BASE] if who == BASE else REPO if who != LITE else data_dir
    return subprocess.Popen(broker_command(who, data_dir, port), cwd=cwd,
                            stdout=subprocess.PIPE if who != LITE and port == 0 else subprocess.DEVNULL,
                            stderr=log, text=True, env=env)


def start_serving(who: str, data_dir: str) -> tuple[subprocess.Popen, int]:
    """A broker for the workloads: ours on ``--port 0`` (the port from its first line), pulsar-lite on a free
    port; returns once it answered CONNECT."""
    if who != LITE:
        proc = launch(who, data_dir, 0)
        line = proc.stdout.readline().strip()
        if not line.startswith("pulsarlike broker listening on "):
            proc.kill()
            raise SystemExit(f"broker did not start: {line!r}; see {data_dir}/broker.log")
        port = int(line.rsplit(":", 1)[1])
    else:
        port = throughput.free_port()
        proc = launch(LITE, data_dir, port)
    first_connected(proc, port, time.perf_counter())
    return proc, port


# ------------------------------------------------------------------------------------------- start time
def _connect_once(port: int) -> tuple[socket.socket, _Frames] | None:
    """A connection that got CONNECTED, or None (refused, closed, or another answer)."""
    try:
        sock = socket.create_connection(("127.0.0.1", port), timeout=5)
    except OSError:
        return None
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        frames = _Frames(sock)
        sock.sendall(_frame(T(type=T.CONNECT, connect=cmd.CommandConnect(client_version="bench-start",
                                                                         protocol_version=20))))
        command, _ = frames.next()
        if command.type == T.CONNECTED:
            return sock, frames
    except (OSError, ConnectionError):
        pass
    sock.close()
    return None


def first_connected(proc: subprocess.Popen, port: int, t0: float) -> tuple[socket.socket, _Frames, float]:
    """Loop CONNECT attempts until one is answered CONNECTED; (socket, frames, seconds since ``t0``)."""
    while True:
        got = _connect_once(port)
        if got is not None:
            return got[0], got[1], time.perf_counter() - t0
        if proc.poll() is not None:
            raise SystemExit(f"broker exited with {proc.returncode} before answering CONNECT")
        if time.perf_counter() - t0 > START_TIMEOUT_S:
            raise SystemExit(f"broker did not answer CONNECT within {START_TIMEOUT_S} s")
        time.sleep(CONNECT_RETRY_S)


def measure_start(who: str, tmp: str, run: int) -> tuple[float, float]:
    """(start→CONNECTED, start→PRODUCER_SUCCESS) in ms for one fresh process (see the module docstring)."""
    data_dir = tempfile.mkdtemp(prefix=f"start-{run}-", dir=tmp)
    port = throughput.free_port()
    t0 = time.perf_counter()
    proc = launch(who, data_dir, port)
    try:
        sock, frames, connected = first_connected(proc, port, t0)
        with sock:
            sock.sendall(_frame(T(type=T.PRODUCER, producer=cmd.CommandProducer(
                topic="persistent://public/default/start-probe", producer_id=1, request_id=1))))
            while True:
                command, _ = frames.next()
                if command.type == T.PRODUCER_SUCCESS:
                    break
                if command.type == T.ERROR:
                    raise SystemExit(f"{who}: PRODUCER failed: {command.error.message}")
            producing = time.perf_counter() - t0
    finally:
        throughput.stop(proc)
    return connected * 1000, producing * 1000


# ------------------------------------------------------------------------------------------- /proc
def tree(pid: int) -> list[int]:
    """``pid`` and its live descendants."""
    pids, todo = [], [pid]
    while todo:
        current = todo.pop()
        pids.append(current)
        try:
            for task in os.listdir(f"/proc/{current}/task"):
                with open(f"/proc/{current}/task/{task}/children") as children:
                    todo.extend(int(c) for c in children.read().split())
        except OSError:
            pass
    return pids


def tree_cpu(pid: int) -> float:
    """CPU seconds (user + system) of ``pid``'s tree, reaped children included."""
    ticks = 0
    for i, current in enumerate(tree(pid)):
        try:
            with open(f"/proc/{current}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        ticks += int(fields[11]) + int(fields[12])
        if i == 0:
            ticks += int(fields[13]) + int(fields[14])
    return ticks / CLK_TCK


def tree_rss_mb(pid: int) -> float:
    total = 0
    for current in tree(pid):
        try:
            with open(f"/proc/{current}/statm") as statm:
                total += int(statm.read().split()[1]) * PAGE
        except OSError:
            pass
    return total / 1e6


# ------------------------------------------------------------------------------------------- workloads
def consume(client: pulsar.Client, topic: str, n: int) -> float:
    start = time.perf_counter()
    consumer = client.subscribe(topic, "bench-consume", initial_position=pulsar.InitialPosition.Earliest,
                                receiver_queue_size=BATCH * 10)
    for _ in range(n):
        consumer.acknowledge(consumer.receive(30_000))
    elapsed = time.perf_counter() - start
    consumer.close()
    return n / elapsed


def first_use(client: pulsar.Client) -> None:
    """A producer and a consumer on a topic of their own, one message: what a broker does once (our broker
    imports its command handlers and topic model at the first such command), measured apart from the
    per-message figures."""
    topic = "persistent://public/default/first-use"
    consumer = client.subscribe(topic, "first-use", initial_position=pulsar.InitialPosition.Earliest)
    producer = client.create_producer(topic)
    producer.send(b"first")
    consumer.acknowledge(consumer.receive(30_000))
    producer.close()
    consumer.close()


def run_broker(who: str, tmp: str, args: argparse.Namespace) -> dict[str, float]:
    r: dict[str, float] = {}
    measure_start(who, tmp, -1)  # warm: bytecode cache, page cache
    starts = [measure_start(who, tmp, i) for i in range(args.start_runs if who != NEVER else 1)]
    for key, values in (("start_connected_ms", [s[0] for s in starts]), ("start_producer_ms", [s[1] for s in starts])):
        r[key], r[key + "_min"], r[key + "_max"] = statistics.median(values), min(values), max(values)
    if args.start_only:
        return r
    n, payload = args.messages // BATCH * BATCH, b"x" * args.size
    proc, port = start_serving(who, tempfile.mkdtemp(prefix="serve-", dir=tmp))
    try:
        time.sleep(1.0)
        r["rss_idle_mb"] = tree_rss_mb(proc.pid)
        client = pulsar.Client(f"pulsar://127.0.0.1:{port}", logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
        cpu = tree_cpu(proc.pid)
        first_use(client)
        r["first_use_cpu_ms"] = (tree_cpu(proc.pid) - cpu) * 1000
        cpu, own = tree_cpu(proc.pid), own_cpu()
        r["produce_msg_s"] = official_produce(client, "persistent://public/default/bench", n, payload)
        r["produce_cpu_us_per_msg"] = (tree_cpu(proc.pid) - cpu) / n * 1e6
        r["produce_client_cpu_us_per_msg"] = (own_cpu() - own) / n * 1e6
        cpu, own = tree_cpu(proc.pid), own_cpu()
        r["consume_msg_s"] = consume(client, "persistent://public/default/bench", n)
        r["consume_cpu_us_per_msg"] = (tree_cpu(proc.pid) - cpu) / n * 1e6
        r["consume_client_cpu_us_per_msg"] = (own_cpu() - own) / n * 1e6
        consumer = client.subscribe("persistent://public/default/latency", "bench-latency")
        producer = client.create_producer("persistent://public/default/latency", batching_enabled=False)
        r["e2e_p50_ms"], r["e2e_p99_ms"] = throughput.measure_latency(producer, consumer, args.latency_messages,
                                                                      args.size, args.latency_rate)
        client.close()
        time.sleep(1.0)
        r["rss_after_mb"] = tree_rss_mb(proc.pid)
    finally:
        throughput.stop(proc)
    return r


# ------------------------------------------------------------------------------------------- report
ROWS = (  # key, label, format, better ("high" or "low")
    ("produce_msg_s", "produce msg/s", "{:,.0f}", "high"),
    ("consume_msg_s", "consume msg/s (individual acks)", "{:,.0f}", "high"),
    ("produce_cpu_us_per_msg", "broker CPU per msg, produce (us)", "{:.2f}", "low"),
    ("consume_cpu_us_per_msg", "broker CPU per msg, consume (us)", "{:.2f}", "low"),
    ("produce_client_cpu_us_per_msg", "client CPU per msg, produce (us)", "{:.2f}", "low"),
    ("consume_client_cpu_us_per_msg", "client CPU per msg, consume (us)", "{:.2f}", "low"),
    ("first_use_cpu_ms", "broker CPU of the first producer+consumer (ms)", "{:.0f}", "low"),
    ("rss_idle_mb", "broker RSS idle (MB)", "{:.1f}", "low"),
    ("rss_after_mb", "broker RSS after (MB)", "{:.1f}", "low"),
    ("start_connected_ms", "start -> CONNECTED (ms, median)", "{:.0f}", "low"),
    ("start_producer_ms", "start -> PRODUCER_SUCCESS (ms, median)", "{:.0f}", "low"),
    ("e2e_p50_ms", "e2e p50 (ms)", "{:.3f}", "low"),
    ("e2e_p99_ms", "e2e p99 (ms)", "{:.3f}", "low"),
)


def report(results: dict[str, dict[str, float]], args: argparse.Namespace) -> None:
    ours, lite = results[OURS], results[LITE]
    columns = [who for who in (OURS, BASE, NEVER, UV) if who in results]
    short = {OURS: "ours", BASE: "base", NEVER: "nosync", UV: "uvloop"}
    print(f"{args.messages:,} messages of {args.size} B, official pulsar-client {pulsar.__version__}, batching, "
          f"individual acks; start: {args.start_runs} runs each")
    print(f"  {'':42}" + "".join(f" {who:>18}" for who in columns) + f" {LITE:>14}"
          + "".join(f" {short[who] + '/lite':>12}" for who in columns))
    for key, label, fmt, _better in ROWS:
        line = f"  {label:42}" + "".join(
            f" {fmt.format(results[who][key]) if key in results[who] else '-':>18}" for who in columns)
        line += f" {fmt.format(lite[key]):>14}"
        line += "".join(f" {ratio(results[who], lite, key):>11.2f}x" if key in results[who] else f" {'-':>12}"
                        for who in columns)
        print(line)
    for key in ("start_connected_ms", "start_producer_ms"):
        ranges = (f"{who} {results[who][key + '_min']:.0f}-{results[who][key + '_max']:.0f} ms"
                  for who in (*columns, LITE))
        print(f"  {key} range: " + ", ".join(ranges))
    both = {name: {"cpu": r["produce_cpu_us_per_msg"] + r["consume_cpu_us_per_msg"]} for name, r in results.items()}
    cpu = ratio(both[OURS], both[LITE], "cpu")
    print(f"targets: consume {ours['consume_msg_s'] / lite['consume_msg_s']:.2f}x (>= 1.0), produce "
          f"{ours['produce_msg_s'] / lite['produce_msg_s']:.2f}x (>= 1.0), start {ours['start_connected_ms']:.0f} ms "
          f"(<= 150), RSS idle {ours['rss_idle_mb']:.1f} MB (<= 32), p50 {ours['e2e_p50_ms']:.3f} vs "
          f"{lite['e2e_p50_ms']:.3f} ms (no worse); broker CPU per message (produce+consume) {cpu:.2f}x (<= 1.0)")
    for who in columns[1:]:
        print(f"  {who}: broker CPU per message (produce+consume) {ratio(both[who], both[LITE], 'cpu'):.2f}x lite's")


def ratio(a: dict[str, float], b: dict[str, float], key: str) -> float:
    return a[key] / b[key] if b[key] else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=200_000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--start-runs", type=int, default=5)
    parser.add_argument("--latency-messages", type=int, default=1000)
    parser.add_argument("--latency-rate", type=float, default=200.0)
    parser.add_argument("--only", choices=(OURS, NEVER, LITE, BASE, UV), help="measure one broker (for profiling)")
    parser.add_argument("--baseline", type=Path, metavar="DIR",
                        help=f"also run our broker from the checkout DIR (e.g. `git archive` of the commit before a "
                             f"change), as {BASE}, in the same rounds")
    parser.add_argument("--skip-nosync", action="store_true", help=f"leave out {NEVER}")
    parser.add_argument("--uvloop", action="store_true",
                        help=f"also run our broker with eventLoop=uvloop (needs the uvloop extra), as {UV}")
    parser.add_argument("--rounds", type=int, default=1,
                        help="run every broker this many times, interleaved; each figure is the median")
    parser.add_argument("--start-only", action="store_true",
                        help="measure the start figures only (1.), no workloads: with --rounds, a quick A/B of a "
                             "start-time change against --baseline")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.baseline is not None:
        BASELINE[BASE] = args.baseline.resolve()
    rounds: dict[str, list[dict[str, float]]] = {}
    with tempfile.TemporaryDirectory(prefix="pulsar-lite-compare-") as tmp:
        for _ in range(args.rounds):  # interleaved: a busy spell on this shared machine hits every broker
            for who in (OURS, BASE, NEVER, UV, LITE):
                if who == BASE and args.baseline is None or who == UV and not args.uvloop and args.only != UV:
                    continue
                if args.only in (None, who) and not (who == NEVER and args.skip_nosync and args.only is None):
                    rounds.setdefault(who, []).append(
                        run_broker(who, tempfile.mkdtemp(prefix=who + "-", dir=tmp), args))
    results = {who: {key: statistics.median(r[key] for r in runs) for key in runs[0]} for who, runs in rounds.items()}
    if args.start_only:
        for who, r in results.items():
            print(f"  {who:18} start -> CONNECTED {r['start_connected_ms']:4.0f} ms ({r['start_connected_ms_min']:.0f}-"
                  f"{r['start_connected_ms_max']:.0f}), start -> PRODUCER_SUCCESS {r['start_producer_ms']:4.0f} ms "
                  f"(medians over {args.rounds} round(s) of {args.start_runs} runs)")
    elif OURS in results and LITE in results:
        report(results, args)
    else:
        for key, label, fmt, _ in ROWS:
            print(f"  {label:42} {fmt.format(next(iter(results.values()))[key]):>14}")
    if args.json:
        print(json.dumps(results, sort_keys=True))


if __name__ == "__main__":
    main()
