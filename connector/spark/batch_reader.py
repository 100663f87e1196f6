"""``spark.read.format("pulsarlike")``: a batch read of fixed offset ranges.

The ranges are fixed when the read is planned: ``startingOffsets`` (``earliest``, the default, JSON, or
``subscription``) or ``startingTime``, up to ``endingOffsets`` (``latest``, the default, or JSON) or
``endingTime``, per topic partition. A batch read acknowledges nothing and creates no subscription (a time
lookup uses a short-lived probe subscription). Retention applies: a topic without a durable subscription or
a retention policy keeps only its active segment once segments roll (Pulsar's semantics), so older data
may be gone; ``failOnDataLoss`` decides whether that fails the read.
"""
from __future__ import annotations

from typing import Iterator, Sequence

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, InputPartition

from connector.spark.broker_calls import BrokerCalls
from connector.spark.offsets import Offsets
from connector.spark.options import SourceOptions
from connector.spark.partition_reader import DataLossError, RangePartition, RangeReader
from connector.spark.planning import OffsetOutOfRange, lost_ranges, resolve_user_offsets
from connector.spark.stream_reader import plan_ranges


class PulsarLikeBatchReader(DataSourceReader):
    def __init__(self, options: SourceOptions) -> None:
        self.options = options

    def plan(self) -> tuple[Offsets, Offsets]:
        """(start, end) per topic partition."""
        opts = self.options
        calls = BrokerCalls(opts.service_url, opts.poll_timeout_ms)
        try:
            bounds = calls.bounds(calls.discover(opts.spec))
            if opts.starting == "time":
                assert opts.starting_time_ms is not None
                start = {tp: calls.offset_for_time(tp, opts.starting_time_ms)
                         for tp in bounds}
            elif opts.starting == "subscription":
                start = {tp: calls.subscription_position(tp, opts.subscription_name) for tp in bounds}
            elif opts.starting == "offsets":
                start = resolve_user_offsets("startingOffsets", opts.starting_offsets_map(), bounds, True)
            else:
                start = {tp: b.start for tp, b in bounds.items()}
            if opts.ending == "time":
                assert opts.ending_time_ms is not None
                end = {tp: calls.offset_for_time(tp, opts.ending_time_ms)
                       for tp in bounds}
            elif opts.ending == "offsets":
                end = resolve_user_offsets("endingOffsets", opts.ending_offsets_map(), bounds, False)
            else:
                end = {tp: b.end for tp, b in bounds.items()}
        finally:
            calls.close()
        for tp in sorted(start):
            if start[tp] > end[tp]:
                raise OffsetOutOfRange(
                    f"{tp.topic} partition {tp.partition}: startingOffsets {start[tp]} is after endingOffsets "
                    f"{end[tp]}; make the start <= the end")
        if opts.fail_on_data_loss:
            for tp, first, stored in lost_ranges(start, bounds):
                if first < end[tp]:
                    raise DataLossError(
                        f"messages {first}..{min(stored, end[tp]) - 1} of {tp.topic} partition {tp.partition} "
                        "were deleted by retention; set option failOnDataLoss=false to read what is left, or "
                        "keep data with a retention policy or a durable subscription",
                        topic=tp.topic, partition=tp.partition, start=first, end=min(stored, end[tp]))
        return start, end

    def partitions(self) -> Sequence[InputPartition]:
        start, end = self.plan()
        return plan_ranges(start, end, self.options.max_messages_per_partition)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if not isinstance(partition, RangePartition):
            return iter(())  # Spark reads one placeholder partition when planning found none
        opts = self.options
        return RangeReader(opts.service_url, partition, opts.poll_timeout_ms, opts.fail_on_data_loss).batches()
