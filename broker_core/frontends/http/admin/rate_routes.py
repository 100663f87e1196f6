"""A subscription's own dispatch rate, ``/admin/v2/{domain}/{tenant}/{ns}/{topic}/{subName}/dispatchRate``
(Pulsar's subscription-level topic policy), served by the admin core's
:class:`~broker_core.core.admin.subscription_rates.SubscriptionRates`: ``GET`` answers Pulsar's ``DispatchRate``
(204 when the subscription has none of its own), ``POST`` sets it from one (a field of the wrong type: 400; a
period below 1 s: 412), ``DELETE`` removes it; 404 for a topic that does not exist. The topic's and namespace's
rates are :mod:`.policy_routes`' (rows of the admin core's policy table)."""
from __future__ import annotations

from aiohttp import web

from broker_core.core.admin.subscription_rates import SubscriptionRates
from broker_core.core.registry import TopicRegistry
from broker_core.frontends.http.admin.access import TOPIC, needs, topic_of
from broker_core.frontends.http.admin.answers import Refused, body, flag, ok
from broker_core.security import ADMIN, LOOKUP

PATH = "/admin/v2/{domain:persistent|non-persistent}/{tenant}/{namespace}/{topic}/{subName}/dispatchRate"


class RateRoutes:
    def __init__(self, registry: TopicRegistry) -> None:
        self._rates = SubscriptionRates(registry)

    def routes(self) -> list[web.RouteDef]:
        return [web.get(PATH, self.get_rate), web.post(PATH, self.set_rate), web.delete(PATH, self.remove_rate)]

    @needs(LOOKUP, TOPIC)
    async def get_rate(self, request: web.Request) -> web.Response:
        if flag(request, "applied"):
            raise Refused(501, "applied=true (the value in force, inherited included) is not served yet; read the"
                               " subscription's, the topic's and the namespace's own values")
        return ok(self._rates.get(topic_of(request), request.match_info["subName"]))

    @needs(ADMIN, TOPIC)
    async def set_rate(self, request: web.Request) -> web.Response:
        self._rates.set(topic_of(request), request.match_info["subName"], await body(request, "DispatchRate"))
        return ok()

    @needs(ADMIN, TOPIC)
    async def remove_rate(self, request: web.Request) -> web.Response:
        self._rates.remove(topic_of(request), request.match_info["subName"])
        return ok()
