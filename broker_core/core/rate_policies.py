"""The rate policies of namespaces and topics, with Pulsar's names and JSON shapes, and the resource group a
namespace or topic is attached to. :mod:`broker_core.core.policies` registers the store's validators
(:data:`CHECKS`: range and shape, ``InvalidConfiguration``, REST 412); the policy table the JSON type checks of
a body (:mod:`broker_core.core.admin.rate_bodies`: ``InvalidMessage``, REST 400), which fill in Pulsar's
defaults for the fields left out, as Jackson does. What they do: :mod:`broker_core.core.throttling`.

===========================  ==============================================================================
``dispatchRate``             Pulsar's ``DispatchRate`` of a topic (namespace: ``topicDispatchRate``):
                             ``{"dispatchThrottlingRateInMsg": -1, "dispatchThrottlingRateInByte": -1,
                             "relativeToPublishRate": false, "ratePeriodInSecond": 1}`` (a rate <= 0: not
                             limited that way; the period >= 1)
``subscriptionDispatchRate`` the same, for each subscription of the topic
``subscriptionPolicies``     a topic's: ``{subscription: {"dispatchRate": DispatchRate}}`` (Pulsar's
                             ``SubscriptionPolicies``, set by ``topics set-subscription-dispatch-rate -s``)
``publishRate``              Pulsar's ``PublishRate`` (namespace: ``publishMaxMessageRate``):
                             ``{"publishThrottlingRateInMsg": -1, "publishThrottlingRateInByte": -1}`` per
                             second
``subscribeRate``            Pulsar's ``SubscribeRate`` (namespace: ``clusterSubscribeRate``):
                             ``{"subscribeThrottlingRatePerConsumer": -1, "ratePeriodInSecond": 30}``
``resourceGroupName``        the name of a resource group (:mod:`broker_core.core.resource_groups`)
===========================  ==============================================================================
"""
from __future__ import annotations

import re
from typing import Any, Callable

from broker_core.errors import InvalidConfiguration

DISPATCH_RATE = "dispatchRate"
SUBSCRIPTION_DISPATCH_RATE = "subscriptionDispatchRate"
SUBSCRIPTION_POLICIES = "subscriptionPolicies"
PUBLISH_RATE = "publishRate"
SUBSCRIBE_RATE = "subscribeRate"
RESOURCE_GROUP = "resourceGroupName"

DISPATCH_DEFAULTS = {"dispatchThrottlingRateInMsg": -1, "dispatchThrottlingRateInByte": -1,
                     "relativeToPublishRate": False, "ratePeriodInSecond": 1}
"""Pulsar's ``DispatchRateImpl`` defaults, in its field order."""
PUBLISH_DEFAULTS = {"publishThrottlingRateInMsg": -1, "publishThrottlingRateInByte": -1}
SUBSCRIBE_DEFAULTS = {"subscribeThrottlingRatePerConsumer": -1, "ratePeriodInSecond": 30}
MAX_RATE = (1 << 63) - 1
"""Rates are Java longs."""
GROUP_NAME = re.compile(r"[A-Za-z0-9_\-=:.]{1,256}")
"""A resource group's name: Pulsar's ``NamedEntity`` characters."""


def _refused(key: str, expected: str, value: Any) -> InvalidConfiguration:
    return InvalidConfiguration(f"policy {key} takes {expected}, not {value!r}"[:400], key=key)


def _model(defaults: dict[str, Any], periods: tuple[str, ...]) -> Callable[[str, Any], dict[str, Any]]:
    """The store's check of a model: exactly its fields, of their types; rates in a long's range (<= 0: not
    limited); ``periods`` >= 1 (a period of 0 would renew a budget without end)."""
    def check(key: str, value: Any) -> dict[str, Any]:
        if not isinstance(value, dict) or set(value) != set(defaults):
            raise _refused(key, "{" + ", ".join(f"{name!r}: ..." for name in defaults) + "}", value)
        for name, default in defaults.items():
            given = value[name]
            if isinstance(default, bool):
                if not isinstance(given, bool):
                    raise _refused(f"{key}.{name}", "true or false", given)
            elif isinstance(given, bool) or not isinstance(given, int) or not -MAX_RATE <= given <= MAX_RATE:
                raise _refused(f"{key}.{name}", "an integer", given)
            elif name in periods and given < 1:
                raise _refused(f"{key}.{name}", "an integer >= 1 (seconds)", given)
        return {name: value[name] for name in defaults}
    return check


check_dispatch_rate = _model(DISPATCH_DEFAULTS, ("ratePeriodInSecond",))
check_publish_rate = _model(PUBLISH_DEFAULTS, ())
check_subscribe_rate = _model(SUBSCRIBE_DEFAULTS, ("ratePeriodInSecond",))


def check_subscription_policies(key: str, value: Any) -> dict[str, dict[str, Any]]:
    if not isinstance(value, dict) or not all(isinstance(name, str) and name for name in value):
        raise _refused(key, "{subscription: {'dispatchRate': {...}}}", value)
    found = {}
    for name, policy in value.items():
        if not isinstance(policy, dict) or set(policy) != {DISPATCH_RATE}:
            raise _refused(f"{key}.{name}", "{'dispatchRate': {...}}", policy)
        found[name] = {DISPATCH_RATE: check_dispatch_rate(f"{key}.{name}.{DISPATCH_RATE}", policy[DISPATCH_RATE])}
    return found


def check_name(key: str, value: Any) -> str:
    if not isinstance(value, str) or not GROUP_NAME.fullmatch(value):
        raise _refused(key, "a resource group name (letters, digits and _-=:.)", value)
    return value


CHECKS: dict[str, Callable[[str, Any], Any]] = {
    DISPATCH_RATE: check_dispatch_rate,
    SUBSCRIPTION_DISPATCH_RATE: check_dispatch_rate,
    SUBSCRIPTION_POLICIES: check_subscription_policies,
    PUBLISH_RATE: check_publish_rate,
    SUBSCRIBE_RATE: check_subscribe_rate,
    RESOURCE_GROUP: check_name,
}
"""Validators of the rate policies, by key (registered in :data:`broker_core.core.policies.POLICIES`)."""


def dispatch_enabled(rate: dict[str, Any] | None) -> bool:
    """Whether a ``DispatchRate`` limits anything (Pulsar's ``isDispatchRateEnabled``)."""
    return rate is not None and (rate["dispatchThrottlingRateInMsg"] > 0 or rate["dispatchThrottlingRateInByte"] > 0)
