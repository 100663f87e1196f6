"""``spark.readStream.format("pulsarlike")``: the micro-batch stream reader.

Lifecycle on the driver (Spark keeps one reader object for the query's run):

- ``initialOffset()`` (a query without checkpoint only; Spark asks on every trigger until a first batch is
  planned, and gets the same answer): resolves ``startingOffsets``/``startingTime`` per topic partition and
  names the query's durable subscription: option ``subscriptionName``, or a new
  ``spark-pulsarlike-<random>`` one, created at the starting offsets. The name travels in every offset Spark checkpoints
  (:func:`~connector.spark.offsets.encode_source_offset`), so a restarted query keeps its subscription.
- ``latestOffset(start, limit)``: ``start`` is the end of the last batch Spark committed, so the
  subscription is acknowledged up to it (created there when missing) before anything else; then partitions
  are discovered (new partitions and newly matching topics are first recorded at their first stored offset,
  then read from there), every partition's end is read, ``start`` is checked for data deleted by retention
  (reported once per range; with ``failOnDataLoss=false`` admission starts after it), and at most what the
  read limit allows is admitted.
- ``partitions(start, end)``: one :class:`RangePartition` per topic partition with messages, split every
  ``maxMessagesPerPartition`` messages; executors read them (``read``) without contacting the driver (a
  damaged stored range is found there, and lost as :mod:`connector.spark.data_loss` says).
- ``commit(end)``: acknowledges up to ``end`` too (Spark calls it one batch late, and only when a new batch
  starts); ``stop()`` acknowledges the last end known committed. The checkpoint, not the subscription, is the
  source of truth: the subscription trails it by at most the batch in flight.

What does not depend on offsets being dense is shared with the reader by message id: :mod:`connector.spark.
micro_batch`.
"""
from __future__ import annotations

import logging
import time
from typing import Any, Callable, Iterator, Sequence

import pyarrow as pa
from pyspark.sql.datasource import InputPartition

from broker_core import errors

from connector.spark import offsets as off
from connector.spark.source_admin import SourceAdmin
from connector.spark.micro_batch import MicroBatchReader
from connector.spark.offset_kinds import DenseKind
from connector.spark.offsets import Offsets, TopicPartition
from connector.spark.options import SourceOptions, legacy_subscription_name, new_subscription_name
from connector.spark.data_loss import DataLossError
from connector.spark.partition_reader import RangePartition, RangeReader, split_range
from connector.spark.planning import why_lost
from connector.spark.spark_versions import ReadAllAvailable, ReadLimit, check_stream_options

log = logging.getLogger(__name__)

KEEPALIVE_S = 60.0
"""An unchanged position is acknowledged again after this long, so a running but idle query's subscription
counts as active (``subscriptionExpirationTimeMinutes`` expires inactive ones only)."""


class PulsarLikeStreamReader(MicroBatchReader):
    """The one stream reader: over pulsarlike's dense offsets or any other broker's message ids, as the query's
    kind says (:mod:`connector.spark.offset_kinds`; ``calls``: a dense kind's broker calls, for tests)."""

    def __init__(self, options: SourceOptions, clock: Callable[[], float] = time.monotonic,
                 calls: SourceAdmin | None = None, kind: Any = None) -> None:
        check_stream_options(options)  # what this Spark cannot serve is refused before the broker is asked
        kind = kind or DenseKind(options, calls)
        super().__init__(options, clock, kind.calls)
        self._kind = kind
        self._replaced: str | None = None
        self._acked: dict[TopicPartition, tuple[Any, float]] = {}
        """Per partition: the offset last acknowledged, and when (clock seconds)."""
        self._readable_from: dict[TopicPartition, Any] = {}
        """failOnDataLoss=false: the first stored offset of partitions whose start was deleted."""
        self._reported_loss: dict[TopicPartition, int] = {}
        """Per partition: the end of the deleted range already reported."""
        self.lost_messages = 0
        """Messages found deleted by retention and skipped (failOnDataLoss=false), as seen on the driver."""

    # --- offsets --------------------------------------------------------------------------------------
    def _start(self) -> dict:
        opts, kind = self.options, self._kind
        self._subscription = opts.subscription_name or new_subscription_name(opts.pulsar_spark.subscription_prefix)
        bounds = kind.bounds(self._calls.discover(opts.spec), self._subscription)
        if opts.starting == "earliest":
            start = {tp: kind.first(b) for tp, b in bounds.items()}
        elif opts.starting == "latest":
            start = {tp: b.end for tp, b in bounds.items()}
        elif opts.starting == "subscription":  # dense only (IdKind refuses the option)
            start = {tp: self._calls.subscription_position(tp, opts.subscription_name) for tp in bounds}
        elif opts.starting == "time":  # dense only (IdKind refuses the options)
            from connector.spark.by_timestamp import start_by_time

            start = start_by_time(opts, self._calls.offset_for_time, bounds)
        else:
            start = kind.resolve("startingOffsets", opts.starting_offsets_map(), bounds, True)
        self._acknowledge(start)  # creates the subscription there, so retention keeps what the query reads
        log.info("event=query_started topics=%s start=%s subscription=%s offsets=%s", opts.spec.describe(),
                 off.dumps(start), self._subscription, kind.name)
        return off.encode_source_offset(start, self._subscription)

    def _decode(self, stored: dict) -> dict[TopicPartition, Any]:
        """The offsets of an offset Spark hands back (one of the other kind is refused); the first one names
        the subscription of a restarted query (the option, when given, wins over the checkpoint)."""
        decoded = off.decode_source_offset(stored)
        self._kind.own(decoded.offsets)
        if self._subscription is None:
            if decoded.subscription is not None:
                self._subscription = decoded.subscription
            else:
                self._subscription = legacy_subscription_name(self.options.spec)
                log.warning("event=legacy_checkpoint subscription=%s: the checkpoint was written before queries "
                            "had their own subscription, so the query keeps the name every query on these "
                            "topics shared; to give it its own, set option subscriptionName and delete the "
                            "old subscription once no query uses it", self._subscription)
        elif decoded.subscription not in (None, self._subscription, self._replaced):
            self._replaced = decoded.subscription  # said once, not on every trigger
            log.warning("event=subscription_replaced subscription=%s checkpoint_subscription=%s: option "
                        "subscriptionName wins; the checkpoint's subscription is no longer acknowledged (delete "
                        "it, or let it expire)", self._subscription, decoded.subscription)
        return decoded.offsets

    def prepareForTriggerAvailableNow(self) -> None:
        bounds = self._kind.bounds(self._calls.discover(self.options.spec), self._subscription)
        self._target = {tp: b.end for tp, b in bounds.items()}
        log.info("event=available_now target=%s", off.dumps(self._target))

    def latestOffset(self, start: dict | None = None, limit: ReadLimit | None = None) -> dict:
        start, limit = self._start_and_limit(start, limit)  # Spark before 4.2 passes neither
        opts, kind = self.options, self._kind
        begin = self._decode(start)
        bounds = kind.bounds(self._known(begin), self._subscription)
        self._check_loss(begin, bounds)  # before acknowledging: a subscription gone explains a loss
        self._committed_up_to(begin)
        latest = {tp: begin[tp] for tp in begin}  # a partition gone: stays where it was
        latest.update({tp: b.end for tp, b in bounds.items()})
        self._latest = latest
        readable = begin if opts.fail_on_data_loss else kind.skip_lost(begin, bounds)
        cap = latest if self._target is None else {
            tp: kind.earlier(end, self._target.get(tp, begin.get(tp, end))) for tp, end in latest.items()}
        ceiling = {tp: kind.later(readable[tp], cap[tp]) for tp in begin}
        end = self._admit(readable, ceiling, limit, bounds)
        # New partitions are recorded at their first stored offset first; the next batch reads them.
        fresh = {tp: kind.first(bounds[tp]) for tp in sorted(bounds) if tp not in begin}
        self._acknowledge(fresh)
        self._add_partitions(end, fresh)
        return self._planned(begin, end)

    def _admit(self, begin: dict, ceiling: dict, limit: ReadLimit, bounds: dict) -> dict:
        opts = self.options
        if isinstance(limit, ReadAllAvailable):
            return ceiling
        if self._may_hold_back() and self._kind.fewer_than(begin, ceiling, opts.min_messages_per_trigger):
            return dict(begin)  # wait for more (minMessagesPerTrigger) until maxTriggerDelay passes
        return self._kind.admit(begin, ceiling, bounds)

    def _check_loss(self, begin: dict, bounds: dict) -> None:
        for tp, first, stored in self._kind.lost_ranges(begin, bounds):
            message = (f"messages {first}..{stored - 1} of {tp.topic} partition {tp.partition} were deleted "
                       "by retention before the query read them")
            if self.options.fail_on_data_loss:
                raise DataLossError(f"{message}: {why_lost(self._calls.stats(tp), self._subscription)}",
                                    topic=tp.topic, partition=tp.partition, start=first, end=stored)
            self._readable_from[tp] = stored
            unreported = max(first, self._reported_loss.get(tp, first))
            if unreported < stored:
                self._reported_loss[tp] = stored
                self.lost_messages += stored - unreported
                log.warning("event=data_lost topic=%s partition=%d first=%d last=%d lost_total=%d: %s; skipped "
                            "(failOnDataLoss=false)", tp.topic, tp.partition, unreported, stored - 1,
                            self.lost_messages, message)

    # --- the durable subscription ---------------------------------------------------------------------
    def _acknowledge(self, upto: dict, force: bool = False) -> None:
        """Acknowledge each partition up to its offset (the broker creates the subscription there when
        missing, and never moves it back); on pulsarlike an unchanged position only every :data:`KEEPALIVE_S`."""
        now, kind = self._clock(), self._kind
        for tp, offset in sorted(upto.items()):
            done = self._acked.get(tp)
            if done is not None and not kind.holds(done[0], offset) and now - done[1] < KEEPALIVE_S \
                    and not force and not kind.repeat_acks:
                continue
            try:
                kind.acknowledge(tp, self._subscription or "", offset)
            except errors.PulsarLikeError as exc:
                # The checkpoint already holds the commit; the next trigger acknowledges again.
                log.warning("event=ack_failed partition=%s offset=%s subscription=%s error=%s", tp, offset,
                            self._subscription, exc)
                continue
            self._acked[tp] = (kind.later(offset, done[0]) if done else offset, now)

    # --- planning and reading -------------------------------------------------------------------------
    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        begin = self._decode(start)
        self._reach(end)
        readable = {tp: self._kind.later(offset, self._readable_from.get(tp, offset)) for tp, offset in begin.items()}
        return self._kind.plan(readable, self._decode(end), self._subscription or "")

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return read_partition(self.options, partition)


def plan_ranges(start: Offsets, end: Offsets, max_per_partition: int, subscription: str = "",
                compacted: bool = False, min_partitions: int | None = None) -> list[RangePartition]:
    """Spark partitions for ``start -> end``; partitions only in ``end`` (just discovered) read nothing.
    Ranges are split every ``max_per_partition`` offsets, then (option ``minPartitions``) cut into more
    contiguous slices until there are at least ``min_partitions`` (:func:`~connector.spark.kafka_options.
    slice_counts`: the largest slices first; never an empty one). Each slice is an exact offset range, so the
    batch's rows are the same however its slices are scheduled or retried."""
    ranges: list[RangePartition] = []
    for tp in sorted(end):
        if tp in start and end[tp] > start[tp]:
            ranges.extend(split_range(tp, start[tp], end[tp], max_per_partition, subscription, compacted))
    if min_partitions is None or len(ranges) >= min_partitions:
        return ranges
    from dataclasses import replace

    from connector.spark.kafka_options import cut, slice_counts

    counts = slice_counts([r.end - r.start for r in ranges], min_partitions)
    return [replace(r, start=lo, end=hi) for r, n in zip(ranges, counts) for lo, hi in cut(r.start, r.end, n)]


def read_range(options: SourceOptions, partition: InputPartition) -> Iterator[pa.RecordBatch]:
    """A dense reader's ``read`` (stream and batch): the rows of one :class:`RangePartition`."""
    if not isinstance(partition, RangePartition):
        return iter(())  # Spark reads one placeholder partition when planning found none
    return RangeReader(options.service_url, partition, options.poll_timeout_ms, options.fail_on_data_loss,
                       security=options.security, permits_window=options.pulsar_spark.receiver_queue_size,
                       topic_schema=options.topic_schema, key_type=options.key_type,
                       transport=options.transport, crypto=options.crypto).batches()


def read_partition(options: SourceOptions, partition: InputPartition) -> Iterator[pa.RecordBatch]:
    """Any reader's ``read`` (stream and batch, either kind of offsets): the rows of one Spark partition, by
    its type (a dense :class:`RangePartition` or an :class:`~connector.spark.id_ranges.IdRangePartition`)."""
    if isinstance(partition, RangePartition):
        batches = read_range(options, partition)
    else:
        from connector.spark.id_ranges import read_id_range

        batches = read_id_range(options, partition)  # nothing for Spark's placeholder partition
    tp = getattr(partition, "topic_partition", None)
    if options.topic_column == "partition" and tp is not None and tp.partition >= 0:
        batches = with_partition_topic(batches, f"{tp.topic}-partition-{tp.partition}")
    if options.include_headers:
        from connector.spark.headers import add_headers

        return (add_headers(batch) for batch in batches)
    return batches


def with_partition_topic(batches: Iterator[pa.RecordBatch], name: str) -> Iterator[pa.RecordBatch]:
    """``__topic`` as pulsar-spark gives it: the partition's own topic name (option ``topicColumn``)."""
    for batch in batches:
        index = batch.schema.get_field_index("__topic")
        yield batch.set_column(index, batch.schema.field(index), pa.repeat(pa.scalar(name, pa.string()),
                                                                            batch.num_rows))
