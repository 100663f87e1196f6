"""Every admin call once, over the registry and its stores, with Pulsar's JSON views: what the REST routes
(:mod:`broker_core.frontends.http.admin`), the gRPC admin calls (:mod:`broker_core.frontends.grpc`) and the
binary protocol's admin-like commands parse their requests into and render the answers of.

- :class:`TopicAdmin` (:mod:`.topics`): topics, partitions, termination, unloading, compaction, stats
  (:mod:`.topic_stats`, :mod:`.internal_stats`) and the last message (:mod:`.last_message`);
- :class:`SubscriptionAdmin` (:mod:`.subscriptions`): subscriptions without a consumer, fanned out over the
  partitions of a partitioned topic as Pulsar does;
- :mod:`.positions`: where a call places a cursor (Pulsar's MessageId bodies, gRPC positions);
- :mod:`.targets`: which topics a call acts on.

Errors are :mod:`broker_core.errors`' typed ones; each front end maps them once (REST
``answers._STATUS``, gRPC ``protocol.status``, binary ``protocol.server_errors``).
"""
from broker_core.core.admin.last_message import LastMessage, last_message, mark_delete_message
from broker_core.core.admin.positions import Position
from broker_core.core.admin.subscriptions import Outcome, SubscriptionAdmin
from broker_core.core.admin.topics import TopicAdmin, long_running_status

__all__ = ["LastMessage", "Outcome", "Position", "SubscriptionAdmin", "TopicAdmin", "last_message",
           "long_running_status", "mark_delete_message"]
