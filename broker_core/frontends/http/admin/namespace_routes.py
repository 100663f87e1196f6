"""``/admin/v2/namespaces``: list, create, delete, the policies, and the namespace-wide subscription verbs,
on the :class:`~broker_core.core.registry.TopicRegistry` and the admin core (what
``pulsarlike admin namespaces`` does over gRPC). Prefix ``/admin/v2/namespaces``:

===========================================  =================================================  ============
``GET /{tenant}``                            ``["tenant/ns", ...]``; 404                        tenant admin
``PUT /{tenant}/{ns}``                       create (a Policies body is accepted, not read);    tenant admin
                                             204, 409, 404 without the tenant, 412 bad name
``DELETE /{tenant}/{ns}``                    ``?force=true`` deletes its topics first; 204,     tenant admin
                                             409 while it has topics
``GET /{tenant}/{ns}``                       Pulsar's Policies (the fields the broker has)      tenant admin
``GET /{tenant}/{ns}/topics``                its topics, ``?mode=PERSISTENT`` (default),        lookup
                                             ``NON_PERSISTENT`` or ``ALL``
``GET|POST|DELETE /{tenant}/{ns}/{policy}``  one policy (table :data:`POLICIES`): GET answers   tenant admin
                                             the value or 204 when unset, POST (or PUT, for
                                             :data:`SET_WITH_PUT`, as Pulsar) sets it from the
                                             JSON body, DELETE removes it; 412 for a value out
                                             of range, 400 for one of the wrong type
``POST /{tenant}/{ns}/clearBacklog[/{sub}]`` acknowledge everything (on one subscription)       consume
``POST /{tenant}/{ns}/unsubscribe/{sub}``    delete the subscription from every topic           consume
===========================================  =================================================  ============
"""
from __future__ import annotations

from typing import Any, Callable

from aiohttp import web

from broker_core.core import topic_lookup
from broker_core.core.admin import SubscriptionAdmin
from broker_core.core.backlog_quota import as_pulsar
from broker_core.core.policies import (AUTO_TOPIC_CREATION, BACKLOG_QUOTA, NAMESPACE, RETENTION_SIZE, RETENTION_TIME,
                                       SCHEMA_STRATEGY)
from broker_core.core.registry import TopicRegistry
from broker_core.frontends.http.admin.access import NAMESPACE as NS, TENANT, namespace_of, needs, tenant_of
from broker_core.frontends.http.admin.answers import BadRequest, body, boolean, flag, integer, obj, ok
from broker_core.security import ADMIN, CONSUME, LOOKUP


def retention_body(value: Any, field: str) -> dict:
    """Pulsar's RetentionPolicies; the ranges are the policy store's to check."""
    value = obj(value, field)
    return {RETENTION_TIME: integer(value.get(RETENTION_TIME), f"{field}.{RETENTION_TIME}"),
            RETENTION_SIZE: integer(value.get(RETENTION_SIZE), f"{field}.{RETENTION_SIZE}")}


POLICIES: dict[str, tuple[str, Callable[[Any, str], Any], str]] = {
    "retention": ("retention", retention_body, "retention_policies"),
    "messageTTL": ("messageTTLInSeconds", integer, "message_ttl_in_seconds"),
    "deduplication": ("deduplicationEnabled", boolean, "deduplicationEnabled"),
    "subscriptionExpirationTime": ("subscriptionExpirationTimeMinutes", integer,
                                   "subscription_expiration_time_minutes"),
    "maxProducersPerTopic": ("maxProducersPerTopic", integer, "max_producers_per_topic"),
    "maxConsumersPerTopic": ("maxConsumersPerTopic", integer, "max_consumers_per_topic"),
    "compactionThreshold": ("compactionThreshold", integer, "compaction_threshold"),
}
"""Path segment -> (the broker's policy key, the body's type check, the field in Pulsar's Policies)."""
SET_WITH_PUT = frozenset({"compactionThreshold"})
"""The policies Pulsar sets with PUT (its Namespaces resource; the others are POST); POST is kept for them too,
for clients written against pulsarlike before it took Pulsar's PUT."""


class NamespaceRoutes:
    def __init__(self, registry: TopicRegistry) -> None:
        self._registry = registry
        self._cluster = registry.config.clusterName
        self._subscriptions = SubscriptionAdmin(registry)

    def routes(self) -> list[web.RouteDef]:
        prefix = "/admin/v2/namespaces/{tenant}"
        ns = prefix + "/{namespace}"
        found = []
        for segment in POLICIES:  # before the namespace's other sub-resources: a plain path each
            found += [web.get(f"{ns}/{segment}", self.get_policy), web.post(f"{ns}/{segment}", self.set_policy),
                      web.delete(f"{ns}/{segment}", self.remove_policy)]
            if segment in SET_WITH_PUT:
                found.append(web.put(f"{ns}/{segment}", self.set_policy))
        return found + [
            web.get(prefix, self.list_namespaces),
            web.put(ns, self.create_namespace),
            web.delete(ns, self.delete_namespace),
            web.get(ns, self.get_policies),
            web.get(ns + "/topics", self.list_topics),
            web.post(ns + "/clearBacklog", self.clear_backlog),
            web.post(ns + "/clearBacklog/{subscription}", self.clear_backlog),
            web.post(ns + "/unsubscribe/{subscription}", self.unsubscribe),
        ]

    @needs(ADMIN, TENANT)
    async def list_namespaces(self, request: web.Request) -> web.Response:
        return ok(self._registry.namespaces.namespaces(tenant_of(request)))

    @needs(ADMIN, NS)
    async def create_namespace(self, request: web.Request) -> web.Response:
        obj(await body(request, "Policies", {}), "Policies")
        self._registry.create_namespace(namespace_of(request))
        return ok()

    @needs(ADMIN, NS)
    async def delete_namespace(self, request: web.Request) -> web.Response:
        await self._registry.delete_namespace(namespace_of(request), force=flag(request, "force"))
        return ok()

    @needs(ADMIN, NS)
    async def get_policies(self, request: web.Request) -> web.Response:
        namespace = namespace_of(request)
        stored = self._registry.get_policies(NAMESPACE, namespace)
        policies: dict[str, Any] = {
            "auth_policies": {"namespace_auth": self._registry.policies.permissions(NAMESPACE, namespace),
                              "destination_auth": {}, "subscription_auth_roles": {}},
            "replication_clusters": [self._cluster],
            "bundles": {"boundaries": ["0x00000000", "0xffffffff"], "numBundles": 1},
            "deleted": False,
        }
        for key, _, field in POLICIES.values():
            policies[field] = stored.get(key)
        # the policies with routes of their own (namespace_policy_routes), under Pulsar's Policies field names
        policies["backlog_quota_map"] = {kind: as_pulsar(quota) for kind, quota in
                                         (stored.get(BACKLOG_QUOTA) or {}).items()}
        policies["autoTopicCreationOverride"] = stored.get(AUTO_TOPIC_CREATION)
        policies["schema_compatibility_strategy"] = stored.get(SCHEMA_STRATEGY) or "UNDEFINED"
        return ok(policies)

    @needs(LOOKUP, NS)
    async def list_topics(self, request: web.Request) -> web.Response:
        """``?mode=PERSISTENT`` (the default), ``NON_PERSISTENT`` or ``ALL``, as the clients' regex
        subscriptions ask over HTTP (the same listing as the binary GET_TOPICS_OF_NAMESPACE)."""
        mode = request.query.get("mode", "PERSISTENT")
        if mode.upper() not in topic_lookup.MODES:
            raise BadRequest(f"mode: expected one of {', '.join(topic_lookup.MODES)}, got {mode[:64]!r}")
        return ok(topic_lookup.namespace_topics(self._registry, namespace_of(request), mode))

    # ------------------------------------------------------------------ one policy
    @staticmethod
    def _policy(request: web.Request) -> tuple[str, Callable[[Any, str], Any]]:
        key, check, _ = POLICIES[request.path.rstrip("/").rsplit("/", 1)[1]]
        return key, check

    @needs(ADMIN, NS)
    async def get_policy(self, request: web.Request) -> web.Response:
        key, _ = self._policy(request)
        return ok(self._registry.get_policies(NAMESPACE, namespace_of(request)).get(key))

    @needs(ADMIN, NS)
    async def set_policy(self, request: web.Request) -> web.Response:
        key, check = self._policy(request)
        value = check(await body(request, key), key)
        self._registry.set_policy(NAMESPACE, namespace_of(request), key, value)
        return ok()

    @needs(ADMIN, NS)
    async def remove_policy(self, request: web.Request) -> web.Response:
        key, _ = self._policy(request)
        self._registry.set_policy(NAMESPACE, namespace_of(request), key, None)
        return ok()

    # ------------------------------------------------------------------ every topic's subscriptions
    @needs(CONSUME, NS)
    async def clear_backlog(self, request: web.Request) -> web.Response:
        self._subscriptions.clear_namespace_backlog(namespace_of(request), request.match_info.get("subscription", ""))
        return ok()

    @needs(CONSUME, NS)
    async def unsubscribe(self, request: web.Request) -> web.Response:
        self._subscriptions.unsubscribe_namespace(namespace_of(request), request.match_info["subscription"])
        return ok()
