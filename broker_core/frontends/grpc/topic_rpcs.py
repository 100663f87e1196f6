"""Topic calls of the ``PulsarLike`` service: create, list, delete, metadata, stats, lookup, last message id,
offset of a time, and the operator calls (``pulsarlike admin topics update-partitioned-topic|terminate|
unload|examine-message|last-message-id|lookup|list-partitioned-topics|compact|compaction-status|verify``): protobuf in and
out, the work done by :class:`~broker_core.core.registry.TopicRegistry`, :mod:`broker_core.core.topic_admin` and
:mod:`broker_core.core.topic_verify`.

A component of :class:`~broker_core.frontends.grpc.servicer.BrokerServicer`: each method serves the RPC of its
name, takes the request and returns the reply; errors are turned into gRPC statuses by
:func:`~broker_core.frontends.grpc.handlers.answer`. :func:`position_offset` and :func:`last_message_id`
(wire positions and ids) are shared with the Consume stream and the subscription calls.
"""
from __future__ import annotations

import json

from broker_core.core import compaction_admin, topic_admin, topic_lookup, topic_verify
from broker_core.core.compacted_view import CompactedView
from broker_core.core.registry import TopicRegistry
from broker_core.core.topic_protocol import Topic
from broker_core.protocol import broker_pb2 as pb
from broker_core.types import TopicName


def position_offset(topic: Topic, position: pb.Position) -> int:
    """The message offset a wire ``Position`` names on ``topic`` (clamped to its confirmed end)."""
    which = position.WhichOneof("position")
    if which == "earliest":
        return topic.start_offset
    if which == "offset":
        return min(position.offset, topic.confirmed_end_offset)
    return topic.confirmed_end_offset


def last_message_id(topic: Topic | CompactedView) -> pb.LastMessageId:
    """The last message id of a topic, or of its compacted view (whose last message may be older than the
    raw end: the last offset is the message's own)."""
    last = topic.last_message_id()
    if last is None:
        return pb.LastMessageId(last_offset=-1, start_offset=topic.start_offset)
    return pb.LastMessageId(ledger_id=last.ledger_id, entry_id=last.entry_id, batch_index=last.batch_index,
                            last_offset=last.entry_id + max(last.batch_index, 0), start_offset=topic.start_offset)


class TopicRpcs:
    """Topics: their life, what they hold, and where they are served."""

    def __init__(self, registry: TopicRegistry) -> None:
        self._registry = registry
        self.advertised = pb.LookupResult()
        """The broker's URLs, as ``LookupTopic`` answers them (set once the broker is bound)."""

    # ================================================================== create, list, delete
    def GetPartitionedTopicMetadata(self, request: pb.TopicRequest) -> pb.PartitionedTopicMetadata:
        return pb.PartitionedTopicMetadata(partitions=self._registry.lookup_partitions(TopicName.parse(request.topic)))

    def CreatePartitionedTopic(self, request: pb.CreatePartitionedTopicRequest) -> pb.Empty:
        self._registry.create_partitioned(TopicName.parse(request.topic), request.partitions)
        return pb.Empty()

    def UpdatePartitionedTopic(self, request: pb.CreatePartitionedTopicRequest) -> pb.Empty:
        topic_admin.update_partitioned(self._registry, TopicName.parse(request.topic), request.partitions)
        return pb.Empty()

    def ListPartitionedTopics(self, request: pb.ListTopicsRequest) -> pb.TopicList:
        return pb.TopicList(topics=topic_admin.list_partitioned(self._registry, request.namespace))

    def CreateTopic(self, request: pb.TopicRequest) -> pb.Empty:
        self._registry.create(TopicName.parse(request.topic))
        return pb.Empty()

    def ListTopics(self, request: pb.ListTopicsRequest) -> pb.TopicList:
        return pb.TopicList(topics=self._registry.list(request.namespace))

    async def DeleteTopic(self, request: pb.DeleteTopicRequest) -> pb.Empty:
        await self._registry.delete(TopicName.parse(request.topic), force=request.force)
        return pb.Empty()

    # ================================================================== what a topic holds
    def TopicStats(self, request: pb.TopicRequest) -> pb.JsonResponse:
        return pb.JsonResponse(json=json.dumps(self._registry.stats(TopicName.parse(request.topic))))

    def TopicInternalStats(self, request: pb.TopicRequest) -> pb.JsonResponse:
        return pb.JsonResponse(json=json.dumps(self._registry.internal_stats(TopicName.parse(request.topic))))

    def GetLastMessageId(self, request: pb.TopicRequest) -> pb.LastMessageId:
        """``read_compacted``: the last message of the compacted view (a compacted reader's), as Pulsar answers
        a consumer reading compacted."""
        topic = self._registry.get(TopicName.parse(request.topic), create=False)
        return last_message_id(CompactedView(topic) if request.read_compacted and topic.persistent else topic)

    def OffsetForTimestamp(self, request: pb.TimestampRequest) -> pb.SubscriptionPosition:
        topic = self._registry.get(TopicName.parse(request.topic), create=False)
        return pb.SubscriptionPosition(next_offset=topic.offset_for_timestamp(request.publish_time_ms))

    def ExamineMessage(self, request: pb.ExamineMessageRequest) -> pb.PeekedEntries:
        found = topic_admin.examine(self._registry, TopicName.parse(request.topic), request.latest,
                                    request.position)
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
        return last_message_id(await topic_admin.terminate(self._registry, TopicName.parse(request.topic)))

    async def UnloadTopic(self, request: pb.TopicRequest) -> pb.Empty:
        await topic_admin.unload(self._registry, TopicName.parse(request.topic))
        return pb.Empty()

    def Compact(self, request: pb.TopicRequest) -> pb.Empty:
        compaction_admin.trigger(self._registry, TopicName.parse(request.topic))
        return pb.Empty()

    def CompactionStatus(self, request: pb.TopicRequest) -> pb.CompactionStatusReply:
        state, error = compaction_admin.status(self._registry, TopicName.parse(request.topic))
        return pb.CompactionStatusReply(status=state, last_error=error)

    async def VerifyTopic(self, request: pb.TopicRequest) -> pb.JsonResponse:
        return pb.JsonResponse(json=json.dumps(await topic_verify.verify_topic(self._registry,
                                                                                TopicName.parse(request.topic))))

    async def VerifyAllTopics(self, request: pb.Empty) -> pb.JsonResponse:
        return pb.JsonResponse(json=json.dumps(await topic_verify.verify_all(self._registry)))
