"""The ``pulsarlike`` Spark data source (see :mod:`connector.spark.source` and ``docs/spark.md``)."""
# first: a pyspark older than the floor fails here with UnsupportedSparkVersion, not deep in an import
from connector.spark.spark_versions import SPARK_FLOOR, UnsupportedSparkVersion
from connector.spark.source import PulsarLikeDataSource

__all__ = ["PulsarLikeDataSource", "SPARK_FLOOR", "UnsupportedSparkVersion"]
