"""A topic's stored messages found by id, time or index, its backlog measured, and its storage trimmed or
completed, over REST: each handler parses the request, calls the admin core's
:class:`~broker_core.core.admin.topic_messages.TopicMessages` (or :class:`~broker_core.core.admin.topics.
TopicAdmin`) and renders its answer, as the gRPC calls do. Prefix ``/admin/v2/{domain}/{tenant}/{ns}/{topic}``:

================================================  =====================================================  =========
``GET /ledger/{ledgerId}/entry/{entryId}``        the entry the message id names, as ``examinemessage``    consume
                                                  answers one (payload, ``X-Pulsar-*`` headers); 404
``GET /messageid/{timestamp}``                    ``{"ledgerId", "entryId", "partitionIndex"}`` of the     consume
                                                  first entry published at or after it; 404
``GET /getMessageIdByIndex?index=N``              the id of the entry holding message index N (-1:-1:     consume
                                                  removed by retention; absent: 0); 404
``PUT /backlogSize``                              body: a MessageId; the bytes stored from it on          consume
                                                  (``-1:-1``: all of them)
``GET /backlog``                                  PersistentOfflineTopicStats                             lookup
``POST /subscription/{sub}/analyzeBacklog``       AnalyzeSubscriptionBacklogResult (optional body: a       consume
                                                  MessageId to start from)
``POST /trim``                                    retention applied now; 204                              admin
``POST /createMissedPartitions``                  the partitions not stored yet made; 204                 admin
``GET /internal-info``                            ManagedLedgerInfo (a partitioned topic's:               lookup
                                                  ``{"partitions": {...}}``)
================================================  =====================================================  =========

A partitioned topic is refused where Pulsar refuses it (412: name a partition), a non-persistent one where
nothing is stored (412). ``analyzeBacklog`` is served for persistent topics only: a non-persistent subscription
has no backlog, and Pulsar answers none of its codes but 405 there.
"""
from __future__ import annotations

from aiohttp import web

from broker_core.core.admin import TopicAdmin
from broker_core.core.admin.topic_messages import TopicMessages
from broker_core.core.registry import TopicRegistry
from broker_core.frontends.http.admin.access import TOPIC, needs, topic_of
from broker_core.frontends.http.admin.answers import BadRequest, body, ok, path_int
from broker_core.frontends.http.admin.message_routes import entry_answer
from broker_core.frontends.http.admin.subscription_routes import position
from broker_core.security import ADMIN, CONSUME, LOOKUP

TOPIC_PATH = "/admin/v2/{domain:persistent|non-persistent}/{tenant}/{namespace}/{topic}"
PERSISTENT_TOPIC_PATH = "/admin/v2/{domain:persistent}/{tenant}/{namespace}/{topic}"


def _query_int(request: web.Request, name: str) -> int:
    """An integer query parameter; absent, 0 (what JAX-RS gives Pulsar's ``long`` parameter then)."""
    raw = request.query.get(name, "0")
    try:
        return int(raw)
    except ValueError:
        raise BadRequest(f"{name}: expected an integer, got {raw[:64]!r}") from None


class StoredRoutes:
    def __init__(self, registry: TopicRegistry, broker_name: str = "") -> None:
        self._messages = TopicMessages(registry)
        self._topics = TopicAdmin(registry)
        self._broker = broker_name or registry.config.advertisedAddress or registry.config.bindAddress

    def routes(self) -> list[web.RouteDef]:
        t = TOPIC_PATH
        return [
            web.get(t + "/ledger/{ledger}/entry/{entry}", self.message_by_id),
            web.get(t + "/messageid/{timestamp}", self.message_id_at_time),
            web.get(t + "/getMessageIdByIndex", self.message_id_at_index),
            web.put(t + "/backlogSize", self.backlog_size),
            web.get(t + "/backlog", self.backlog),
            web.post(PERSISTENT_TOPIC_PATH + "/subscription/{subscription}/analyzeBacklog", self.analyze_backlog),
            web.post(t + "/trim", self.trim),
            web.post(t + "/createMissedPartitions", self.create_missed_partitions),
            web.get(t + "/internal-info", self.internal_info),
        ]

    @needs(CONSUME, TOPIC)
    async def message_by_id(self, request: web.Request) -> web.Response:
        entry = self._messages.by_id(topic_of(request), path_int(request, "ledger"), path_int(request, "entry"))
        return entry_answer(entry)

    @needs(CONSUME, TOPIC)
    async def message_id_at_time(self, request: web.Request) -> web.Response:
        return ok(self._messages.id_at_time(topic_of(request), path_int(request, "timestamp")).as_json())

    @needs(CONSUME, TOPIC)
    async def message_id_at_index(self, request: web.Request) -> web.Response:
        return ok(self._messages.id_at_index(topic_of(request), _query_int(request, "index")).as_json())

    @needs(CONSUME, TOPIC)
    async def backlog_size(self, request: web.Request) -> web.Response:
        start = position(await body(request, "messageId"))
        return ok(self._messages.backlog_size(topic_of(request), start))

    @needs(LOOKUP, TOPIC)
    async def backlog(self, request: web.Request) -> web.Response:
        return ok(self._messages.offline_backlog(topic_of(request), self._broker))

    @needs(CONSUME, TOPIC)
    async def analyze_backlog(self, request: web.Request) -> web.Response:
        found = await body(request, "messageId", None)
        start = None if found is None else position(found)
        return ok(await self._messages.analyze_backlog(topic_of(request), request.match_info["subscription"],
                                                       start))

    @needs(ADMIN, TOPIC)
    async def trim(self, request: web.Request) -> web.Response:
        self._messages.trim(topic_of(request))
        return ok()

    @needs(ADMIN, TOPIC)
    async def create_missed_partitions(self, request: web.Request) -> web.Response:
        self._topics.create_missed_partitions(topic_of(request))
        return ok()

    @needs(LOOKUP, TOPIC)
    async def internal_info(self, request: web.Request) -> web.Response:
        return ok(self._messages.internal_info(topic_of(request)))
