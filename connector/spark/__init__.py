"""The ``pulsarlike`` Spark data source (see :mod:`connector.spark.source` and ``docs/spark.md``)."""
from connector.spark.source import PulsarLikeDataSource

__all__ = ["PulsarLikeDataSource"]
