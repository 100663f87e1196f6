"""The admin REST application: Pulsar's ``/admin/v2`` paths over the broker core, as an aiohttp
``Application`` that the web service port serves beside ``/metrics``.

:func:`admin_app` assembles the endpoint groups (each a module of this package, each handler a translation
of HTTP to calls on the :class:`~broker_core.core.registry.TopicRegistry`, its stores and
:mod:`broker_core.core.admin`) behind one middleware, :func:`~broker_core.frontends.http.admin.access.guard`
(authentication, authorization, errors as ``{"reason": ...}``), itself behind the web port's
:func:`~broker_core.frontends.http.request_limits.request_limits` (compressed bodies refused, body size and
deadline), which therefore hold before authentication. Serve it with aiohttp's ``auto_decompress=False``.

Example (what the web service port does; see docs/admin-rest.md)::

    app = admin_app(registry, security, config, Advertised("http://h:8080", "pulsar://h:6650"))
    runner = web.AppRunner(app, auto_decompress=False); await runner.setup()
    await web.SockSite(runner, listening_socket).start()
"""
from __future__ import annotations

import asyncio

from aiohttp import web

from broker_core.config import BrokerConfig
from broker_core.core.registry import TopicRegistry
from broker_core.frontends.http.admin.access import MAX_BODY, SECURITY, guard
from broker_core.frontends.http.admin.broker_routes import BrokerRoutes
from broker_core.frontends.http.admin.cluster_routes import Advertised, ClusterRoutes
from broker_core.frontends.http.admin.compaction_routes import CompactionRoutes
from broker_core.frontends.http.admin.lookup_routes import LookupRoutes
from broker_core.frontends.http.admin.message_routes import MessageRoutes
from broker_core.frontends.http.admin.namespace_policy_routes import NamespacePolicyRoutes
from broker_core.frontends.http.admin.namespace_routes import NamespaceRoutes
from broker_core.frontends.http.admin.permission_routes import PermissionRoutes
from broker_core.frontends.http.admin.policy_routes import PolicyRoutes
from broker_core.frontends.http.admin.pulsar_fallback import pulsar_fallback
from broker_core.frontends.http.admin.rate_routes import RateRoutes
from broker_core.frontends.http.admin.resource_group_routes import ResourceGroupRoutes
from broker_core.frontends.http.admin.schema_routes import SchemaRoutes
from broker_core.frontends.http.admin.stored_routes import StoredRoutes
from broker_core.frontends.http.admin.subscription_routes import SubscriptionRoutes
from broker_core.frontends.http.admin.tenant_routes import TenantRoutes
from broker_core.frontends.http.admin.topic_routes import TopicRoutes
from broker_core.frontends.http.admin.verify_routes import VerifyRoutes
from broker_core.frontends.http.request_limits import JSON_TURNS, LIMITS, RequestLimits, request_limits
from broker_core.security import Security


def admin_app(registry: TopicRegistry, security: Security, config: BrokerConfig, advertised: Advertised, *,
              max_body_bytes: int | None = None) -> web.Application:
    """The ``/admin/v2`` application over ``registry``, checked by ``security``; ``advertised`` are the
    broker's URLs (what ``clusters/{cluster}`` and ``brokers/leaderBroker`` answer); ``max_body_bytes``:
    ``httpMaxRequestSize`` unless given."""
    limits = RequestLimits.from_config(config, max_body_bytes)
    app = web.Application(middlewares=[request_limits, guard, pulsar_fallback], client_max_size=limits.max_body_bytes)
    app[LIMITS] = limits
    app[JSON_TURNS] = asyncio.Lock()
    app[SECURITY] = security
    app[MAX_BODY] = limits.max_body_bytes
    groups = (BrokerRoutes(registry, advertised), ClusterRoutes(config, advertised), ResourceGroupRoutes(registry),
              RateRoutes(registry), TenantRoutes(registry), PolicyRoutes(registry),
              NamespacePolicyRoutes(registry), NamespaceRoutes(registry), PermissionRoutes(registry),
              SubscriptionRoutes(registry), TopicRoutes(registry), LookupRoutes(registry, advertised),
              SchemaRoutes(registry), MessageRoutes(registry), StoredRoutes(registry), CompactionRoutes(registry),
              VerifyRoutes(registry))
    for group in groups:
        app.add_routes(group.routes())
    return app
