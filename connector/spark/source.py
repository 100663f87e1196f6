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
    messages, and cut into contiguous slices until there are at least ``minPartitions`` (Kafka's option).
Examples
    >>> (spark.readStream.format("pulsarlike")                           # doctest: +SKIP
    ...     .option("service.url", "pulsar://127.0.0.1:6650").option("topic", "events").load())
"""
from __future__ import annotations

import dataclasses
import logging
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader
from pyspark.sql.types import StructType

from broker_core import errors

from connector.spark.options import SourceOptions, parse_source_options
from connector.spark.schema import check_requested_schema, spark_schema_of
from connector.spark.source_admin import SourceAdmin, SourceConnectError
from connector.spark.headers import with_headers
from connector.spark.typed_values import TopicSchema, UnsupportedSchema, arrow_schema

log = logging.getLogger(__name__)


class PulsarLikeDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "pulsarlike"

    def schema(self) -> StructType:
        # load(): options neither a read nor a stream takes are refused here, not at start() (issue 34)
        try:
            opts = parse_source_options(self.options, streaming=False, warn=False)
        except ValueError as batch_error:
            try:
                opts = parse_source_options(self.options, streaming=True)
            except ValueError as stream_error:
                raise _refused(batch_error, stream_error) from None
        found = TopicSchema("BYTES")
        if _dense_at_load(opts):
            found = _topic_schema(opts)
        return spark_schema_of(source_arrow_schema(found, opts))

    def reader(self, schema: StructType) -> DataSourceReader:
        from connector.spark.batch_reader import PulsarLikeBatchReader
        from connector.spark.offset_kinds import kind_for

        opts = parse_source_options(self.options, streaming=False)
        kind = kind_for(opts)  # once per read
        return PulsarLikeBatchReader(_checked(opts, schema, kind), kind)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        from connector.spark.offset_kinds import kind_for
        from connector.spark.stream_reader import PulsarLikeStreamReader

        opts = parse_source_options(self.options, streaming=True)
        kind = kind_for(opts)  # once per query
        return PulsarLikeStreamReader(_checked(opts, schema, kind), kind=kind)

    def writer(self, schema: StructType, overwrite: bool) -> Any:
        from connector.spark.writer import PulsarLikeBatchWriter

        return PulsarLikeBatchWriter(dict(self.options), schema, overwrite)

    def streamWriter(self, schema: StructType, overwrite: bool) -> Any:
        from connector.spark.writer import PulsarLikeStreamWriter

        return PulsarLikeStreamWriter(dict(self.options), schema, overwrite)


LOAD_CONNECT_TIMEOUT_MS = 10_000
"""How long ``load()`` waits for an unreachable broker: pulsar-client's ``connection_timeout_ms`` (a running
query waits ``pollTimeoutMs`` for a broker that restarts)."""


def _refused(batch_error: ValueError, stream_error: ValueError) -> ValueError:
    """The error ``load()`` raises for options neither ``spark.read`` nor ``spark.readStream`` takes."""
    if str(batch_error) == str(stream_error):
        return ValueError(f"pulsarlike source: {stream_error}")
    return ValueError(f"pulsarlike source: spark.readStream: {stream_error}; spark.read: {batch_error}")


def _dense_at_load(opts: SourceOptions) -> bool:
    """Whether the broker has dense offsets (pulsarlike), whose registry gives typed columns
    (:func:`connector.spark.offset_kinds.is_dense`; ``transport=grpc`` says so without asking), asked within
    :data:`LOAD_CONNECT_TIMEOUT_MS`: ``SourceConnectError`` at ``load()`` when the broker does not answer, so a
    wrong URL or port fails there in seconds, not at ``start()`` after ``pollTimeoutMs`` twice."""
    if opts.transport == "grpc":
        return True
    from connector.spark.any_broker import dense_offsets

    timeout_ms = min(opts.poll_timeout_ms, LOAD_CONNECT_TIMEOUT_MS)
    try:
        return dense_offsets(opts.service_url, timeout_ms, opts.security)
    except (errors.ConnectError, errors.Timeout) as exc:
        raise SourceConnectError(f"{exc.message} (option service.url={opts.service_url}, when the read was "
                                 f"loaded): start the broker or fix service.url", target=opts.service_url) from None


def _topic_schema(opts: SourceOptions) -> TopicSchema:
    """The schema the topics read share in the broker's registry (asked on the driver); with pulsar-spark's
    ``allowDifferentTopicSchemas`` topics whose schemas differ are read as ``value`` bytes, and so are topics read
    with ``cryptoFailureAction=consume`` (a row kept encrypted has no fields)."""
    if opts.crypto.consume:
        return TopicSchema("BYTES")
    calls = SourceAdmin(opts.service_url, opts.poll_timeout_ms, opts.security)
    try:
        return calls.topic_schema(opts.spec)
    except UnsupportedSchema as exc:
        if not opts.allow_different_schemas:
            raise
        log.info("event=topic_schemas_differ reason=%r: read as value bytes (allowDifferentTopicSchemas=true)",
                 str(exc))
        return TopicSchema("BYTES")
    finally:
        calls.close()


def source_arrow_schema(found: TopicSchema, opts: SourceOptions | None) -> pa.Schema:
    """The Arrow schema of the source's rows: the topics' columns, ``__key`` of option ``keyType``,
    ``__encryptionContext`` with ``cryptoFailureAction=consume`` (:mod:`connector.spark.encrypted_rows`), and
    Kafka's ``headers`` last with ``includeHeaders`` (:mod:`connector.spark.headers`)."""
    schema = arrow_schema(found, opts.key_type if opts is not None else "binary")
    if opts is not None and opts.crypto.consume:
        from connector.spark.encrypted_rows import with_encryption_context

        schema = with_encryption_context(schema)
    return with_headers(schema) if opts is not None and opts.include_headers else schema


def _checked(opts: SourceOptions, schema: StructType, kind: Any) -> SourceOptions:
    """``opts`` with the topics' schema, checked against the one Spark was given (``schema()``'s or the
    user's); a broker without dense offsets: ``value`` as bytes (typed columns need pulsarlike's schema
    lookups)."""
    found = _topic_schema(opts) if kind.name == "dense" else TopicSchema("BYTES")
    check_requested_schema(schema, spark_schema_of(source_arrow_schema(found, opts)))
    return dataclasses.replace(opts, topic_schema=found) if kind.name == "dense" else opts
