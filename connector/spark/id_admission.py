"""How much one trigger admits on a broker without dense offsets, where a read limit must cut a range at a
message it cannot compute: the driver counts by reading (:func:`~connector.spark.id_ranges.skim`).

``maxMessagesPerTrigger`` is exact there, as on pulsarlike: each partition with messages waiting first gets an
even share of the limit (remainders to the first partitions in sorted order) and is counted up to it; what
partitions with fewer messages left unused then goes, in sorted order, to those that had more. The cost is the
admitted messages read once more, on the driver. ``maxBytesPerTrigger`` counts payload bytes the same way
(at least one message per partition with messages waiting). Without a limit nothing is read: a trigger admits
up to each partition's last message id.
"""
from __future__ import annotations

from typing import Any, Callable, Mapping

from connector.spark.id_ranges import Skimmed, skim
from connector.spark.message_id_offsets import IdOffset, holds_messages
from connector.spark.offsets import TopicPartition

Opener = Callable[[TopicPartition, IdOffset], Any]
"""A reader of a partition starting after a boundary (exclusive)."""


def _even(total: int | None, n: int, i: int) -> int | None:
    return None if total is None else total // n + (1 if i < total % n else 0)


def admit_by_counting(begin: Mapping[TopicPartition, IdOffset], ceiling: Mapping[TopicPartition, IdOffset],
                      open_reader: Opener, timeout_ms: int, max_messages: int | None,
                      max_bytes: int | None = None) -> dict[TopicPartition, IdOffset]:
    """End offsets for one trigger: ``ceiling`` cut so the batch holds at most ``max_messages`` messages (and
    about ``max_bytes`` payload bytes). Partitions only in ``ceiling`` are returned as given."""
    end = dict(ceiling)
    waiting = [tp for tp in sorted(ceiling) if tp in begin and holds_messages(begin[tp], ceiling[tp])]
    if not waiting or (max_messages is None and max_bytes is None):
        return end
    counted: dict[TopicPartition, Skimmed] = {}

    def count(tp: TopicPartition, start: IdOffset, messages: int | None, size: int | None) -> Skimmed:
        if messages == 0:
            return Skimmed(start, 0, 0, False)
        return skim_after(open_reader, tp, start, ceiling[tp], timeout_ms, messages, size)

    for i, tp in enumerate(waiting):
        counted[tp] = count(tp, begin[tp], _even(max_messages, len(waiting), i), _even(max_bytes, len(waiting), i))
    for tp in waiting:
        left_messages = None if max_messages is None else max_messages - sum(s.messages for s in counted.values())
        left_bytes = None if max_bytes is None else max_bytes - sum(s.stored_bytes for s in counted.values())
        if (left_messages is not None and left_messages <= 0) or (left_bytes is not None and left_bytes <= 0):
            break
        done = counted[tp]
        if done.complete:
            continue
        more = count(tp, done.end, left_messages, left_bytes)
        counted[tp] = Skimmed(more.end, done.messages + more.messages, done.stored_bytes + more.stored_bytes,
                              more.complete)
    for tp, result in counted.items():
        end[tp] = result.end
    return end


def count_waiting(begin: Mapping[TopicPartition, IdOffset], ceiling: Mapping[TopicPartition, IdOffset],
                  open_reader: Opener, timeout_ms: int, at_most: int) -> int:
    """The messages waiting between ``begin`` and ``ceiling``, counted up to ``at_most`` (whether
    ``minMessagesPerTrigger`` are there), partitions in sorted order."""
    waiting = 0
    for tp in sorted(begin):
        if waiting < at_most and holds_messages(begin[tp], ceiling[tp]):
            waiting += skim_after(open_reader, tp, begin[tp], ceiling[tp], timeout_ms, at_most - waiting).messages
    return waiting


def skim_after(open_reader: Opener, tp: TopicPartition, start: IdOffset, end: IdOffset, timeout_ms: int,
               max_messages: int | None = None, max_bytes: int | None = None) -> Skimmed:
    """:func:`~connector.spark.id_ranges.skim` of ``start -> end`` on a reader of its own, closed after."""
    reader = open_reader(tp, start)
    try:
        return skim(reader, start, end, timeout_ms, str(tp), max_messages, max_bytes)
    finally:
        reader.close()
