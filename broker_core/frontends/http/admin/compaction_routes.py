"""Topic compaction over REST, as Pulsar's admin API serves it (``pulsar-admin topics compact|
compaction-status``), on the admin core's :class:`~broker_core.core.admin.topics.TopicAdmin`. Prefix ``/admin/v2/{domain}/{tenant}/{ns}/{topic}``:

=====================  ==============================================================================  ======
``PUT /compaction``    start a compaction (each partition of a partitioned topic); 204, 409 while one   admin
                       runs, 412 on a non-persistent topic
``GET /compaction``    the last one's ``LongRunningProcessStatus``: ``{"status": "NOT_RUN"|"RUNNING"|    admin
                       "SUCCESS"|"ERROR", "lastError": ""}``
=====================  ==============================================================================  ======
"""
from __future__ import annotations

from aiohttp import web

from broker_core.core.admin import TopicAdmin, long_running_status
from broker_core.core.registry import TopicRegistry
from broker_core.frontends.http.admin.access import TOPIC, needs, topic_of
from broker_core.frontends.http.admin.answers import ok
from broker_core.security import ADMIN

TOPIC_PATH = "/admin/v2/{domain:persistent|non-persistent}/{tenant}/{namespace}/{topic}"


class CompactionRoutes:
    def __init__(self, registry: TopicRegistry) -> None:
        self._topics = TopicAdmin(registry)

    def routes(self) -> list[web.RouteDef]:
        return [web.put(TOPIC_PATH + "/compaction", self.compact),
                web.get(TOPIC_PATH + "/compaction", self.status)]

    @needs(ADMIN, TOPIC)
    async def compact(self, request: web.Request) -> web.Response:
        self._topics.compact(topic_of(request))  # 409 while one runs: CompactionAlreadyRunning
        return ok()

    @needs(ADMIN, TOPIC)
    async def status(self, request: web.Request) -> web.Response:
        return ok(long_running_status(*self._topics.compaction_status(topic_of(request))))
