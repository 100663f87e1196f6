"""A topic's stored messages found by id, time or index, its backlog measured, its storage trimmed, completed or
truncated, and its subscriptions' properties: a part of :class:`~connector.client.admin.Admin` (``pulsar-admin
topics get-message-by-id|get-message-id|get-message-id-by-index|get-backlog-size|analyze-backlog|trim-topic|
create-missed-partitions|info-internal|truncate|get-subscription-properties|update-subscription-properties``),
over gRPC or, with ``admin_url``, Pulsar's REST API (:mod:`connector.client.admin.rest_topics`)."""
from __future__ import annotations

import json
from typing import Any

from broker_core.errors import MessageNotFound
from broker_core.protocol import broker_pb2
from broker_core.types import TopicName

from connector.client.admin.operations import _message_id
from connector.client.admin.peek import PeekedMessage, messages_of
from connector.client.admin.wire import UnaryWire, position, topic_name, whole
from connector.client.message_id import MessageId


def _properties(properties: Any) -> dict[str, str]:
    if not isinstance(properties, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                                   for k, v in properties.items()):
        raise TypeError("properties must be a dict of strings to strings")
    return properties


class TopicMessagesAdmin:
    """Stored messages, backlogs, storage and subscription properties of topics: a part of
    :class:`~connector.client.admin.Admin`, which serves its public methods."""

    def __init__(self, wire: UnaryWire) -> None:
        self._wire = wire

    # --- finding messages ------------------------------------------------------------------------------
    def get_message_by_id(self, topic: str, ledger_id: int, entry_id: int) -> list[PeekedMessage]:
        """The messages of the stored entry ``ledger_id:entry_id`` of a topic partition (one, or a batch's
        every message; ``topics get-message-by-id``); ``MessageNotFound`` when no stored entry starts there."""
        name = topic_name(topic)
        reply = self._wire.unary("GetMessageById", broker_pb2.MessageByIdRequest(
            topic=name, ledger_id=whole("ledger_id", ledger_id, 0), entry_id=whole("entry_id", entry_id, 0)))
        return messages_of(reply, name, TopicName.parse(name).partition_index, 1 << 31)

    def get_message_id_by_timestamp(self, topic: str, timestamp_ms: int) -> MessageId | None:
        """The id of the first entry of a topic partition published at or after ``timestamp_ms`` (``topics
        get-message-id``); None when every stored message is older."""
        name = topic_name(topic)
        try:
            reply = self._wire.unary("GetMessageIdByTimestamp", broker_pb2.TimestampRequest(
                topic=name, publish_time_ms=whole("timestamp_ms", timestamp_ms, 0)))
        except MessageNotFound:
            return None
        return _message_id(reply, name)

    def get_message_id_by_index(self, topic: str, index: int) -> MessageId:
        """The id of the entry holding message ``index`` (its ``BrokerEntryMetadata`` index: pulsarlike's message
        offset) of a topic partition (PIP-415, ``topics get-message-id-by-index``); ``-1:-1`` when retention
        removed it, ``MessageNotFound`` for an index never written."""
        name = topic_name(topic)
        reply = self._wire.unary("GetMessageIdByIndex", broker_pb2.MessageIndexRequest(
            topic=name, index=whole("index", index, 0)))
        return _message_id(reply, name)

    # --- the backlog -----------------------------------------------------------------------------------
    def get_backlog_size(self, topic: str, message_id: MessageId | None = None) -> int:
        """Bytes a topic partition stores from the message ``message_id`` names on (None: every byte it stores;
        ``topics get-backlog-size``)."""
        request = broker_pb2.SubscriptionRequest(topic=topic_name(topic), position=position(
            MessageId.earliest if message_id is None else message_id))
        return int(json.loads(self._wire.unary("GetBacklogSize", request).json))

    def analyze_backlog(self, topic: str, subscription: str, start: MessageId | None = None) -> dict[str, Any]:
        """Pulsar's ``AnalyzeSubscriptionBacklogResult`` of a durable subscription of a topic partition: the
        entries and messages it has not acknowledged (from ``start`` when given), ``firstMessageId``,
        ``lastMessageId``, ``aborted`` past 10,000 entries read (``topics analyze-backlog``)."""
        request = broker_pb2.SubscriptionRequest(topic=topic_name(topic), subscription=subscription)
        if start is not None:
            request.position.CopyFrom(position(start))
        return json.loads(self._wire.unary("AnalyzeBacklog", request).json)

    # --- the topic's storage ---------------------------------------------------------------------------
    def trim_topic(self, topic: str) -> None:
        """Remove now the stored segments retention no longer keeps (each partition of a partitioned topic;
        ``topics trim-topic``)."""
        self._wire.unary("TrimTopic", broker_pb2.TopicRequest(topic=topic_name(topic)))

    def create_missed_partitions(self, topic: str) -> None:
        """Make the partitions of a partitioned topic that are not stored yet (``topics
        create-missed-partitions``)."""
        self._wire.unary("CreateMissedPartitions", broker_pb2.TopicRequest(topic=topic_name(topic)))

    def get_internal_info(self, topic: str) -> dict[str, Any]:
        """Pulsar's ``ManagedLedgerInfo`` of a topic partition (ledgers, cursors' mark-delete positions and
        acknowledged ranges); of a partitioned topic each partition's under ``partitions`` (``topics
        info-internal``)."""
        return json.loads(self._wire.unary("TopicInternalInfo", broker_pb2.TopicRequest(topic=topic_name(topic))).json)

    def truncate_topic(self, topic: str) -> None:
        """Every subscription acknowledges everything and every stored segment but the active one is removed
        (each partition of a partitioned topic; ``topics truncate``)."""
        self._wire.unary("TruncateTopic", broker_pb2.TopicRequest(topic=topic_name(topic)))

    # --- subscription properties ----------------------------------------------------------------------
    def get_subscription_properties(self, topic: str, subscription: str) -> dict[str, str]:
        """A subscription's properties (``topics get-subscription-properties``)."""
        return json.loads(self._wire.unary("GetSubscriptionProperties", broker_pb2.SubscriptionRequest(
            topic=topic_name(topic), subscription=subscription)).json)

    def update_subscription_properties(self, topic: str, subscription: str, properties: dict[str, str]) -> None:
        """Replace every property of a subscription (``{}``: none; ``topics update-subscription-properties``)."""
        self._wire.unary("SetSubscriptionProperties", broker_pb2.PropertiesRequest(
            topic=topic_name(topic), subscription=subscription, properties=_properties(properties)))
