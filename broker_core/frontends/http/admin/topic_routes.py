"""``/admin/v2/persistent`` and ``/admin/v2/non-persistent`` topics: create, list, delete, partitions, stats,
last message id, terminate, unload, on the :class:`~broker_core.core.registry.TopicRegistry` and
:mod:`broker_core.core.topic_admin` (what ``pulsarlike admin topics`` does over gRPC). Prefix
``/admin/v2/{domain}/{tenant}/{ns}``:

====================================  =========================================================  ===========
``GET ``                              the namespace's topic partitions and non-partitioned       lookup
                                      topics of the domain
``GET /partitioned``                  its partitioned topics                                     lookup
``PUT /{topic}``                      create a non-partitioned topic; 204, 409                   admin
``DELETE /{topic}``                   delete it (``?force=true``: with connected clients,        admin
                                      else 412 while it has some); 204, 404
``PUT /{topic}/partitions``           create a partitioned topic, body: the count; 204, 409      admin
``POST /{topic}/partitions``          grow it to the count in the body; 204, 404, 412            admin
``GET /{topic}/partitions``           ``{"partitions": N}`` (0: not partitioned)                 lookup
``DELETE /{topic}/partitions``        delete the partitioned topic; 204, 404                     admin
``GET /{topic}/stats``                TopicStats (``msgInCounter``, ``subscriptions``, ...)      lookup
``GET /{topic}/partitioned-stats``    the partitions' stats merged, each under ``partitions``    lookup
``GET /{topic}/internalStats``        PersistentTopicInternalStats (ledgers, cursors)            lookup
``GET /{topic}/lastMessageId``        ``{"ledgerId", "entryId", "partitionIndex"}``              lookup
``POST /{topic}/terminate``           the last message id (``-1:-1`` when it holds none)         admin
``PUT /{topic}/unload``               close its sessions and unload it; 204                      admin
====================================  =========================================================  ===========

``POST /{topic}/terminate/partitions`` terminates every partition of a partitioned topic and answers each
one's last message id by partition index (admin).
"""
from __future__ import annotations

from aiohttp import web

from broker_core.core import topic_admin
from broker_core.core.registry import TopicRegistry
from broker_core.core.topic_protocol import Topic
from broker_core.errors import TopicNotFound
from broker_core.frontends.http.admin.access import NAMESPACE, TOPIC, namespace_of, needs, topic_of
from broker_core.frontends.http.admin.answers import body, flag, integer, ok
from broker_core.security import ADMIN, LOOKUP
from broker_core.types import TopicName

NAMESPACE_PATH = "/admin/v2/{domain:persistent|non-persistent}/{tenant}/{namespace}"
TOPIC_PATH = NAMESPACE_PATH + "/{topic}"


def last_message_id(topic: Topic) -> dict:
    """A topic partition's last message id as Pulsar's MessageIdImpl JSON; ``-1:-1`` while it holds none."""
    last = topic.last_message_id()
    if last is None:
        return {"ledgerId": -1, "entryId": -1, "partitionIndex": TopicName.parse(topic.topic).partition_index}
    found = {"ledgerId": last.ledger_id, "entryId": last.entry_id, "partitionIndex": last.partition}
    if last.batch_index >= 0:
        found["batchIndex"] = last.batch_index
    return found


class TopicRoutes:
    def __init__(self, registry: TopicRegistry) -> None:
        self._registry = registry

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
        ]

    # ------------------------------------------------------------------ lists
    def _of_domain(self, request: web.Request, names: list[str]) -> list[str]:
        prefix = request.match_info["domain"] + "://"
        return [n for n in names if n.startswith(prefix)]

    @needs(LOOKUP, NAMESPACE)
    async def list_topics(self, request: web.Request) -> web.Response:
        return ok(self._of_domain(request, self._registry.list(namespace_of(request))))

    @needs(LOOKUP, NAMESPACE)
    async def list_partitioned(self, request: web.Request) -> web.Response:
        namespace = namespace_of(request)
        self._registry.namespaces.check_exists(namespace)
        return ok(self._of_domain(request, topic_admin.list_partitioned(self._registry, namespace)))

    # ------------------------------------------------------------------ life
    @needs(ADMIN, TOPIC)
    async def create_topic(self, request: web.Request) -> web.Response:
        self._registry.create(topic_of(request))
        return ok()

    @needs(ADMIN, TOPIC)
    async def delete_topic(self, request: web.Request) -> web.Response:
        await self._registry.delete(topic_of(request), force=flag(request, "force"))
        return ok()

    @needs(ADMIN, TOPIC)
    async def create_partitioned(self, request: web.Request) -> web.Response:
        name = topic_of(request)
        self._registry.create_partitioned(name, integer(await body(request, "partitions"), "partitions"))
        return ok()

    @needs(ADMIN, TOPIC)
    async def update_partitioned(self, request: web.Request) -> web.Response:
        name = topic_of(request)
        topic_admin.update_partitioned(self._registry, name, integer(await body(request, "partitions"), "partitions"))
        return ok()

    @needs(LOOKUP, TOPIC)
    async def get_partitions(self, request: web.Request) -> web.Response:
        return ok({"partitions": self._registry.lookup_partitions(topic_of(request))})

    def _partitioned(self, request: web.Request):
        name = topic_of(request)
        self._registry.namespaces.check_exists(name.namespace_name)
        if not self._registry.partitions_of(name):
            raise TopicNotFound(f"partitioned topic {name} does not exist", topic=str(name))
        return name

    @needs(ADMIN, TOPIC)
    async def delete_partitioned(self, request: web.Request) -> web.Response:
        await self._registry.delete(self._partitioned(request), force=flag(request, "force"))
        return ok()

    # ------------------------------------------------------------------ what it holds
    @needs(LOOKUP, TOPIC)
    async def stats(self, request: web.Request) -> web.Response:
        return ok(self._registry.stats(topic_of(request)))

    @needs(LOOKUP, TOPIC)
    async def partitioned_stats(self, request: web.Request) -> web.Response:
        found = self._registry.stats(self._partitioned(request))
        if not flag(request, "perPartition") and "perPartition" in request.query:
            found = {k: v for k, v in found.items() if k != "partitions"}
        return ok(found)

    @needs(LOOKUP, TOPIC)
    async def internal_stats(self, request: web.Request) -> web.Response:
        return ok(self._registry.internal_stats(topic_of(request)))

    @needs(LOOKUP, TOPIC)
    async def partitioned_internal_stats(self, request: web.Request) -> web.Response:
        return ok(self._registry.internal_stats(self._partitioned(request)))

    @needs(LOOKUP, TOPIC)
    async def last_message_id(self, request: web.Request) -> web.Response:
        return ok(last_message_id(self._registry.get(topic_of(request), create=False)))

    # ------------------------------------------------------------------ operator calls
    @needs(ADMIN, TOPIC)
    async def terminate(self, request: web.Request) -> web.Response:
        return ok(last_message_id(await topic_admin.terminate(self._registry, topic_of(request))))

    @needs(ADMIN, TOPIC)
    async def terminate_partitions(self, request: web.Request) -> web.Response:
        """Every partition terminated: ``{"0": MessageId, "1": ...}``, as Pulsar answers."""
        name = self._partitioned(request)
        ended = {}
        for i in range(self._registry.partitions_of(name)):
            ended[str(i)] = last_message_id(await topic_admin.terminate(self._registry, name.partition(i)))
        return ok(ended)

    @needs(ADMIN, TOPIC)
    async def unload(self, request: web.Request) -> web.Response:
        await topic_admin.unload(self._registry, topic_of(request))
        return ok()
