"""The servicer's topic-level operator calls (``pulsarlike admin topics update-partitioned-topic|terminate|
unload|examine-message|last-message-id|lookup|expire-messages|list-partitioned-topics``, ``namespaces
clear-backlog|unsubscribe``): protobuf in and out, the work done by :mod:`broker_core.core.topic_admin`.

A mixin of :class:`~broker_core.frontends.grpc.servicer.BrokerServicer`, which provides ``_registry``, ``_unary``
(errors to gRPC statuses) and ``advertised`` (the URLs ``LookupTopic`` answers).
"""
from __future__ import annotations

from typing import Any

from broker_core.errors import InvalidMessage, TopicNotFound
from broker_core.protocol import broker_pb2 as pb
from broker_core.core import topic_admin
from broker_core.core.persistent.topic import PersistentTopic
from broker_core.types import TopicName


def position_offset(topic: PersistentTopic, position: pb.Position) -> int:
    """The message offset a wire ``Position`` names on ``topic`` (clamped to its confirmed end)."""
    which = position.WhichOneof("position")
    if which == "earliest":
        return topic.start_offset
    if which == "offset":
        return min(position.offset, topic.confirmed_end_offset)
    return topic.confirmed_end_offset


def last_message_id(topic: PersistentTopic) -> pb.LastMessageId:
    last = topic.last_message_id()
    if last is None:
        return pb.LastMessageId(last_offset=-1, start_offset=topic.start_offset)
    return pb.LastMessageId(ledger_id=last.ledger_id, entry_id=last.entry_id, batch_index=last.batch_index,
                            last_offset=topic.confirmed_end_offset - 1, start_offset=topic.start_offset)


class TopicRpcs:
    _registry: Any
    _unary: Any
    advertised: pb.LookupResult

    async def UpdatePartitionedTopic(self, request, context):
        def update():
            topic_admin.update_partitioned(self._registry, TopicName.parse(request.topic), request.partitions)
            return pb.Empty()
        return await self._unary(context, update)

    async def ListPartitionedTopics(self, request, context):
        return await self._unary(context, lambda: pb.TopicList(
            topics=topic_admin.list_partitioned(self._registry, request.namespace)))

    async def GetLastMessageId(self, request, context):
        return await self._unary(context, lambda: last_message_id(
            self._registry.get(TopicName.parse(request.topic), create=False)))

    async def TerminateTopic(self, request, context):
        async def terminate():
            return last_message_id(await topic_admin.terminate(self._registry, TopicName.parse(request.topic)))
        return await self._unary(context, terminate)

    async def UnloadTopic(self, request, context):
        async def unload():
            await topic_admin.unload(self._registry, TopicName.parse(request.topic))
            return pb.Empty()
        return await self._unary(context, unload)

    async def ExamineMessage(self, request, context):
        def examine():
            found = topic_admin.examine(self._registry, TopicName.parse(request.topic), request.latest,
                                        request.position)
            e = found.entry
            reply = pb.PeekedEntries(count=1)
            reply.entries.add(data=e.data, ledger_id=e.ledger_id, entry_id=e.offset, num_messages=e.num_messages,
                              ack_set=found.ack_set or ())
            return reply
        return await self._unary(context, examine)

    async def LookupTopic(self, request, context):
        def lookup():
            name = TopicName.parse(request.topic)
            self._registry.lookup_partitions(name)  # a missing namespace (or a disabled domain) is refused
            if not (self._registry.partitions_of(name) or self._registry.exists(name)
                    or self._registry.config.allowAutoTopicCreation):
                raise TopicNotFound(f"topic {name} does not exist (allowAutoTopicCreation=false)",
                                    topic=str(name))
            return self.advertised
        return await self._unary(context, lookup)

    async def ExpireMessages(self, request, context):
        def expire():
            name = TopicName.parse(request.topic)
            through = None
            if request.HasField("position"):
                topic = topic_admin.persistent_topic(self._registry, name, "expire-messages")
                if request.position.WhichOneof("position") != "offset":
                    raise InvalidMessage("expire-messages takes a message id, not earliest or latest")
                through = position_offset(topic, request.position)
            acked, next_offset = topic_admin.expire_messages(
                self._registry, name, request.subscription, request.all_subscriptions,
                None if through is not None else request.expire_time_seconds, through)
            return pb.SubscriptionPosition(next_offset=next_offset, acknowledged=acked)
        return await self._unary(context, expire)

    async def ClearNamespaceBacklog(self, request, context):
        return await self._unary(context, lambda: pb.SubscriptionPosition(
            next_offset=-1, acknowledged=topic_admin.clear_namespace_backlog(
                self._registry, request.namespace, request.subscription)))

    async def UnsubscribeNamespace(self, request, context):
        return await self._unary(context, lambda: pb.NameList(names=topic_admin.unsubscribe_namespace(
            self._registry, request.namespace, request.subscription)))
