"""``spark.readStream.format("pulsarlike")``: the micro-batch stream reader.

Lifecycle on the driver (Spark keeps one reader object for the query's run):

- ``initialOffset()`` (a query without checkpoint only): resolves ``startingOffsets``/``startingTime`` per
  topic partition and creates the query's durable subscription there (left as is if it exists).
- ``latestOffset(start, limit)``: discovers partitions (new partitions and newly matching topics are first
  recorded at their first stored offset, then read from there), reads every partition's end, checks
  ``start`` for data deleted by retention, and admits at most what the read limit allows.
- ``partitions(start, end)``: one :class:`RangePartition` per topic partition with messages, split every
  ``maxMessagesPerPartition`` messages; executors read them (``read``) without contacting the driver.
- ``commit(end)``: acknowledges each partition's subscription cursor up to ``end`` so the broker's backlog
  drains and retention can delete what Spark has committed. Spark calls it one batch late and not at all
  for the last batch before a stop: the checkpoint, not the subscription, is the source of truth.
"""
from __future__ import annotations

import logging
import time
from typing import Callable, Iterator, Sequence

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable, ReadLimit, ReadMaxBytes, ReadMaxRows, ReadMinRows, SupportsTriggerAvailableNow)

from broker_core import errors

from connector.spark import offsets as off
from connector.spark.broker_calls import BrokerCalls, Bounds
from connector.spark.offsets import Offsets, TopicPartition
from connector.spark.options import SourceOptions
from connector.spark.partition_reader import DataLossError, RangePartition, RangeReader, split_range
from connector.spark.planning import admit, lost_ranges, resolve_user_offsets

log = logging.getLogger(__name__)


class PulsarLikeStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, options: SourceOptions, clock: Callable[[], float] = time.monotonic) -> None:
        self.options = options
        self._clock = clock
        """Seconds, for maxTriggerDelay (tests pass a fake one)."""
        self._calls = BrokerCalls(options.service_url, options.poll_timeout_ms)
        self._latest: Offsets = {}
        self._target: Offsets | None = None  # Trigger.AvailableNow: read up to here, no further
        self._last_admit_s = clock()
        self._subscribed: set[TopicPartition] = set()
        self._reported_loss: set[tuple[TopicPartition, int]] = set()
        self.lost_messages = 0
        """Messages found deleted by retention and skipped (failOnDataLoss=false), as seen on the driver."""

    # --- offsets --------------------------------------------------------------------------------------
    def initialOffset(self) -> dict:
        opts = self.options
        bounds = self._calls.bounds(self._calls.discover(opts.spec))
        if opts.starting == "earliest":
            start = {tp: b.start for tp, b in bounds.items()}
        elif opts.starting == "latest":
            start = {tp: b.end for tp, b in bounds.items()}
        elif opts.starting == "subscription":
            start = {tp: self._calls.subscription_position(tp, opts.subscription_name) for tp in bounds}
        elif opts.starting == "time":
            assert opts.starting_time_ms is not None
            start = {tp: self._calls.offset_for_time(tp, opts.starting_time_ms)
                     for tp in bounds}
        else:
            start = resolve_user_offsets("startingOffsets", opts.starting_offsets_map(), bounds, True)
        self._ensure_subscription(start)
        log.info("query on %s starts at %s (subscription %s)", opts.spec.describe(), off.dumps(start),
                 opts.subscription_name)
        return off.to_json_dict(start)

    def getDefaultReadLimit(self) -> ReadLimit:
        opts = self.options
        if opts.max_messages_per_trigger is not None:
            return ReadMaxRows(opts.max_messages_per_trigger)
        if opts.max_bytes_per_trigger is not None:
            return ReadMaxBytes(opts.max_bytes_per_trigger)
        if opts.min_messages_per_trigger is not None:
            return ReadMinRows(opts.min_messages_per_trigger)
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        bounds = self._calls.bounds(self._calls.discover(self.options.spec))
        self._target = {tp: b.end for tp, b in bounds.items()}
        log.info("availableNow: reading up to %s", off.dumps(self._target))

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        opts = self.options
        begin = off.from_json_dict(start)
        known = set(self._calls.discover(opts.spec)) | set(begin)
        if self._target is not None:
            known &= set(self._target) | set(begin)
        bounds = self._calls.bounds(known)
        self._check_loss(begin, bounds)
        latest = {tp: begin[tp] for tp in begin}  # a partition gone: stays where it was
        latest.update({tp: b.end for tp, b in bounds.items()})
        self._latest = latest
        cap = latest if self._target is None else {
            tp: min(end, self._target.get(tp, begin.get(tp, end))) for tp, end in latest.items()}
        ceiling = {tp: max(begin[tp], cap[tp]) for tp in begin}
        end = self._admit(begin, ceiling, limit, bounds)
        # New partitions are recorded at their first stored offset first; the next batch reads them.
        fresh = {tp: bounds[tp].start for tp in sorted(bounds) if tp not in begin}
        if fresh:
            self._ensure_subscription(fresh)
            end.update(fresh)
            log.info("new partitions %s, read from %s", ", ".join(map(str, fresh)), off.dumps(fresh))
        if end != begin:
            self._last_admit_s = self._clock()
        return off.to_json_dict(end)

    def _admit(self, begin: Offsets, ceiling: Offsets, limit: ReadLimit, bounds: dict[TopicPartition, Bounds],
               ) -> Offsets:
        opts = self.options
        if isinstance(limit, ReadAllAvailable):
            return ceiling
        waiting = sum(ceiling[tp] - begin[tp] for tp in begin)
        if opts.min_messages_per_trigger is not None and self._target is None and waiting and \
                waiting < opts.min_messages_per_trigger and \
                (self._clock() - self._last_admit_s) * 1000 < opts.max_trigger_delay_ms:
            return dict(begin)  # wait for more (minMessagesPerTrigger) until maxTriggerDelay passes
        sizes = None
        if opts.max_bytes_per_trigger is not None:
            sizes = {tp: self._calls.average_message_size(tp) for tp in begin
                     if tp in bounds and ceiling[tp] > begin[tp]}
        return admit(begin, ceiling, opts.max_messages_per_trigger, opts.max_bytes_per_trigger, sizes)

    def reportLatestOffset(self) -> dict | None:
        return off.to_json_dict(self._latest) if self._latest else None

    def _check_loss(self, begin: Offsets, bounds: dict[TopicPartition, Bounds]) -> None:
        for tp, first, stored in lost_ranges(begin, bounds):
            message = (f"messages {first}..{stored - 1} of {tp.topic} partition {tp.partition} were deleted "
                       "by retention before the query read them")
            if self.options.fail_on_data_loss:
                raise DataLossError(message + "; set option failOnDataLoss=false to skip them, or keep data "
                                    "longer (retention policy, or keep the query's subscription)",
                                    topic=tp.topic, partition=tp.partition, start=first, end=stored)
            if (tp, first) not in self._reported_loss:
                self._reported_loss.add((tp, first))
                self.lost_messages += stored - first
                log.warning("%s; skipped (failOnDataLoss=false), %d lost so far", message, self.lost_messages)

    # --- the durable subscription ---------------------------------------------------------------------
    def _ensure_subscription(self, at: Offsets) -> None:
        for tp, offset in sorted(at.items()):
            if tp not in self._subscribed:
                self._calls.ensure_subscription(tp, self.options.subscription_name, offset)
                self._subscribed.add(tp)

    def commit(self, end: dict) -> None:
        committed = off.from_json_dict(end)
        self._ensure_subscription(committed)
        for tp, offset in sorted(committed.items()):
            try:
                self._calls.acknowledge_up_to(tp, self.options.subscription_name, offset)
            except errors.PulsarLikeError as exc:
                # The checkpoint already holds the commit; the next commit acknowledges past this one.
                log.warning("could not acknowledge %s up to %d on subscription %s: %s", tp, offset,
                            self.options.subscription_name, exc)

    # --- planning and reading -------------------------------------------------------------------------
    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        return plan_ranges(off.from_json_dict(start), off.from_json_dict(end),
                           self.options.max_messages_per_partition)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if not isinstance(partition, RangePartition):
            return iter(())  # Spark reads one placeholder partition when planning found none
        opts = self.options
        return RangeReader(opts.service_url, partition, opts.poll_timeout_ms, opts.fail_on_data_loss).batches()

    def stop(self) -> None:
        self._calls.close()


def plan_ranges(start: Offsets, end: Offsets, max_per_partition: int) -> list[RangePartition]:
    """Spark partitions for ``start -> end``; partitions only in ``end`` (just discovered) read nothing."""
    ranges: list[RangePartition] = []
    for tp in sorted(end):
        if tp in start and end[tp] > start[tp]:
            ranges.extend(split_range(tp, start[tp], end[tp], max_per_partition))
    return ranges
