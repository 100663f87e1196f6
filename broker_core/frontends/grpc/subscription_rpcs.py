"""Subscription calls of the ``PulsarLike`` service that need no consumer (``pulsarlike admin topics
subscriptions|create-subscription|unsubscribe|reset-cursor|skip|clear-backlog|peek-messages|expire-messages``,
``namespaces clear-backlog|unsubscribe``, and the Spark source's ``acknowledge_up_to``): protobuf in and out,
the work done by the admin core's :class:`~broker_core.core.admin.subscriptions.SubscriptionAdmin` -- the
REST routes' too, so a partitioned topic's subscriptions answer alike over both (fanned out over its
partitions, with the same errors).

A component of :class:`~broker_core.frontends.grpc.servicer.BrokerServicer`: each method serves the RPC of its
name, takes the request and returns the reply; errors are turned into gRPC statuses by
:func:`~broker_core.frontends.grpc.handlers.answer`.
"""
from __future__ import annotations

from broker_core.core.admin import Outcome, Position, SubscriptionAdmin
from broker_core.core.registry import TopicRegistry
from broker_core.errors import NotAllowedError
from broker_core.protocol import broker_pb2 as pb
from broker_core.types import TopicName


def position(found: pb.Position) -> Position:
    """The admin core's position of a wire ``Position`` (an offset, earliest or latest; unset: latest)."""
    which = found.WhichOneof("position")
    if which == "earliest":
        return Position.earliest()
    if which == "offset":
        return Position.at(found.offset)
    return Position.latest()


def _reply(outcome: Outcome) -> pb.SubscriptionPosition:
    return pb.SubscriptionPosition(next_offset=outcome.next_offset, acknowledged=outcome.acknowledged)


class SubscriptionRpcs:
    """Subscriptions, handled without a consumer: created, moved, acknowledged, peeked, deleted."""

    def __init__(self, registry: TopicRegistry) -> None:
        self._subscriptions = SubscriptionAdmin(registry)

    # ================================================================== a topic's subscriptions
    def ListSubscriptions(self, request: pb.TopicRequest) -> pb.NameList:
        return pb.NameList(names=self._subscriptions.names(TopicName.parse(request.topic)))

    def CreateSubscription(self, request: pb.SubscriptionRequest) -> pb.SubscriptionPosition:
        start = position(request.position) if request.HasField("position") else Position.latest()
        return _reply(self._subscriptions.create(TopicName.parse(request.topic), request.subscription, start))

    def DeleteSubscription(self, request: pb.UnsubscribeRequest) -> pb.Empty:
        self._subscriptions.delete(TopicName.parse(request.topic), request.subscription, force=request.force)
        return pb.Empty()

    def ResetCursor(self, request: pb.SubscriptionRequest) -> pb.SubscriptionPosition:
        name = TopicName.parse(request.topic)
        if request.HasField("position"):
            return _reply(self._subscriptions.reset(name, request.subscription, position(request.position)))
        return _reply(self._subscriptions.reset_to_time(name, request.subscription, request.publish_time_ms))

    def AcknowledgeUpTo(self, request: pb.SubscriptionRequest) -> pb.SubscriptionPosition:
        return _reply(self._subscriptions.acknowledge_up_to(TopicName.parse(request.topic), request.subscription,
                                                            request.end_offset))

    def SkipMessages(self, request: pb.SubscriptionRequest) -> pb.SubscriptionPosition:
        return _reply(self._subscriptions.skip(TopicName.parse(request.topic), request.subscription, request.count))

    def ClearBacklog(self, request: pb.SubscriptionRequest) -> pb.SubscriptionPosition:
        return _reply(self._subscriptions.clear_backlog(TopicName.parse(request.topic), request.subscription))

    def PeekMessages(self, request: pb.SubscriptionRequest) -> pb.PeekedEntries:
        found = self._subscriptions.peek(TopicName.parse(request.topic), request.subscription, request.count)
        reply = pb.PeekedEntries(count=sum(p.unacked for p in found))
        for p in found:
            e = p.entry
            reply.entries.add(data=e.data, ledger_id=e.ledger_id, entry_id=e.offset, num_messages=e.num_messages,
                              ack_set=p.ack_set or ())
        return reply

    def ExpireMessages(self, request: pb.ExpireMessagesRequest) -> pb.SubscriptionPosition:
        name, sub = TopicName.parse(request.topic), request.subscription
        if request.all_subscriptions == bool(sub):
            raise NotAllowedError("expire-messages takes a subscription or all subscriptions, not both")
        if request.HasField("position"):
            return _reply(self._subscriptions.expire_through(name, sub, position(request.position),
                                                             all_subscriptions=request.all_subscriptions))
        if request.all_subscriptions:
            return _reply(self._subscriptions.expire_all_by_time(name, request.expire_time_seconds))
        return _reply(self._subscriptions.expire_by_time(name, sub, request.expire_time_seconds))

    # ================================================================== every topic of a namespace
    def ClearNamespaceBacklog(self, request: pb.NamespaceSubscriptionRequest) -> pb.SubscriptionPosition:
        return _reply(self._subscriptions.clear_namespace_backlog(request.namespace, request.subscription))

    def UnsubscribeNamespace(self, request: pb.NamespaceSubscriptionRequest) -> pb.NameList:
        return pb.NameList(names=self._subscriptions.unsubscribe_namespace(request.namespace, request.subscription))
