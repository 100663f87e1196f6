"""The broker's unary calls the source makes on the driver: topic discovery, offset bounds, its durable
subscription (create, position, acknowledge up to a committed end) and publish-time lookups.

One :class:`BrokerCalls` holds one lazily opened connection (nothing is opened at construction, so the
object can be built in ``__init__`` of a reader that Spark pickles). Every call has the deadline
``pollTimeoutMs``, and each is idempotent, so a broker that restarts meanwhile is waited for (retried with
backoff, as the client's lookups are); a broker unreachable for all of it raises :class:`SourceConnectError`
naming the options to check.
"""
from __future__ import annotations

import json
import logging
from typing import Any, Iterable, NamedTuple

from broker_core import errors
from broker_core.protocol import broker_pb2
from broker_core.types import TopicName

from connector.client.connection import Connection
from connector.spark.auth_options import ClientSecurity
from connector.spark.offsets import TopicPartition
from connector.spark.options import TopicSpec

log = logging.getLogger(__name__)


class SourceConnectError(errors.ConnectError):
    """The broker could not be reached within ``pollTimeoutMs``."""


class Bounds(NamedTuple):
    """What one topic partition stores now."""

    start: int
    """The first stored offset (earlier messages were deleted by retention)."""
    end: int
    """The offset the next published message will get."""


class BrokerCalls:
    def __init__(self, service_url: str, timeout_ms: int, security: ClientSecurity | None = None) -> None:
        self.service_url = service_url
        self.timeout_ms = timeout_ms
        self.security = security or ClientSecurity()
        self._connection: Connection | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {"service_url": self.service_url, "timeout_ms": self.timeout_ms, "security": self.security,
                "_connection": None}

    def _unary(self, method: str, request: Any) -> Any:
        if self._connection is None:
            timeout_s = self.timeout_ms / 1000.0
            self._connection = Connection(self.service_url, timeout_s, timeout_s,
                                          self.security.connection_security(self.service_url))
        try:
            return self._connection.unary(method, request, retry=True)
        except errors.ConnectError as exc:
            raise SourceConnectError(
                f"{exc.message} (option service.url={self.service_url}, pollTimeoutMs={self.timeout_ms}): "
                "start the broker or fix service.url", target=self.service_url) from None
        except errors.Timeout as exc:
            raise SourceConnectError(
                f"the broker at {self.service_url} did not answer {method} within pollTimeoutMs="
                f"{self.timeout_ms} ({exc.message}); raise pollTimeoutMs or check the broker",
                target=self.service_url) from None

    # --- topics ---------------------------------------------------------------------------------------
    def discover(self, spec: TopicSpec) -> list[TopicPartition]:
        """The topic partitions the spec names that exist now (sorted); a listed topic that does not
        exist yet is left out, and picked up once it does."""
        found: set[TopicPartition] = set()
        if spec.pattern is not None:
            for name in self.list_topics(spec.namespace):
                parsed = TopicName.parse(name)
                base = str(parsed.partitioned_base)
                if parsed.persistent and spec.matches(base):
                    found.add(TopicPartition(base, parsed.partition_index))
        else:
            for topic in spec.topics:
                count = self.partition_count(topic)
                if count:
                    found.update(TopicPartition(topic, i) for i in range(count))
                else:
                    found.add(TopicPartition(topic, -1))
        return sorted(found)

    def partition_count(self, topic: str) -> int:
        """0 for a non-partitioned (or missing) topic."""
        return self._unary("GetPartitionedTopicMetadata", broker_pb2.TopicRequest(topic=topic)).partitions

    def list_topics(self, namespace: str) -> list[str]:
        return list(self._unary("ListTopics", broker_pb2.ListTopicsRequest(namespace=namespace)).topics)

    def bounds(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, Bounds]:
        """Stored offsets of each partition that exists (missing ones are left out)."""
        out: dict[TopicPartition, Bounds] = {}
        for tp in partitions:
            try:
                last = self._unary("GetLastMessageId", broker_pb2.TopicRequest(topic=tp.internal_name))
            except errors.TopicNotFound:
                continue
            out[tp] = Bounds(last.start_offset, max(last.last_offset + 1, last.start_offset))
        return out

    def stats(self, tp: TopicPartition) -> dict[str, Any] | None:
        """The partition's ``TopicStats`` (as ``pulsarlike admin topics stats`` shows them); None when it
        does not exist."""
        try:
            reply = self._unary("TopicStats", broker_pb2.TopicRequest(topic=tp.internal_name))
        except errors.TopicNotFound:
            return None
        return json.loads(reply.json) if reply.json else {}

    def average_message_size(self, tp: TopicPartition) -> float:
        """Stored bytes per stored message of a partition (for maxBytesPerTrigger); 0 when empty."""
        stats = self.stats(tp) or {}
        first, last = stats.get("firstOffset"), stats.get("lastOffset")
        if first is None or last is None or last < first:
            return 0.0
        return stats.get("storageSize", 0) / (last - first + 1)

    # --- the source's durable subscription ------------------------------------------------------------
    def ensure_subscription(self, tp: TopicPartition, subscription: str, offset: int) -> None:
        """Create ``subscription`` on the partition at ``offset`` unless it exists (then left as is)."""
        try:
            self._unary("CreateSubscription", broker_pb2.SubscriptionRequest(
                topic=tp.internal_name, subscription=subscription, position=broker_pb2.Position(offset=offset)))
        except errors.NotAllowedError:
            pass

    def subscription_position(self, tp: TopicPartition, subscription: str) -> int:
        """The subscription's first unacknowledged offset; created at the partition's end when missing
        (Pulsar's default initial position, latest)."""
        try:
            self._unary("CreateSubscription", broker_pb2.SubscriptionRequest(
                topic=tp.internal_name, subscription=subscription, position=broker_pb2.Position(latest=True)))
        except errors.NotAllowedError:
            pass
        return self.acknowledge_up_to(tp, subscription, 0)

    def acknowledge_up_to(self, tp: TopicPartition, subscription: str, end_offset: int) -> int:
        """Acknowledge everything below ``end_offset`` (never moves back); the next unacknowledged offset."""
        return self._unary("AcknowledgeUpTo", broker_pb2.SubscriptionRequest(
            topic=tp.internal_name, subscription=subscription, end_offset=end_offset)).next_offset

    def offset_for_time(self, tp: TopicPartition, publish_time_ms: int) -> int:
        """The offset of the first message published at or after ``publish_time_ms`` (the end when none)."""
        return self._unary("OffsetForTimestamp", broker_pb2.TimestampRequest(
            topic=tp.internal_name, publish_time_ms=publish_time_ms)).next_offset

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None
