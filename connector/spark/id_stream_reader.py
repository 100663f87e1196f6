"""``spark.readStream.format("pulsarlike")`` on a broker without dense offsets (Apache Pulsar, pulsar-lite).

The same life cycle as :mod:`connector.spark.stream_reader` (pulsarlike; the parts that do not depend on the
kind of offset are in :mod:`connector.spark.micro_batch`), with message id offsets
(:mod:`connector.spark.message_id_offsets`) and the broker calls of :mod:`connector.spark.any_broker`:

- ``initialOffset()``: the start per partition (``earliest``: before the first message; ``latest``: the last
  message id; JSON: a message id per partition, -2/-1), and the query's durable subscription is created there.
- ``latestOffset(start, limit)``: each partition's last message id (GET_LAST_MESSAGE_ID on the subscription's
  consumer), cut by the read limit (:mod:`connector.spark.id_admission`: counted, exact); the start -- what Spark
  committed -- is acknowledged. New partitions are recorded before their first message, then read.
- ``partitions(start, end)``: one Spark partition per topic partition with messages (:mod:`connector.spark.
  id_ranges`); ``commit(end)`` acknowledges up to ``end``; ``stop()`` the last end known committed.

The checkpoint holds the message ids and the subscription, so a restarted query reads exactly the messages
after its last committed batch, each once.
"""
from __future__ import annotations

import logging
import time
from typing import Callable, Iterator, Sequence

import pyarrow as pa
from pyspark.sql.datasource import InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit

from broker_core import errors

from connector.spark import offsets as off
from connector.spark.any_broker import IdSourceCalls, check_supported
from connector.spark.id_admission import admit_by_counting, count_waiting
from connector.spark.id_ranges import plan_id_ranges, read_id_range
from connector.spark.message_id_offsets import EARLIEST, IdOffset, holds_messages
from connector.spark.micro_batch import MicroBatchReader
from connector.spark.offsets import EARLIEST as EARLIEST_CODE, LATEST as LATEST_CODE, Offsets, TopicPartition
from connector.spark.options import SourceOptions, new_subscription_name

log = logging.getLogger(__name__)


def resolve_id_offsets(option: str, given: Offsets, last: dict[TopicPartition, IdOffset],
                       default_earliest: bool) -> dict[TopicPartition, IdOffset]:
    """Message id offsets for every partition in ``last`` from a user's JSON (-2/-1 become before the first
    message / the last message id); a dense offset cannot be honoured here (``ValueError`` naming it)."""
    missing = sorted(str(tp) for tp in given if tp not in last)
    if missing:
        raise ValueError(f"option {option} names {', '.join(missing)}, which does not exist; name existing "
                         "partitions (partition -1 for a non-partitioned topic)")
    out: dict[TopicPartition, IdOffset] = {}
    for tp in sorted(last):
        value = given.get(tp, EARLIEST_CODE if default_earliest else LATEST_CODE)
        if isinstance(value, IdOffset):
            out[tp] = value
        elif value == EARLIEST_CODE:
            out[tp] = EARLIEST
        elif value == LATEST_CODE:
            out[tp] = last[tp]
        else:
            raise ValueError(
                f"option {option}: offset {value} of {tp.topic} partition {tp.partition} is a dense offset, which "
                "this broker (not pulsarlike) does not have; give a message id {\"ledger\": L, \"entry\": E, "
                "\"batch\": B}, -2 (earliest) or -1 (latest)")
    return out


def later(a: IdOffset, b: IdOffset) -> IdOffset:
    return b if holds_messages(a, b) else a


class MessageIdStreamReader(MicroBatchReader):
    def __init__(self, options: SourceOptions, clock: Callable[[], float] = time.monotonic,
                 calls: IdSourceCalls | None = None) -> None:
        check_supported(options)
        super().__init__(options, clock,
                         calls or IdSourceCalls(options.service_url, options.poll_timeout_ms, options.security))

    # --- offsets --------------------------------------------------------------------------------------
    def _start(self) -> dict:
        opts = self.options
        self._subscription = opts.subscription_name or new_subscription_name(opts.pulsar_spark.subscription_prefix)
        partitions = self._calls.discover(opts.spec)
        if opts.starting == "earliest":
            start = {tp: EARLIEST for tp in partitions}
        else:
            last = self._calls.last_ids(partitions, self._subscription)
            start = dict(last) if opts.starting == "latest" else resolve_id_offsets(
                "startingOffsets", opts.starting_offsets_map(), last, True)
        for tp, offset in start.items():  # the subscription is created there: retention keeps what is read
            self._calls.hold(tp, self._subscription, offset)
        log.info("event=query_started topics=%s start=%s subscription=%s offsets=message_id",
                 opts.spec.describe(), off.dumps(start), self._subscription)
        return off.encode_source_offset(start, self._subscription)

    def _decode(self, stored: dict) -> dict[TopicPartition, IdOffset]:
        decoded = off.decode_source_offset(stored)
        if self._subscription is None:
            self._subscription = decoded.subscription
        dense = sorted(str(tp) for tp, value in decoded.offsets.items() if not isinstance(value, IdOffset))
        if dense:
            raise errors.NotSupported(
                f"the checkpoint holds dense offsets for {', '.join(dense)} (written against pulsarlike), but "
                "this broker numbers messages by id; start the query with a new checkpoint location")
        return decoded.offsets

    def prepareForTriggerAvailableNow(self) -> None:
        partitions = self._calls.discover(self.options.spec)
        self._target = self._calls.last_ids(partitions, self._subscription)

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        begin = self._decode(start)
        sub = self._subscription or ""
        known = self._known(begin)
        for tp in sorted(begin):
            self._calls.hold(tp, sub, begin[tp])
        self._committed_up_to(begin)
        last = self._calls.last_ids(sorted(tp for tp in known if tp in begin), sub)
        latest = {tp: later(begin[tp], last.get(tp, begin[tp])) for tp in begin}
        self._latest = latest
        ceiling = latest if self._target is None else {
            tp: later(begin[tp], min(latest[tp], self._target.get(tp, latest[tp]), key=lambda o: o.key))
            for tp in latest}
        end = self._admit(begin, ceiling, limit)
        fresh = {tp: EARLIEST for tp in sorted(known) if tp not in begin}
        for tp in fresh:
            self._calls.hold(tp, sub, EARLIEST)
        self._add_partitions(end, fresh)
        return self._planned(begin, end)

    def _admit(self, begin: dict[TopicPartition, IdOffset], ceiling: dict[TopicPartition, IdOffset],
               limit: ReadLimit) -> dict[TopicPartition, IdOffset]:
        opts = self.options
        if isinstance(limit, ReadAllAvailable):
            return dict(ceiling)
        if self._may_hold_back():
            least = opts.min_messages_per_trigger
            assert least is not None
            if count_waiting(begin, ceiling, self._calls.reader_after, opts.poll_timeout_ms, least) < least:
                return dict(begin)  # wait for more (minMessagesPerTrigger) until maxTriggerDelay passes
        return admit_by_counting(begin, ceiling, self._calls.reader_after, opts.poll_timeout_ms,
                                 opts.max_messages_per_trigger, opts.max_bytes_per_trigger)

    # --- the durable subscription ---------------------------------------------------------------------
    def _acknowledge(self, upto: dict[TopicPartition, IdOffset], force: bool = False) -> None:
        """Acknowledge each partition up to its offset (every call: ``force`` changes nothing here)."""
        for tp, offset in sorted(upto.items()):
            try:
                self._calls.acknowledge(tp, self._subscription or "", offset)
            except errors.PulsarLikeError as exc:
                # The checkpoint already holds the commit; the next trigger acknowledges again.
                log.warning("event=ack_failed partition=%s offset=%s subscription=%s error=%s", tp, offset,
                            self._subscription, exc)

    # --- planning and reading -------------------------------------------------------------------------
    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        return plan_id_ranges(self._decode(start), self._decode(end), self._subscription or "")

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return read_id_range(self.options, partition)
