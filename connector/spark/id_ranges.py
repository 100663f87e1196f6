"""Reading by message id on a broker without dense offsets: a range ``start -> end`` of one topic partition is
the messages with ``start < id <= end`` (:mod:`connector.spark.message_id_offsets`), read by a reader that
starts after ``start`` (exclusive) and stops with ``end`` (inclusive).

- Rows: the same columns as on pulsarlike (:mod:`connector.spark.schema`), ``value`` as bytes; ``__offset`` is
  null (the broker has no dense offsets: ``__messageId`` names the message); ``__key`` as option ``keyType``
  says (the key's bytes by default, a key sent as bytes decoded).
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
- End-to-end encrypted messages: the reader decrypts them with the options' key reader; one it cannot decrypt
  comes as stored (the reader is always CONSUME) and meets ``cryptoFailureAction`` here: the task fails naming
  its message id, it is left out, or it is a row with ``__encryptionContext`` (:mod:`connector.spark.encrypted_rows`).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Callable, Iterator, NamedTuple

import pyarrow as pa
from pyspark.sql.datasource import InputPartition

from broker_core import errors

from connector.client.key_bytes import message_key_bytes
from connector.client.message import Message
from connector.spark.auth_options import ClientSecurity
from connector.spark.crypto_options import SourceCrypto
from connector.spark.encrypted_rows import context_value, undecryptable, with_encryption_context
from connector.spark.message_id_offsets import _WHOLE, IdOffset, holds_messages, of_message_id
from connector.spark.offsets import TopicPartition
from connector.spark.options import SourceOptions
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


def walk(reader: Any, start: IdOffset, end: IdOffset, timeout_ms: int, where: str) -> Iterator[tuple[Any, Any]]:
    """``(message, its id)`` of the messages ``start < id <= end`` of ``reader`` (started after ``start``),
    each once, in order."""
    taken = start.key
    last = end.key
    end_entry = (end.ledger, end.entry) if end.batch < 0 else None
    while taken < last:
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
        batch = mid.batch_index()
        key = (mid.ledger_id(), mid.entry_id(), batch if batch >= 0 else _WHOLE)
        if key <= taken:
            continue  # delivered again, or before the start inside the entry the reader started in
        if key > last:
            break
        yield message, mid
        taken = key
        if batch >= 0 and end_entry is not None and key[:2] == end_entry:
            size_of = getattr(mid, "batch_size", None)
            size = size_of() if size_of is not None else 0
            if batch == size - 1 or (not size and not reader.has_message_available()):
                break  # the last message of the end's entry: the range is complete


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
    for message, mid in walk(reader, start, end, timeout_ms, where):
        if (max_messages is not None and count >= max_messages) or \
                (max_bytes is not None and count and size + len(message.data()) > max_bytes):
            return Skimmed(reached, count, size, False)
        count += 1
        size += len(message.data())
        reached = of_message_id(mid)
    return Skimmed(reached, count, size, True)


class IdRangeReader:
    """Reads one :class:`IdRangePartition` as Arrow record batches (module docstring)."""

    def __init__(self, service_url: str, part: IdRangePartition, poll_timeout_ms: int,
                 security: ClientSecurity | None = None, permits_window: int | None = None,
                 key_type: str = "binary", rows_per_batch: int = ROWS_PER_BATCH,
                 client_factory: Callable[[], Any] | None = None, kit: Any = None,
                 crypto: SourceCrypto | None = None) -> None:
        self.service_url = service_url
        self.crypto = crypto or SourceCrypto()
        """End-to-end decryption and ``cryptoFailureAction`` (:mod:`connector.spark.encrypted_rows`)."""
        self.part = part
        self.poll_timeout_ms = poll_timeout_ms
        self.security = security or ClientSecurity()
        self.permits_window = permits_window or 1000
        self.schema = arrow_schema(BYTES, key_type)
        if self.crypto.consume:
            self.schema = with_encryption_context(self.schema)
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
            key_reader = self.crypto.key_reader()
            reader = calls.reader_after(tp, start, self.permits_window, key_reader)
            rows = _Rows(tp, self.schema, self.crypto.action, key_reader)
            for message, mid in walk(reader, start, end, self.poll_timeout_ms, str(tp)):
                rows.add(message, mid)
                if rows.count >= self.rows_per_batch:
                    yield rows.build()
            if rows.count:
                yield rows.build()
            reader.close()
        finally:
            calls.close()


def read_id_range(options: SourceOptions, partition: InputPartition) -> Iterator[pa.RecordBatch]:
    """A message id reader's ``read``: the rows of one :class:`IdRangePartition` (none of the placeholder
    partition Spark reads when planning found none)."""
    if not isinstance(partition, IdRangePartition):
        return iter(())
    return IdRangeReader(options.service_url, partition, options.poll_timeout_ms, security=options.security,
                         permits_window=options.pulsar_spark.receiver_queue_size,
                         key_type=options.key_type, crypto=options.crypto).batches()


class _Rows:
    """Messages as rows of the source's Arrow schema."""

    def __init__(self, tp: TopicPartition, schema: pa.Schema, crypto_action: str = "fail",
                 key_reader: Any = None) -> None:
        self.tp = tp
        self.schema = schema
        self.crypto_action = crypto_action
        """Option ``cryptoFailureAction``: what a message the reader could not decrypt does."""
        self._key_reader = key_reader
        self._contexts = "__encryptionContext" in schema.names
        self._binary_key = pa.types.is_binary(schema.field("__key").type)
        self._clear()

    def _clear(self) -> None:
        self.count = 0
        self._columns: dict[str, list[Any]] = {name: [] for name in self.schema.names}

    def add(self, message: Any, mid: Any) -> None:
        c = self._columns
        context = message.encryption_context() if hasattr(message, "encryption_context") else None
        if context is not None and context.is_decryption_failed():
            if self.crypto_action == "fail":
                names = ", ".join(sorted(k.key for k in context.keys()))
                raise undecryptable(self.tp.topic, self.tp.partition, -1, 1, names, self._key_reader,
                                    where=f"message id {mid}")
            if self.crypto_action == "discard":
                log.warning("event=undecryptable_messages_discarded topic=%s partition=%d message_id=%s "
                            "action=discard", self.tp.topic, self.tp.partition, mid)
                return
        if self._contexts:
            c["__encryptionContext"].append(context_value(context))
        has_null = getattr(message, "has_null_value", None)
        c["value"].append(None if has_null is not None and has_null() else message.data())
        if not self._binary_key:
            c["__key"].append(message.partition_key() or None)
        elif isinstance(message, Message):  # a key sent as bytes (flagged base64) is its bytes
            c["__key"].append(message_key_bytes(message))
        else:  # a test's pulsar-client message
            c["__key"].append(message.partition_key().encode() or None)
        c["__messageId"].append(mid.serialize())
        c["__publishTime"].append(message.publish_timestamp() * 1000)
        event = message.event_timestamp()
        c["__eventTime"].append(event * 1000 if event else None)
        props = message.properties()
        c["__messageProperties"].append(list(props.items()) if props else [])
        name = getattr(message, "producer_name", None)
        c["__producerName"].append(name() if name is not None else None)
        sequence = getattr(message, "sequence_id", None)
        c["__sequenceId"].append(sequence() if sequence is not None else None)
        self.count += 1

    def build(self) -> pa.RecordBatch:
        c, n = self._columns, self.count
        # the same for every row of the range: __offset is null (no dense offsets on this broker)
        c["__topic"], c["__partition"], c["__offset"] = [self.tp.topic] * n, [self.tp.partition] * n, [None] * n
        arrays = [pa.array(c[f.name], type=f.type) for f in self.schema]
        batch = pa.RecordBatch.from_arrays(arrays, schema=self.schema)
        self._clear()
        return batch
