"""Rate limits of namespaces, topics and subscriptions, and the resource group a namespace or topic is
attached to, for :class:`~connector.client.admin.Admin` (``pulsar-admin namespaces set-dispatch-rate``,
``set-subscription-dispatch-rate``, ``set-publish-rate``, ``set-subscribe-rate``, ``set-resource-group``;
``topics set-dispatch-rate``, ``topicPolicies set-subscription-dispatch-rate -s``, ...).

Values are Pulsar's models as dicts: ``DispatchRate`` ``{"dispatchThrottlingRateInMsg", "dispatchThrottlingRateInByte",
"relativeToPublishRate", "ratePeriodInSecond"}``, ``PublishRate`` ``{"publishThrottlingRateInMsg",
"publishThrottlingRateInByte"}``, ``SubscribeRate`` ``{"subscribeThrottlingRatePerConsumer", "ratePeriodInSecond"}``
(a rate of -1: not limited that way); a getter answers None when nothing is set. What they do:
docs/operations.md, "Rate limits".

Over ``admin_url`` each call sends what Pulsar's Java admin sends: ``POST|GET|DELETE`` on
``/admin/v2/namespaces/{t}/{ns}/{dispatchRate|subscriptionDispatchRate|publishRate|subscribeRate}``, on
``/admin/v2/{domain}/{t}/{ns}/{topic}/...`` the same, ``.../{topic}/{subscription}/dispatchRate`` for one
subscription's own rate, ``POST .../namespaces/{t}/{ns}/resourcegroup/{name}``. Over gRPC the same values go
through the broker's ``SetPolicy``/``GetPolicies`` (a subscription's rate is the topic's
``subscriptionPolicies`` read and written back; ``applied=True`` and resource groups are REST-only:
:class:`~connector.client.admin.wire.NotSupported`).
"""
from __future__ import annotations

import json
from typing import Any

from broker_core import errors
from broker_core.protocol import broker_pb2
from broker_core.types import TopicName

from connector.client.admin.rest import path
from connector.client.admin.wire import NotSupported, UnaryWire, rest_of, topic_name, whole

DISPATCH_RATE, SUBSCRIPTION_DISPATCH_RATE = "dispatchRate", "subscriptionDispatchRate"
PUBLISH_RATE, SUBSCRIBE_RATE = "publishRate", "subscribeRate"
SUBSCRIPTION_POLICIES, RESOURCE_GROUP = "subscriptionPolicies", "resourceGroupName"


def dispatch_rate(msg_rate: int = -1, byte_rate: int = -1, period_s: int = 1,
                  relative_to_publish_rate: bool = False) -> dict[str, Any]:
    """Pulsar's ``DispatchRate`` (what ``-md``, ``-bd``, ``-dt`` and ``-rp`` of pulsar-admin set)."""
    return {"dispatchThrottlingRateInMsg": whole("msg_rate", msg_rate),
            "dispatchThrottlingRateInByte": whole("byte_rate", byte_rate),
            "relativeToPublishRate": bool(relative_to_publish_rate),
            "ratePeriodInSecond": whole("period_s", period_s, minimum=1)}


def publish_rate(msg_rate: int = -1, byte_rate: int = -1) -> dict[str, Any]:
    return {"publishThrottlingRateInMsg": whole("msg_rate", msg_rate),
            "publishThrottlingRateInByte": whole("byte_rate", byte_rate)}


def subscribe_rate(rate: int = -1, period_s: int = 30) -> dict[str, Any]:
    return {"subscribeThrottlingRatePerConsumer": whole("rate", rate),
            "ratePeriodInSecond": whole("period_s", period_s, minimum=1)}


def _namespace_path(namespace: str, *rest: str) -> str:
    tenant, _, ns = namespace.partition("/")
    return path("admin", "v2", "namespaces", tenant, ns, *rest)


def _topic_path(topic: str, *rest: str) -> str:
    t = TopicName.parse(topic_name(topic))
    return path("admin", "v2", t.domain, t.tenant, t.namespace, t.local_name, *rest)


class RatesAdmin:
    """The calls above: a part of :class:`~connector.client.admin.Admin`, which serves its public methods."""

    def __init__(self, wire: UnaryWire) -> None:
        self._wire = wire

    @property
    def _rest(self) -> Any:
        return getattr(self._wire, "transport", None)

    # ------------------------------------------------------------------ both wires
    def _scope(self, namespace: str | None, topic: str | None) -> broker_pb2.PolicyScope:
        return broker_pb2.PolicyScope(namespace=namespace) if namespace else broker_pb2.PolicyScope(
            topic=topic_name(topic or ""))

    def _grpc_get(self, key: str, namespace: str | None = None, topic: str | None = None) -> Any:
        return (self._wire.unary("GetPolicies", self._scope(namespace, topic)) or {}).get(key)

    def _grpc_set(self, key: str, value: Any, namespace: str | None = None, topic: str | None = None) -> None:
        self._wire.unary("SetPolicy", broker_pb2.PolicyRequest(
            scope=self._scope(namespace, topic), key=key, value_json="" if value is None else json.dumps(value)))

    def _namespace(self, method: str, namespace: str, key: str, value: Any = None) -> Any:
        if self._rest is not None:
            args = () if value is None else (value,)
            return self._rest.call(method, _namespace_path(namespace, key), *args, not_found=errors.NamespaceNotFound,
                                   refused=errors.InvalidConfiguration)
        if method == "GET":
            return self._grpc_get(key, namespace=namespace)
        self._grpc_set(key, value, namespace=namespace)
        return None

    def _topic(self, method: str, topic: str, key: str, value: Any = None, applied: bool = False) -> Any:
        if self._rest is not None:
            args = () if value is None else (value,)
            return self._rest.call(method, _topic_path(topic, key), *args, query={"applied": "true"} if applied
                                   else None, not_found=errors.TopicNotFound, refused=errors.InvalidConfiguration)
        if applied:
            raise NotSupported(f"get_topic_{key} applied=True is served over the admin REST API only",
                               method=f"get_topic_{key}")
        if method == "GET":
            return self._grpc_get(key, topic=topic)
        self._grpc_set(key, value, topic=topic)
        return None

    # ------------------------------------------------------------------ namespaces
    def set_namespace_dispatch_rate(self, namespace: str, msg_rate: int = -1, byte_rate: int = -1,
                                    period_s: int = 1, relative_to_publish_rate: bool = False) -> None:
        """Each topic of the namespace dispatches at most ``msg_rate`` messages and ``byte_rate`` bytes per
        ``period_s`` seconds, shared by its subscriptions (-1: not limited that way)."""
        self._namespace("POST", namespace, DISPATCH_RATE,
                        dispatch_rate(msg_rate, byte_rate, period_s, relative_to_publish_rate))

    def get_namespace_dispatch_rate(self, namespace: str) -> dict[str, Any] | None:
        return self._namespace("GET", namespace, DISPATCH_RATE)

    def remove_namespace_dispatch_rate(self, namespace: str) -> None:
        self._namespace("DELETE", namespace, DISPATCH_RATE)

    def set_namespace_subscription_dispatch_rate(self, namespace: str, msg_rate: int = -1, byte_rate: int = -1,
                                                 period_s: int = 1, relative_to_publish_rate: bool = False) -> None:
        """Each subscription of the namespace's topics dispatches at most this much per ``period_s``."""
        self._namespace("POST", namespace, SUBSCRIPTION_DISPATCH_RATE,
                        dispatch_rate(msg_rate, byte_rate, period_s, relative_to_publish_rate))

    def get_namespace_subscription_dispatch_rate(self, namespace: str) -> dict[str, Any] | None:
        return self._namespace("GET", namespace, SUBSCRIPTION_DISPATCH_RATE)

    def remove_namespace_subscription_dispatch_rate(self, namespace: str) -> None:
        self._namespace("DELETE", namespace, SUBSCRIPTION_DISPATCH_RATE)

    def set_namespace_publish_rate(self, namespace: str, msg_rate: int = -1, byte_rate: int = -1) -> None:
        """Each topic of the namespace takes at most this much per second: faster producers are throttled."""
        self._namespace("POST", namespace, PUBLISH_RATE, publish_rate(msg_rate, byte_rate))

    def get_namespace_publish_rate(self, namespace: str) -> dict[str, Any] | None:
        return self._namespace("GET", namespace, PUBLISH_RATE)

    def remove_namespace_publish_rate(self, namespace: str) -> None:
        self._namespace("DELETE", namespace, PUBLISH_RATE)

    def set_namespace_subscribe_rate(self, namespace: str, rate: int = -1, period_s: int = 30) -> None:
        """Each consumer (client host and name) subscribes at most ``rate`` times per ``period_s`` to a topic."""
        self._namespace("POST", namespace, SUBSCRIBE_RATE, subscribe_rate(rate, period_s))

    def get_namespace_subscribe_rate(self, namespace: str) -> dict[str, Any] | None:
        return self._namespace("GET", namespace, SUBSCRIBE_RATE)

    def remove_namespace_subscribe_rate(self, namespace: str) -> None:
        self._namespace("DELETE", namespace, SUBSCRIBE_RATE)

    def set_namespace_resource_group(self, namespace: str, resource_group: str) -> None:
        """Attach the namespace to a resource group (its topics share the group's rates); the group must exist
        (``InvalidConfiguration``, Pulsar's 412)."""
        rest_of(self._wire, "set_namespace_resource_group").call(
            "POST", _namespace_path(namespace, "resourcegroup", resource_group), not_found=errors.NamespaceNotFound,
            refused=errors.InvalidConfiguration)

    def get_namespace_resource_group(self, namespace: str) -> str | None:
        found = rest_of(self._wire, "get_namespace_resource_group").call(
            "GET", _namespace_path(namespace, "resourcegroup"), not_found=errors.NamespaceNotFound)
        return found or None

    def remove_namespace_resource_group(self, namespace: str) -> None:
        rest_of(self._wire, "remove_namespace_resource_group").call(
            "DELETE", _namespace_path(namespace, "resourcegroup"), not_found=errors.NamespaceNotFound)

    # ------------------------------------------------------------------ topics
    def set_topic_dispatch_rate(self, topic: str, msg_rate: int = -1, byte_rate: int = -1, period_s: int = 1,
                                relative_to_publish_rate: bool = False) -> None:
        """The topic dispatches at most this much per ``period_s``, shared by its subscriptions (-1 for both
        rates lifts the namespace's and the broker's limit)."""
        self._topic("POST", topic, DISPATCH_RATE, dispatch_rate(msg_rate, byte_rate, period_s,
                                                                relative_to_publish_rate))

    def get_topic_dispatch_rate(self, topic: str, applied: bool = False) -> dict[str, Any] | None:
        return self._topic("GET", topic, DISPATCH_RATE, applied=applied)

    def remove_topic_dispatch_rate(self, topic: str) -> None:
        self._topic("DELETE", topic, DISPATCH_RATE)

    def set_topic_subscription_dispatch_rate(self, topic: str, msg_rate: int = -1, byte_rate: int = -1,
                                             period_s: int = 1, relative_to_publish_rate: bool = False,
                                             subscription: str | None = None) -> None:
        """Each subscription of the topic (or only ``subscription``, whose own rate wins) dispatches at most this
        much per ``period_s``."""
        rate = dispatch_rate(msg_rate, byte_rate, period_s, relative_to_publish_rate)
        if subscription is None:
            self._topic("POST", topic, SUBSCRIPTION_DISPATCH_RATE, rate)
        elif self._rest is not None:
            self._rest.call("POST", _topic_path(topic, subscription, DISPATCH_RATE), rate,
                            not_found=errors.TopicNotFound, refused=errors.InvalidConfiguration)
        else:
            policies = dict(self._grpc_get(SUBSCRIPTION_POLICIES, topic=topic) or {})
            policies[subscription] = {DISPATCH_RATE: rate}
            self._grpc_set(SUBSCRIPTION_POLICIES, policies, topic=topic)

    def get_topic_subscription_dispatch_rate(self, topic: str, applied: bool = False,
                                             subscription: str | None = None) -> dict[str, Any] | None:
        if subscription is None:
            return self._topic("GET", topic, SUBSCRIPTION_DISPATCH_RATE, applied=applied)
        if self._rest is not None:
            return self._rest.call("GET", _topic_path(topic, subscription, DISPATCH_RATE),
                                   query={"applied": "true"} if applied else None, not_found=errors.TopicNotFound)
        if applied:
            raise NotSupported("get_topic_subscription_dispatch_rate applied=True is served over the admin REST API"
                               " only", method="get_topic_subscription_dispatch_rate")
        return (self._grpc_get(SUBSCRIPTION_POLICIES, topic=topic) or {}).get(subscription, {}).get(DISPATCH_RATE)

    def remove_topic_subscription_dispatch_rate(self, topic: str, subscription: str | None = None) -> None:
        if subscription is None:
            self._topic("DELETE", topic, SUBSCRIPTION_DISPATCH_RATE)
        elif self._rest is not None:
            self._rest.call("DELETE", _topic_path(topic, subscription, DISPATCH_RATE), not_found=errors.TopicNotFound)
        else:
            policies = dict(self._grpc_get(SUBSCRIPTION_POLICIES, topic=topic) or {})
            if policies.pop(subscription, None) is not None:
                self._grpc_set(SUBSCRIPTION_POLICIES, policies or None, topic=topic)

    def set_topic_publish_rate(self, topic: str, msg_rate: int = -1, byte_rate: int = -1) -> None:
        self._topic("POST", topic, PUBLISH_RATE, publish_rate(msg_rate, byte_rate))

    def get_topic_publish_rate(self, topic: str) -> dict[str, Any] | None:
        return self._topic("GET", topic, PUBLISH_RATE)

    def remove_topic_publish_rate(self, topic: str) -> None:
        self._topic("DELETE", topic, PUBLISH_RATE)

    def set_topic_subscribe_rate(self, topic: str, rate: int = -1, period_s: int = 30) -> None:
        self._topic("POST", topic, SUBSCRIBE_RATE, subscribe_rate(rate, period_s))

    def get_topic_subscribe_rate(self, topic: str, applied: bool = False) -> dict[str, Any] | None:
        return self._topic("GET", topic, SUBSCRIBE_RATE, applied=applied)

    def remove_topic_subscribe_rate(self, topic: str) -> None:
        self._topic("DELETE", topic, SUBSCRIBE_RATE)

    def set_topic_resource_group(self, topic: str, resource_group: str | None) -> None:
        """Attach the topic itself to a resource group (None: detach it; its namespace's group applies then)."""
        rest_of(self._wire, "set_topic_resource_group").call(
            "POST", _topic_path(topic, "resourceGroup"), resource_group if resource_group is not None else None,
            not_found=errors.TopicNotFound)

    def get_topic_resource_group(self, topic: str) -> str | None:
        found = rest_of(self._wire, "get_topic_resource_group").call(
            "GET", _topic_path(topic, "resourceGroup"), not_found=errors.TopicNotFound)
        return found or None

    def remove_topic_resource_group(self, topic: str) -> None:
        self.set_topic_resource_group(topic, None)
