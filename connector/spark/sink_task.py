"""One write task of the sink: the Arrow record batches of one Spark partition, sent to the broker.

Effectively-once (option ``effectivelyOnce``, default on) rests on broker deduplication, which keeps, per
topic partition and producer name, the highest sequence id it stored and drops anything not above it:

1. The task's producers are named after the sink and the Spark partition (``TaskIdentity.producer_name``:
   the same name on every topic the task writes to; dedup state is per topic partition).
2. Row ``i`` of the task (counting every row of the partition, in order) gets sequence id
   ``base_sequence_id + i`` with ``base_sequence_id = batch_id * 2**32``: ids grow within a task and from one
   micro-batch to the next, so each producer name only ever sends increasing ids.
3. Before a topic is first written, its deduplication is turned on (``set_topic_deduplication``) unless
   the topic says otherwise; a topic with deduplication explicitly off is refused
   (:mod:`connector.spark.sink_broker`). On a broker other than
   pulsarlike (or with option ``transport=binary``) the task speaks Pulsar's binary protocol only: it does
   this through the admin REST API when option ``admin.url`` is given; without it, whether deduplication is
   on cannot be asked (the binary protocol has no such command), so the task logs
   ``event=sink_deduplication_unchecked`` once per process and effectively-once holds only if the broker
   deduplicates (``brokerDeduplicationEnabled=true``, or the namespace's or topic's policy); else a rerun
   writes its rows again (at-least-once).
4. A producer learns the highest id the broker stored under its name when it opens. A rerun of the same
   batch (task retry, replayed micro-batch, rerun of a batch write with the same ``writeId``) skips the
   rows at or below it -- they were stored by the earlier attempt -- and sends the rest. Skipping on the
   client keeps a resent batch from straddling the stored id (the broker checks a batch by its first id).

Routing on a partitioned topic is deterministic, so a rerun sends each row to the same partition: an
explicit ``__partition``; else ``java_string_hash(__key) % n`` (the client's default for keyed messages);
else blocks of ``batchingMaxMessages`` consecutive rows per partition, starting at the Spark partition's
index. The fast path -- one non-partitioned topic for the whole task, no replay -- lets the producer number
the messages itself (it was opened at ``base_sequence_id - 1``), which keeps payload-only sends on the
client's quickest path; payload-only runs also carry a callback on only some messages
(:mod:`connector.spark.sink_receipts`).
"""
from __future__ import annotations

import itertools
import logging
from dataclasses import dataclass, field
from typing import Any, Iterable

from broker_core import errors
from broker_core.types import TopicName

from connector.spark.sink_broker import TaskBroker
from connector.spark.sink_options import ROWS_PER_TASK, SinkColumns, SinkOptions
from connector.spark.sink_receipts import Receipts, big_payload, sparse_stride
from connector.spark.sink_rows import Rows, SinkDataError, rows_of
from connector.spark.sink_records import PreEncoded

log = logging.getLogger(__name__)

PUBLISH_DELAY_MS = 10 * 60 * 1000
"""Entries close by count, size or the task's final flush, never by a timer (sink_receipts relies on it)."""


@dataclass(frozen=True)
class TaskIdentity:
    """Who is writing: fixed by the sink, the micro-batch and the Spark partition."""

    partition_id: int
    """Spark's partition id of the task (not the topic's partition)."""
    producer_name: str | None
    """The producers' name; None: at-least-once, the broker assigns unique names."""
    base_sequence_id: int = 0
    """Row ``i`` of the task gets sequence id ``base_sequence_id + i``."""


@dataclass
class TaskCounts:
    """What one task did; becomes the task's commit message."""

    rows: int = 0
    """Rows the task was given."""
    written: int = 0
    """Messages the broker stored."""
    duplicates: int = 0
    """Rows an earlier attempt had already stored: skipped here, or dropped by the broker."""
    topics: dict[str, int] = field(default_factory=dict)
    """Rows per topic (fully qualified)."""


class _Partition:
    """One producer (a topic, or one partition of a partitioned topic) and what it already holds."""

    __slots__ = ("producer", "send", "stored_up_to", "auto_ids", "last_sent")

    def __init__(self, producer: Any, stored_up_to: int, auto_ids: bool) -> None:
        self.producer = producer
        self.send = producer.send_async
        self.stored_up_to = stored_up_to
        """Rows with a sequence id at or below this are stored already (skipped); -1: none."""
        self.auto_ids = auto_ids
        """The producer's own next sequence id is the next row's: send without ``sequence_id``."""
        self.last_sent = -1
        """The sequence id of the last row sent (effectively-once only)."""


class _Topic:
    __slots__ = ("name", "partitions", "producers")

    def __init__(self, name: str, partitions: int) -> None:
        self.name = name
        self.partitions = partitions
        """0: not partitioned."""
        self.producers: list[_Partition | None] = [None] * max(partitions, 1)


class TaskWriter:
    """Sends one task's rows; ``write(batches)`` returns its :class:`TaskCounts` or raises."""

    def __init__(self, options: SinkOptions, columns: SinkColumns, identity: TaskIdentity) -> None:
        self.options = options
        self.columns = columns
        self.identity = identity
        self.counts = TaskCounts()
        self._broker: TaskBroker | None = None
        self._topics: dict[str, _Topic] = {}
        """By the names rows and options use, and by qualified name."""
        self._targets: list[_Topic] = []
        self._receipts = Receipts()
        self._sent_per_message = 0
        self._sent_per_entry = 0
        self._stride = sparse_stride(options.batching_max_messages)
        self._big = big_payload(options.batching_max_bytes, self._stride)

    # --- the task -------------------------------------------------------------------------------------
    def write(self, batches: Iterable[Any]) -> TaskCounts:
        self._broker = TaskBroker(self.options, self.identity.producer_name is not None)
        try:
            for batch in batches:
                if batch.num_rows:
                    self._write_batch(batch)
            for target in self._targets:
                for partition in target.producers:
                    if partition is not None:
                        partition.producer.flush()
            self._check_receipts()
        finally:
            self._broker.close()
        return self.counts

    def _check_receipts(self) -> None:
        receipts = self._receipts
        if receipts.failed:
            raise errors.PulsarLikeError(
                f"{receipts.failed} send(s) of Spark partition {self.identity.partition_id} failed (first "
                f"result: {receipts.failures[0]!r}); the task fails and Spark retries it -- rows already "
                "stored are not written twice")
        if self.identity.producer_name is not None:
            for target in self._targets:
                for part in target.producers:
                    if part is not None and part.producer.last_sequence_id() < part.last_sent:
                        raise errors.PulsarLikeError(
                            f"the broker acknowledged sequence ids up to {part.producer.last_sequence_id()} "
                            f"on {part.producer.topic()}, but {part.last_sent} was sent; the task fails and "
                            "Spark retries it")
        written, dropped = receipts.totals(self._sent_per_message, self._sent_per_entry)
        self.counts.written = written
        self.counts.duplicates += dropped

    # --- one record batch -----------------------------------------------------------------------------
    def _write_batch(self, batch: Any) -> None:
        first_row = self.counts.rows
        n = batch.num_rows
        if first_row + n > ROWS_PER_TASK:
            raise SinkDataError(f"Spark partition {self.identity.partition_id} has more than 2**32 rows in "
                                "one micro-batch (the low 32 bits of a sequence id); repartition the input")
        rows = rows_of(batch, self.columns, first_row, self.identity.partition_id)
        self.counts.rows += n
        if rows.topics is None and self.options.topic is not None:
            target = self._topic(self.options.topic)
            if target.partitions == 0:
                if rows.partitions is not None:
                    self._check_unpartitioned(target, rows.partitions, first_row)
                self.counts.topics[target.name] = self.counts.topics.get(target.name, 0) + n
                self._send_to_one(target, first_row, rows)
                return
        self._send_routed(first_row, rows)

    def _check_unpartitioned(self, target: _Topic, partitions: list[Any], first_row: int) -> None:
        for i, p in enumerate(partitions):
            if p is not None and p != -1:
                raise SinkDataError(f"row {first_row + i} asks for partition {p} of {target.name}, which is not "
                                    "partitioned; leave __partition null (or -1), drop the column, or write "
                                    "to a partitioned topic")

    # --- sending --------------------------------------------------------------------------------------
    def _send_to_one(self, target: _Topic, first_row: int, rows: Rows) -> None:
        """Every row to one producer, in order."""
        values, keys, times, properties = rows.values, rows.keys, rows.times, rows.properties
        part = target.producers[0] or self._open(target, 0)
        base = self.identity.base_sequence_id + first_row
        n = len(values)
        skip = 0
        if part.stored_up_to >= base:  # a rerun: the first rows are stored already
            skip = min(part.stored_up_to - base + 1, n)
            self.counts.duplicates += skip
        if skip == n:
            return
        part.last_sent = base + n - 1
        send = part.send
        if keys is None and times is None and properties is None:
            self._send_payloads(part, values, skip, None if part.auto_ids else base, rows.longest)
            return
        callback = self._receipts.per_message
        self._sent_per_message += n - skip
        no = itertools.repeat(None)
        items = itertools.islice(zip(values, keys or no, times or no, properties or no), skip, None)
        if part.auto_ids:
            for value, key, time_ms, props in items:
                send(value, callback, properties=props, partition_key=key, event_timestamp=time_ms)
        else:
            for seq, (value, key, time_ms, props) in enumerate(items, base + skip):
                send(value, callback, properties=props, partition_key=key, event_timestamp=time_ms,
                     sequence_id=seq)

    def _send_payloads(self, part: _Partition, values: list[Any], skip: int, base: int | None,
                       longest: int) -> None:
        """Payload-only rows ``values[skip:]``, a callback every ``stride`` messages (sink_receipts);
        ``base``: the first row's sequence id, None when the producer numbers them itself."""
        send, mark = part.send, self._receipts.per_entry
        n = len(values)
        self._sent_per_entry += n - skip
        stride = 1 if longest >= self._big else self._stride
        for lo in range(skip, n, stride):
            last = min(lo + stride, n) - 1
            if base is None:
                for value in values[lo:last]:
                    send(value, None)
                send(values[last], mark)
            else:
                for i in range(lo, last):
                    send(values[i], None, sequence_id=base + i)
                send(values[last], mark, sequence_id=base + last)

    def _send_routed(self, first_row: int, rows: Rows) -> None:
        """Row by row: each row's topic and partition, explicit sequence ids."""
        from connector.client.producer.routing import java_string_hash

        keys, topics, partitions = rows.keys, rows.topics, rows.partitions
        times, properties = rows.times, rows.properties

        callback = self._receipts.per_message
        counts = self.counts
        default = self.options.topic
        block = self.options.batching_max_messages
        spread = self.identity.partition_id
        with_ids = self.identity.producer_name is not None
        seq = self.identity.base_sequence_id + first_row
        for i, value in enumerate(rows.values):
            row = first_row + i
            name = (topics[i] if topics is not None else None) or default
            if name is None:
                raise SinkDataError(f"row {row} of Spark partition {spread} has a null __topic and option topic "
                                    "is not set; give every row a topic or set .option('topic', ...)")
            target = self._topics.get(name) or self._topic(name)
            key = keys[i] if keys is not None else None
            wanted = partitions[i] if partitions is not None else None
            n = target.partitions
            if wanted is not None and wanted != -1:
                if not 0 <= wanted < n:
                    raise SinkDataError(
                        f"row {row} asks for partition {wanted} of {target.name}, which "
                        + (f"has partitions 0..{n - 1}" if n else "is not partitioned")
                        + "; fix __partition, or leave it null (or -1) to route by key")
                index = wanted
            elif n == 0:
                index = 0
            elif key:
                index = java_string_hash(key) % n
            else:
                index = (spread + row // block) % n
            part = target.producers[index] or self._open(target, index)
            counts.topics[target.name] = counts.topics.get(target.name, 0) + 1
            if seq + i <= part.stored_up_to:
                counts.duplicates += 1
                continue
            self._sent_per_message += 1
            part.last_sent = seq + i
            part.send(value, callback, properties=properties[i] if properties is not None else None,
                      partition_key=key, event_timestamp=times[i] if times is not None else None,
                      sequence_id=seq + i if with_ids else None)

    # --- topics and producers -------------------------------------------------------------------------
    def _topic(self, name: str) -> _Topic:
        """The topic named ``name`` (a __topic value or option topic), ready to be written to."""
        from connector.spark.sink_options import qualified_topic

        qualified = qualified_topic(name, f"__topic value {name!r}")
        known = self._topics.get(qualified)
        if known is None:
            parsed = TopicName.parse(qualified)
            if self.identity.producer_name is not None:
                if not parsed.persistent:
                    raise SinkDataError(f"topic {qualified} is non-persistent: it keeps no deduplication "
                                        "state, so the sink cannot write it effectively-once; set "
                                        "effectivelyOnce=false or write to a persistent topic")
                if self._broker.admin is not None:
                    self._broker.enable_deduplication(qualified)
            partitions = self._broker.partitions(qualified)
            known = _Topic(qualified, partitions)
            self._topics[qualified] = known
            self._targets.append(known)
        self._topics[name] = known  # as written in the rows, too: the next lookup is one dict get
        return known

    def _open(self, target: _Topic, index: int) -> _Partition:
        options = self.options
        name = self.identity.producer_name
        base = self.identity.base_sequence_id
        topic = str(TopicName.parse(target.name).partition(index)) if target.partitions else target.name
        # On the fast path the producer numbers the messages itself, starting at ``base``.
        initial = base - 1 if name is not None and base > 0 and target.partitions == 0 else None
        producer = self._broker.client.create_producer(
            topic, producer_name=name, initial_sequence_id=initial,
            compression_type=options.compression_type, batching_enabled=True,
            batching_max_messages=options.batching_max_messages,
            batching_max_allowed_size_in_bytes=options.batching_max_bytes,
            batching_max_publish_delay_ms=PUBLISH_DELAY_MS,
            max_pending_messages=options.max_pending_messages, block_if_queue_full=True,
            send_timeout_millis=options.send_timeout_ms,
            schema=PreEncoded(self.columns.record.topic_schema) if self.columns.record is not None else None,
            **options.crypto.producer_kwargs())
        stored = producer.last_sequence_id() if name is not None else -1
        if initial is not None and stored == initial:
            stored = -1  # the producer reports max(broker's id, initial): nothing above the initial id
        # Automatic ids are the rows' ids unless this is a rerun whose first rows are stored already
        # (the producer would number the first unsent row ``base``, not ``stored + 1``).
        auto_ids = name is not None and target.partitions == 0 and (initial is None or stored < base)
        part = _Partition(producer, stored, auto_ids or name is None)
        target.producers[index] = part
        if stored >= base and name is not None:
            log.info("producer %s on %s: the broker has sequence ids up to %d stored; rows at or below it "
                     "are skipped (a rerun)", name, topic, stored)
        return part
