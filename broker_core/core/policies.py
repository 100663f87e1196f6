"""Namespace and topic policies that override the broker's configuration, persisted across restarts.

A policy is looked up topic first (the topic itself, then the partitioned topic it is a partition of),
then its namespace, then the broker config -- as Pulsar resolves topic-level over namespace-level over
broker-level settings. Stored as one JSON snapshot plus a change log of the entries changed since (one line
per change, :mod:`broker_core.core.metadata_log`); the snapshot::

    {"namespaces": {"public/default": {"deduplicationEnabled": true,
                                       "retention": {"retentionTimeInMinutes": 60, "retentionSizeInMB": -1}}},
     "topics": {"persistent://public/default/t": {"deduplicationEnabled": false, "messageTTLInSeconds": 300}}}

Policies: ``deduplicationEnabled`` (bool); ``retention`` (``retentionTimeInMinutes``, ``retentionSizeInMB``:
-1 infinite, 0 none; see :mod:`broker_core.core.retention_rules`); ``messageTTLInSeconds`` (0: no TTL);
``maxProducersPerTopic`` and ``maxConsumersPerTopic`` (0: no limit; enforced per topic partition, the
namespace's and the topic's own under the same names); ``subscriptionExpirationTimeMinutes`` (0: never; see
:mod:`broker_core.core.subscription_expiry`); ``backlogQuota`` (quota type -> ``limitSize``, ``limitTime``,
``policy``; see :mod:`broker_core.core.backlog_quota`); ``autoTopicCreation`` (Pulsar's
AutoTopicCreationOverride: ``allowAutoTopicCreation``, ``topicType``, ``defaultNumPartitions``; overrides
the broker's ``allowAutoTopicCreation*``); ``schemaCompatibilityStrategy`` (one of
:data:`~broker_core.core.schema_compat.STRATEGIES`; ``UNDEFINED`` is the broker's default, BACKWARD).
``compactionThreshold`` (bytes of backlog not yet compacted above which the topic is compacted, 0: never;
see :mod:`broker_core.core.persistent.compaction_runs`). The others of Pulsar's ``Policies`` (subscription
and unacked limits, delayed delivery, inactive topics, schema and encryption rules, properties...):
:mod:`broker_core.core.policy_checks`. A topic-level ``retention`` replaces the
namespace's as a whole, as in Pulsar. Negative values (other than retention's -1) are refused.

Permissions (``grant-permission``) are stored beside them under ``permissions`` (role -> sorted actions,
``produce`` and/or ``consume``), on a namespace or a topic; unlike the other policies they add up, as
Pulsar's: a role may do on a topic what the topic, its partitioned topic and its namespace grant together
(:meth:`PoliciesStore.granted_actions`). They are set only through :meth:`PoliciesStore.grant` /
:meth:`PoliciesStore.revoke`, never with ``set``::

    {"namespaces": {"acme/orders": {"permissions": {"billing": ["consume"]}}},
     "topics": {"persistent://acme/orders/t": {"permissions": {"shop": ["produce"]}}}}
"""
from __future__ import annotations

from concurrent.futures import Executor
from pathlib import Path
from typing import Any, Callable, Iterable

from broker_core.errors import InvalidConfiguration
from broker_core.core.backlog_quota import check_quota_map
from broker_core.core import rate_policies
from broker_core.core import policy_checks
from broker_core.core.namespaces import check_namespace_name
from broker_core.core.schema_compat import STRATEGIES
from broker_core.core.metadata_log import MapLog
from broker_core.types import TopicName


def _bool(key: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise InvalidConfiguration(f"policy {key} takes true or false, not {value!r}", key=key)
    return value


def _int(key: str, value: Any, *, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        accepted = "-1 (infinite) or an integer >= 0" if minimum == -1 else f"an integer >= {minimum}"
        raise InvalidConfiguration(f"policy {key} takes {accepted}, not {value!r}", key=key)
    return value


RETENTION_TIME, RETENTION_SIZE = "retentionTimeInMinutes", "retentionSizeInMB"


def _retention(key: str, value: Any) -> dict[str, int]:
    """Pulsar's RetentionPolicies: both limits, -1 infinite, 0 none; a single 0 next to a non-zero limit
    is refused as Pulsar refuses it (use -1 to ignore one limit)."""
    if not isinstance(value, dict) or set(value) != {RETENTION_TIME, RETENTION_SIZE}:
        raise InvalidConfiguration(f"policy {key} takes {{{RETENTION_TIME!r}: int, {RETENTION_SIZE!r}: int}},"
                                   f" not {value!r}", key=key)
    time_min = _int(f"{key}.{RETENTION_TIME}", value[RETENTION_TIME], minimum=-1)
    size_mb = _int(f"{key}.{RETENTION_SIZE}", value[RETENTION_SIZE], minimum=-1)
    if (time_min == 0) != (size_mb == 0):
        raise InvalidConfiguration(
            f"policy {key}: {RETENTION_TIME}={time_min} with {RETENTION_SIZE}={size_mb} is not valid: a single"
            " limit of 0 next to a non-zero one is refused (as Pulsar does); use -1 to ignore a limit, or set"
            " both to 0 for no retention", key=key)
    return {RETENTION_TIME: time_min, RETENTION_SIZE: size_mb}


AUTO_TOPIC_CREATION = "autoTopicCreation"
MAX_AUTO_PARTITIONS = 4096
"""The most partitions an auto-created partitioned topic has (the registry's limit on partitioned topics)."""


def _auto_topic_creation(key: str, value: Any) -> dict[str, Any]:
    """Pulsar's AutoTopicCreationOverride: ``allowAutoTopicCreation``, ``topicType`` (``non-partitioned`` or
    ``partitioned``) and, for partitioned topics only, ``defaultNumPartitions`` (1..4096)."""
    if not isinstance(value, dict) or not {"allowAutoTopicCreation", "topicType"} <= set(value) or not set(
            value) <= {"allowAutoTopicCreation", "topicType", "defaultNumPartitions"}:
        raise InvalidConfiguration(f"policy {key} takes {{'allowAutoTopicCreation': bool, 'topicType':"
                                   f" 'non-partitioned'|'partitioned', 'defaultNumPartitions': int}}, not"
                                   f" {value!r}"[:300], key=key)
    allow = _bool(f"{key}.allowAutoTopicCreation", value["allowAutoTopicCreation"])
    topic_type = value["topicType"]
    partitions = value.get("defaultNumPartitions")
    if topic_type == "partitioned":
        if isinstance(partitions, bool) or not isinstance(partitions, int) or not 0 < partitions <= \
                MAX_AUTO_PARTITIONS:
            raise InvalidConfiguration(f"policy {key}: a partitioned topicType needs defaultNumPartitions between"
                                       f" 1 and {MAX_AUTO_PARTITIONS}, not {partitions!r}"[:200], key=key)
        return {"allowAutoTopicCreation": allow, "topicType": topic_type, "defaultNumPartitions": partitions}
    if topic_type != "non-partitioned":
        raise InvalidConfiguration(f"policy {key}.topicType takes non-partitioned or partitioned, not"
                                   f" {topic_type!r}"[:200], key=key)
    if partitions is not None:
        raise InvalidConfiguration(f"policy {key}: defaultNumPartitions is for a partitioned topicType only"
                                   " (as Pulsar's override)", key=key)
    return {"allowAutoTopicCreation": allow, "topicType": topic_type}


SCHEMA_STRATEGY = "schemaCompatibilityStrategy"


def _strategy(key: str, value: Any) -> str:
    if value not in STRATEGIES:
        raise InvalidConfiguration(f"policy {key} takes one of {', '.join(STRATEGIES)}, not {value!r}"[:300],
                                   key=key)
    return value


BACKLOG_QUOTA = "backlogQuota"

POLICIES: dict[str, Callable[[str, Any], Any]] = {
    BACKLOG_QUOTA: check_quota_map,
    AUTO_TOPIC_CREATION: _auto_topic_creation,
    SCHEMA_STRATEGY: _strategy,
    "deduplicationEnabled": _bool,
    "retention": _retention,
    "messageTTLInSeconds": lambda key, value: _int(key, value, minimum=0),
    "maxProducersPerTopic": lambda key, value: _int(key, value, minimum=0),
    "maxConsumersPerTopic": lambda key, value: _int(key, value, minimum=0),
    "subscriptionExpirationTimeMinutes": lambda key, value: _int(key, value, minimum=0),
    "compactionThreshold": lambda key, value: _int(key, value, minimum=0),
    **rate_policies.CHECKS,
    **policy_checks.CHECKS,
}
"""Known policy names and their validators (the value as JSON decodes it); the later ones of Pulsar's
``Policies`` are :mod:`broker_core.core.policy_checks`'."""

NAME = "policies"
"""The map's name: ``policies.json`` and its change log (:mod:`broker_core.core.metadata_log`)."""
NAMESPACE, TOPIC = "namespaces", "topics"
_SEP = "\t"
"""Between scope and name in a change's key (neither holds a tab)."""
PERMISSIONS = "permissions"
ACTIONS = ("produce", "consume")
"""What ``grant-permission`` grants (Pulsar's ``AuthAction``; ``functions``, ``sources``, ``sinks`` and
``packages`` have nothing to act on here)."""


def check_actions(actions: Any) -> list[str]:
    """``actions`` as a sorted list of known actions; ``InvalidConfiguration`` naming a wrong one."""
    if isinstance(actions, str) or not actions:
        raise InvalidConfiguration(f"actions must be a non-empty list of {', '.join(ACTIONS)}, not {actions!r}")
    found = []
    for action in actions:
        if action not in ACTIONS:
            raise InvalidConfiguration(f"unknown action {action!r}; grant one of {', '.join(ACTIONS)}",
                                       action=str(action))
        found.append(action)
    return sorted(set(found))


class PoliciesCodec:
    """A snapshot is ``{"namespaces": {name: entry}, "topics": {name: entry}}``; a change's key is
    ``scope<TAB>name``. An entry holds known policies that pass their validators and well-formed
    ``permissions``: anything else is damage (:mod:`broker_core.core.metadata_files`), never a silent change
    of what a role may do."""

    def entries(self, document: Any) -> Iterable[tuple[str, Any]]:
        if not isinstance(document, dict) or not set(document) <= {NAMESPACE, TOPIC}:
            raise ValueError('{"namespaces": {...}, "topics": {...}} expected')
        scopes = [(scope, document.get(scope, {})) for scope in (NAMESPACE, TOPIC)]
        if not all(isinstance(entries, dict) for _, entries in scopes):
            raise ValueError("namespaces and topics must be JSON objects")
        return [(f"{scope}{_SEP}{name}", entry) for scope, entries in scopes for name, entry in entries.items()]

    def check(self, key: str, value: Any) -> Any:
        scope, _, name = key.partition(_SEP)
        if scope not in (NAMESPACE, TOPIC) or PoliciesStore.scope_key(scope, name) != name:
            raise ValueError(f"{key!r} is not scope<TAB>name of a namespace or a topic")
        if value is None:
            return None
        if not isinstance(value, dict):
            raise ValueError(f"the policies of {name} must be a JSON object")
        entry = {}
        for policy, setting in value.items():
            if policy == PERMISSIONS:
                if not isinstance(setting, dict) or not all(isinstance(r, str) and r.strip() for r in setting):
                    raise ValueError(f"{PERMISSIONS} of {name} must map roles to actions")
                entry[policy] = {role: check_actions(actions) for role, actions in setting.items()}
            elif policy in POLICIES:
                entry[policy] = POLICIES[policy](policy, setting)
            else:
                raise ValueError(f"unknown policy {policy!r} on {name}"[:200])
        return entry


class PoliciesStore:
    def __init__(self, directory: Path, executor: Executor | None = None) -> None:
        """``executor`` writes the snapshot when the change log is compacted (see :mod:`.metadata_log`)."""
        directory.mkdir(parents=True, exist_ok=True)
        self._log = MapLog(directory, NAME, executor, what="the policies and permissions")
        self._data: dict[str, dict[str, dict[str, Any]]] = {NAMESPACE: {}, TOPIC: {}}
        for key, entry in self._log.load(PoliciesCodec()).items():
            scope, name = key.split(_SEP, 1)
            self._data[scope][name] = entry

    @staticmethod
    def scope_key(scope: str, name: str) -> str:
        """The canonical key of a namespace (``tenant/ns``) or a topic (fully qualified name)."""
        if scope == NAMESPACE:
            check_namespace_name(name)
            return name
        if scope == TOPIC:
            return str(TopicName.parse(name))
        raise InvalidConfiguration(f"unknown policy scope {scope!r}; use namespace or topic")

    def set(self, scope: str, name: str, key: str, value: Any) -> None:
        """Set (or with ``value=None`` remove) one policy."""
        if key not in POLICIES:
            raise InvalidConfiguration(f"unknown policy {key!r}; known: {', '.join(sorted(POLICIES))}",
                                       key=key)
        name = self.scope_key(scope, name)
        entries = self._data[scope]
        if value is None:
            policies = entries.get(name, {})
            if policies.pop(key, None) is None:
                return
            if not policies:
                entries.pop(name, None)
        else:
            entries.setdefault(name, {})[key] = POLICIES[key](key, value)
        self._save(scope, name)

    def get(self, scope: str, name: str) -> dict[str, Any]:
        """The policies set on a namespace or topic (its permissions are read with :meth:`permissions`)."""
        policies = dict(self._data[scope].get(self.scope_key(scope, name), {}))
        policies.pop(PERMISSIONS, None)
        return policies

    # ------------------------------------------------------------------ permissions
    def grant(self, scope: str, name: str, role: str, actions: Any) -> None:
        """``role`` may do ``actions`` on the namespace's topics or on the topic (replacing what it was
        granted there before, as Pulsar's grant does)."""
        if not isinstance(role, str) or not role.strip():
            raise InvalidConfiguration(f"role must be a non-empty string, not {role!r}")
        granted = check_actions(actions)
        key = self.scope_key(scope, name)
        entry = self._data[scope].setdefault(key, {})
        entry.setdefault(PERMISSIONS, {})[role.strip()] = granted
        self._save(scope, key)

    def revoke(self, scope: str, name: str, role: str) -> None:
        """Remove what ``role`` was granted on the namespace or topic (nothing granted: nothing to do)."""
        key = self.scope_key(scope, name)
        entry = self._data[scope].get(key, {})
        if entry.get(PERMISSIONS, {}).pop(role, None) is None:
            return
        if not entry[PERMISSIONS]:
            del entry[PERMISSIONS]
        if not entry:
            self._data[scope].pop(key, None)
        self._save(scope, key)

    def permissions(self, scope: str, name: str) -> dict[str, list[str]]:
        """Role -> actions granted on exactly this namespace or topic."""
        entry = self._data[scope].get(self.scope_key(scope, name), {})
        return {role: list(actions) for role, actions in entry.get(PERMISSIONS, {}).items()}

    def granted_actions(self, topic: TopicName | None, namespace: str, role: str) -> set[str]:
        """What ``role`` may do on ``topic`` (its own grants, its partitioned topic's and its namespace's), or
        on the namespace itself when ``topic`` is None."""
        actions: set[str] = set(self._data[NAMESPACE].get(namespace, {}).get(PERMISSIONS, {}).get(role, ()))
        if topic is not None:
            for name in {str(topic), str(topic.partitioned_base)}:
                actions.update(self._data[TOPIC].get(name, {}).get(PERMISSIONS, {}).get(role, ()))
        return actions

    def resolve(self, topic: TopicName, key: str, default: Any) -> Any:
        """The effective value for ``topic``: topic, partitioned base topic, namespace, ``default``."""
        topics = self._data[TOPIC]
        for name in (str(topic), str(topic.partitioned_base)):
            policies = topics.get(name)
            if policies is not None and key in policies:
                return policies[key]
        policies = self._data[NAMESPACE].get(f"{topic.tenant}/{topic.namespace}")
        if policies is not None and key in policies:
            return policies[key]
        return default

    def holders(self, key: str, value: Any) -> list[str]:
        """The namespaces and topics whose policy ``key`` is ``value`` (a resource group's attachments)."""
        return [name for scope in (NAMESPACE, TOPIC) for name, policies in self._data[scope].items()
                if policies.get(key) == value]

    def forget_topic(self, topic: str) -> None:
        if self._data[TOPIC].pop(topic, None) is not None:
            self._save(TOPIC, topic)

    def forget_namespace(self, namespace: str) -> None:
        """Drop the namespace's policies and those of every topic in it (the namespace is deleted)."""
        topics = [t for t in self._data[TOPIC] if TopicName.parse(t).namespace_name == namespace]
        if self._data[NAMESPACE].pop(namespace, None) is not None:
            self._save(NAMESPACE, namespace)
        for t in topics:
            del self._data[TOPIC][t]
            self._save(TOPIC, t)

    def namespaces(self) -> list[str]:
        """Namespaces that have policies (adopted as existing by an older data folder)."""
        return list(self._data[NAMESPACE])

    def _save(self, scope: str, name: str) -> None:
        """Record the entry of ``name`` as it is now (gone: removed): one appended line, synced."""
        self._log.put(f"{scope}{_SEP}{name}", self._data[scope].get(name), sum(map(len, self._data.values())),
                      self._snapshot)

    def _snapshot(self) -> dict:
        return self._data  # encoded at once by the change log, on this thread

    def close(self) -> None:
        self._log.close()
