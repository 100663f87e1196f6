"""Topic-level policies the broker has, over REST, on the registry's
:class:`~broker_core.core.policies.PoliciesStore` (what ``pulsarlike admin topics set-*`` does over gRPC);
a topic's own value overrides its namespace's. Prefix ``/admin/v2/{domain}/{tenant}/{ns}/{topic}``:

===============================  ==========================  ==================================================
Path                             Policy                      Value
===============================  ==========================  ==================================================
``/retention``                   ``retention``               RetentionPolicies body
``/messageTTL``                  ``messageTTLInSeconds``     ``?messageTTL=N`` (as pulsar-admin sends it) or body
``/deduplicationEnabled``        ``deduplicationEnabled``    ``true``/``false`` body
``/maxProducers``                ``maxProducersPerTopic``    integer body
``/maxConsumers``                ``maxConsumersPerTopic``    integer body
``/compactionThreshold``         ``compactionThreshold``     integer body (bytes)
===============================  ==========================  ==================================================

``GET`` answers the topic's own value (204 when unset; reading needs ``lookup``, as the gRPC call), ``POST``
sets it and ``DELETE`` removes it (tenant admins); 404 for a topic that does not exist. ``?applied=true``
(the value in force, inherited included) is not served yet: 501.
"""
from __future__ import annotations

from typing import Any, Callable

from aiohttp import web

from broker_core.core.policies import TOPIC
from broker_core.core.registry import TopicRegistry
from broker_core.errors import TopicNotFound
from broker_core.frontends.http.admin.access import TOPIC as TOPIC_RESOURCE, needs, topic_of
from broker_core.frontends.http.admin.answers import BadRequest, Refused, body, boolean, flag, integer, ok
from broker_core.frontends.http.admin.namespace_routes import retention_body
from broker_core.security import ADMIN, LOOKUP
from broker_core.types import TopicName

TOPIC_PATH = "/admin/v2/{domain:persistent|non-persistent}/{tenant}/{namespace}/{topic}"

POLICIES: dict[str, tuple[str, Callable[[Any, str], Any]]] = {
    "retention": ("retention", retention_body),
    "messageTTL": ("messageTTLInSeconds", integer),
    "deduplicationEnabled": ("deduplicationEnabled", boolean),
    "maxProducers": ("maxProducersPerTopic", integer),
    "maxConsumers": ("maxConsumersPerTopic", integer),
    "compactionThreshold": ("compactionThreshold", integer),
}
"""Path segment -> (the broker's policy key, the value's type check)."""


def _segment(request: web.Request) -> str:
    return request.path.rstrip("/").rsplit("/", 1)[1]


class TopicPolicyRoutes:
    def __init__(self, registry: TopicRegistry) -> None:
        self._registry = registry

    def routes(self) -> list[web.RouteDef]:
        found = []
        for segment in POLICIES:
            path = f"{TOPIC_PATH}/{segment}"
            found += [web.get(path, self.get_policy), web.post(path, self.set_policy),
                      web.delete(path, self.remove_policy)]
        return found

    def _existing(self, request: web.Request) -> TopicName:
        name = topic_of(request)
        self._registry.namespaces.check_exists(name.namespace_name)
        if not (self._registry.partitions_of(name) or self._registry.exists(name)):
            raise TopicNotFound(f"topic {name} does not exist", topic=str(name))
        return name

    @needs(LOOKUP, TOPIC_RESOURCE)
    async def get_policy(self, request: web.Request) -> web.Response:
        if flag(request, "applied"):
            raise Refused(501, "applied=true (the value in force, inherited included) is not served yet; read the"
                               " topic's and its namespace's own values")
        key, _ = POLICIES[_segment(request)]
        return ok(self._registry.get_policies(TOPIC, str(self._existing(request))).get(key))

    @needs(ADMIN, TOPIC_RESOURCE)
    async def set_policy(self, request: web.Request) -> web.Response:
        segment = _segment(request)
        key, check = POLICIES[segment]
        if segment == "messageTTL" and "messageTTL" in request.query:
            raw = request.query["messageTTL"]
            try:
                value: Any = int(raw)
            except ValueError:
                raise BadRequest(f"messageTTL: expected an integer, got {raw[:64]!r}") from None
        else:
            value = check(await body(request, key), key)
        self._registry.set_policy(TOPIC, str(self._existing(request)), key, value)
        return ok()

    @needs(ADMIN, TOPIC_RESOURCE)
    async def remove_policy(self, request: web.Request) -> web.Response:
        key, _ = POLICIES[_segment(request)]
        self._registry.set_policy(TOPIC, str(self._existing(request)), key, None)
        return ok()
