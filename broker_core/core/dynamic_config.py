"""The broker's dynamic configuration (Pulsar's ``brokers/configuration``): keys Pulsar marks ``dynamic`` that
this broker applies while it runs, changed through the admin API, kept across restarts.

Pulsar stores the dynamic values in its metadata store and every broker applies them at once; so does this
broker, in ``metadata/dynamic-config.json`` plus its change log (:mod:`broker_core.core.metadata_log`), a map of
key -> value as text, as Pulsar's: ``{"dispatchThrottlingRatePerTopicInMsg": "1000"}``. At start the stored
values override ``broker.conf``'s (as Pulsar's do), and :attr:`DynamicConfig.current` is the configuration in
force; each change is durable, then applied (:meth:`DynamicConfig.on_change`'s listeners).

A key Pulsar does not mark dynamic, or one this broker only reads at start (:data:`AT_START`), is refused with
Pulsar's 412 ("Can't update non-dynamic configuration", with the reason), a value the key does not take with
Pulsar's 412 ("Invalid dynamic-config value", naming what it takes). :data:`DYNAMIC` says what each key changes.
"""
from __future__ import annotations

import dataclasses
import logging
from concurrent.futures import Executor
from pathlib import Path
from typing import Any, Callable, Iterable

from broker_core.config import BrokerConfig
from broker_core.core.metadata_log import MapLog
from broker_core.errors import InvalidConfiguration

log = logging.getLogger(__name__)

NAME = "dynamic-config"
RATES = "the rate limits of every loaded topic, at once (docs/rate-limits.md)"
DYNAMIC: dict[str, str] = {
    "dispatchThrottlingRatePerTopicInMsg": RATES,
    "dispatchThrottlingRatePerTopicInByte": RATES,
    "dispatchThrottlingRatePerSubscriptionInMsg": RATES,
    "dispatchThrottlingRatePerSubscriptionInByte": RATES,
    "dispatchThrottlingRateRelativeToPublishRate": RATES,
    "dispatchThrottlingRateInMsg": RATES,
    "dispatchThrottlingRateInByte": RATES,
    "maxPublishRatePerTopicInMessages": RATES,
    "maxPublishRatePerTopicInBytes": RATES,
    "brokerPublisherThrottlingMaxMessageRate": RATES,
    "brokerPublisherThrottlingMaxByteRate": RATES,
    "subscribeThrottlingRatePerConsumer": RATES,
    "subscribeRatePeriodPerConsumerInSecond": RATES,
    "autoSkipNonRecoverableData": "every subscription of the loaded topics, at its next read",
    "dispatcherMaxReadBatchSize": "every subscription of the loaded topics, at its next read",
}
"""The keys changed at run time -> what a change applies to."""
AT_START = {
    "superUserRoles": "the security layer reads it at start",
    "maxConcurrentLookupRequest": "the front ends size their admission at start",
    "brokerDeleteInactiveTopicsEnabled": "the inactive topic checks read it at start; set a namespace's"
                                         " inactiveTopicPolicies instead",
    "brokerDeleteInactiveTopicsFrequencySeconds": "the inactive topic checks read it at start",
    "brokerDeleteInactiveTopicsMode": "the inactive topic checks read it at start",
    "brokerDeleteInactiveTopicsMaxInactiveDurationSeconds": "the inactive topic checks read it at start",
}
"""Keys Pulsar marks dynamic that this broker reads only at start (refused, saying why)."""
HIDDEN = frozenset({"tokenSecretKey", "basicAuthConf"})
"""Keys whose values ``configuration/runtime`` does not show (they may hold a secret inline)."""


def _text(value: Any) -> str:
    """A value as Pulsar's configuration maps show it (Java's ``String.valueOf``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


class _Codec:
    """A stored map holds dynamic keys and text values (a key no longer dynamic is damage, named at start)."""

    def entries(self, document: Any) -> Iterable[tuple[str, Any]]:
        if not isinstance(document, dict):
            raise ValueError(f"a JSON object of configuration keys expected, not {type(document).__name__}")
        return document.items()

    def check(self, key: str, value: Any) -> Any:
        if key not in DYNAMIC:
            raise ValueError(f"{key[:64]!r} is not a dynamic configuration key")
        if value is not None and not isinstance(value, str):
            raise ValueError(f"the value of {key} must be text, not {value!r}"[:200])
        return value


class DynamicConfig:
    """``base`` (``broker.conf`` and the command line) with the dynamic values stored in ``directory``."""

    def __init__(self, directory: Path, base: BrokerConfig, executor: Executor | None = None) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self._log = MapLog(directory, NAME, executor, what="the dynamic configuration")
        self._values: dict[str, str] = self._log.load(_Codec())
        self._base = base
        self._listeners: list[Callable[[BrokerConfig], None]] = []
        try:
            self.current = base.with_overrides(self._values) if self._values else base
        except InvalidConfiguration as exc:  # a stored value the key no longer takes: start without it
            log.error("event=dynamic_config_refused error=%r", exc.message)
            self.current = base
        if self._values:
            log.info("event=dynamic_config_loaded keys=%s", ",".join(sorted(self._values)))

    def on_change(self, listener: Callable[[BrokerConfig], None]) -> None:
        """``listener(config)`` runs after each change, with the configuration now in force."""
        self._listeners.append(listener)

    # ------------------------------------------------------------------ reads
    def names(self) -> list[str]:
        """The keys that may be changed (Pulsar's ``GET brokers/configuration``)."""
        return sorted(DYNAMIC)

    def values(self) -> dict[str, str]:
        """The values set dynamically, as text (``GET brokers/configuration/values``)."""
        return dict(sorted(self._values.items()))

    def runtime(self) -> dict[str, str]:
        """Every key's value in force, as text (``GET brokers/configuration/runtime``); secrets hidden."""
        return {f.name: "******" if f.name in HIDDEN and getattr(self.current, f.name) else
                _text(getattr(self.current, f.name)) for f in dataclasses.fields(self.current)}

    # ------------------------------------------------------------------ changes
    def update(self, key: str, value: str) -> None:
        """Set ``key`` to ``value`` (text, converted as ``broker.conf``'s), durable, then applied."""
        self._check_dynamic(key, "update")
        try:
            updated = self.current.with_overrides({key: value})
        except InvalidConfiguration as exc:
            raise InvalidConfiguration(f"Invalid dynamic-config value: {exc.message}", key=key) from None
        self._values[key] = _text(getattr(updated, key))
        self._log.put(key, self._values[key], len(self._values), self.document)
        self._changed(updated, key)

    def delete(self, key: str) -> None:
        """Back to ``broker.conf``'s value (nothing set: nothing to do)."""
        self._check_dynamic(key, "delete")
        if self._values.pop(key, None) is None:
            return
        self._log.put(key, None, len(self._values), self.document)
        self._changed(self._base.with_overrides(self._values), key)

    def _check_dynamic(self, key: str, verb: str) -> None:
        if key in DYNAMIC:
            return
        known = {f.name for f in dataclasses.fields(BrokerConfig)}
        why = (AT_START.get(key) or ("this broker has no such key" if key not in known
                                     else "the broker reads it at start; change broker.conf and restart"))
        raise InvalidConfiguration(f"Can't {verb} non-dynamic configuration {key[:100]}: {why}", key=key[:100])

    def _changed(self, config: BrokerConfig, key: str) -> None:
        self.current = config
        log.info("event=dynamic_config_changed key=%s value=%s", key, self._values.get(key, "(broker.conf)"))
        for listener in self._listeners:
            listener(config)

    def document(self) -> dict[str, str]:
        return self._values

    def close(self) -> None:
        self._log.close()
