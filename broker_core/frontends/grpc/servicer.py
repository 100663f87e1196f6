"""The gRPC servicer: translates between protobuf and the core (topics, dispatch), nothing more.

Streams follow one pattern: a reader task consumes the client's requests and puts responses on a bounded
:class:`~broker_core.core.backpressure.Outbox`; the handler yields from it. A full outbox stops its
stream: it reads no more requests, and a consumer's permits are withheld. Broker errors become
in-band ``Error`` messages on streams and gRPC statuses (with the error code in trailing metadata) on unary
calls, through :mod:`broker_core.protocol.status`. Requests arrive decoded and within the client's limits
(:mod:`broker_core.frontends.grpc.admission`); a stream ended by a malformed request logs one WARNING line.
"""
from __future__ import annotations

import asyncio
import itertools
import json
from typing import Awaitable, Callable, Iterator, TypeVar

from broker_core.errors import InvalidMessage, PulsarLikeError
from broker_core.protocol import broker_pb2 as pb
from broker_core.protocol import broker_pb2_grpc
from broker_core.protocol.status import grpc_status, trailing_metadata, wire_message
from broker_core.frontends.grpc.admin_rpcs import AdminRpcs
from broker_core.frontends.grpc.consuming import ConsumeStreams
from broker_core.frontends.grpc.producing import ProduceStreams
from broker_core.frontends.grpc.streams import unexpected
from broker_core.frontends.grpc.topic_rpcs import TopicRpcs, position_offset
from broker_core.core.backpressure import Outbox, ReplyBudget
from broker_core.core.policies import NAMESPACE, TOPIC
from broker_core.core.producers import ProducerNames
from broker_core.core.nonpersistent.topic import not_stored
from broker_core.core.topic_protocol import Topic
from broker_core.core.registry import TopicRegistry
from broker_core.types import TopicName

T = TypeVar("T")


class BrokerServicer(AdminRpcs, TopicRpcs, broker_pb2_grpc.PulsarLikeServicer):
    def __init__(self, registry: TopicRegistry, producer_names: ProducerNames,
                 consumer_ids: Iterator[int] | None = None) -> None:
        """``consumer_ids``: broker-wide consumer ids, shared with the Pulsar binary front end."""
        self._registry = registry
        self.advertised = pb.LookupResult()
        """The broker's URLs, as ``LookupTopic`` answers them (set once the broker is bound)."""
        self._names = producer_names
        self._consumer_ids = consumer_ids or itertools.count(1)
        self._budget = ReplyBudget(registry.config.brokerReplyQueueMaxBytes)
        self._produce = ProduceStreams(registry, producer_names, self._outbox)
        self._consume = ConsumeStreams(registry, self._consumer_ids, self._outbox)

    def _outbox(self) -> Outbox:
        config = self._registry.config
        return Outbox(config.streamReplyQueueMaxMessages, config.streamReplyQueueMaxBytes, self._budget)

    def Produce(self, request_iterator, context):
        return self._produce.Produce(request_iterator, context)

    def Consume(self, request_iterator, context):
        return self._consume.Consume(request_iterator, context)

    # ================================================================== unary
    async def _unary(self, context, fn: Callable[[], Awaitable[T] | T]) -> T:
        try:
            result = fn()
            if asyncio.iscoroutine(result):
                result = await result
            return result  # type: ignore[return-value]
        except PulsarLikeError as exc:
            await context.abort(grpc_status(exc), wire_message(exc), trailing_metadata=trailing_metadata(exc))
        except Exception as exc:
            err = unexpected(exc)
            await context.abort(grpc_status(err), wire_message(err), trailing_metadata=trailing_metadata(err))
        raise AssertionError("unreachable")

    async def GetPartitionedTopicMetadata(self, request, context):
        return await self._unary(context, lambda: pb.PartitionedTopicMetadata(
            partitions=self._registry.lookup_partitions(TopicName.parse(request.topic))))

    async def CreatePartitionedTopic(self, request, context):
        def create():
            self._registry.create_partitioned(TopicName.parse(request.topic), request.partitions)
            return pb.Empty()
        return await self._unary(context, create)

    async def CreateTopic(self, request, context):
        def create():
            self._registry.create(TopicName.parse(request.topic))
            return pb.Empty()
        return await self._unary(context, create)

    async def ListTopics(self, request, context):
        return await self._unary(context, lambda: pb.TopicList(topics=self._registry.list(request.namespace)))

    async def DeleteTopic(self, request, context):
        async def delete():
            await self._registry.delete(TopicName.parse(request.topic), force=request.force)
            return pb.Empty()
        return await self._unary(context, delete)

    async def TopicStats(self, request, context):
        return await self._unary(context, lambda: pb.JsonResponse(
            json=json.dumps(self._registry.stats(TopicName.parse(request.topic)))))

    async def OffsetForTimestamp(self, request, context):
        def offset():
            topic = self._registry.get(TopicName.parse(request.topic), create=False)
            return pb.SubscriptionPosition(next_offset=topic.offset_for_timestamp(request.publish_time_ms))
        return await self._unary(context, offset)

    async def DeleteSubscription(self, request, context):
        def delete():
            topic = self._registry.get(TopicName.parse(request.topic), create=False)
            topic.unsubscribe(request.subscription, force=request.force)
            return pb.Empty()
        return await self._unary(context, delete)

    def _persistent(self, topic: str) -> Topic:
        """An existing persistent topic: the calls on stored subscriptions (create, reset, acknowledge up to,
        skip, clear-backlog, peek) need one."""
        found = self._registry.get(TopicName.parse(topic), create=False)
        if not found.persistent:
            raise not_stored(found.topic, "non-persistent topics have no stored subscriptions")
        return found

    async def CreateSubscription(self, request, context):
        def create():
            topic = self._persistent(request.topic)
            start = (position_offset(topic, request.position) if request.HasField("position")
                     else topic.confirmed_end_offset)
            topic.create_subscription(request.subscription, start)
            return pb.SubscriptionPosition(next_offset=topic.durable_subscription(request.subscription)
                                           .cursor.mark_delete_offset + 1)
        return await self._unary(context, create)

    async def ResetCursor(self, request, context):
        def reset():
            topic = self._persistent(request.topic)
            sub = topic.durable_subscription(request.subscription)
            offset = (position_offset(topic, request.position) if request.HasField("position")
                      else topic.offset_for_timestamp(request.publish_time_ms))
            sub.seek(offset)
            topic.touch_subscription(request.subscription)
            return pb.SubscriptionPosition(next_offset=sub.cursor.mark_delete_offset + 1)
        return await self._unary(context, reset)

    async def AcknowledgeUpTo(self, request, context):
        def ack():
            topic = self._persistent(request.topic)
            return pb.SubscriptionPosition(
                next_offset=topic.acknowledge_up_to(request.subscription, request.end_offset))
        return await self._unary(context, ack)

    async def SetPolicy(self, request, context):
        def set_policy():
            scope, name = _policy_scope(request.scope)
            try:
                value = json.loads(request.value_json) if request.value_json else None
            except ValueError:
                raise InvalidMessage(f"policy {request.key}: value {request.value_json!r} is not JSON") from None
            self._registry.set_policy(scope, name, request.key, value)
            return pb.Empty()
        return await self._unary(context, set_policy)

    async def GetPolicies(self, request, context):
        def get():
            scope, name = _policy_scope(request)
            return pb.JsonResponse(json=json.dumps(self._registry.get_policies(scope, name), sort_keys=True))
        return await self._unary(context, get)


def _policy_scope(scope: pb.PolicyScope) -> tuple[str, str]:
    if bool(scope.namespace) == bool(scope.topic):
        raise InvalidMessage("a policy applies to a namespace or to a topic: set exactly one of them")
    return (NAMESPACE, scope.namespace) if scope.namespace else (TOPIC, scope.topic)


