"""Compaction of one topic partition: ``--messages`` keyed messages over ``--keys`` keys (default 1M over
10k, in producer batches of ``--batch``), compacted by :func:`broker_core.core.persistent.compaction.compact`
in a child process of its own, so that its peak RSS (``VmHWM``) is the compaction's (the interpreter and its
imports included) and not the writing of the log. Prints the time and peak memory next to issue 21's targets
(under 10 s and 100 MB), then a compacted read against a raw read of the same topic.

    python bench/compaction.py [--messages N] [--keys K] [--batch B] [--size BYTES] [--json]

The log is written straight to a ManagedLog in a temporary folder (no broker, no network): the figure is the
compactor's own, as a broker runs it on its compaction thread.
"""
from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from broker_core.protocol import codec, pulsar_api_pb2  # noqa: E402
from broker_core.storage.log import ManagedLog  # noqa: E402

TARGET_S = 10.0
TARGET_MB = 100.0


def write_log(folder: Path, messages: int, keys: int, batch: int, size: int) -> None:
    log = ManagedLog(folder / "log")
    value = b"v" * size
    sequence = 0
    for start in range(0, messages, batch):
        count = min(batch, messages - start)
        payload = codec.encode_batch([codec.BatchMessage(value, f"key-{(start + i) % keys}") for i in range(count)])
        meta = pulsar_api_pb2.MessageMetadata(producer_name="bench", sequence_id=sequence, publish_time=1,
                                              num_messages_in_batch=count)
        log.append(codec.encode_entry(meta, payload), count, 1)
        sequence += count
    log.close()


def peak_rss_mb() -> float:
    """This process's peak RSS: ``VmHWM`` (``ru_maxrss`` would carry the parent's peak over fork and exec)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child(folder: Path) -> None:
    """Compact the log in ``folder``; print {"seconds", "kept", "read", "peak_rss_mb"} as JSON."""
    from broker_core.core.persistent.compaction import FOLDER, compact

    log = ManagedLog(folder / "log")
    started = time.perf_counter()
    result = compact(folder / FOLDER, None, lambda start, end: log.read(start, 1000, 4 << 20, end),
                     log.durable_end_offset)
    seconds = time.perf_counter() - started
    peak = peak_rss_mb()
    print(json.dumps({"seconds": seconds, "kept": result.kept, "read": result.read, "peak_rss_mb": peak,
                      "ledger_bytes": result.ledger.size_bytes}))


def reads(folder: Path) -> dict[str, float]:
    """Messages per second reading every entry raw, then the compacted ledger (entries of one message)."""
    from broker_core.core.persistent.compaction import FOLDER, load

    log = ManagedLog(folder / "log")
    started, position, raw_messages = time.perf_counter(), 0, 0
    while batch := log.read(position, 1000, 4 << 20):
        raw_messages += sum(e.num_messages for e in batch)
        position = batch[-1].end_offset
    raw_s = time.perf_counter() - started
    ledger = load(folder / FOLDER)
    started, position, compacted = time.perf_counter(), 0, 0
    while batch := ledger.read(position, 1000, 4 << 20):
        compacted += len(batch)
        position = batch[-1].end_offset
    compacted_s = time.perf_counter() - started
    log.close()
    return {"raw_messages": raw_messages, "raw_read_s": raw_s, "compacted_messages": compacted,
            "compacted_read_s": compacted_s}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=10_000)
    parser.add_argument("--batch", type=int, default=100, help="messages per producer batch (entry)")
    parser.add_argument("--size", type=int, default=100, help="bytes per value")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(Path(args.child))
        return
    with tempfile.TemporaryDirectory(prefix="bench-compaction-") as tmp:
        folder = Path(tmp)
        started = time.perf_counter()
        write_log(folder, args.messages, args.keys, args.batch, args.size)
        written_s = time.perf_counter() - started
        out = subprocess.run([sys.executable, __file__, "--child", str(folder)], check=True, capture_output=True,
                             text=True)
        figures = json.loads(out.stdout)
        figures.update(reads(folder))
    figures.update(messages=args.messages, keys=args.keys, batch=args.batch, size=args.size, write_s=written_s)
    print(f"log: {args.messages:,} messages over {args.keys:,} keys, batches of {args.batch}, {args.size}-byte values"
          f" (written in {written_s:.1f} s)")
    print(f"compaction: {figures['seconds']:.2f} s ({args.messages / figures['seconds']:,.0f} messages/s), "
          f"peak RSS {figures['peak_rss_mb']:.0f} MB; kept {figures['kept']:,} of {figures['read']:,}; "
          f"targets < {TARGET_S:.0f} s: {'yes' if figures['seconds'] < TARGET_S else 'NO'}, "
          f"< {TARGET_MB:.0f} MB: {'yes' if figures['peak_rss_mb'] < TARGET_MB else 'NO'}")
    print(f"read everything: raw {figures['raw_messages']:,} messages in {figures['raw_read_s']:.2f} s; compacted "
          f"{figures['compacted_messages']:,} in {figures['compacted_read_s']:.3f} s")
    if args.json:
        print(json.dumps(figures))


if __name__ == "__main__":
    main()
