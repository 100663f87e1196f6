"""Spark registers ``DefaultSource`` of top-level ``pyspark_*`` modules: ``format("pulsarlike")`` works as is."""
from connector.spark.source import PulsarLikeDataSource as DefaultSource

__all__ = ["DefaultSource"]
