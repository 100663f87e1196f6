"""``/admin/v2/persistent`` and ``/admin/v2/non-persistent`` topics: create, list, delete, partitions, stats,
last message id, terminate, unload: each handler parses the request, calls the admin core's
:class:`~broker_core.core.admin.topics.TopicAdmin` (what ``pulsarlike admin topics`` calls over gRPC too) and
renders its answer. Prefix ``/admin/v2/{domain}/{tenant}/{ns}``:

====================================  =========================================================  ===========
``GET ``                              the namespace's topic partitions and non-partitioned       lookup
                                      topics of the domain
``GET /partitioned``                  its partitioned topics                                     lookup
``PUT /{topic}``                      create a non-partitioned topic; 204, 409                   admin
``DELETE /{topic}``                   delete it (``?force=true``: with connected clients,        admin
                                      else 412 while it has some); 204, 404
``PUT /{topic}/partitions``           create a partitioned topic, body: the count; 204, 409,     admin
                                      406 for a count below 1 (or above 4096)
``POST /{topic}/partitions``          grow it to the count in the body; 204, 404, 412            admin
``GET /{topic}/partitions``           ``{"partitions": N}`` (0: not partitioned; with            lookup
                                      ``"properties"`` when the topic has some)
``DELETE /{topic}/partitions``        delete the partitioned topic; 204, 404                     admin
``GET /{topic}/stats``                TopicStats (``msgInCounter``, ``subscriptions``, ...);     lookup
                                      ``?subscriptionBacklogSize=``, ``getEarliestTimeInBacklog=``,
                                      ``getPreciseBacklog=`` (:func:`stats_options`)
``GET /{topic}/partitioned-stats``    the partitions' stats merged, each under ``partitions``    lookup
                                      (the same query parameters, and ``perPartition=``)
``GET /{topic}/internalStats``        PersistentTopicInternalStats (ledgers, cursors)            lookup
``GET /{topic}/lastMessageId``        ``{"ledgerId", "entryId", "partitionIndex"}``              lookup
``POST /{topic}/terminate``           the last message id (``-1:-1`` when it holds none)         admin
``PUT /{topic}/unload``               close its sessions and unload it; 204                      admin
``GET /{topic}/properties``           the topic's properties ``{"k": "v"}``; 404                 lookup
``PUT /{topic}/properties``           body ``{"k": "v"}``: those keys set, the others kept; 204   admin
``DELETE /{topic}/properties?key=K``  key ``K`` removed; 204                                      admin
====================================  =========================================================  ===========

Properties (:class:`~broker_core.core.admin.topic_properties.TopicPropertiesAdmin`) are a partitioned topic's
(its metadata) or a persistent topic partition's (kept with its data); a non-persistent topic that is not
partitioned has none (412).

``POST /{topic}/terminate/partitions`` terminates every partition of a partitioned topic and answers each
one's last message id by partition index (admin).
"""
from __future__ import annotations

from aiohttp import web

from broker_core.core.admin import TopicAdmin
from broker_core.core.admin.topic_properties import TopicPropertiesAdmin
from broker_core.core.admin.topic_stats import StatsOptions
from broker_core.core.registry import TopicRegistry
from broker_core.frontends.http.admin.access import NAMESPACE, TOPIC, namespace_of, needs, topic_of
from broker_core.frontends.http.admin.answers import body, flag, integer, ok
from broker_core.security import ADMIN, LOOKUP

NAMESPACE_PATH = "/admin/v2/{domain:persistent|non-persistent}/{tenant}/{namespace}"
TOPIC_PATH = NAMESPACE_PATH + "/{topic}"


def stats_options(request: web.Request) -> StatsOptions:
    """Pulsar's ``GetStatsOptions`` from a stats request's query, Pulsar's defaults for what it leaves out
    (``subscriptionBacklogSize`` true, the others false); a value other than true/false is a 400."""
    return StatsOptions(
        get_precise_backlog=flag(request, "getPreciseBacklog"),
        subscription_backlog_size="subscriptionBacklogSize" not in request.query
        or flag(request, "subscriptionBacklogSize"),
        get_earliest_time_in_backlog=flag(request, "getEarliestTimeInBacklog"))


class TopicRoutes:
    def __init__(self, registry: TopicRegistry) -> None:
        self._topics = TopicAdmin(registry)
        self._properties = TopicPropertiesAdmin(registry)

    def routes(self) -> list[web.RouteDef]:
        t = TOPIC_PATH
        return [
            web.get(NAMESPACE_PATH, self.list_topics),
            web.get(NAMESPACE_PATH + "/partitioned", self.list_partitioned),
            web.put(t, self.create_topic),
            web.delete(t, self.delete_topic),
            web.put(t + "/partitions", self.create_partitioned),
            web.post(t + "/partitions", self.update_partitioned),
            web.get(t + "/partitions", self.get_partitions),
            web.delete(t + "/partitions", self.delete_partitioned),
            web.get(t + "/stats", self.stats),
            web.get(t + "/partitioned-stats", self.partitioned_stats),
            web.get(t + "/internalStats", self.internal_stats),
            web.get(t + "/partitioned-internalStats", self.partitioned_internal_stats),
            web.get(t + "/lastMessageId", self.last_message_id),
            web.post(t + "/terminate", self.terminate),
            web.post(t + "/terminate/partitions", self.terminate_partitions),
            web.put(t + "/unload", self.unload),
            web.get(t + "/properties", self.properties),
            web.put(t + "/properties", self.update_properties),
            web.delete(t + "/properties", self.remove_property),
        ]

    # ------------------------------------------------------------------ lists
    @needs(LOOKUP, NAMESPACE)
    async def list_topics(self, request: web.Request) -> web.Response:
        return ok(self._topics.list(namespace_of(request), request.match_info["domain"]))

    @needs(LOOKUP, NAMESPACE)
    async def list_partitioned(self, request: web.Request) -> web.Response:
        return ok(self._topics.list_partitioned(namespace_of(request), request.match_info["domain"]))

    # ------------------------------------------------------------------ life
    @needs(ADMIN, TOPIC)
    async def create_topic(self, request: web.Request) -> web.Response:
        self._topics.create(topic_of(request))
        return ok()

    @needs(ADMIN, TOPIC)
    async def delete_topic(self, request: web.Request) -> web.Response:
        await self._topics.delete(topic_of(request), force=flag(request, "force"))
        return ok()

    @needs(ADMIN, TOPIC)
    async def create_partitioned(self, request: web.Request) -> web.Response:
        self._topics.create_partitioned(topic_of(request), integer(await body(request, "partitions"), "partitions"))
        return ok()

    @needs(ADMIN, TOPIC)
    async def update_partitioned(self, request: web.Request) -> web.Response:
        self._topics.update_partitioned(topic_of(request), integer(await body(request, "partitions"), "partitions"))
        return ok()

    @needs(LOOKUP, TOPIC)
    async def get_partitions(self, request: web.Request) -> web.Response:
        name = topic_of(request)
        found: dict = {"partitions": self._topics.partitions(name)}
        if found["partitions"] and name.partition_index < 0:
            properties = self._properties.properties(name)
            if properties:
                found["properties"] = properties
        return ok(found)

    @needs(ADMIN, TOPIC)
    async def delete_partitioned(self, request: web.Request) -> web.Response:
        await self._topics.delete_partitioned(topic_of(request), force=flag(request, "force"))
        return ok()

    # ------------------------------------------------------------------ what it holds
    @needs(LOOKUP, TOPIC)
    async def stats(self, request: web.Request) -> web.Response:
        return ok(self._topics.stats(topic_of(request), stats_options(request)))

    @needs(LOOKUP, TOPIC)
    async def partitioned_stats(self, request: web.Request) -> web.Response:
        per_partition = "perPartition" not in request.query or flag(request, "perPartition")
        return ok(self._topics.partitioned_stats(topic_of(request), per_partition, stats_options(request)))

    @needs(LOOKUP, TOPIC)
    async def internal_stats(self, request: web.Request) -> web.Response:
        return ok(self._topics.internal_stats(topic_of(request)))

    @needs(LOOKUP, TOPIC)
    async def partitioned_internal_stats(self, request: web.Request) -> web.Response:
        return ok(self._topics.partitioned_internal_stats(topic_of(request)))

    @needs(LOOKUP, TOPIC)
    async def last_message_id(self, request: web.Request) -> web.Response:
        return ok(self._topics.last_message(topic_of(request)).as_json())

    # ------------------------------------------------------------------ operator calls
    @needs(ADMIN, TOPIC)
    async def terminate(self, request: web.Request) -> web.Response:
        return ok((await self._topics.terminate(topic_of(request))).as_json())

    @needs(ADMIN, TOPIC)
    async def terminate_partitions(self, request: web.Request) -> web.Response:
        """Every partition terminated: ``{"0": MessageId, "1": ...}``, as Pulsar answers."""
        ended = await self._topics.terminate_partitions(topic_of(request))
        return ok({str(i): last.as_json() for i, last in ended.items()})

    @needs(ADMIN, TOPIC)
    async def unload(self, request: web.Request) -> web.Response:
        await self._topics.unload(topic_of(request))
        return ok()

    # ------------------------------------------------------------------ properties
    @needs(LOOKUP, TOPIC)
    async def properties(self, request: web.Request) -> web.Response:
        return ok(self._properties.properties(topic_of(request)))

    @needs(ADMIN, TOPIC)
    async def update_properties(self, request: web.Request) -> web.Response:
        self._properties.update(topic_of(request), await body(request, "properties", None))
        return ok()

    @needs(ADMIN, TOPIC)
    async def remove_property(self, request: web.Request) -> web.Response:
        self._properties.remove(topic_of(request), request.query.get("key"))
        return ok()
