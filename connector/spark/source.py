"""The ``pulsarlike`` data source (PySpark's Python Data Source API).

Name
    ``pulsarlike``: ``spark.readStream.format("pulsarlike")``, ``spark.read``, ``df.write``,
    ``df.writeStream``. No registration call is needed: Spark registers ``DefaultSource`` of the top-level
    module ``pyspark_pulsarlike`` by itself (or call ``spark.dataSource.register(PulsarLikeDataSource)``).
Schema
    :mod:`connector.spark.schema`; for a topic with a JSON, Avro or primitive schema in the broker's registry,
    typed columns (:mod:`connector.spark.typed_values`), found once when the read is set up.
Options
    See ``docs/spark.md`` and :mod:`connector.spark.options` (reads) / :mod:`connector.spark.writer`
    (writes). Unknown options are refused, naming the closest known one.
Errors
    ``ValueError`` for bad options (naming the option and the fix), :class:`~connector.spark.data_loss.
    DataLossError` (saying why the data is gone: deleted by retention, or damaged in the broker's storage),
    :class:`~connector.spark.source_admin.SourceConnectError` (broker unreachable),
    :class:`~connector.spark.partition_reader.RangeReadTimeout` (data that never arrives), ``TopicNotFound``
    (a batch read of a topic that does not exist), and the client's typed errors.
Partitioning
    One Spark partition per topic partition and micro-batch, split every ``maxMessagesPerPartition``
    messages.
Examples
    >>> (spark.readStream.format("pulsarlike")                           # doctest: +SKIP
    ...     .option("service.url", "pulsar://127.0.0.1:6650").option("topic", "events").load())
"""
from __future__ import annotations

import dataclasses
import logging
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader
from pyspark.sql.types import StructType

from connector.spark.options import SourceOptions, parse_source_options
from connector.spark.schema import check_requested_schema, spark_schema_of
from connector.spark.source_admin import SourceAdmin, SourceConnectError
from connector.spark.typed_values import TopicSchema, arrow_schema

log = logging.getLogger(__name__)


class PulsarLikeDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "pulsarlike"

    def schema(self) -> StructType:
        try:
            opts = parse_source_options(self.options, streaming=False)
        except ValueError:
            try:
                opts = parse_source_options(self.options, streaming=True)
            except ValueError:
                opts = None  # reader()/streamReader() raise it, naming the option
        found = TopicSchema("BYTES")
        if opts is not None:
            try:
                found = _topic_schema(opts) if _dense(opts) else found
            except SourceConnectError as exc:
                # the read fails when it starts (reader() asks again), as it always has, with this error
                log.warning("event=topic_schema_unknown reason=%r: the broker cannot be reached", exc.message)
        return spark_schema_of(arrow_schema(found, opts.key_type if opts is not None else "binary"))

    def reader(self, schema: StructType) -> DataSourceReader:
        from connector.spark.batch_reader import PulsarLikeBatchReader

        opts = parse_source_options(self.options, streaming=False)
        if not _dense(opts):
            from connector.spark.id_batch_reader import MessageIdBatchReader

            return MessageIdBatchReader(_bytes_only(opts, schema))
        return PulsarLikeBatchReader(_typed(opts, schema))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        from connector.spark.stream_reader import PulsarLikeStreamReader

        opts = parse_source_options(self.options, streaming=True)
        if not _dense(opts):
            from connector.spark.id_stream_reader import MessageIdStreamReader

            return MessageIdStreamReader(_bytes_only(opts, schema))
        return PulsarLikeStreamReader(_typed(opts, schema))

    def writer(self, schema: StructType, overwrite: bool) -> Any:
        from connector.spark.writer import PulsarLikeBatchWriter

        return PulsarLikeBatchWriter(dict(self.options), schema, overwrite)

    def streamWriter(self, schema: StructType, overwrite: bool) -> Any:
        from connector.spark.writer import PulsarLikeStreamWriter

        return PulsarLikeStreamWriter(dict(self.options), schema, overwrite)


def _topic_schema(opts: SourceOptions) -> TopicSchema:
    """The schema the topics read share in the broker's registry (asked on the driver)."""
    calls = SourceAdmin(opts.service_url, opts.poll_timeout_ms, opts.security)
    try:
        return calls.topic_schema(opts.spec)
    finally:
        calls.close()


def _dense(opts: SourceOptions) -> bool:
    """Whether the broker has dense offsets (pulsarlike: the source as always), or numbers messages by id
    (another Pulsar broker: :mod:`connector.spark.any_broker`); one binary CONNECT decides, unless option
    ``transport=grpc`` says pulsarlike (the only broker that speaks it)."""
    from broker_core import errors

    from connector.spark.any_broker import dense_offsets
    from connector.spark.source_admin import connect_error

    if opts.transport == "grpc":
        return True
    try:
        return dense_offsets(opts.service_url, opts.poll_timeout_ms, opts.security)
    except (errors.ConnectError, errors.Timeout) as exc:
        raise connect_error(opts.service_url, opts.poll_timeout_ms, "CONNECT", exc) from None


def _bytes_only(opts: SourceOptions, schema: StructType) -> SourceOptions:
    """A broker without dense offsets: ``value`` as bytes (typed columns need pulsarlike's schema lookups)."""
    check_requested_schema(schema, spark_schema_of(arrow_schema(TopicSchema("BYTES"), opts.key_type)))
    return opts


def _typed(opts: SourceOptions, schema: StructType) -> SourceOptions:
    """``opts`` with the topics' schema, checked against the one Spark was given (``schema()``'s or the user's)."""
    found = _topic_schema(opts)
    check_requested_schema(schema, spark_schema_of(arrow_schema(found, opts.key_type)))
    return dataclasses.replace(opts, topic_schema=found)
