"""``spark.read.format("pulsarlike")`` on a broker without dense offsets (Apache Pulsar, pulsar-lite): a batch
read of fixed message id ranges (:mod:`connector.spark.message_id_offsets`).

``startingOffsets`` (``earliest``, the default, or JSON of message ids) up to ``endingOffsets`` (``latest``, the
default: each partition's last message id when the read is planned, or JSON), per topic partition, one Spark
partition each (:mod:`connector.spark.id_ranges`). The last message ids are asked on a probe subscription
removed right after; nothing else is created or acknowledged.
"""
from __future__ import annotations

from typing import Iterator, Sequence

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, InputPartition

from connector.spark.any_broker import IdSourceCalls, check_supported
from connector.spark.id_ranges import plan_id_ranges, read_id_range
from connector.spark.id_stream_reader import resolve_id_offsets
from connector.spark.message_id_offsets import EARLIEST, IdOffset, holds_messages
from connector.spark.offsets import TopicPartition
from connector.spark.options import SourceOptions
from connector.spark.planning import OffsetOutOfRange


class MessageIdBatchReader(DataSourceReader):
    def __init__(self, options: SourceOptions, calls: IdSourceCalls | None = None) -> None:
        check_supported(options)
        self.options = options
        self._calls = calls

    def plan(self) -> tuple[dict[TopicPartition, IdOffset], dict[TopicPartition, IdOffset]]:
        """(start, end) per topic partition."""
        opts = self.options
        calls = self._calls or IdSourceCalls(opts.service_url, opts.poll_timeout_ms, opts.security)
        try:
            partitions = calls.discover(opts.spec)
            last = calls.last_ids(partitions)
        finally:
            calls.close()
        if opts.starting == "offsets":
            start = resolve_id_offsets("startingOffsets", opts.starting_offsets_map(), last, True)
        else:
            start = {tp: EARLIEST for tp in last}
        if opts.ending == "offsets":
            end = resolve_id_offsets("endingOffsets", opts.ending_offsets_map(), last, False)
        else:
            end = dict(last)
        for tp in sorted(start):
            if holds_messages(end[tp], start[tp]):
                raise OffsetOutOfRange(f"{tp.topic} partition {tp.partition}: startingOffsets {start[tp]} is after "
                                       f"endingOffsets {end[tp]}; make the start <= the end")
        return start, end

    def partitions(self) -> Sequence[InputPartition]:
        start, end = self.plan()
        return plan_id_ranges(start, end)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return read_id_range(self.options, partition)
