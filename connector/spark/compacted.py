"""``readCompacted``: what the source does with a partition's compacted view (Pulsar's compacted reader).

Below a partition's compaction horizon a compacted reader receives only the latest message of each key (kept
with its original offset, so offsets have gaps there, and tombstones are gone); from the horizon on, the raw
messages. The source reads that view:

- **a batch read is a snapshot** -- the latest value of every key as of the planned end ``E`` of each
  partition. The view read up to ``E`` still holds the raw messages from the horizon on, so the rows are
  reduced once more here (:func:`latest_per_key`): the last message of each key wins, a key whose last
  message is a tombstone (a null or empty value) is left out, and keyless messages are left out (they are no
  row of a keyed table; read without ``readCompacted`` to see them). One Spark partition per topic partition:
  the view holds about one message per key, and the reduction needs all of a partition's rows.
- **a stream** reads the view as a Pulsar compacted reader does: the kept messages below the horizon, then
  every raw message as it comes (updates and tombstones alike, in offset order); nothing is reduced.

Replays. The view up to ``E`` gives the same snapshot whenever it is read, unless a compaction run that passed
``E`` finished in between: its view lacks the messages of keys updated after ``E``. The planner records each
partition's last compaction (``lastCompactionSucceedTimestamp`` of its stats) in the range; a task that finds
another one reads the raw messages of the range instead (:func:`compacted_since`), which reduce to the same
snapshot -- or, when retention has deleted part of them, fails naming the partition rather than return a
different one.
"""
from __future__ import annotations

from typing import Any, Iterable, Iterator, Mapping

import pyarrow as pa
import pyarrow.compute as pc

STAMP = "lastCompactionSucceedTimestamp"
"""The field of a partition's ``compaction`` stats that changes when a compaction run completes."""


def compaction_stamp(stats: Mapping[str, Any] | None) -> int:
    """When the partition's last compaction run succeeded (ms; 0: never), from its topic stats."""
    return int(((stats or {}).get("compaction") or {}).get(STAMP) or 0)


def compacted_since(planned_stamp: int, stats: Mapping[str, Any] | None) -> bool:
    """Whether a compaction run completed after the read was planned (its view may have changed)."""
    return compaction_stamp(stats) != planned_stamp


def latest_per_key(batches: Iterable[pa.RecordBatch], rows_per_batch: int) -> Iterator[pa.RecordBatch]:
    """The rows of one partition, in offset order, reduced to the last message of each key; keys whose last
    message is a tombstone and keyless messages are left out (see the module docstring)."""
    held = list(batches)
    if not held:
        return
    table = pa.Table.from_batches(held)  # __key binary or string (option keyType): either is a dict key
    if not table.num_rows:
        return
    keys = table.column("__key").to_pylist()
    sizes = pc.fill_null(pc.binary_length(table.column("value")), 0).to_pylist()
    keep = [False] * len(keys)
    seen: set[bytes | str] = set()
    for i in range(len(keys) - 1, -1, -1):
        key = keys[i]
        if key is None or key in seen:
            continue
        seen.add(key)
        keep[i] = sizes[i] > 0
    kept = table.filter(pa.array(keep, type=pa.bool_()))
    yield from kept.combine_chunks().to_batches(max_chunksize=rows_per_batch)
