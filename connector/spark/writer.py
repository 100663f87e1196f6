"""The ``pulsarlike`` sink: ``df.writeStream.format("pulsarlike")`` and ``df.write.format("pulsarlike")``.

Name
    ``pulsarlike`` (the same data source as the reader; ``DataSource.writer``/``streamWriter`` return the
    classes here).

Schema
    ``value`` (binary or string, required); optional ``__key``, ``__topic``, ``__eventTime``,
    ``__messageProperties``, ``__partition``; see :mod:`connector.spark.sink_options`. Other columns are
    ignored, so rows read from the source can be written as they are. Typed writes: without a ``value``
    column, the columns are the fields of the topic's Avro/JSON record schema
    (:mod:`connector.spark.sink_records`); with option ``topicSchema``, of a record schema derived from
    the DataFrame and registered for the topic (:mod:`connector.spark.sink_schema`).

Options
    ``service.url`` (required), ``topic`` (else a ``__topic`` column), ``topicSchema`` (``avro`` or
    ``json``: derive and register a record schema), ``effectivelyOnce`` (default true),
    ``writeId`` (batch writes), ``compressionType``, ``batchingMaxMessages``, ``batchingMaxBytes``,
    ``maxPendingMessages``, ``sendTimeoutMs``, ``operationTimeoutMs``, ``transport`` and ``admin.url`` (any
    Pulsar broker: :mod:`connector.spark.sink_task`, docs/spark-sink.md "Any Pulsar broker").

Errors
    Bad options and columns raise ``ValueError`` on the driver, when the query starts or ``save()`` is
    called, before any task runs; ``mode("overwrite")`` is refused (topics are append-only). A row that
    cannot be sent (null value, a partition the topic lacks) fails its task.

Partitioning
    One write task per Spark partition; each task names its producers after the sink and its partition and
    numbers rows ``batch_id * 2**32 + row_index``, so a retried or replayed batch is deduplicated by the
    broker (:mod:`connector.spark.sink_task`). The sink identity is the query id for a stream (kept in the
    checkpoint) and ``writeId`` for a batch write.

Examples
    >>> (df.selectExpr("CAST(id AS STRING) AS __key", "to_json(struct(*)) AS value")
    ...    .writeStream.format("pulsarlike").option("service.url", url).option("topic", "out")
    ...    .option("checkpointLocation", ckpt).start())
    >>> df.write.format("pulsarlike").option("service.url", url).option("topic", "out") \\
    ...    .option("writeId", "backfill-2024-05").mode("append").save()

Executors get a pickled copy of a writer: it holds only parsed options and column positions, and connects
inside ``write()``.
"""
from __future__ import annotations

import hashlib
import logging
import uuid
from dataclasses import dataclass, field
from typing import Any, Iterator, Mapping, Optional, Sequence

from pyspark.sql.datasource import DataSourceArrowWriter, WriterCommitMessage

from connector.spark.sink_options import MAX_BATCH_ID, parse_sink_options, plan_columns
from connector.spark.sink_records import plan_record_columns, topic_record_schema
from connector.spark.sink_schema import check_compatible, derived_topic_schema, plan_derived_columns
from connector.spark.sink_task import TaskIdentity, TaskWriter
from connector.spark.spark_versions import StreamArrowWriter

log = logging.getLogger(__name__)

BATCH_ID_PROPERTY = "streaming.sql.batchId"
QUERY_ID_PROPERTY = "sql.streaming.queryId"


@dataclass
class SinkCommitMessage(WriterCommitMessage):
    """What one write task reports to the driver."""

    partition_id: int
    """Spark's partition id of the task."""
    batch_id: int
    """The micro-batch (0 for a batch write)."""
    producer_name: str | None
    """The producers' name (None: at-least-once, names assigned by the broker)."""
    rows: int
    written: int
    """Messages stored by this attempt."""
    duplicates: int
    """Rows an earlier attempt had stored already: not written again."""
    topics: dict[str, int] = field(default_factory=dict)


def sink_identity(kind: str, identity: str, topic: str | None) -> str:
    """A stable 16-hex-digit name for (stream query id | batch writeId, option topic)."""
    digest = hashlib.sha256(f"{kind}\0{identity}\0{topic or ''}".encode()).hexdigest()
    return digest[:16]


def producer_name(sink: str, partition_id: int) -> str:
    return f"pulsarlike-sink-{sink}-{partition_id}"


def summarize(messages: Sequence[Optional[SinkCommitMessage]]) -> dict[str, int]:
    """Totals of the tasks' commit messages (a failed task's message is None)."""
    done = [m for m in messages if m is not None]
    return {"tasks": len(done), "failed_tasks": len(messages) - len(done),
            "rows": sum(m.rows for m in done), "written": sum(m.written for m in done),
            "duplicates": sum(m.duplicates for m in done)}


class _SinkWriter:
    """What both writers share: options and columns checked on the driver, the task's write."""

    streaming = False

    def __init__(self, options: Mapping[str, str], schema: Any, overwrite: bool) -> None:
        if overwrite:
            fix = ("outputMode('append') (complete mode rewrites the whole result every batch; for an "
                   "aggregation add a watermark)" if self.streaming else "mode('append')")
            raise ValueError(f"the pulsarlike sink only appends (a topic cannot be truncated by a write): use "
                             f"{fix}; to start over, delete the topic first (Admin.delete_topic)")
        self.options = parse_sink_options(options, self.streaming)
        if self.options.topic_schema is not None:  # a record schema made from the DataFrame's columns
            derived = derived_topic_schema(schema, self.options.topic_schema)
            self.columns = plan_derived_columns(schema, self.options, derived)
            if _pulsarlike_schemas(self.options):
                check_compatible(self.options, derived)
            return
        typed = None if "value" in {f.name.lower() for f in schema.fields} else topic_record_schema(self.options)
        self.columns = plan_columns(schema, self.options) if typed is None else \
            plan_record_columns(schema, self.options, typed)

    def write_partition(self, batches: Iterator[Any], partition_id: int, batch_id: int,
                        sink: str) -> SinkCommitMessage:
        """Write one task's record batches as Spark partition ``partition_id`` of batch ``batch_id``."""
        if not 0 <= batch_id <= MAX_BATCH_ID:
            raise ValueError(f"batch id {batch_id} is outside 0..2**31-1, which sequence ids "
                             "(batch_id * 2**32 + row) can hold")
        name = producer_name(sink, partition_id) if self.options.effectively_once else None
        identity = TaskIdentity(partition_id=partition_id, producer_name=name,
                                base_sequence_id=batch_id << 32)
        counts = TaskWriter(self.options, self.columns, identity).write(batches)
        return SinkCommitMessage(partition_id=partition_id, batch_id=batch_id, producer_name=name,
                                 rows=counts.rows, written=counts.written, duplicates=counts.duplicates,
                                 topics=counts.topics)


def _pulsarlike_schemas(options: Any) -> bool:
    """Whether the driver can ask the broker's schema service (pulsarlike's gRPC one). Another Pulsar broker
    (or ``transport=binary``) checks a derived schema when the task's producers register it instead: an
    incompatible one fails the tasks with ``IncompatibleSchema`` (a broker without a registry, as
    pulsar-lite, checks nothing)."""
    from connector.spark.any_broker import dense_offsets

    if options.transport == "grpc":
        return True
    if options.transport == "auto" and dense_offsets(options.service_url, options.operation_timeout_ms,
                                                     options.security):
        return True
    log.info("event=sink_schema_checked_by_broker topic=%s: a Pulsar broker other than pulsarlike checks the "
             "derived schema when the write's producers register it", options.topic)
    return False


def _task_context() -> Any:
    from pyspark import TaskContext

    context = TaskContext.get()
    if context is None:
        raise RuntimeError("the pulsarlike sink's write() runs in a Spark task; call write_partition() "
                           "outside one")
    return context


class PulsarLikeBatchWriter(_SinkWriter, DataSourceArrowWriter):
    """``df.write.format("pulsarlike")``: Arrow batches, mode append."""

    def __init__(self, options: Mapping[str, str], schema: Any, overwrite: bool) -> None:
        super().__init__(options, schema, overwrite)
        # Made once on the driver and pickled to every task, so retried tasks of this write share it.
        self.write_id = self.options.write_id or uuid.uuid4().hex
        self.sink = sink_identity("batch", self.write_id, self.options.topic)

    def write(self, iterator: Iterator[Any]) -> SinkCommitMessage:
        return self.write_partition(iterator, _task_context().partitionId(), 0, self.sink)

    def commit(self, messages: list[Optional[WriterCommitMessage]]) -> None:
        log.info("pulsarlike batch write %s committed: %s", self.write_id, summarize(messages))  # type: ignore[arg-type]

    def abort(self, messages: list[Optional[WriterCommitMessage]]) -> None:
        log.warning("pulsarlike batch write %s aborted: %s; what the finished tasks wrote stays in the topic -- "
                    "rerun with the same writeId to add only the rest", self.write_id,
                    summarize(messages))  # type: ignore[arg-type]


class PulsarLikeStreamWriter(_SinkWriter, StreamArrowWriter):
    """``df.writeStream.format("pulsarlike")``: Arrow batches, effectively-once per micro-batch (Spark 4.1's
    ``DataSourceStreamArrowWriter``; on 4.0 an Arrow writer that streams, :mod:`connector.spark.spark_versions`)."""

    streaming = True

    def write(self, iterator: Iterator[Any]) -> SinkCommitMessage:
        context = _task_context()
        batch_id = context.getLocalProperty(BATCH_ID_PROPERTY)
        query_id = context.getLocalProperty(QUERY_ID_PROPERTY)
        if batch_id is None or query_id is None:
            raise RuntimeError(f"the Spark task has no {BATCH_ID_PROPERTY}/{QUERY_ID_PROPERTY}; the "
                               "streaming sink runs in a streaming query only")
        sink = sink_identity("stream", query_id, self.options.topic)
        return self.write_partition(iterator, context.partitionId(), int(batch_id), sink)

    def commit(self, messages: list[Optional[WriterCommitMessage]], batchId: int) -> None:
        log.info("pulsarlike sink batch %d committed: %s", batchId, summarize(messages))  # type: ignore[arg-type]

    def abort(self, messages: list[Optional[WriterCommitMessage]], batchId: int) -> None:
        # Nothing to undo: a topic has no transactions. What finished tasks stored stays; the retry of
        # this batch id re-sends the same sequence ids and the broker keeps only what is missing.
        log.warning("pulsarlike sink batch %d aborted: %s; its retry adds only what is missing",
                    batchId, summarize(messages))  # type: ignore[arg-type]
