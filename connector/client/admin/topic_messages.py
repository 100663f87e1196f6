"""A topic's stored messages found by id, time or index, its backlog measured, its storage trimmed, completed or
truncated, and its subscriptions' properties: a part of :class:`~connector.client.admin.Admin` (``pulsar-admin
topics get-message-by-id|get-message-id|get-message-id-by-index|get-backlog-size|analyze-backlog|trim-topic|
create-missed-partitions|info-internal|truncate|get-subscription-properties|update-subscription-properties``),
over gRPC or, with ``admin_url``, Pulsar's REST API (:mod:`connector.client.admin.rest_topics`)."""
from __future__ import annotations

from typing import Any, Callable

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


def merged_backlog(previous: dict[str, Any], current: dict[str, Any]) -> dict[str, Any]:
    """Two rounds of a backlog scan as one, as Pulsar's admin merges them: counts summed, ``aborted`` the last
    round's, ``firstMessageId`` the first round's, ``lastMessageId`` the last round's that has one."""
    found = dict(current)
    for key, value in previous.items():
        if isinstance(value, int) and not isinstance(value, bool):
            found[key] = value + int(current.get(key) or 0)
    found["firstMessageId"] = previous.get("firstMessageId")
    found["lastMessageId"] = current.get("lastMessageId") or previous.get("lastMessageId")
    return found


def _scan_done(found: dict[str, Any], max_entries: int | None,
               terminate: Callable[[dict[str, Any]], bool] | None) -> bool:
    reached = max_entries is not None and found.get("entries", 0) >= max_entries
    return reached or (terminate is not None and bool(terminate(found)))


def _entry_of(message_id: Any) -> tuple[int, int | None]:
    """``(ledger, entry)`` of a result's ``"L:E"`` id (entry None: no id, nothing read)."""
    if not isinstance(message_id, str) or ":" not in message_id:
        return -1, None
    ledger, entry = message_id.split(":")[:2]
    return int(ledger), int(entry)


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
        stored = self._wire.unary("GetMessageById", broker_pb2.MessageByIdRequest(
            topic=name, ledger_id=whole("ledger_id", ledger_id, 0), entry_id=whole("entry_id", entry_id, 0)))
        return messages_of(stored, name, TopicName.parse(name).partition_index, 1 << 31)

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
        return int(self._wire.unary("GetBacklogSize", request))

    def analyze_backlog(self, topic: str, subscription: str, start: MessageId | None = None,
                        backlog_scan_max_entries: int | None = None,
                        terminate: Callable[[dict[str, Any]], bool] | None = None) -> dict[str, Any]:
        """Pulsar's ``AnalyzeSubscriptionBacklogResult`` of a durable subscription of a topic partition: the
        entries and messages it has not acknowledged (from ``start``, an entry, when given), ``firstMessageId``,
        ``lastMessageId``, ``aborted`` when the broker stopped reading (past its
        ``subscriptionBacklogScanMaxEntries``, 10,000 by default; ``topics analyze-backlog``).

        With ``backlog_scan_max_entries`` or ``terminate`` (Pulsar's ``analyzeSubscriptionBacklog`` with a
        count or a predicate) an aborted answer is not the end: the scan is asked again from the entry after
        its ``lastMessageId``, the answers merged (counts summed, the first ``firstMessageId``, the last
        ``lastMessageId``), until one is not aborted, the merged ``entries`` reach ``backlog_scan_max_entries``
        or ``terminate(merged)`` is true (it sees each merged answer: pulsar-admin prints its progress so)."""
        if backlog_scan_max_entries is not None:
            whole("backlog_scan_max_entries", backlog_scan_max_entries, 1)
        name = topic_name(topic)
        current = found = self._analyze_once(name, subscription, start)
        if backlog_scan_max_entries is None and terminate is None:
            return found
        partition = TopicName.parse(name).partition_index
        while found["aborted"] and not _scan_done(found, backlog_scan_max_entries, terminate):
            ledger, entry = _entry_of(found.get("lastMessageId"))
            if current.get("entries", 0) <= 0 or entry is None:
                break  # the last round found nothing: done, as Pulsar's admin treats it
            current = self._analyze_once(name, subscription, MessageId(partition, ledger, entry + 1))
            found = merged_backlog(found, current)
        return found

    def _analyze_once(self, name: str, subscription: str, start: MessageId | None) -> dict[str, Any]:
        request = broker_pb2.SubscriptionRequest(topic=name, subscription=subscription)
        if start is not None:
            request.position.CopyFrom(position(start))
        return self._wire.unary("AnalyzeBacklog", request)

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
        return self._wire.unary("TopicInternalInfo", broker_pb2.TopicRequest(topic=topic_name(topic)))

    def truncate_topic(self, topic: str) -> None:
        """Every subscription acknowledges everything and every stored segment but the active one is removed
        (each partition of a partitioned topic; ``topics truncate``)."""
        self._wire.unary("TruncateTopic", broker_pb2.TopicRequest(topic=topic_name(topic)))

    # --- subscription properties ----------------------------------------------------------------------
    def get_subscription_properties(self, topic: str, subscription: str) -> dict[str, str]:
        """A subscription's properties (``topics get-subscription-properties``)."""
        return self._wire.unary("GetSubscriptionProperties", broker_pb2.SubscriptionRequest(
            topic=topic_name(topic), subscription=subscription))

    def update_subscription_properties(self, topic: str, subscription: str, properties: dict[str, str]) -> None:
        """Replace every property of a subscription (``{}``: none; ``topics update-subscription-properties``)."""
        self._wire.unary("SetSubscriptionProperties", broker_pb2.PropertiesRequest(
            topic=topic_name(topic), subscription=subscription, properties=_properties(properties)))
