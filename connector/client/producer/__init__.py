"""``Producer`` (pulsar-client's API): one :class:`PartitionProducer` per partition, and routing."""
from __future__ import annotations

import logging
import random
import threading
import time
from typing import Any, Callable, Mapping

from broker_core import errors

from connector.client.arg_checks import check_type, check_type_or_none
from connector.client.producer.batching import NULL_VALUE
from connector.client.producer.callbacks import SyncWaiter
from connector.client.message_id import MessageId
from connector.client.opening import open_all
from connector.client.producer.partition import PartitionProducer, close_unused
from connector.client.producer.routing import Router

log = logging.getLogger(__name__)


class OutgoingMessage:
    """What a custom ``message_router(msg, num_partitions)`` receives; mirrors the received-message
    accessors that matter for routing."""

    __slots__ = ("_content", "_properties", "_key", "_ordering_key", "_event_timestamp")

    def __init__(self, content: bytes, properties: Mapping[str, str] | None, key: str | None,
                 ordering_key: bytes | None, event_timestamp: int) -> None:
        self._content = content
        self._properties = properties
        self._key = key
        self._ordering_key = ordering_key
        self._event_timestamp = event_timestamp

    def data(self) -> bytes:
        return self._content

    def value(self) -> bytes:
        """The payload's bytes, whatever the producer's schema: pulsar-client hands a router its message with
        the bytes schema."""
        return self._content

    def properties(self) -> dict[str, str]:
        return dict(self._properties or {})

    def partition_key(self) -> str:
        return self._key or ""

    def ordering_key(self) -> bytes | None:
        return self._ordering_key

    def event_timestamp(self) -> int:
        return self._event_timestamp


class Producer:
    """Sends messages to a topic (all partitions of a partitioned topic)."""

    schema: Any = None
    """The producer's schema binding (:mod:`connector.client.schema.binding`): what ``send`` encodes values
    with; None: contents are bytes, sent as they are."""

    def __init__(self, topic: str, partitions: list[PartitionProducer], router: Router, send_timeout_ms: int,
                 on_close: Callable[["Producer"], None] = lambda producer: None, *,
                 count_partitions: Callable[[], int] | None = None,
                 open_partition: Callable[[int], PartitionProducer] | None = None) -> None:
        """A producer of a partitioned topic gets ``count_partitions`` (the topic's partition count, looked up)
        and ``open_partition(index)``: :meth:`update_partitions` opens the partitions added since."""
        self._on_close = on_close
        self._topic = topic
        self._partitions = partitions
        self._router = router
        self._send_timeout_ms = send_timeout_ms
        self._count_partitions = count_partitions
        self._open_partition = open_partition
        self._single = partitions[0] if len(partitions) == 1 else None
        self._closed = False
        self._grow_lock = threading.Lock()
        self._route_batches(partitions)

    def _route_batches(self, partitions: list[PartitionProducer]) -> None:
        if len(partitions) > 1:
            for producer in partitions:  # batches sent by size, timer, flush or a sync send alike
                producer.on_batch_sent = self._router.batch_flushed

    def update_partitions(self) -> None:
        """Open the partitions added to the topic since this producer was created or looked last (the
        client's :class:`~connector.client.partition_updates.PartitionsUpdater` calls this every
        ``partitions_update_interval_seconds``); routing then spreads messages over all of them."""
        if self._count_partitions is None or self._open_partition is None or self._closed:
            return
        count = self._count_partitions()
        have = len(self._partitions)
        if count <= have:
            return
        # several at a time; all or none (a failure closes those opened). Not the caller's call: no deadline
        # but each opening's own operation timeout.
        added = open_all(range(have, count), self._open_partition, close_unused, None,
                         f"adding partitions {have}..{count - 1} to the producer on {self._topic}")
        with self._grow_lock:
            if not self._closed:
                partitions = self._partitions + added
                self._route_batches(partitions)
                self._partitions = partitions  # before the router names the new indexes
                self._single = None
                self._router.num_partitions = count
                added = []
        for producer in added:  # closed meanwhile
            producer.close(timeout_s=1)
        log.info("event=producer_partitions_added topic=%s partitions=%d previous=%d", self._topic, count, have)

    # --- pulsar-client API -----------------------------------------------------------------------------
    def topic(self) -> str:
        return self._topic

    def producer_name(self) -> str:
        return self._partitions[0].producer_name

    def last_sequence_id(self) -> int:
        """The highest sequence id the broker acknowledged (-1 when none)."""
        return max(p.last_sequence_id for p in self._partitions)

    def send(self, content: bytes | None, properties: Mapping[str, str] | None = None,
             partition_key: str | None = None, ordering_key: bytes | str | None = None,
             sequence_id: int | None = None, replication_clusters: Any = None,
             disable_replication: bool = False, event_timestamp: int | None = None,
             deliver_at: int | None = None, deliver_after: Any = None) -> MessageId:
        """Send one message (the arguments in pulsar-client 3.13's order) and wait for its receipt (flushing the open batch at once). While the broker
        cannot be reached the message waits to be sent again, until ``send_timeout_millis`` (``Timeout``).
        ``content=None`` sends a null value (Pulsar's ``null_value``, a tombstone for compaction and table views;
        the schema is not asked): received with ``has_null_value()`` True and ``data() == b""``."""
        check_message(properties, partition_key, sequence_id, replication_clusters, disable_replication,
                      event_timestamp)
        _refuse_replication(replication_clusters)
        if content is None:
            content = NULL_VALUE
        elif self.schema is not None:
            content = self.schema.encode(content)
        waiter = SyncWaiter()
        self._add(content, waiter, properties, partition_key, ordering_key, sequence_id,
                  event_timestamp, deliver_at, deliver_after, flush=True)
        timeout = self._send_timeout_ms / 1000.0 + 5.0 if self._send_timeout_ms > 0 else None
        if not waiter.wait(timeout):
            raise errors.Timeout(f"no receipt from the broker within send_timeout_millis="
                                 f"{self._send_timeout_ms}")
        if waiter.error is not None:
            raise waiter.error
        assert waiter.message_id is not None
        return waiter.message_id

    def send_async(self, content: bytes | None, callback: Callable[[Any, MessageId | None], None] | None,
                   properties: Mapping[str, str] | None = None, partition_key: str | None = None,
                   ordering_key: bytes | str | None = None, sequence_id: int | None = None,
                   replication_clusters: Any = None, disable_replication: bool = False,
                   event_timestamp: int | None = None, deliver_at: int | None = None,
                   deliver_after: Any = None) -> None:
        """Queue one message (the arguments in pulsar-client 3.13's order); ``callback(Result, MessageId)`` runs when its receipt (or error) arrives.

        ``MessageTooBig`` (chunking off), ``AlreadyClosed``, a producer failure (e.g.
        ``ProducerFenced``), a bad ``sequence_id`` (ValueError) and a bad custom router result
        (``InvalidConfiguration``) are raised here, and the callback is not called. A full queue
        (``ProducerQueueIsFull`` with ``block_if_queue_full=False``) goes to the callback, as in
        pulsar-client.
        """
        if replication_clusters is not None or disable_replication:
            check_message(None, None, None, replication_clusters, disable_replication, None)
            _refuse_replication(replication_clusters)
        if content is None:
            content = NULL_VALUE
        elif self.schema is not None:
            content = self.schema.encode(content)
        single = self._single  # None when partitioned or closed
        if single is not None and type(content) is bytes and ordering_key is None \
                and deliver_after is None:  # the common case, kept short
            if properties is None and partition_key is None and sequence_id is None \
                    and not event_timestamp and deliver_at is None:  # payload only: the hot path
                single.add_payload(content, callback)
            else:
                check_message(properties, partition_key, sequence_id, None, False, event_timestamp)
                if deliver_at is not None:
                    deliver_at = delivery_time(deliver_at, None)
                single.add(content, callback, properties, partition_key, None, sequence_id,
                           event_timestamp or 0, deliver_at, False)
            return
        check_message(properties, partition_key, sequence_id, None, False, event_timestamp)
        self._add(content, callback, properties, partition_key, ordering_key, sequence_id,
                  event_timestamp, deliver_at, deliver_after, flush=False)

    def send_open_batches(self) -> None:
        """Send every open batch now, without waiting for receipts (an asyncio producer's flush awaits its
        sends' own futures)."""
        for producer in self._partitions:
            producer.flush_batch()

    def flush(self) -> None:
        """Send every open batch and wait until all pending messages are acknowledged."""
        for producer in self._partitions:
            producer.flush_batch()
        for producer in self._partitions:
            producer.flush()

    def close(self) -> None:
        """Flush, wait for the pending receipts, close. Later sends raise ``AlreadyClosed``."""
        with self._grow_lock:
            if self._closed:
                return
            self._closed = True
            self._single = None
        for producer in self._partitions:
            producer.close(timeout_s=self._send_timeout_ms / 1000.0 if self._send_timeout_ms else None)
        self._on_close(self)

    def is_connected(self) -> bool:
        return not self._closed and all(p.is_connected() for p in self._partitions)

    # --- internals --------------------------------------------------------------------------------------
    def _add(self, content: bytes, callback: Any, properties: Mapping[str, str] | None,
             partition_key: str | None, ordering_key: bytes | str | None, sequence_id: int | None,
             event_timestamp: int | None, deliver_at: int | None, deliver_after: Any,
             flush: bool) -> None:
        if self._closed:
            raise errors.AlreadyClosed(f"the producer on {self._topic} is closed")
        if type(content) is not bytes and content is not NULL_VALUE:
            if isinstance(content, str):
                content = content.encode()
            elif isinstance(content, (bytearray, memoryview)):
                content = bytes(content)
            else:
                raise TypeError(f"content must be bytes, not {type(content).__name__}")
        if isinstance(ordering_key, str):
            ordering_key = ordering_key.encode()
        if deliver_after is not None or deliver_at is not None:
            deliver_at = delivery_time(deliver_at, deliver_after)
        if len(self._partitions) == 1:
            index = 0
        else:
            msg = OutgoingMessage(content, properties, partition_key, ordering_key,
                                  event_timestamp or 0) if self._router._custom else None
            index = self._router.partition(partition_key, msg)
        self._partitions[index].add(content, callback, properties, partition_key, ordering_key,
                                    sequence_id, event_timestamp or 0, deliver_at, flush)


def check_message(properties: Any, partition_key: Any, sequence_id: Any, replication_clusters: Any,
                  disable_replication: Any, event_timestamp: Any) -> None:
    """pulsar-client's type checks of a message's arguments (ValueError, :mod:`connector.client.arg_checks`;
    ``sequence_id`` is the partition producer's, also a ValueError)."""
    check_type_or_none(Mapping, properties, "properties")
    check_type_or_none(str, partition_key, "partition_key")
    check_type_or_none(list, replication_clusters, "replication_clusters")
    check_type(bool, disable_replication, "disable_replication")
    check_type_or_none(int, event_timestamp, "event_timestamp")


def _refuse_replication(replication_clusters: Any) -> None:
    if replication_clusters is not None:
        raise errors.InvalidConfiguration("replication_clusters: pulsarlike is one broker, it has no clusters to "
                                          "replicate to; leave it unset")


def delivery_time(deliver_at: Any, deliver_after: Any) -> int:
    """The deliver-at time in ms since the epoch of ``deliver_at`` (ms since the epoch) or
    ``deliver_after`` (a ``timedelta``, or ms). A time in the past means "deliver now", as in Pulsar; a
    negative delay or time is a mistake and raises ``ValueError``."""
    if deliver_after is not None:
        if deliver_at is not None:
            raise ValueError("pass deliver_at or deliver_after, not both")
        try:
            ms = deliver_after.total_seconds() * 1000.0 if hasattr(deliver_after, "total_seconds") \
                else float(deliver_after)
        except (TypeError, ValueError):
            raise ValueError(f"deliver_after={deliver_after!r} is not valid; use a timedelta or "
                             "milliseconds >= 0") from None
        if not ms >= 0:
            raise ValueError(f"deliver_after={deliver_after!r} is negative; use a delay >= 0")
        return int(time.time() * 1000 + ms)
    if isinstance(deliver_at, bool) or not isinstance(deliver_at, int) or deliver_at < 0:
        raise ValueError(f"deliver_at={deliver_at!r} is not valid; use milliseconds since the epoch (int >= 0)")
    return deliver_at


def initial_partition(num_partitions: int) -> int:
    """Where round robin / single-partition routing starts (random, as pulsar-client does)."""
    return random.randrange(num_partitions) if num_partitions > 1 else 0
