"""What differs between brokers for the Spark source: what an offset is, and which broker calls give offsets.
The kind is chosen once per query (:func:`kind_for`: one binary ``CONNECT`` says whose broker it is), and the
one stream reader (:mod:`connector.spark.stream_reader`) and the one batch reader
(:mod:`connector.spark.batch_reader`) work over it:

- :class:`DenseKind` (pulsarlike): an offset is the partition's dense message offset (an int), the next
  message after a boundary; bounds, time lookups and the query's subscription through
  :class:`~connector.spark.source_admin.SourceAdmin`; admission computed (:func:`~connector.spark.planning.
  admit`); ranges split every ``maxMessagesPerPartition`` (:class:`~connector.spark.partition_reader.
  RangePartition`); data deleted by retention detected.
- :class:`IdKind` (Apache Pulsar, pulsar-lite): an offset is a message id boundary
  (:class:`~connector.spark.message_id_offsets.IdOffset`, the last message before it); last ids and the
  query's subscription, held on the driver, through :class:`~connector.spark.any_broker.IdSourceCalls`;
  admission by counting (ids have gaps: :func:`admit_by_counting`); one range per topic partition
  (:class:`~connector.spark.id_ranges.IdRangePartition`).

A kind has the broker calls (``calls``: ``discover(spec)``, ``close()``), the order of its offsets
(``holds``, ``later``, ``earlier``), ``bounds`` (per partition ``(start, end)``: where it may be read from and
its end), ``resolve`` (a user's JSON offsets), ``acknowledge`` (the query's subscription, up to a committed
end), ``admit`` / ``fewer_than`` (read limits), ``lost_ranges`` / ``skip_lost`` (retention) and ``plan``
(Spark partitions); executors read a partition by its type (:func:`~connector.spark.stream_reader.
read_partition`), so they need no kind.
"""
from __future__ import annotations

import logging
from typing import Any, Iterable, Mapping, NamedTuple

from broker_core import errors

from connector.spark.id_ranges import Skimmed, plan_id_ranges, skim
from connector.spark.message_id_offsets import EARLIEST, IdOffset, holds_messages
from connector.spark.offsets import EARLIEST as EARLIEST_CODE, LATEST as LATEST_CODE, TopicPartition
from connector.spark.options import SourceOptions
from connector.spark import planning

log = logging.getLogger(__name__)


class Bounds(NamedTuple):
    """Where a partition may be read from (``start``) and its end now (``end``), as the kind's offsets."""

    start: Any
    end: Any


class DenseKind:
    """pulsarlike's dense offsets (module docstring)."""

    name = "dense"
    repeat_acks = False
    """An unchanged position is acknowledged again only after a keep-alive interval."""

    def __init__(self, options: SourceOptions, calls: Any = None) -> None:
        from connector.spark.source_admin import SourceAdmin

        self.options = options
        self.calls = calls or SourceAdmin(options.service_url, options.poll_timeout_ms, options.security)

    # --- order ----------------------------------------------------------------------------------------
    @staticmethod
    def holds(start: int, end: int) -> bool:
        return end > start

    @staticmethod
    def later(a: int, b: int) -> int:
        return max(a, b)

    @staticmethod
    def earlier(a: int, b: int) -> int:
        return min(a, b)

    @staticmethod
    def own(offsets: Mapping[TopicPartition, Any]) -> None:
        ids = sorted(str(tp) for tp, value in offsets.items() if not isinstance(value, int))
        if ids:
            raise errors.NotSupported(
                f"the checkpoint holds message id offsets for {', '.join(ids)} (written against a broker without "
                "dense offsets), but this broker is pulsarlike; start the query with a new checkpoint location")

    # --- the broker -----------------------------------------------------------------------------------
    def bounds(self, partitions: Iterable[TopicPartition], subscription: str | None = None) -> dict[TopicPartition, Bounds]:
        return {tp: Bounds(b.start, b.end) for tp, b in self.calls.bounds(partitions).items()}

    def first(self, bounds: Bounds) -> int:
        """Where a partition is read from at earliest: its first stored offset, or 0 for a compacted read (the
        compacted view keeps messages older than the raw log's start)."""
        return 0 if self.options.read_compacted else bounds.start

    def resolve(self, option: str, given: Mapping[TopicPartition, Any], bounds: Mapping[TopicPartition, Bounds],
                default_earliest: bool) -> dict[TopicPartition, int]:
        return planning.resolve_user_offsets(option, given, bounds, default_earliest)

    def acknowledge(self, tp: TopicPartition, subscription: str, upto: int) -> None:
        self.calls.acknowledge_up_to(tp, subscription, upto)

    def lost_ranges(self, start: Mapping[TopicPartition, int], bounds: Mapping[TopicPartition, Bounds]) -> list:
        return [] if self.options.read_compacted else planning.lost_ranges(start, bounds)

    def skip_lost(self, start: dict[TopicPartition, int], bounds: Mapping[TopicPartition, Bounds]) -> dict:
        return start if self.options.read_compacted else planning.skip_lost(start, bounds)

    # --- read limits ----------------------------------------------------------------------------------
    def fewer_than(self, begin: Mapping[TopicPartition, int], ceiling: Mapping[TopicPartition, int],
                   least: int) -> bool:
        waiting = sum(ceiling[tp] - begin[tp] for tp in begin)
        return bool(waiting) and waiting < least

    def admit(self, begin: Mapping[TopicPartition, int], ceiling: Mapping[TopicPartition, int],
              bounds: Mapping[TopicPartition, Bounds]) -> dict[TopicPartition, int]:
        opts = self.options
        sizes = None
        if opts.max_bytes_per_trigger is not None:
            sizes = {tp: self.calls.average_message_size(tp) for tp in begin
                     if tp in bounds and ceiling[tp] > begin[tp]}
        return planning.admit(begin, ceiling, opts.max_messages_per_trigger, opts.max_bytes_per_trigger, sizes)

    # --- Spark partitions -----------------------------------------------------------------------------
    def plan(self, start: Mapping[TopicPartition, int], end: Mapping[TopicPartition, int],
             subscription: str = "") -> list:
        from connector.spark.stream_reader import plan_ranges

        return plan_ranges(start, end, self.options.max_messages_per_partition, subscription,
                           compacted=self.options.read_compacted, min_partitions=self.options.min_partitions)


class IdKind:
    """Message id boundaries on a broker without dense offsets (module docstring)."""

    name = "message_id"
    repeat_acks = True
    """Every commit is acknowledged again (an acknowledgment lost with the held consumer's connection too)."""

    def __init__(self, options: SourceOptions, calls: Any = None) -> None:
        from connector.spark.any_broker import IdSourceCalls, check_supported

        check_supported(options)
        if options.min_partitions is not None:
            log.warning("event=min_partitions_no_effect min_partitions=%d: on a broker without dense offsets each "
                        "topic partition's range is one Spark partition (message ids have gaps, so a range "
                        "cannot be cut into slices without reading it)", options.min_partitions)
        self.options = options
        self.calls = calls or IdSourceCalls(options.service_url, options.poll_timeout_ms, options.security)

    # --- order ----------------------------------------------------------------------------------------
    @staticmethod
    def holds(start: IdOffset, end: IdOffset) -> bool:
        return holds_messages(start, end)

    @staticmethod
    def later(a: IdOffset, b: IdOffset) -> IdOffset:
        return b if holds_messages(a, b) else a

    @staticmethod
    def earlier(a: IdOffset, b: IdOffset) -> IdOffset:
        return a if holds_messages(a, b) else b

    @staticmethod
    def own(offsets: Mapping[TopicPartition, Any]) -> None:
        dense = sorted(str(tp) for tp, value in offsets.items() if not isinstance(value, IdOffset))
        if dense:
            raise errors.NotSupported(
                f"the checkpoint holds dense offsets for {', '.join(dense)} (written against pulsarlike), but "
                "this broker numbers messages by id; start the query with a new checkpoint location")

    # --- the broker -----------------------------------------------------------------------------------
    def bounds(self, partitions: Iterable[TopicPartition], subscription: str | None = None) -> dict[TopicPartition, Bounds]:
        """Before the first message up to each partition's last message id, asked on the query's subscription
        (held from the earliest message when new; a batch read: on a short-lived reader)."""
        last = self.calls.last_ids(sorted(partitions), subscription)
        return {tp: Bounds(EARLIEST, end) for tp, end in last.items()}

    @staticmethod
    def first(bounds: Bounds) -> IdOffset:
        return bounds.start

    @staticmethod
    def resolve(option: str, given: Mapping[TopicPartition, Any], bounds: Mapping[TopicPartition, Bounds],
                default_earliest: bool) -> dict[TopicPartition, IdOffset]:
        """Message id offsets for every partition in ``bounds`` from a user's JSON (-2/-1 become before the
        first message / the last message id); a dense offset cannot be honoured here (``ValueError`` naming it)."""
        missing = sorted(str(tp) for tp in given if tp not in bounds)
        if missing:
            raise ValueError(f"option {option} names {', '.join(missing)}, which does not exist; name existing "
                             "partitions (partition -1 for a non-partitioned topic)")
        out: dict[TopicPartition, IdOffset] = {}
        for tp in sorted(bounds):
            value = given.get(tp, EARLIEST_CODE if default_earliest else LATEST_CODE)
            if isinstance(value, IdOffset):
                out[tp] = value
            elif value == EARLIEST_CODE:
                out[tp] = EARLIEST
            elif value == LATEST_CODE:
                out[tp] = bounds[tp].end
            else:
                raise ValueError(
                    f"option {option}: offset {value} of {tp.topic} partition {tp.partition} is a dense offset, "
                    "which this broker (not pulsarlike) does not have; give a message id {\"ledger\": L, "
                    "\"entry\": E, \"batch\": B}, -2 (earliest) or -1 (latest)")
        return out

    def acknowledge(self, tp: TopicPartition, subscription: str, upto: IdOffset) -> None:
        self.calls.hold(tp, subscription, upto)  # created there when new: retention keeps what is read
        self.calls.acknowledge(tp, subscription, upto)

    @staticmethod
    def lost_ranges(start: Mapping[TopicPartition, Any], bounds: Mapping[TopicPartition, Bounds]) -> list:
        return []  # ids have gaps: a loss cannot be told from them (the query's subscription prevents it)

    @staticmethod
    def skip_lost(start: dict[TopicPartition, IdOffset], bounds: Mapping[TopicPartition, Bounds]) -> dict:
        return start

    # --- read limits: counted (:func:`admit_by_counting`) ---------------------------------------------
    def _reader_after(self, tp: TopicPartition, after: IdOffset) -> Any:
        return self.calls.reader_after(tp, after)

    def fewer_than(self, begin: Mapping[TopicPartition, IdOffset], ceiling: Mapping[TopicPartition, IdOffset],
                   least: int) -> bool:
        return count_waiting(begin, ceiling, self._reader_after, self.options.poll_timeout_ms, least) < least

    def admit(self, begin: Mapping[TopicPartition, IdOffset], ceiling: Mapping[TopicPartition, IdOffset],
              bounds: Mapping[TopicPartition, Bounds]) -> dict[TopicPartition, IdOffset]:
        opts = self.options
        return admit_by_counting(begin, ceiling, self._reader_after, opts.poll_timeout_ms,
                                 opts.max_messages_per_trigger, opts.max_bytes_per_trigger)

    # --- Spark partitions -----------------------------------------------------------------------------
    @staticmethod
    def plan(start: Mapping[TopicPartition, IdOffset], end: Mapping[TopicPartition, IdOffset],
             subscription: str = "") -> list:
        return plan_id_ranges(dict(start), dict(end), subscription)


def kind_for(options: SourceOptions) -> DenseKind | IdKind:
    """The query's kind: dense on pulsarlike, message ids on any other broker (one binary CONNECT decides,
    unless option ``transport=grpc`` says pulsarlike: the only broker that speaks it)."""
    return DenseKind(options) if is_dense(options) else IdKind(options)


def is_dense(options: SourceOptions) -> bool:
    from connector.spark.any_broker import dense_offsets
    from connector.spark.source_admin import connect_error

    if options.transport == "grpc":
        return True
    try:
        return dense_offsets(options.service_url, options.poll_timeout_ms, options.security)
    except (errors.ConnectError, errors.Timeout) as exc:
        raise connect_error(options.service_url, options.poll_timeout_ms, "CONNECT", exc) from None


# --- counting admission on a broker without dense offsets ----------------------------------------------
# maxMessagesPerTrigger is exact there, as on pulsarlike: each partition with messages waiting first gets an
# even share of the limit (remainders to the first partitions in sorted order) and is counted up to it; what
# partitions with fewer messages left unused then goes, in sorted order, to those that had more. The cost is
# the admitted messages read once more, on the driver. maxBytesPerTrigger counts payload bytes the same way
# (at least one message per partition with messages waiting).

def _even(total: int | None, n: int, i: int) -> int | None:
    return None if total is None else total // n + (1 if i < total % n else 0)


def admit_by_counting(begin: Mapping[TopicPartition, IdOffset], ceiling: Mapping[TopicPartition, IdOffset],
                      open_reader: Any, timeout_ms: int, max_messages: int | None,
                      max_bytes: int | None = None) -> dict[TopicPartition, IdOffset]:
    """End offsets for one trigger: ``ceiling`` cut so the batch holds at most ``max_messages`` messages (and
    about ``max_bytes`` payload bytes); ``open_reader(tp, after)``: a reader of ``tp`` after a boundary.
    Partitions only in ``ceiling`` are returned as given."""
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
                  open_reader: Any, timeout_ms: int, at_most: int) -> int:
    """The messages waiting between ``begin`` and ``ceiling``, counted up to ``at_most``, partitions in order."""
    waiting = 0
    for tp in sorted(begin):
        if waiting < at_most and tp in ceiling and holds_messages(begin[tp], ceiling[tp]):
            waiting += skim_after(open_reader, tp, begin[tp], ceiling[tp], timeout_ms, at_most - waiting).messages
    return waiting


def skim_after(open_reader: Any, tp: TopicPartition, start: IdOffset, end: IdOffset, timeout_ms: int,
               max_messages: int | None = None, max_bytes: int | None = None) -> Skimmed:
    """:func:`~connector.spark.id_ranges.skim` of ``start -> end`` on a reader of its own, closed after."""
    reader = open_reader(tp, start)
    try:
        return skim(reader, start, end, timeout_ms, str(tp), max_messages, max_bytes)
    finally:
        reader.close()
