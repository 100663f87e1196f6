"""Where a read starts or ends by publish time, per topic partition (``startingTime``/``startingTimestamp``,
``startingOffsetsByTimestamp``, ``endingTime``/``endingTimestamp``, ``endingOffsetsByTimestamp``), on the
driver, with pulsarlike's offset-for-time lookup (the offset of the first message published at or after a
time; the partition's end when there is none).

A partition with no message at or after its start time: ``startingOffsetsByTimestampStrategy=error`` fails
the read naming it (:class:`NoOffsetForTime`), ``latest`` starts it at its end. At the end, such a partition
ends at its latest (Kafka's rule for ``endingOffsetsByTimestamp``). Per-partition times must name every
partition the read covers when it is planned, as Kafka requires; partitions a stream discovers later start
at their first message.
"""
from __future__ import annotations

from typing import Any, Callable, Mapping

from connector.spark.offsets import TopicPartition
from connector.spark.options import SourceOptions
from connector.spark.planning import OffsetOutOfRange

OffsetForTime = Callable[[TopicPartition, int], int]


class NoOffsetForTime(OffsetOutOfRange):
    """No message was published at or after a partition's start time (strategy ``error``)."""


def start_by_time(opts: SourceOptions, offset_for_time: OffsetForTime, bounds: Mapping[TopicPartition, Any],
                  ) -> dict[TopicPartition, int]:
    option = "startingTime" if opts.starting_time_ms is not None else "startingOffsetsByTimestamp"
    times = _times(option, opts.starting_time_ms, dict(opts.starting_times), bounds)
    out: dict[TopicPartition, int] = {}
    for tp in sorted(bounds):
        offset = offset_for_time(tp, times[tp])
        if offset >= bounds[tp].end and opts.timestamp_strategy == "error":
            raise NoOffsetForTime(
                f"option {option}: {tp.topic} partition {tp.partition} has no message published at or after "
                f"{times[tp]} (ms since the epoch), so the read has nowhere to start it; give an earlier time, or "
                "set option startingOffsetsByTimestampStrategy=latest to start such partitions at their latest")
        out[tp] = offset
    return out


def end_by_time(opts: SourceOptions, offset_for_time: OffsetForTime, bounds: Mapping[TopicPartition, Any],
                ) -> dict[TopicPartition, int]:
    option = "endingTime" if opts.ending_time_ms is not None else "endingOffsetsByTimestamp"
    times = _times(option, opts.ending_time_ms, dict(opts.ending_times), bounds)
    return {tp: min(offset_for_time(tp, times[tp]), bounds[tp].end) for tp in sorted(bounds)}


def _times(option: str, every: int | None, per_partition: dict[TopicPartition, int],
           bounds: Mapping[TopicPartition, Any]) -> dict[TopicPartition, int]:
    if every is not None:
        return {tp: every for tp in bounds}
    unknown = sorted(str(tp) for tp in per_partition if tp not in bounds)
    if unknown:
        raise OffsetOutOfRange(f"option {option} names {', '.join(unknown)}, which does not exist; name existing "
                               "partitions (partition -1 for a non-partitioned topic)")
    missing = sorted(str(tp) for tp in bounds if tp not in per_partition)
    if missing:
        raise OffsetOutOfRange(f"option {option} must give a time for every partition the read covers (as "
                               f"Kafka's source requires); missing: {', '.join(missing)}")
    return per_partition
