"""What the admin calls share: the wire they send through, and argument checks and conversions (topic names,
positions, whole numbers)."""
from __future__ import annotations

from typing import Any, NamedTuple, Protocol

from broker_core.errors import PulsarLikeError
from broker_core.protocol import broker_pb2
from broker_core.types import TopicName

from connector.client.message_id import MessageId


class NotSupported(PulsarLikeError):
    """An admin call the transport in use cannot serve: a pulsarlike call with no REST equivalent
    (``acknowledge_up_to``, offsets) over ``Admin(admin_url=...)``, or a REST-only one (clusters, brokers)
    over a ``pulsar://`` service URL. ``method`` names it."""


class LookupAnswer(NamedTuple):
    """Where a topic is served (``LookupTopic``)."""

    broker_url: str
    http_url: str


class CompactionState(NamedTuple):
    """A topic's compaction (``CompactionStatus``): Pulsar's ``NOT_RUN``/``RUNNING``/``SUCCESS``/``ERROR``."""

    status: str
    last_error: str


class UnaryWire(Protocol):
    """Where an admin call goes: the broker's gRPC calls (:class:`~connector.client.admin.grpc_wire.GrpcWire`)
    or Pulsar's admin REST API (:class:`~connector.client.admin.rest_wire.RestWire`). Each translates its wire
    into the call's answer, the admin's own values, whatever wire it came over:

    ==================================================  ======================================================
    a create, set, delete, unload ...                   None
    ``ListTenants``, ``ListNamespaces``, ``ListTopics``,  ``list[str]``
    ``ListPartitionedTopics``, ``ListSubscriptions``,
    ``UnsubscribeNamespace``
    stats, policies, permissions, properties, schema     the JSON value (None: unset)
    admin calls
    ``GetPartitionedTopicMetadata``                      the partition count (0: not partitioned)
    ``GetTenant``                                        ``{"adminRoles": [...], "allowedClusters": [...]}``
    ``GetLastMessageId``, ``TerminateTopic``,            :class:`~connector.client.transport.events.LastMessage`
    ``GetMessageIdByTimestamp``, ``GetMessageIdByIndex``
    ``PeekMessages``, ``ExamineMessage``,                the stored entries,
    ``GetMessageById``                                   ``list[``:class:`~connector.client.transport.events.Entry```]``
    ``SkipMessages``, ``ClearBacklog``,                  how many messages were acknowledged (-1: unknown)
    ``ExpireMessages``, ``ClearNamespaceBacklog``
    ``AcknowledgeUpTo``, ``OffsetForTimestamp``          the subscription's next offset
    ``LookupTopic``                                      :class:`LookupAnswer`
    ``CompactionStatus``                                 :class:`CompactionState`
    ==================================================  ======================================================
    """

    def unary(self, method: str, request: Any, timeout_s: float | None = None, retry: bool = ...) -> Any:
        """The answer of the admin call ``method`` (the table above); failures are typed errors."""
        ...


def rest_of(wire: Any, method: str) -> Any:
    """The REST transport under ``wire`` (:class:`~connector.client.admin.rest_wire.RestWire`), for the calls
    that only the REST API serves; :class:`NotSupported` naming ``method`` over gRPC."""
    transport = getattr(wire, "transport", None)
    if transport is None:
        raise NotSupported(f"{method} is served over Pulsar's admin REST API only: use"
                           " Admin(admin_url='http://HOST:8080') (pulsarlike admin --admin-url http://HOST:8080)",
                           method=method)
    return transport


def fans_out(wire: Any) -> bool:
    """Whether ``wire`` sends a partitioned topic's call once, to the topic, for the server to apply to each
    partition (Pulsar's admin REST API, as Pulsar's Java admin sends it); over gRPC the admin's parts send the
    call to each partition themselves."""
    return bool(getattr(wire, "fans_out_partitions", False))


def topic_name(topic: str) -> str:
    """Fully qualified (raises ``InvalidTopicName`` client-side)."""
    return str(TopicName.parse(topic))


def whole(name: str, value: Any, minimum: int | None = None) -> int:
    """``value`` as an int (bools refused); ``ValueError`` naming ``name`` otherwise, or below ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name}={value!r} is not valid; use an int")
    if minimum is not None and value < minimum:
        raise ValueError(f"{name}={value!r} is not valid; use an int >= {minimum}")
    return value


def position(message_id: MessageId) -> broker_pb2.Position:
    if not isinstance(message_id, MessageId):
        raise TypeError("message_id must be a MessageId (MessageId.earliest, MessageId.latest or an id)")
    if message_id.is_earliest():
        return broker_pb2.Position(earliest=True)
    if message_id.is_latest():
        return broker_pb2.Position(latest=True)
    return broker_pb2.Position(offset=message_id.offset())
