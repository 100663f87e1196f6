"""Offset calls of :class:`~connector.client.admin.Admin`: where a topic partition's stored messages start and
end, the offset of a publish time, and a durable subscription created at an offset.

A message's offset is its position in its topic partition (``MessageId.offset()``); readers that keep their
own positions (the Spark source, the jobs) plan in offsets. Pulsar has no offset calls of these shapes (its
message ids are ``ledger:entry``); the names follow pulsar-admin's where one is close
(``create_subscription``, ``get_last_message_id``).
"""
from __future__ import annotations

from typing import NamedTuple

from broker_core.protocol import broker_pb2

from connector.client.admin.wire import NotSupported, UnaryWire, topic_name, whole


class OffsetBounds(NamedTuple):
    """What one topic partition stores now: offsets ``start <= offset < end``."""

    start: int
    """The first stored offset (earlier messages were deleted by retention)."""
    end: int
    """The offset the next published message will get."""


class OffsetsAdmin:
    """Offsets of topic partitions: a part of :class:`~connector.client.admin.Admin`, which serves its public
    methods."""

    def __init__(self, wire: UnaryWire) -> None:
        self._wire = wire

    def get_offset_bounds(self, topic: str) -> OffsetBounds:
        """The stored offsets of a topic partition (or non-partitioned topic); ``start == end`` when it holds
        no message. ``TopicNotFound`` when it does not exist."""
        if getattr(self._wire, "transport", None) is not None:  # REST's last message id has no start offset
            raise NotSupported("get_offset_bounds has no equivalent in Pulsar's admin REST API (the Admin uses"
                               " admin_url); use Admin(service_url='pulsar://HOST:6650') for it",
                               method="get_offset_bounds")
        last = self._wire.unary("GetLastMessageId", broker_pb2.TopicRequest(topic=topic_name(topic)))
        return OffsetBounds(last.start_offset, max(last.last_offset + 1, last.start_offset))

    def offset_for_timestamp(self, topic: str, publish_time_ms: int) -> int:
        """The offset of the first message of a topic partition published at or after ``publish_time_ms``
        (ms since the epoch); the partition's end offset when there is none."""
        return self._wire.unary("OffsetForTimestamp", broker_pb2.TimestampRequest(
            topic=topic_name(topic), publish_time_ms=whole("publish_time_ms", publish_time_ms, 0)))

    def create_subscription_at_offset(self, topic: str, subscription: str, offset: int) -> None:
        """Create a durable subscription on one topic partition whose first unacknowledged message is at
        ``offset`` (``create_subscription`` with a position given as an offset). ``NotAllowedError`` when it
        exists already (it is left as it is)."""
        self._wire.unary("CreateSubscription", broker_pb2.SubscriptionRequest(
            topic=topic_name(topic), subscription=subscription,
            position=broker_pb2.Position(offset=whole("offset", offset, 0))))
