"""Namespace and topic policies over REST, every route registered from the admin core's policy table
(:mod:`broker_core.core.admin.policy_table`: the policy's key, its body's type, its path segments, how Pulsar
sets it) and served by :class:`~broker_core.core.admin.namespaces.NamespaceAdmin`, as the gRPC ``SetPolicy``
and ``GetPolicies`` are. For each policy of the table:

=========================================================  =====================================  ============
``GET /admin/v2/namespaces/{tenant}/{ns}/{segment}``        the value; 204 when unset              tenant admin
``POST`` (and ``PUT`` where Pulsar sets it with PUT) same   set it from the JSON body; 204         tenant admin
``DELETE`` same                                             remove it; 204                         tenant admin
``GET /admin/v2/{domain}/{tenant}/{ns}/{topic}/{segment}``  the topic's own value; 204 unset; 404  lookup
                                                            for a topic that does not exist
``POST`` / ``DELETE`` same                                  set / remove it (a query parameter     tenant admin
                                                            may carry the value, e.g.
                                                            ``?messageTTL=N`` as pulsar-admin
                                                            sends it)
=========================================================  =====================================  ============

A body of the wrong JSON type is 400 naming the field, a value out of range 412 naming it. A topic's
``?applied=true`` answers the value in force: the topic's own, else its namespace's, else the broker's
configuration (:mod:`broker_core.core.admin.applied_policies`); 501 for a policy without a broker value there.
Adding a policy is adding a row to the table (see its docstring).
"""
from __future__ import annotations

from typing import Any

from aiohttp import web

from broker_core.core.admin.applied_policies import applied
from broker_core.core.admin.namespaces import NamespaceAdmin, Scope
from broker_core.core.admin.policy_table import BY_NAMESPACE_SEGMENT, BY_TOPIC_SEGMENT, Policy
from broker_core.core.registry import TopicRegistry
from broker_core.frontends.http.admin.access import NAMESPACE, TOPIC, namespace_of, needs, topic_of
from broker_core.frontends.http.admin.answers import BadRequest, Refused, body, flag, ok
from broker_core.security import ADMIN, LOOKUP

NAMESPACE_PATH = "/admin/v2/namespaces/{tenant}/{namespace}"
TOPIC_PATH = "/admin/v2/{domain:persistent|non-persistent}/{tenant}/{namespace}/{topic}"


def _segment(request: web.Request) -> str:
    return request.path.rstrip("/").rsplit("/", 1)[1]


class PolicyRoutes:
    def __init__(self, registry: TopicRegistry) -> None:
        self._namespaces = NamespaceAdmin(registry)
        self._registry = registry

    def routes(self) -> list[web.RouteDef]:
        found = []
        namespace = {"GET": self.get_namespace_policy, "POST": self.set_namespace_policy,
                     "PUT": self.set_namespace_policy, "DELETE": self.remove_namespace_policy}
        topic = {"GET": self.get_topic_policy, "POST": self.set_topic_policy, "PUT": self.set_topic_policy,
                 "DELETE": self.remove_topic_policy}
        for segment, policy in BY_NAMESPACE_SEGMENT.items():
            methods = [*policy.namespace_methods, *(["PUT"] if policy.set_with_put else [])]
            found += [web.route(method, f"{NAMESPACE_PATH}/{segment}", namespace[method])
                      for method in dict.fromkeys(methods)]
        for segment, policy in BY_TOPIC_SEGMENT.items():
            found += [web.route(method, f"{TOPIC_PATH}/{segment}", topic[method]) for method in policy.topic_methods]
        return found

    # ------------------------------------------------------------------ a namespace's
    @needs(ADMIN, NAMESPACE)
    async def get_namespace_policy(self, request: web.Request) -> web.Response:
        policy = BY_NAMESPACE_SEGMENT[_segment(request)]
        return ok(self._namespaces.policy(Scope.of_namespace(namespace_of(request)), policy.key))

    @needs(ADMIN, NAMESPACE)
    async def set_namespace_policy(self, request: web.Request) -> web.Response:
        policy = BY_NAMESPACE_SEGMENT[_segment(request)]
        value = await (body(request, policy.key, None) if policy.empty_post_removes else body(request, policy.key))
        self._namespaces.set_policy(Scope.of_namespace(namespace_of(request)), policy.key, value)
        return ok()

    @needs(ADMIN, NAMESPACE)
    async def remove_namespace_policy(self, request: web.Request) -> web.Response:
        policy = BY_NAMESPACE_SEGMENT[_segment(request)]
        self._namespaces.remove_policy(Scope.of_namespace(namespace_of(request)), policy.key)
        return ok()

    # ------------------------------------------------------------------ a topic's own
    @needs(LOOKUP, TOPIC)
    async def get_topic_policy(self, request: web.Request) -> web.Response:
        policy = BY_TOPIC_SEGMENT[_segment(request)]
        topic = topic_of(request)
        own = self._namespaces.policy(Scope.of_topic(topic), policy.key)  # 404 for a topic that does not exist
        if not flag(request, "applied"):
            return ok(own)
        value = applied(self._registry.policies, self._registry.dynamic.current, topic, policy.key)
        if value is None:
            raise Refused(501, f"applied=true for {_segment(request)} (the value in force, inherited included) is "
                               "not served yet; read the topic's and its namespace's own values")
        return ok(value)

    @needs(ADMIN, TOPIC)
    async def set_topic_policy(self, request: web.Request) -> web.Response:
        policy = BY_TOPIC_SEGMENT[_segment(request)]
        if policy.query is not None and policy.query in request.query:
            value = _query_value(request, policy)
        else:
            value = await body(request, policy.key)
        self._namespaces.set_policy(Scope.of_topic(topic_of(request)), policy.key, value)
        return ok()

    @needs(ADMIN, TOPIC)
    async def remove_topic_policy(self, request: web.Request) -> web.Response:
        policy = BY_TOPIC_SEGMENT[_segment(request)]
        self._namespaces.remove_policy(Scope.of_topic(topic_of(request)), policy.key)
        return ok()


def _query_value(request: web.Request, policy: Policy) -> Any:
    """The integer a policy's query parameter carries (``?messageTTL=3600``)."""
    raw = request.query[str(policy.query)]
    try:
        return int(raw)
    except ValueError:
        raise BadRequest(f"{policy.query}: expected an integer, got {raw[:64]!r}") from None
