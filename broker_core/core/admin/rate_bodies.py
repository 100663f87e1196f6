"""The JSON type checks of the rate policies' bodies (:mod:`broker_core.core.rate_policies`), as the policy table
applies them to a REST body or a gRPC ``SetPolicy`` value: an object whose fields have their model's types
(``InvalidMessage`` naming the field: REST 400); a field left out takes Pulsar's default and an unknown one is
ignored, as Jackson reads Pulsar's models. Ranges are the store's to check (REST 412).

Example: ``dispatch_rate({"dispatchThrottlingRateInMsg": 100}, "dispatchRate")`` is ``{"dispatchThrottlingRateInMsg":
100, "dispatchThrottlingRateInByte": -1, "relativeToPublishRate": False, "ratePeriodInSecond": 1}``.
"""
from __future__ import annotations

from typing import Any, Callable

from broker_core.core.admin.values import boolean, integer, obj, text
from broker_core.core.rate_policies import DISPATCH_DEFAULTS, DISPATCH_RATE, PUBLISH_DEFAULTS, SUBSCRIBE_DEFAULTS


def _typed(defaults: dict[str, Any]) -> Callable[[Any, str], dict[str, Any]]:
    """The JSON type check of a body of the model whose fields and defaults are ``defaults``: an object, each
    field given of its default's type; the others take the default, unknown ones are ignored (as Jackson)."""
    def body(value: Any, field: str) -> dict[str, Any]:
        value = obj(value, field)
        found = {}
        for name, default in defaults.items():
            given = value.get(name, default)
            check = boolean if isinstance(default, bool) else integer
            found[name] = check(given, f"{field}.{name}")
        return found
    return body


dispatch_rate = _typed(DISPATCH_DEFAULTS)
publish_rate = _typed(PUBLISH_DEFAULTS)
subscribe_rate = _typed(SUBSCRIBE_DEFAULTS)


def subscription_policies(value: Any, field: str) -> dict[str, dict[str, Any]]:
    value = obj(value, field)
    return {text(name, f"{field} key"): {DISPATCH_RATE: dispatch_rate(obj(policy, f"{field}.{name}").get(
        DISPATCH_RATE, {}), f"{field}.{name}.{DISPATCH_RATE}")} for name, policy in value.items()}
