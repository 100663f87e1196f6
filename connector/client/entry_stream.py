"""Raw entries of one topic partition from an offset, public: :func:`open_entry_stream`.

A reader that decodes entries itself (with :mod:`connector.client.entries`; the Spark source builds Arrow
columns from them) gets them here instead of as :class:`~connector.client.message.Message` objects: a
non-durable (reader) subscription starting at ``start_offset`` (inclusive), delivered in order to
``events.on_entries(entries, window)`` on the stream's reader thread, where each entry is an
:class:`~connector.client.transport.events.Entry` (``ledger_id``, ``entry_id``: the offset of its first message,
``num_messages``, ``redelivery_count``, ``ack_set`` and ``data``: the stored bytes, decoded once, by the
reader), whichever transport delivered it. The reader
calls ``window.took(n)`` for the messages it has handled, which tops the flow permits up.

The stream is the client's :class:`~connector.client.consumer.stream.PartitionStream`: it reconnects by
itself after a broker restart, resubscribing from ``resume()`` (the next offset the reader wants), so
nothing is skipped and entries already taken may come again.
"""
from __future__ import annotations

import uuid
from typing import Callable

from connector.client.consumer.stream import PartitionStream, StreamEvents
from connector.client.enums import ConsumerType
from connector.client.transport.events import ConsumerSpec, Entry, Position
from connector.client.consumer.permits import PermitWindow
from connector.client.timer import TimerThread
from connector.client.transport import Transport

__all__ = ["Entry", "PartitionStream", "PermitWindow", "StreamEvents", "open_entry_stream"]


def open_entry_stream(connection: Transport, timer: TimerThread, topic: str, partition: int, start_offset: int,
                      permits: int, events: StreamEvents, resume: Callable[[], int | None] | None = None,
                      subscription: str | None = None, read_compacted: bool = False) -> PartitionStream:
    """A reader stream on ``topic`` (the partition's full name, e.g. ``persistent://t/ns/x-partition-1``;
    ``partition`` its index, -1 for a non-partitioned topic) from ``start_offset``, with at most ``permits``
    messages in flight. Not opened yet: call ``open()`` (it raises what the broker refuses, e.g.
    ``TopicNotFound``), and ``close()`` when done. ``subscription`` names the reader (a fresh name by
    default). ``read_compacted``: the partition's compacted view below its compaction horizon (Pulsar's
    ``readCompacted``: offsets have gaps there), raw messages from it."""
    spec = ConsumerSpec(
        topic=topic, subscription=subscription or f"reader-{uuid.uuid4().hex[:12]}", sub_type=ConsumerType.Exclusive,
        durable=False, start=Position.at(start_offset), start_inclusive=True, partition=partition,
        read_compacted=read_compacted)
    return PartitionStream(connection, timer, spec, permits, events, resume)
