"""``topics verify`` over REST: a pulsarlike extension (Pulsar's admin API has no such route), on
:mod:`broker_core.core.topic_verify` -- what ``pulsarlike admin topics verify`` calls over gRPC:

============================================================  ====================================================  ======
``GET /admin/v2/{domain}/{tenant}/{ns}/{topic}/verify``       the topic's stored files checked without changing     admin
                                                              them (every partition of a partitioned topic):
                                                              ``{"ok", "topics": [...], "totals"}``; 404, 412 on a
                                                              non-persistent topic
``GET /admin/v2/pulsarlike/verify``                           the same for every persistent topic of the broker     super
============================================================  ====================================================  ======

The answer is 200 whatever the verification found (``ok`` says it): damage is what was asked about, not a
failure of the request.
"""
from __future__ import annotations

from aiohttp import web

from broker_core.core.admin import TopicAdmin
from broker_core.core.registry import TopicRegistry
from broker_core.frontends.http.admin.access import BROKER, TOPIC, needs, topic_of
from broker_core.frontends.http.admin.answers import ok
from broker_core.security import ADMIN, SUPER

TOPIC_PATH = "/admin/v2/{domain:persistent|non-persistent}/{tenant}/{namespace}/{topic}"
BROKER_PATH = "/admin/v2/pulsarlike/verify"


class VerifyRoutes:
    def __init__(self, registry: TopicRegistry) -> None:
        self._topics = TopicAdmin(registry)

    def routes(self) -> list[web.RouteDef]:
        return [web.get(TOPIC_PATH + "/verify", self.verify_topic),
                web.get(BROKER_PATH, self.verify_all)]

    @needs(ADMIN, TOPIC)
    async def verify_topic(self, request: web.Request) -> web.Response:
        return ok(await self._topics.verify(topic_of(request)))

    @needs(SUPER, BROKER)
    async def verify_all(self, request: web.Request) -> web.Response:
        return ok(await self._topics.verify_all())
