"""HTTP lookup: what a Pulsar client given an ``http(s)://`` service URL asks the web service before it opens
its binary connection -- ``GET /lookup/v2/topic/{domain}/{tenant}/{namespace}/{topic}``, answered Pulsar's
LookupData with every field Pulsar sends (the official C++ client fails the lookup when ``brokerUrlTls``
is missing: a URL the broker has not is ``""``)::

    {"brokerUrl": "pulsar://h:6650", "brokerUrlTls": "pulsar+ssl://h:6651", "httpUrl": "http://h:8080",
     "httpUrlTls": "https://h:8443", "nativeUrl": "pulsar://h:6650", "brokerUrlSsl": ""}

The decision is :mod:`broker_core.core.topic_lookup`'s, the binary LOOKUP's: the broker's advertised URLs,
or those of the listener named by ``?listenerName=`` (or, without it, the ``X-Pulsar-ListenerName``
header, as Pulsar reads them); a listener the broker does not have is 503 (``ServiceNotReady``, the
binary protocol's refusal; Pulsar's web service answers it as a server error); a missing namespace or a
missing topic under ``allowAutoTopicCreation=false`` 404; a name or domain that does not parse 412. The
``lookup`` action on the topic is needed, as for the binary LOOKUP. ``?authoritative=`` is read (true or
false) and changes nothing: this broker owns every topic, so it never redirects (Pulsar's 307).

The rest of what the client reads over HTTP is served by the other groups: ``GET /admin/v2/{domain}/
{tenant}/{ns}/{topic}/partitions`` (``{"partitions": N}``; the client's ``?checkAllowAutoCreation=true``
is what the broker does anyway: with ``allowAutoTopicCreationType=partitioned`` the lookup creates the
topic) and ``GET /admin/v2/namespaces/{tenant}/{ns}/topics?mode=`` (regex subscriptions).
"""
from __future__ import annotations

from aiohttp import web

from broker_core.core import topic_lookup
from broker_core.core.registry import TopicRegistry
from broker_core.frontends.http.admin.access import TOPIC, needs, topic_of
from broker_core.frontends.http.admin.answers import flag, ok
from broker_core.frontends.http.admin.cluster_routes import Advertised
from broker_core.security import LOOKUP

LOOKUP_PATH = "/lookup/v2/topic/{domain}/{tenant}/{namespace}/{topic}"
LISTENER_HEADER = "X-Pulsar-ListenerName"
"""Pulsar's header naming the listener, read when the query names none."""


def lookup_data(urls: topic_lookup.BrokerUrls, advertised: Advertised) -> dict[str, str]:
    """Pulsar's LookupData: every field, strings only (``""`` for a URL the broker has not); the web
    service URLs are the broker's whichever listener is named, as Pulsar's."""
    return {"brokerUrl": urls.broker_url, "brokerUrlTls": urls.broker_url_tls,
            "httpUrl": advertised.web_url, "httpUrlTls": advertised.web_url_tls or "",
            "nativeUrl": urls.broker_url, "brokerUrlSsl": ""}


class LookupRoutes:
    def __init__(self, registry: TopicRegistry, advertised: Advertised) -> None:
        self._registry = registry
        self._advertised = advertised
        self._urls = topic_lookup.BrokerUrls(advertised.broker_url, advertised.broker_url_tls or "")

    def routes(self) -> list[web.RouteDef]:
        return [web.get(LOOKUP_PATH, self.lookup)]

    @needs(LOOKUP, TOPIC)
    async def lookup(self, request: web.Request) -> web.Response:
        flag(request, "authoritative")  # checked (400 for a value that is not a boolean), never a redirect
        listener = request.query.get("listenerName") or request.headers.get(LISTENER_HEADER)
        urls = topic_lookup.lookup(self._registry, topic_of(request), self._urls, listener)
        return ok(lookup_data(urls, self._advertised))
