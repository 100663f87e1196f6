"""Subscription calls of the ``PulsarLike`` service that need no consumer (``pulsarlike admin topics
subscriptions|create-subscription|unsubscribe|reset-cursor|skip|clear-backlog|peek-messages|expire-messages``,
``namespaces clear-backlog|unsubscribe``, and the Spark source's ``acknowledge_up_to``): protobuf in and out,
the work done by the topics, :mod:`broker_core.core.persistent.cursor_admin` and
:mod:`broker_core.core.topic_admin`.

A component of :class:`~broker_core.frontends.grpc.servicer.BrokerServicer`: each method serves the RPC of its
name, takes the request and returns the reply; errors are turned into gRPC statuses by
:func:`~broker_core.frontends.grpc.handlers.answer`.
"""
from __future__ import annotations

from broker_core.core import topic_admin
from broker_core.core.persistent import cursor_admin
from broker_core.core.registry import TopicRegistry
from broker_core.core.topic_protocol import StoredTopic, stored
from broker_core.errors import InvalidMessage, NotAllowedError
from broker_core.frontends.grpc.topic_rpcs import position_offset
from broker_core.protocol import broker_pb2 as pb
from broker_core.types import TopicName


class SubscriptionRpcs:
    """Subscriptions, handled without a consumer: created, moved, acknowledged, peeked, deleted."""

    def __init__(self, registry: TopicRegistry) -> None:
        self._registry = registry

    def _persistent(self, topic: str) -> StoredTopic:
        """An existing persistent topic: the calls on stored subscriptions (create, reset, acknowledge up to,
        skip, clear-backlog, peek) need one."""
        found = self._registry.get(TopicName.parse(topic), create=False)
        if not found.persistent:
            raise NotAllowedError(f"{found.topic}: non-persistent topics have no stored subscriptions",
                                  topic=found.topic)
        return stored(found, "subscriptions")

    # ================================================================== one topic partition's subscriptions
    def ListSubscriptions(self, request: pb.TopicRequest) -> pb.NameList:
        return pb.NameList(names=self._registry.subscriptions(TopicName.parse(request.topic)))

    def CreateSubscription(self, request: pb.SubscriptionRequest) -> pb.SubscriptionPosition:
        topic = self._persistent(request.topic)
        start = (position_offset(topic, request.position) if request.HasField("position")
                 else topic.confirmed_end_offset)
        topic.create_subscription(request.subscription, start)
        return pb.SubscriptionPosition(
            next_offset=topic.durable_subscription(request.subscription).cursor.mark_delete_offset + 1)

    def DeleteSubscription(self, request: pb.UnsubscribeRequest) -> pb.Empty:
        topic = self._registry.get(TopicName.parse(request.topic), create=False)
        topic.unsubscribe(request.subscription, force=request.force)
        return pb.Empty()

    def ResetCursor(self, request: pb.SubscriptionRequest) -> pb.SubscriptionPosition:
        topic = self._persistent(request.topic)
        sub = topic.durable_subscription(request.subscription)
        offset = (position_offset(topic, request.position) if request.HasField("position")
                  else topic.offset_for_timestamp(request.publish_time_ms))
        sub.seek(offset)
        topic.touch_subscription(request.subscription)
        return pb.SubscriptionPosition(next_offset=sub.cursor.mark_delete_offset + 1)

    def AcknowledgeUpTo(self, request: pb.SubscriptionRequest) -> pb.SubscriptionPosition:
        topic = self._persistent(request.topic)
        return pb.SubscriptionPosition(next_offset=topic.acknowledge_up_to(request.subscription, request.end_offset))

    def SkipMessages(self, request: pb.SubscriptionRequest) -> pb.SubscriptionPosition:
        acked, next_offset = cursor_admin.skip(self._persistent(request.topic), request.subscription, request.count)
        return pb.SubscriptionPosition(next_offset=next_offset, acknowledged=acked)

    def ClearBacklog(self, request: pb.SubscriptionRequest) -> pb.SubscriptionPosition:
        acked, next_offset = cursor_admin.clear_backlog(self._persistent(request.topic), request.subscription)
        return pb.SubscriptionPosition(next_offset=next_offset, acknowledged=acked)

    def PeekMessages(self, request: pb.SubscriptionRequest) -> pb.PeekedEntries:
        found = cursor_admin.peek(self._persistent(request.topic), request.subscription, request.count)
        reply = pb.PeekedEntries(count=sum(p.unacked for p in found))
        for p in found:
            e = p.entry
            reply.entries.add(data=e.data, ledger_id=e.ledger_id, entry_id=e.offset, num_messages=e.num_messages,
                              ack_set=p.ack_set or ())
        return reply

    def ExpireMessages(self, request: pb.ExpireMessagesRequest) -> pb.SubscriptionPosition:
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

    # ================================================================== every topic of a namespace
    def ClearNamespaceBacklog(self, request: pb.NamespaceSubscriptionRequest) -> pb.SubscriptionPosition:
        return pb.SubscriptionPosition(next_offset=-1, acknowledged=topic_admin.clear_namespace_backlog(
            self._registry, request.namespace, request.subscription))

    def UnsubscribeNamespace(self, request: pb.NamespaceSubscriptionRequest) -> pb.NameList:
        return pb.NameList(names=topic_admin.unsubscribe_namespace(self._registry, request.namespace,
                                                                   request.subscription))
