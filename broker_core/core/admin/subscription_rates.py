"""A subscription's own dispatch rate (Pulsar's ``{domain}/{tenant}/{ns}/{topic}/{subName}/dispatchRate``,
``topics set-subscription-dispatch-rate -s``): kept in the topic's ``subscriptionPolicies`` policy
(``{subscription: {"dispatchRate": DispatchRate}}``, :mod:`broker_core.core.rate_policies`), it wins over the
topic's and namespace's ``subscriptionDispatchRate`` for that subscription on every partition of the topic. The
subscription need not exist yet (as Pulsar's topic policies); the topic must (``TopicNotFound``)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from broker_core.core.admin.namespaces import NamespaceAdmin, Scope
from broker_core.core.admin.rate_bodies import dispatch_rate
from broker_core.core.rate_policies import DISPATCH_RATE, SUBSCRIPTION_POLICIES
from broker_core.types import TopicName

if TYPE_CHECKING:
    from broker_core.core.registry import TopicRegistry


class SubscriptionRates:
    """Subscriptions' own dispatch rates on the topics of ``registry``."""

    def __init__(self, registry: "TopicRegistry") -> None:
        self._namespaces = NamespaceAdmin(registry)

    def _policies(self, topic: TopicName) -> dict[str, dict[str, Any]]:
        return dict(self._namespaces.policy(Scope.of_topic(topic), SUBSCRIPTION_POLICIES) or {})

    def get(self, topic: TopicName, subscription: str) -> dict[str, Any] | None:
        """The subscription's ``DispatchRate`` (None: it has none of its own)."""
        return self._policies(topic).get(subscription, {}).get(DISPATCH_RATE)

    def set(self, topic: TopicName, subscription: str, body: Any) -> None:
        policies = self._policies(topic)
        policies[subscription] = {DISPATCH_RATE: dispatch_rate(body, "DispatchRate")}
        self._namespaces.set_policy(Scope.of_topic(topic), SUBSCRIPTION_POLICIES, policies)

    def remove(self, topic: TopicName, subscription: str) -> None:
        policies = self._policies(topic)
        if policies.pop(subscription, None) is not None:
            self._namespaces.set_policy(Scope.of_topic(topic), SUBSCRIPTION_POLICIES, policies or None)
