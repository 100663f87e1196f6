"""Reading by message id on a broker without dense offsets: a range ``start -> end`` of one topic partition is
the messages with ``start < id <= end`` (:mod:`connector.spark.message_id_offsets`), read by a reader that
starts after ``start`` (exclusive) and stops with ``end`` (inclusive).

- Rows: the same columns as on pulsarlike (:mod:`connector.spark.schema`), ``value`` as bytes; ``__offset`` is
  null (the broker has no dense offsets: ``__messageId`` names the message), ``__key`` the key's UTF-8 bytes.
- Exactness: a replayed range yields the same rows. Messages at or before the last one taken are skipped
  (a broker may deliver some twice: pulsar-lite 0.2 does to a reader of many unbatched messages), and so are
  messages at or before ``start`` within a batched entry the reader starts inside.
- The end: an end naming a whole batched entry (``batch -1``, what the broker's last message id names) is
  reached with the entry's last message: known from the id's batch size, or else when the broker has no
  message after it (``has_message_available``); a message after ``end`` also ends the range.
- :func:`skim` walks a range without building rows: the driver counts with it where a read limit
  (``maxMessagesPerTrigger``, ``maxBytesPerTrigger``) must cut a range at a message (exact counts, at the cost of
  reading the admitted messages once more on the driver).
- Every wait is bounded by ``pollTimeoutMs`` (:class:`~connector.spark.partition_reader.RangeReadTimeout`).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Callable, Iterator, NamedTuple

import pyarrow as pa
from pyspark.sql.datasource import InputPartition

from broker_core import errors

from connector.spark.auth_options import ClientSecurity
from connector.spark.message_id_offsets import IdOffset, holds_messages, is_after, is_within, of_message_id
from connector.spark.offsets import TopicPartition
from connector.spark.partition_reader import ROWS_PER_BATCH, RangeReadTimeout
from connector.spark.typed_values import BYTES, arrow_schema

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class IdRangePartition(InputPartition):
    """One Spark partition: messages ``start < id <= end`` of one topic partition (ids as ``IdOffset`` fields)."""

    topic: str
    partition: int
    start: tuple[int, int, int]
    end: tuple[int, int, int]
    subscription: str = ""

    @property
    def topic_partition(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)


def plan_id_ranges(start: dict[TopicPartition, Any], end: dict[TopicPartition, Any],
                   subscription: str = "") -> list[IdRangePartition]:
    """One Spark partition per topic partition with messages between ``start`` and ``end`` (a range of ids
    cannot be split by count without reading it)."""
    return [IdRangePartition(tp.topic, tp.partition, tuple(start[tp]), tuple(end[tp]), subscription)
            for tp in sorted(end) if tp in start and holds_messages(start[tp], end[tp])]


def walk(reader: Any, start: IdOffset, end: IdOffset, timeout_ms: int, where: str) -> Iterator[Any]:
    """The messages ``start < id <= end`` of ``reader`` (started after ``start``), each once, in order."""
    taken = start
    while holds_messages(taken, end):
        try:
            message = reader.read_next(timeout_ms)
        except Exception as exc:
            if isinstance(exc, errors.Timeout) or type(exc).__name__ == "Timeout":
                raise RangeReadTimeout(
                    f"no message from {where} within pollTimeoutMs={timeout_ms} while reading message ids "
                    f"({start}, {end}] (last taken: {taken}); is the broker up? Raise pollTimeoutMs for a slow "
                    "broker") from None
            raise
        mid = message.message_id()
        if not is_after(mid, taken):
            continue  # delivered again, or before the start inside the entry the reader started in
        if not is_within(mid, end):
            break
        yield message
        taken = of_message_id(mid)
        if taken.batch >= 0 and end.batch < 0 and (taken.ledger, taken.entry) == (end.ledger, end.entry) \
                and not reader.has_message_available():
            break  # the last message of the end's entry (its batch size unknown): nothing follows it


class Skimmed(NamedTuple):
    end: IdOffset
    """After the last message counted (``start`` when none)."""
    messages: int
    stored_bytes: int
    complete: bool
    """The whole range was counted (no limit cut it)."""


def skim(reader: Any, start: IdOffset, end: IdOffset, timeout_ms: int, where: str,
         max_messages: int | None = None, max_bytes: int | None = None) -> Skimmed:
    """Count the messages of ``start -> end`` up to ``max_messages`` (and about ``max_bytes`` of payload, at
    least one message); where the count stopped."""
    reached, count, size = start, 0, 0
    for message in walk(reader, start, end, timeout_ms, where):
        if (max_messages is not None and count >= max_messages) or \
                (max_bytes is not None and count and size + len(message.data()) > max_bytes):
            return Skimmed(reached, count, size, False)
        count += 1
        size += len(message.data())
        reached = of_message_id(message.message_id())
    return Skimmed(reached, count, size, True)


class IdRangeReader:
    """Reads one :class:`IdRangePartition` as Arrow record batches (module docstring)."""

    def __init__(self, service_url: str, part: IdRangePartition, poll_timeout_ms: int,
                 security: ClientSecurity | None = None, permits_window: int | None = None,
                 key_type: str = "binary", rows_per_batch: int = ROWS_PER_BATCH,
                 client_factory: Callable[[], Any] | None = None, kit: Any = None) -> None:
        self.service_url = service_url
        self.part = part
        self.poll_timeout_ms = poll_timeout_ms
        self.security = security or ClientSecurity()
        self.permits_window = permits_window or 1000
        self.schema = arrow_schema(BYTES, key_type)
        self.rows_per_batch = rows_per_batch
        self._client_factory = client_factory
        self._kit = kit

    def batches(self) -> Iterator[pa.RecordBatch]:
        from connector.spark.any_broker import IdSourceCalls

        part = self.part
        tp = part.topic_partition
        calls = IdSourceCalls(self.service_url, self.poll_timeout_ms, self.security, self._client_factory, self._kit)
        start, end = IdOffset(*part.start), IdOffset(*part.end)
        try:
            reader = calls.client.create_reader(tp.internal_name, calls.message_id(tp, start),
                                                receiver_queue_size=self.permits_window,
                                                start_message_id_inclusive=False)
            rows = _Rows(tp, self.schema)
            for message in walk(reader, start, end, self.poll_timeout_ms, str(tp)):
                rows.add(message)
                if rows.count >= self.rows_per_batch:
                    yield rows.build()
            if rows.count:
                yield rows.build()
            reader.close()
        finally:
            calls.close()


class _Rows:
    """Messages as rows of the source's Arrow schema."""

    def __init__(self, tp: TopicPartition, schema: pa.Schema) -> None:
        self.tp = tp
        self.schema = schema
        self._binary_key = pa.types.is_binary(schema.field("__key").type)
        self._clear()

    def _clear(self) -> None:
        self.count = 0
        self._columns: dict[str, list[Any]] = {name: [] for name in self.schema.names}

    def add(self, message: Any) -> None:
        c = self._columns
        has_null = getattr(message, "has_null_value", None)
        c["value"].append(None if callable(has_null) and has_null() else message.data())
        key = message.partition_key() or None
        c["__key"].append(key.encode() if key is not None and self._binary_key else key)
        c["__topic"].append(self.tp.topic)
        c["__partition"].append(self.tp.partition)
        c["__offset"].append(None)  # no dense offsets on this broker: __messageId names the message
        c["__messageId"].append(message.message_id().serialize())
        c["__publishTime"].append(message.publish_timestamp() * 1000)
        event = message.event_timestamp()
        c["__eventTime"].append(event * 1000 if event else None)
        c["__messageProperties"].append(list(message.properties().items()))
        name = getattr(message, "producer_name", None)
        c["__producerName"].append(name() if callable(name) else None)
        sequence = getattr(message, "sequence_id", None)
        c["__sequenceId"].append(sequence() if callable(sequence) else None)
        self.count += 1

    def build(self) -> pa.RecordBatch:
        arrays = [pa.array(self._columns[f.name], type=f.type) for f in self.schema]
        batch = pa.RecordBatch.from_arrays(arrays, schema=self.schema)
        self._clear()
        return batch
