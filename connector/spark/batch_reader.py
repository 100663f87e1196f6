"""``spark.read.format("pulsarlike")``: a batch read of fixed offset ranges.

The ranges are fixed when the read is planned: ``startingOffsets`` (``earliest``, the default, JSON, or
``subscription``) or ``startingTime``, up to ``endingOffsets`` (``latest``, the default, or JSON) or
``endingTime``, per topic partition. A batch read acknowledges nothing and creates no subscription (a time
lookup uses a short-lived probe subscription). Retention applies: a topic without a durable subscription or
a retention policy keeps only its active segment once segments roll (Pulsar's semantics), so older data
may be gone; ``failOnDataLoss`` decides whether that fails the read (false: the read starts at the first
stored message, the gap logged once). Damaged storage is lost data too: messages the broker cannot read
(its ``DataLost``: a damaged frame, a segment file missing) fail the task with ``failOnDataLoss``; false skips
them and the read goes on after them (:mod:`connector.spark.data_loss`).

With ``readCompacted`` the read is a snapshot of each partition's compacted view: the latest value per key,
one Spark partition per topic partition (:mod:`connector.spark.compacted`).

A topic named by ``topic``/``topics`` that does not exist fails the read with ``TopicNotFound`` (an empty
result would hide a misspelt name); a ``topicsPattern`` that matches nothing reads nothing.
"""
from __future__ import annotations

import logging
import time
from typing import Any, Iterator, Sequence

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, InputPartition

from broker_core import errors

from connector.spark.by_timestamp import end_by_time, start_by_time
from connector.spark.compacted import compaction_stamp
from connector.spark.offset_kinds import Bounds, DenseKind
from connector.spark.offsets import TopicPartition
from connector.spark.options import SourceOptions
from connector.spark.data_loss import DataLossError
from connector.spark.partition_reader import RangePartition
from connector.spark.planning import OffsetOutOfRange, why_lost
from connector.spark.stream_reader import read_partition

log = logging.getLogger(__name__)

WAIT_FOR_TOPIC_S = 0.5
"""How often a batch read with ``waitingForNonExistedTopic`` looks for its topics again."""


class PulsarLikeBatchReader(DataSourceReader):
    """The one batch reader: over pulsarlike's dense offsets or any other broker's message ids, as the read's
    kind says (:mod:`connector.spark.offset_kinds`; a broker without dense offsets reads from before its first
    message up to each partition's last message id, asked on a short-lived reader, creating nothing)."""

    def __init__(self, options: SourceOptions, kind: Any = None) -> None:
        self.options = options
        self._kind = kind or DenseKind(options)
        self._stamps: dict[TopicPartition, int] = {}
        self._clock, self._sleep = time.monotonic, time.sleep

    def plan(self) -> tuple[dict[TopicPartition, Any], dict[TopicPartition, Any]]:
        """(start, end) per topic partition."""
        opts = self.options
        kind = self._kind
        calls = kind.calls
        try:
            discovered = calls.discover(opts.spec)
            bounds = kind.bounds(discovered)
            if opts.spec.pattern is None:  # a pattern matching nothing reads nothing
                if opts.wait_for_topics:
                    discovered, bounds = self._wait_for_topics(discovered, bounds)
                _check_topics_exist(discovered, bounds)
            if opts.starting == "time":
                start = start_by_time(opts, calls.offset_for_time, bounds)
            elif opts.starting == "subscription":
                start = {tp: calls.subscription_position(tp, opts.subscription_name) for tp in bounds}
            elif opts.starting == "offsets":
                start = kind.resolve("startingOffsets", opts.starting_offsets_map(), bounds, True)
            else:
                start = {tp: kind.first(b) for tp, b in bounds.items()}
            if opts.ending == "time":
                end = end_by_time(opts, calls.offset_for_time, bounds)
            elif opts.ending == "offsets":
                end = kind.resolve("endingOffsets", opts.ending_offsets_map(), bounds, False)
            else:
                end = {tp: b.end for tp, b in bounds.items()}
            for tp in sorted(start):
                if kind.holds(end[tp], start[tp]):
                    raise OffsetOutOfRange(
                        f"{tp.topic} partition {tp.partition}: startingOffsets {start[tp]} is after endingOffsets "
                        f"{end[tp]}; make the start <= the end")
            if opts.read_compacted:
                # The snapshot's ranges, and each partition's last compaction to tell a changed view by.
                self._stamps = {tp: compaction_stamp(calls.stats(tp)) for tp in bounds}
            for tp, first, stored in kind.lost_ranges(start, bounds):
                last = min(stored, end[tp]) - 1
                if first > last:
                    continue
                message = (f"messages {first}..{last} of {tp.topic} partition {tp.partition} were deleted by "
                           "retention")
                if opts.fail_on_data_loss:
                    raise DataLossError(f"{message}: {why_lost(calls.stats(tp), None)}", topic=tp.topic,
                                        partition=tp.partition, start=first, end=last + 1)
                log.warning("event=data_lost topic=%s partition=%d first=%d last=%d: %s; skipped "
                            "(failOnDataLoss=false)", tp.topic, tp.partition, first, last, message)
        finally:
            calls.close()
        if not opts.fail_on_data_loss:
            start = {tp: kind.earlier(offset, end[tp]) for tp, offset in kind.skip_lost(start, bounds).items()}
        return start, end

    def _wait_for_topics(self, discovered: list[TopicPartition], bounds: dict[TopicPartition, Bounds],
                         ) -> tuple[list[TopicPartition], dict[TopicPartition, Bounds]]:
        """pulsar-spark's ``waitingForNonExistedTopic``: discover again until every named topic exists, for
        at most ``pollTimeoutMs`` (then :func:`_check_topics_exist` fails the read as without the option)."""
        opts, kind = self.options, self._kind
        deadline = self._clock() + opts.poll_timeout_ms / 1000.0
        while _missing(discovered, bounds) and self._clock() < deadline:
            log.info("event=waiting_for_topics topics=%s: waitingForNonExistedTopic=true",
                     ",".join(_missing(discovered, bounds)))
            self._sleep(WAIT_FOR_TOPIC_S)
            discovered = kind.calls.discover(opts.spec)
            bounds = kind.bounds(discovered)
        return discovered, bounds

    def partitions(self) -> Sequence[InputPartition]:
        start, end = self.plan()
        if self.options.read_compacted:
            # One range per partition: the snapshot reduces all of a partition's rows (connector.spark.compacted).
            return [RangePartition(tp.topic, tp.partition, start[tp], end[tp], compacted=True, snapshot=True,
                                   compaction_stamp=self._stamps.get(tp, 0))
                    for tp in sorted(end) if tp in start and end[tp] > start[tp]]
        return self._kind.plan(start, end)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return read_partition(self.options, partition)


def _missing(discovered: list[TopicPartition], bounds: dict[TopicPartition, Bounds]) -> list[str]:
    return [tp.topic for tp in discovered if tp.partition < 0 and tp not in bounds]


def _check_topics_exist(discovered: list[TopicPartition], bounds: dict[TopicPartition, Bounds]) -> None:
    # discover() names a listed topic without partition metadata as non-partitioned; bounds() leaves it out
    # when it does not exist. (A partitioned topic's partitions appear on first use: reading none is right.)
    missing = _missing(discovered, bounds)
    if missing:
        raise errors.TopicNotFound(
            f"topic {missing[0]} does not exist, so a batch read of it would be empty; check the name "
            f"(`pulsarlike admin namespaces topics {'/'.join(missing[0].split('://', 1)[1].split('/')[:2])}` lists "
            "a namespace's topics) or produce to it first", topic=missing[0])
