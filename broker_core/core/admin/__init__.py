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
from __future__ import annotations

from typing import TYPE_CHECKING

from broker_core.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from broker_core.core.admin.last_message import LastMessage
    from broker_core.core.admin.positions import Position
    from broker_core.core.admin.subscriptions import Outcome, SubscriptionAdmin
    from broker_core.core.admin.topics import TopicAdmin, long_running_status

_EXPORTS = {"LastMessage": "last_message", "Position": "positions", "Outcome": "subscriptions",
            "SubscriptionAdmin": "subscriptions", "TopicAdmin": "topics", "long_running_status": "topics"}
"""Name -> the submodule defining it. Re-exported on first use (PEP 562): the binary front end's first
SUBSCRIBE imports :mod:`.values` and :mod:`.last_message` only, not the whole admin core (~35 ms). The
functions of :mod:`.last_message` are imported from it (the package's ``last_message`` is that module)."""

__all__ = sorted(_EXPORTS)

__getattr__ = lazy_exports(__name__, _EXPORTS)
