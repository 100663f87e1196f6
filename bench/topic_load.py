"""Cost of loading a topic: after an idle unload, and per GB of stored data (ARCHITECTURE.md §5).

Run ``python bench/topic_load.py [--gb 1.0] [--entry-kb 64] [--rounds 20]``. Nothing is asserted.

1. **Load after unload**: a topic with ``--gb`` of entries in 256 MiB segments and three durable
   subscriptions (cursors with individual acks) is unloaded and loaded again ``--rounds`` times through the
   broker's topic registry (what the first request after an idle unload pays); p50 and max, in ms.
2. **Open cost per GB**: a cold ``ManagedLog`` open of the same folder (recovery steps 1-6: sealed segments
   through their index, the last segment scanned whole), per GB stored.
3. **Verification cost per GB**: reading every sealed segment once with every frame's CRC checked -- what
   lazy verification adds, spread over the first reads of each segment, and what verifying every segment at
   load would cost -- per GB, from the page cache (a cold disk adds its read time).
"""
from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from broker_core.clock import SYSTEM_CLOCK
from broker_core.config import BrokerConfig
from broker_core.protocol.codec.entries import broker_entry_prefix, encode_entry
from broker_core.protocol.pulsar_api_pb2 import MessageMetadata
from broker_core.core.registry import TopicRegistry
from broker_core.storage.log import ManagedLog
from broker_core.types import TopicName

TOPIC = TopicName.parse("persistent://public/default/load-bench")


def fill(folder: Path, total_bytes: int, entry_bytes: int) -> int:
    log = ManagedLog(folder, max_segment_bytes=256 << 20)
    payload = bytes(entry_bytes)
    meta = MessageMetadata(producer_name="bench", sequence_id=0, publish_time=int(time.time() * 1000))
    entry = encode_entry(meta, payload)
    written = 0
    while written < total_bytes:
        batch = [(broker_entry_prefix(0, log.end_offset + i) + entry, 1, meta.publish_time) for i in range(64)]
        log.append_many(batch)
        written += 64 * len(batch[0][0])
    log.sync()
    end = log.end_offset
    log.close()
    return end


async def load_rounds(data_dir: Path, rounds: int, end: int) -> list[float]:
    config = BrokerConfig(brokerTopicIdleUnloadSeconds=0)
    with ThreadPoolExecutor(4) as executor:
        registry = TopicRegistry(data_dir, config, executor, SYSTEM_CLOCK)
        topic = registry.get(TOPIC, create=True)
        for i, name in enumerate(("a", "b", "c")):
            topic.acknowledge_up_to(name, end // (i + 2))
            sub = topic.durable_subscription(name)
            for k in range(0, 2000, 2):  # individual acks: a cursor with 1,000 ranges
                sub.cursor.ack(end // 2 + k, end // 2 + k + 1)
            topic.cursor_changed(name)
        times = []
        for _ in range(rounds):
            assert registry.unload(str(TOPIC))
            started = time.perf_counter()
            registry.get(TOPIC, create=False)
            times.append((time.perf_counter() - started) * 1000)
        await registry.close()
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gb", type=float, default=1.0, help="data stored in the topic, GB")
    parser.add_argument("--entry-kb", type=int, default=64, help="entry size, KiB")
    parser.add_argument("--rounds", type=int, default=20, help="unload/load rounds")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="pulsarlike-load-") as tmp:
        data_dir = Path(tmp)
        folder = data_dir / "topics" / "persistent" / "public" / "default" / "load-bench"
        total = int(args.gb * (1 << 30))
        end = fill(folder, total, args.entry_kb << 10)
        gb = sum(p.stat().st_size for p in folder.glob("*.log")) / (1 << 30)
        print(f"topic: {gb:.2f} GB in {len(list(folder.glob('*.log')))} segments, {end} entries")

        times = asyncio.run(load_rounds(data_dir, args.rounds, end))
        print(f"load after unload: p50 {statistics.median(times):.1f} ms, max {max(times):.1f} ms"
              f" ({args.rounds} rounds, 3 subscriptions)")

        started = time.perf_counter()
        log = ManagedLog(folder, max_segment_bytes=256 << 20)
        opened = time.perf_counter() - started
        print(f"cold open (recovery): {opened * 1000:.1f} ms, {opened / gb * 1000:.1f} ms per GB")

        started = time.perf_counter()
        entries = 0
        offset = log.start_offset
        while offset < log.end_offset:
            batch = log._disk_entries(offset, 1 << 20)  # every frame's CRC, no tail cache
            for entry in batch:
                entries += 1
                offset = entry.end_offset
        verified = time.perf_counter() - started
        print(f"verify every frame: {verified:.2f} s, {verified / gb:.2f} s per GB ({entries} entries)")
        log.close()


if __name__ == "__main__":
    main()
