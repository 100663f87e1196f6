"""What the web service port serves: one aiohttp application, the admin REST API
(:func:`~broker_core.frontends.http.admin.admin_app`, with its guard: authentication, authorization, errors as
``{"reason": ...}``) plus the pages Pulsar serves there to anyone (:func:`~broker_core.frontends.http.admin.
public`): ``GET /metrics`` (Prometheus, unless ``metricsEnabled=false``) and ``GET /status.html`` (``OK``, for
load balancers; served whatever ``metricsEnabled`` says).

Imported by the web service port's first connection (:mod:`broker_core.frontends.http.server`), never at the
broker's start: aiohttp and the admin routes are ~100 ms of imports that a client of the broker's own port
would otherwise wait for.

Every request goes first through the port's bounds (:mod:`broker_core.frontends.http.request_limits`:
compressed bodies refused, body size and deadline), before authentication; aiohttp is told not to inflate
request bodies and not to linger on a body no one read (the bounds read or refuse what is left of one).

A scrape takes the topics' stats on the event loop (topics live there; the handler runs there, so it reads
them directly) and encodes them on a worker thread (:func:`~broker_core.frontends.http.metrics.exposition`),
waiting at most ``metricsServletTimeoutMs`` for it (503 then).
"""
from __future__ import annotations

import asyncio
import logging

from aiohttp import web

from broker_core.config import BrokerConfig
from broker_core.core.registry import TopicRegistry
from broker_core.frontends.http.admin import Advertised, admin_app, public
from broker_core.frontends.http.admin.answers import Refused, failure, text
from broker_core.frontends.http.metrics import MetricsTimeout, exposition
from broker_core.log_limits import LogLimiter
from broker_core.security import Security

log = logging.getLogger(__name__)

IDLE_TIMEOUT_S = 30.0
"""An HTTP connection idle this long between requests (or before its first) is closed: it holds a place in
the connection budget. A request's headers must have come whole by then too (aiohttp does not move this
deadline for bytes that trickle in), so it is the headers' deadline."""
SHUTDOWN_TIMEOUT_S = 1.0
"""How long the broker's stop waits for requests in progress before closing their connections."""


class PublicPages:
    """``/metrics`` and ``/status.html``."""

    def __init__(self, registry: TopicRegistry, config: BrokerConfig) -> None:
        self._registry = registry
        self._enabled = config.metricsEnabled
        self._cluster = config.clusterName
        self._topic_level = config.exposeTopicLevelMetricsInPrometheus
        self._timeout_s = config.metricsServletTimeoutMs / 1000.0

    def routes(self) -> list[web.RouteDef]:
        return [web.get("/metrics", self.metrics), web.get("/metrics/", self.metrics),
                web.get("/status.html", self.status)]

    @public
    async def status(self, request: web.Request) -> web.Response:
        return text("OK")

    @public
    async def metrics(self, request: web.Request) -> web.Response:
        if not self._enabled:
            raise Refused(404, "metrics are turned off on this broker (metricsEnabled=false)")
        stats = {name: topic.stats() for name, topic in self._registry.loaded_topics().items()}
        loop = asyncio.get_running_loop()
        encoding = loop.run_in_executor(
            None, exposition, stats, self._cluster, self._topic_level, request.headers.get("Accept", ""),
            request.headers.get("Accept-Encoding", ""))
        try:
            body, headers = await asyncio.wait_for(encoding, self._timeout_s)
        except (TimeoutError, MetricsTimeout):
            log.warning("event=metrics_scrape_failed reason=timeout timeout_ms=%d", int(self._timeout_s * 1000))
            return failure(503, f"the broker did not encode its metrics within {self._timeout_s:g}s "
                                "(metricsServletTimeoutMs)")
        return web.Response(body=body, headers=headers)


class ServerLog:
    """What aiohttp's HTTP server logs (requests that do not parse, a client gone mid-answer): a client's
    doing, so one ``event=`` line per interval with its count and no traceback -- a client sending garbage in
    a loop must not fill the broker's log. (Failures of handlers are the guard middleware's, logged there.)"""

    def __init__(self) -> None:
        self._limited = LogLimiter(log)

    def exception(self, msg: str, *args: object, exc_info: object = None, **_kw: object) -> None:
        self._limited.warning("http_request_failed", "event=http_request_failed what=%r error=%r",
                              msg % args if args else msg, exc_info)

    def warning(self, msg: str, *args: object, **_kw: object) -> None:
        self._limited.warning("http_server_warning", "event=http_server_warning what=%r", msg % args if args else msg)

    def debug(self, *_args: object, **_kw: object) -> None:
        pass


async def start_app(registry: TopicRegistry, security: Security, config: BrokerConfig, *, web_url: str,
                    broker_url: str, web_url_tls: str | None, broker_url_tls: str | None) -> web.AppRunner:
    """The application set up and ready to serve: its ``runner.server`` is the protocol factory the web
    service port hands its accepted connections to; ``runner.cleanup()`` ends them."""
    app = admin_app(registry, security, config, Advertised(web_url, broker_url, web_url_tls, broker_url_tls))
    app.add_routes(PublicPages(registry, config).routes())
    runner = web.AppRunner(app, access_log=None, logger=ServerLog(), keepalive_timeout=IDLE_TIMEOUT_S,
                           shutdown_timeout=SHUTDOWN_TIMEOUT_S, auto_decompress=False, lingering_time=0)
    await runner.setup()
    return runner
