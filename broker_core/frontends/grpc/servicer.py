"""The gRPC servicer: the ``PulsarLike`` service assembled from the components that serve its calls, each
translating between protobuf and the core (topics, dispatch), nothing more.

- ``Produce`` and ``Consume`` (:mod:`~broker_core.frontends.grpc.producing`,
  :mod:`~broker_core.frontends.grpc.consuming`): a session reads the client's requests and puts responses on
  a bounded :class:`~broker_core.core.backpressure.Outbox` the handler yields from; a full outbox stops its
  stream. Errors travel in-band as ``Error`` messages;
- the unary calls, by group: :class:`~broker_core.frontends.grpc.topic_rpcs.TopicRpcs`,
  :class:`~broker_core.frontends.grpc.subscription_rpcs.SubscriptionRpcs`,
  :class:`~broker_core.frontends.grpc.admin_rpcs.AdminRpcs`,
  :class:`~broker_core.frontends.grpc.schema_rpcs.SchemaRpcs`,
  :class:`~broker_core.frontends.grpc.topic_message_rpcs.TopicMessageRpcs`. Each takes a request and returns a reply;
  :mod:`~broker_core.frontends.grpc.handlers` turns their errors into gRPC statuses (the error code in
  trailing metadata) and registers every RPC with the one component serving it.

Requests arrive decoded and within the client's limits (:mod:`broker_core.frontends.grpc.admission`).
"""
from __future__ import annotations

import itertools
from typing import Iterator

from broker_core.core.backpressure import Outbox, ReplyBudget
from broker_core.core.producers import ProducerNames
from broker_core.core.registry import TopicRegistry
from broker_core.frontends.grpc.admin_rpcs import AdminRpcs
from broker_core.frontends.grpc.namespace_rpcs import NamespaceRpcs
from broker_core.frontends.grpc.consuming import ConsumeStreams
from broker_core.frontends.grpc.producing import ProduceStreams
from broker_core.frontends.grpc.schema_rpcs import SchemaRpcs
from broker_core.frontends.grpc.subscription_rpcs import SubscriptionRpcs
from broker_core.frontends.grpc.topic_message_rpcs import TopicMessageRpcs
from broker_core.frontends.grpc.topic_rpcs import TopicRpcs
from broker_core.protocol import broker_pb2 as pb


class BrokerServicer:
    """Serves ``Produce`` and ``Consume`` itself (delegating to their streams) and the unary calls through
    :attr:`components`; :func:`~broker_core.frontends.grpc.handlers.register` puts it on a server."""

    def __init__(self, registry: TopicRegistry, producer_names: ProducerNames,
                 consumer_ids: Iterator[int] | None = None) -> None:
        """``consumer_ids``: broker-wide consumer ids, shared with the Pulsar binary front end."""
        self._registry = registry
        self._names = producer_names
        self._consumer_ids = consumer_ids or itertools.count(1)
        self._budget = ReplyBudget(registry.config.brokerReplyQueueMaxBytes)
        self._produce = ProduceStreams(registry, producer_names, self._outbox)
        self._consume = ConsumeStreams(registry, self._consumer_ids, self._outbox)
        self._topics = TopicRpcs(registry)
        self.components: tuple[object, ...] = (self, self._topics, SubscriptionRpcs(registry), AdminRpcs(registry),
                                                   SchemaRpcs(registry), TopicMessageRpcs(registry),
                                                   NamespaceRpcs(registry))
        """What serves the service's RPCs, each RPC by exactly one of them."""

    @property
    def advertised(self) -> pb.LookupResult:
        """The broker's URLs, as ``LookupTopic`` answers them (set once the broker is bound)."""
        return self._topics.advertised

    @advertised.setter
    def advertised(self, result: pb.LookupResult) -> None:
        self._topics.advertised = result

    def _outbox(self) -> Outbox:
        config = self._registry.config
        return Outbox(config.streamReplyQueueMaxMessages, config.streamReplyQueueMaxBytes, self._budget)

    def Produce(self, request_iterator, context):
        return self._produce.Produce(request_iterator, context)

    def Consume(self, request_iterator, context):
        return self._consume.Consume(request_iterator, context)
