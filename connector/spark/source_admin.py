"""The broker calls the source makes on the driver (and the jobs make), through the client's public
:class:`~connector.client.admin.Admin`: topic discovery, offset bounds, its durable subscription (create,
position, acknowledge up to a committed end) and publish-time lookups.

One :class:`SourceAdmin` holds one lazily opened ``Admin`` (nothing is opened at construction, so the object
can be built in ``__init__`` of a reader that Spark pickles). Every call has the deadline ``pollTimeoutMs``,
and each is idempotent, so a broker that restarts meanwhile is waited for (``retry_while_unavailable``); a
broker unreachable for all of it raises :class:`SourceConnectError` naming the options to check.
"""
from __future__ import annotations

import functools
import logging
import threading
from typing import Any, Callable, Iterable, TypeVar

from broker_core import errors
from broker_core.types import TopicName

from connector.client.admin import Admin, OffsetBounds
from connector.client.message_id import MessageId
from connector.spark.auth_options import ClientSecurity
from connector.spark.offsets import TopicPartition
from connector.spark.options import TopicSpec
from connector.spark.typed_values import TopicSchema, common_schema, of_registry

log = logging.getLogger(__name__)

Bounds = OffsetBounds
"""What one topic partition stores now: ``start`` (first stored offset), ``end`` (the next offset)."""

_T = TypeVar("_T")


class SourceConnectError(errors.ConnectError):
    """The broker could not be reached within ``pollTimeoutMs``."""


def connect_error(service_url: str, timeout_ms: int, what: str, exc: errors.PulsarLikeError) -> SourceConnectError:
    """``exc`` (a ``ConnectError`` or ``Timeout`` of the client) as the source reports it: with the options to
    check."""
    if isinstance(exc, errors.Timeout):
        return SourceConnectError(
            f"the broker at {service_url} did not answer {what} within pollTimeoutMs={timeout_ms} "
            f"({exc.message}); raise pollTimeoutMs or check the broker", target=service_url)
    return SourceConnectError(f"{exc.message} (option service.url={service_url}, pollTimeoutMs={timeout_ms}): "
                              "start the broker or fix service.url", target=service_url)


def _reported(method: Callable[..., _T]) -> Callable[..., _T]:
    """Broker unreachable (or silent) for the whole deadline -> :class:`SourceConnectError`."""
    @functools.wraps(method)
    def call(self: "SourceAdmin", *args: Any, **kwargs: Any) -> _T:
        try:
            return method(self, *args, **kwargs)
        except (errors.ConnectError, errors.Timeout) as exc:
            if isinstance(exc, SourceConnectError):
                raise
            raise connect_error(self.service_url, self.timeout_ms, method.__name__, exc) from None
    return call


class SourceAdmin:
    def __init__(self, service_url: str, timeout_ms: int, security: ClientSecurity | None = None) -> None:
        self.service_url = service_url
        self.timeout_ms = timeout_ms
        self.security = security or ClientSecurity()
        self._admin: Admin | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {"service_url": self.service_url, "timeout_ms": self.timeout_ms, "security": self.security,
                "_admin": None}

    @property
    def admin(self) -> Admin:
        if self._admin is None:
            timeout_s = self.timeout_ms / 1000.0
            self._admin = Admin(self.service_url, operation_timeout_seconds=timeout_s,
                                connection_timeout_ms=self.timeout_ms, retry_while_unavailable=True,
                                **self.security.client_kwargs(self.service_url))
        return self._admin

    # --- topics ---------------------------------------------------------------------------------------
    @_reported
    def discover(self, spec: TopicSpec) -> list[TopicPartition]:
        """The topic partitions the spec names that exist now (sorted); a listed topic that does not
        exist yet is left out, and picked up once it does."""
        found: set[TopicPartition] = set()
        if spec.pattern is not None:
            for name in self.admin.list_topics(spec.namespace):
                parsed = TopicName.parse(name)
                base = str(parsed.partitioned_base)
                if parsed.persistent and spec.matches(base):
                    found.add(TopicPartition(base, parsed.partition_index))
        else:
            for topic in spec.topics:
                count = self.admin.get_partitioned_topic_metadata(topic)["partitions"]
                if count:
                    found.update(TopicPartition(topic, i) for i in range(count))
                else:
                    found.add(TopicPartition(topic, -1))
        return sorted(found)

    @_reported
    def bounds(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, Bounds]:
        """Stored offsets of each partition that exists (missing ones are left out)."""
        out: dict[TopicPartition, Bounds] = {}
        for tp in partitions:
            try:
                out[tp] = self.admin.get_offset_bounds(tp.internal_name)
            except errors.TopicNotFound:
                continue
        return out

    @_reported
    def stats(self, tp: TopicPartition) -> dict[str, Any] | None:
        """The partition's topic stats (as ``pulsarlike admin topics stats`` shows them); None when it does
        not exist."""
        try:
            return self.admin.topic_stats(tp.internal_name)
        except errors.TopicNotFound:
            return None

    def average_message_size(self, tp: TopicPartition) -> float:
        """Stored bytes per stored message of a partition (for maxBytesPerTrigger); 0 when empty."""
        stats = self.stats(tp) or {}
        first, last = stats.get("firstOffset"), stats.get("lastOffset")
        if first is None or last is None or last < first:
            return 0.0
        return stats.get("storageSize", 0) / (last - first + 1)

    @_reported
    def topic_schema(self, spec: TopicSpec) -> TopicSchema:
        """The schema the topics read share in the broker's registry (:mod:`connector.spark.typed_values`);
        bytes when none has one (or none exists yet)."""
        topics = sorted({tp.topic for tp in self.discover(spec)}) or list(spec.topics)
        found: dict[str, TopicSchema | None] = {}
        for topic in topics:
            try:
                shown = self.admin.get_schema(topic)  # Pulsar's GetSchemaResponse: type as Java's SchemaType
            except errors.TopicNotFound:  # none (or no namespace) yet
                found[topic] = None
                continue
            found[topic] = of_registry(shown["type"], shown["data"].encode(), shown["version"])
        return common_schema(found)

    # --- the source's durable subscription ------------------------------------------------------------
    @_reported
    def ensure_subscription(self, tp: TopicPartition, subscription: str, offset: int) -> None:
        """Create ``subscription`` on the partition at ``offset`` unless it exists (then left as is)."""
        try:
            self.admin.create_subscription_at_offset(tp.internal_name, subscription, offset)
        except errors.NotAllowedError:
            pass

    @_reported
    def subscription_position(self, tp: TopicPartition, subscription: str) -> int:
        """The subscription's first unacknowledged offset; created at the partition's end when missing
        (Pulsar's default initial position, latest)."""
        try:
            self.admin.create_subscription(tp.internal_name, subscription, MessageId.latest)
        except errors.NotAllowedError:
            pass
        return self.admin.acknowledge_up_to(tp.internal_name, subscription, 0)

    @_reported
    def acknowledge_up_to(self, tp: TopicPartition, subscription: str, end_offset: int) -> int:
        """Acknowledge everything below ``end_offset`` (never moves back); the next unacknowledged offset."""
        return self.admin.acknowledge_up_to(tp.internal_name, subscription, end_offset)

    @_reported
    def offset_for_time(self, tp: TopicPartition, publish_time_ms: int) -> int:
        """The offset of the first message published at or after ``publish_time_ms`` (the end when none)."""
        return self.admin.offset_for_timestamp(tp.internal_name, publish_time_ms)

    def close(self) -> None:
        if self._admin is not None:
            close_later(self._admin)
            self._admin = None


def close_later(admin: Admin) -> None:
    """Close ``admin``'s gRPC connection off the caller's path: closing a gRPC channel waits about 0.2 s for its
    threads (measured), which Spark's planning (the source's schema, its stream reader) and every task -- every
    partition of every micro-batch -- would otherwise wait for, each time."""
    threading.Thread(target=admin.close, name="pulsarlike-spark-admin-close", daemon=True).start()
