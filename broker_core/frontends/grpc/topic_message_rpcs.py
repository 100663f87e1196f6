"""A topic's stored messages and backlog, and its subscriptions' properties, as calls of the ``PulsarLike``
service (``pulsarlike admin topics get-message-by-id|get-message-id|get-message-id-by-index|get-backlog-size|
analyze-backlog|trim-topic|create-missed-partitions|info-internal|truncate|get-subscription-properties|
update-subscription-properties|get-properties|update-properties|remove-properties``): protobuf in and out, the work done by the admin core that serves the same
REST routes (:class:`~broker_core.core.admin.topic_messages.TopicMessages`,
:class:`~broker_core.core.admin.subscriptions.SubscriptionAdmin`, :class:`~broker_core.core.admin.topics.
TopicAdmin`, :class:`~broker_core.core.admin.topic_properties.TopicPropertiesAdmin`), so both answer alike.

A component of :class:`~broker_core.frontends.grpc.servicer.BrokerServicer` (see
:mod:`~broker_core.frontends.grpc.topic_rpcs`).
"""
from __future__ import annotations

import json

from broker_core.core.admin import SubscriptionAdmin, TopicAdmin
from broker_core.core.admin.topic_messages import TopicMessages
from broker_core.core.admin.topic_properties import TopicPropertiesAdmin
from broker_core.core.registry import TopicRegistry
from broker_core.frontends.grpc.subscription_rpcs import position
from broker_core.frontends.grpc.topic_rpcs import last_message_id
from broker_core.protocol import broker_pb2 as pb
from broker_core.types import TopicName


class TopicMessageRpcs:
    """Stored messages by id, time and index; backlog size and analysis; trimming, missed partitions, internal
    info, truncation; subscription and topic properties."""

    def __init__(self, registry: TopicRegistry) -> None:
        self._messages = TopicMessages(registry)
        self._topics = TopicAdmin(registry)
        self._subscriptions = SubscriptionAdmin(registry)
        self._properties = TopicPropertiesAdmin(registry)

    # ================================================================== finding messages
    def GetMessageById(self, request: pb.MessageByIdRequest) -> pb.PeekedEntries:
        entry = self._messages.by_id(TopicName.parse(request.topic), request.ledger_id, request.entry_id)
        reply = pb.PeekedEntries(count=entry.num_messages)
        reply.entries.add(data=entry.data, ledger_id=entry.ledger_id, entry_id=entry.offset,
                          num_messages=entry.num_messages)
        return reply

    def GetMessageIdByTimestamp(self, request: pb.TimestampRequest) -> pb.LastMessageId:
        return last_message_id(self._messages.id_at_time(TopicName.parse(request.topic), request.publish_time_ms))

    def GetMessageIdByIndex(self, request: pb.MessageIndexRequest) -> pb.LastMessageId:
        return last_message_id(self._messages.id_at_index(TopicName.parse(request.topic), request.index))

    # ================================================================== the backlog
    def GetBacklogSize(self, request: pb.SubscriptionRequest) -> pb.JsonResponse:
        start = position(request.position)
        return pb.JsonResponse(json=json.dumps(self._messages.backlog_size(TopicName.parse(request.topic), start)))

    async def AnalyzeBacklog(self, request: pb.SubscriptionRequest) -> pb.JsonResponse:
        start = position(request.position) if request.HasField("position") else None
        found = await self._messages.analyze_backlog(TopicName.parse(request.topic), request.subscription, start)
        return pb.JsonResponse(json=json.dumps(found))

    # ================================================================== the topic's storage
    def TrimTopic(self, request: pb.TopicRequest) -> pb.Empty:
        self._messages.trim(TopicName.parse(request.topic))
        return pb.Empty()

    def CreateMissedPartitions(self, request: pb.TopicRequest) -> pb.Empty:
        self._topics.create_missed_partitions(TopicName.parse(request.topic))
        return pb.Empty()

    def TopicInternalInfo(self, request: pb.TopicRequest) -> pb.JsonResponse:
        return pb.JsonResponse(json=json.dumps(self._messages.internal_info(TopicName.parse(request.topic))))

    async def TruncateTopic(self, request: pb.TopicRequest) -> pb.Empty:
        await self._topics.truncate(TopicName.parse(request.topic))
        return pb.Empty()

    # ================================================================== subscription properties
    def GetSubscriptionProperties(self, request: pb.SubscriptionRequest) -> pb.JsonResponse:
        found = self._subscriptions.properties(TopicName.parse(request.topic), request.subscription)
        return pb.JsonResponse(json=json.dumps(found))

    def SetSubscriptionProperties(self, request: pb.PropertiesRequest) -> pb.Empty:
        self._subscriptions.replace_properties(TopicName.parse(request.topic), request.subscription,
                                               dict(request.properties))
        return pb.Empty()

    # ================================================================== topic properties
    def GetTopicProperties(self, request: pb.TopicRequest) -> pb.JsonResponse:
        return pb.JsonResponse(json=json.dumps(self._properties.properties(TopicName.parse(request.topic))))

    def UpdateTopicProperties(self, request: pb.PropertiesRequest) -> pb.Empty:
        self._properties.update(TopicName.parse(request.topic), dict(request.properties))
        return pb.Empty()

    def RemoveTopicProperty(self, request: pb.PropertyKeyRequest) -> pb.Empty:
        self._properties.remove(TopicName.parse(request.topic), request.key or None)
        return pb.Empty()
