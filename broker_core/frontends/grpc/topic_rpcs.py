"""Topic calls of the ``PulsarLike`` service: create, list, delete, metadata, stats, lookup, last message id,
offset of a time, and the operator calls (``pulsarlike admin topics update-partitioned-topic|terminate|
unload|examine-message|last-message-id|lookup|list-partitioned-topics|compact|compaction-status|verify``): protobuf in and
out, the work done by the admin core's :class:`~broker_core.core.admin.topics.TopicAdmin` (the REST routes'
too) and :mod:`broker_core.core.topic_lookup`.

A component of :class:`~broker_core.frontends.grpc.servicer.BrokerServicer`: each method serves the RPC of its
name, takes the request and returns the reply; errors are turned into gRPC statuses by
:func:`~broker_core.frontends.grpc.handlers.answer`.
"""
from __future__ import annotations

import json

from broker_core.core import topic_lookup
from broker_core.core.admin import LastMessage, TopicAdmin
from broker_core.core.admin.topic_stats import StatsOptions
from broker_core.core.registry import TopicRegistry
from broker_core.protocol import broker_pb2 as pb
from broker_core.types import TopicName


def last_message_id(last: LastMessage) -> pb.LastMessageId:
    """The wire's ``LastMessageId`` of the admin core's last message (``last_offset`` -1: there is none)."""
    if not last.exists:
        return pb.LastMessageId(last_offset=-1, start_offset=last.start_offset)
    return pb.LastMessageId(ledger_id=last.ledger_id, entry_id=last.entry_id, batch_index=last.batch_index,
                            last_offset=last.offset, start_offset=last.start_offset)


class TopicRpcs:
    """Topics: their life, what they hold, and where they are served."""

    def __init__(self, registry: TopicRegistry) -> None:
        self._registry = registry
        self._topics = TopicAdmin(registry)
        self.advertised = pb.LookupResult()
        """The broker's URLs, as ``LookupTopic`` answers them (set once the broker is bound)."""

    # ================================================================== create, list, delete
    def GetPartitionedTopicMetadata(self, request: pb.TopicRequest) -> pb.PartitionedTopicMetadata:
        return pb.PartitionedTopicMetadata(partitions=self._topics.partitions(TopicName.parse(request.topic)))

    def CreatePartitionedTopic(self, request: pb.CreatePartitionedTopicRequest) -> pb.Empty:
        self._topics.create_partitioned(TopicName.parse(request.topic), request.partitions)
        return pb.Empty()

    def UpdatePartitionedTopic(self, request: pb.CreatePartitionedTopicRequest) -> pb.Empty:
        self._topics.update_partitioned(TopicName.parse(request.topic), request.partitions)
        return pb.Empty()

    def ListPartitionedTopics(self, request: pb.ListTopicsRequest) -> pb.TopicList:
        return pb.TopicList(topics=self._topics.list_partitioned(request.namespace))

    def CreateTopic(self, request: pb.TopicRequest) -> pb.Empty:
        self._topics.create(TopicName.parse(request.topic))
        return pb.Empty()

    def ListTopics(self, request: pb.ListTopicsRequest) -> pb.TopicList:
        return pb.TopicList(topics=self._topics.list(request.namespace))

    async def DeleteTopic(self, request: pb.DeleteTopicRequest) -> pb.Empty:
        await self._topics.delete(TopicName.parse(request.topic), force=request.force)
        return pb.Empty()

    # ================================================================== what a topic holds
    def TopicStats(self, request: pb.TopicRequest) -> pb.JsonResponse:
        options = StatsOptions()
        if request.HasField("stats"):
            asked = request.stats
            options = StatsOptions(asked.get_precise_backlog, asked.subscription_backlog_size,
                                   asked.get_earliest_time_in_backlog)
        return pb.JsonResponse(json=json.dumps(self._topics.stats(TopicName.parse(request.topic), options)))

    def TopicInternalStats(self, request: pb.TopicRequest) -> pb.JsonResponse:
        return pb.JsonResponse(json=json.dumps(self._topics.internal_stats(TopicName.parse(request.topic))))

    def GetLastMessageId(self, request: pb.TopicRequest) -> pb.LastMessageId:
        """``read_compacted``: the last message of the compacted view (a compacted reader's), as Pulsar answers
        a consumer reading compacted."""
        return last_message_id(self._topics.last_message(TopicName.parse(request.topic),
                                                         read_compacted=request.read_compacted))

    def OffsetForTimestamp(self, request: pb.TimestampRequest) -> pb.SubscriptionPosition:
        return pb.SubscriptionPosition(next_offset=self._topics.offset_for_timestamp(
            TopicName.parse(request.topic), request.publish_time_ms))

    def ExamineMessage(self, request: pb.ExamineMessageRequest) -> pb.PeekedEntries:
        found = self._topics.examine(TopicName.parse(request.topic), request.latest, request.position)
        e = found.entry
        reply = pb.PeekedEntries(count=1)
        reply.entries.add(data=e.data, ledger_id=e.ledger_id, entry_id=e.offset, num_messages=e.num_messages,
                          ack_set=found.ack_set or ())
        return reply

    # ================================================================== where it is served, operator calls
    def LookupTopic(self, request: pb.TopicRequest) -> pb.LookupResult:
        topic_lookup.check_lookup(self._registry, TopicName.parse(request.topic))
        return self.advertised

    async def TerminateTopic(self, request: pb.TopicRequest) -> pb.LastMessageId:
        return last_message_id(await self._topics.terminate(TopicName.parse(request.topic)))

    async def UnloadTopic(self, request: pb.TopicRequest) -> pb.Empty:
        await self._topics.unload(TopicName.parse(request.topic))
        return pb.Empty()

    def Compact(self, request: pb.TopicRequest) -> pb.Empty:
        self._topics.compact(TopicName.parse(request.topic))
        return pb.Empty()

    def CompactionStatus(self, request: pb.TopicRequest) -> pb.CompactionStatusReply:
        state, error = self._topics.compaction_status(TopicName.parse(request.topic))
        return pb.CompactionStatusReply(status=state, last_error=error)

    async def VerifyTopic(self, request: pb.TopicRequest) -> pb.JsonResponse:
        return pb.JsonResponse(json=json.dumps(await self._topics.verify(TopicName.parse(request.topic))))

    async def VerifyAllTopics(self, request: pb.Empty) -> pb.JsonResponse:
        return pb.JsonResponse(json=json.dumps(await self._topics.verify_all()))
