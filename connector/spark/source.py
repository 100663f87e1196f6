"""The ``pulsarlike`` data source (PySpark's Python Data Source API).

Name
    ``pulsarlike``: ``spark.readStream.format("pulsarlike")``, ``spark.read``, ``df.write``,
    ``df.writeStream``. No registration call is needed: Spark registers ``DefaultSource`` of the top-level
    module ``pyspark_pulsarlike`` by itself (or call ``spark.dataSource.register(PulsarLikeDataSource)``).
Schema
    Fixed; see :mod:`connector.spark.schema`.
Options
    See ``docs/spark.md`` and :mod:`connector.spark.options` (reads) / :mod:`connector.spark.writer`
    (writes). Unknown options are refused, naming the closest known one.
Errors
    ``ValueError`` for bad options (naming the option and the fix), :class:`~connector.spark.partition_reader.
    DataLossError` (saying why the data is gone), :class:`~connector.spark.source_admin.SourceConnectError`
    (broker unreachable), :class:`~connector.spark.partition_reader.RangeReadTimeout` (data that never
    arrives), ``TopicNotFound`` (a batch read of a topic that does not exist), and the client's typed errors.
Partitioning
    One Spark partition per topic partition and micro-batch, split every ``maxMessagesPerPartition``
    messages.
Examples
    >>> (spark.readStream.format("pulsarlike")                           # doctest: +SKIP
    ...     .option("service.url", "pulsar://127.0.0.1:6650").option("topic", "events").load())
"""
from __future__ import annotations

from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader
from pyspark.sql.types import StructType

from connector.spark.options import parse_source_options
from connector.spark.schema import check_requested_schema, spark_schema


class PulsarLikeDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "pulsarlike"

    def schema(self) -> StructType:
        return spark_schema()

    def reader(self, schema: StructType) -> DataSourceReader:
        from connector.spark.batch_reader import PulsarLikeBatchReader

        check_requested_schema(schema)
        return PulsarLikeBatchReader(parse_source_options(self.options, streaming=False))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        from connector.spark.stream_reader import PulsarLikeStreamReader

        check_requested_schema(schema)
        return PulsarLikeStreamReader(parse_source_options(self.options, streaming=True))

    def writer(self, schema: StructType, overwrite: bool) -> Any:
        from connector.spark.writer import PulsarLikeBatchWriter

        return PulsarLikeBatchWriter(dict(self.options), schema, overwrite)

    def streamWriter(self, schema: StructType, overwrite: bool) -> Any:
        from connector.spark.writer import PulsarLikeStreamWriter

        return PulsarLikeStreamWriter(dict(self.options), schema, overwrite)
