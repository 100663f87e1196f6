"""Persistent topic partitions: a log, a journal, durable cursors, and the helpers a topic is composed of."""
