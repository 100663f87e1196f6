"""Resource groups (Pulsar's ``/admin/v2/resourcegroups``, PIP-82): named publish and dispatch rates shared by
every topic of the namespaces (and topics) attached to the group, persisted across restarts.

A group is Pulsar's ``ResourceGroup``: ``{"publishRateInMsgs": -1, "publishRateInBytes": -1,
"dispatchRateInMsgs": -1, "dispatchRateInBytes": -1}`` per second (a rate <= 0: not limited that way). Pulsar's
brokers share a group's quota among themselves by the usage each reports; a broker alone gets all of it, which
is what this broker enforces: the topics of the group together publish and dispatch at most its rates (one
:class:`~broker_core.core.publish_throttle.PublishLimiter` and one :class:`~dispatch.throttle.RateLimit` per
group, charged by every topic attached to it, through :mod:`broker_core.core.throttling`).

Stored as ``metadata/resource-groups.json`` plus its change log (:mod:`broker_core.core.metadata_log`):
``{"rg1": {"publishRateInMsgs": 100, ...}}``. Attachments are policies (``resourceGroupName`` of a namespace or
a topic, :mod:`broker_core.core.rate_policies`); a group still attached is not deleted.
"""
from __future__ import annotations

from concurrent.futures import Executor
from pathlib import Path
from typing import Any, Iterable

from broker_core.clock import Clock
from broker_core.core.metadata_log import MapLog
from broker_core.core.publish_throttle import Later, PublishLimiter
from broker_core.core.rate_policies import GROUP_NAME
from broker_core.errors import InvalidConfiguration
from dispatch.throttle import RateLimit

NAME = "resource-groups"
"""The map's name: ``resource-groups.json`` and its change log."""
FIELDS = ("publishRateInMsgs", "publishRateInBytes", "dispatchRateInMsgs", "dispatchRateInBytes")
"""Pulsar's ``ResourceGroup`` (its replication rates are geo-replication's: not here)."""
UNSET = -1


def check_group(name: str, value: Any) -> dict[str, int]:
    """A stored group: every field, integers."""
    if not isinstance(value, dict) or set(value) != set(FIELDS) or not all(
            isinstance(value[f], int) and not isinstance(value[f], bool) for f in FIELDS):
        raise ValueError(f"resource group {name!r} must be {{{', '.join(FIELDS)}}} as integers, not {value!r}"[:300])
    return {f: value[f] for f in FIELDS}


class GroupsCodec:
    """A snapshot is ``{name: group}``."""

    def entries(self, document: Any) -> Iterable[tuple[str, Any]]:
        if not isinstance(document, dict):
            raise ValueError(f"a JSON object of resource groups expected, not {type(document).__name__}")
        return document.items()

    def check(self, key: str, value: Any) -> Any:
        if not GROUP_NAME.fullmatch(key):
            raise ValueError(f"{key[:64]!r} is not a resource group name")
        return None if value is None else check_group(key, value)


class ResourceGroups:
    """The resource groups, each change durable before it returns, and each group's shared limiters."""

    def __init__(self, directory: Path, clock: Clock, later: Later, executor: Executor | None = None) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self._log = MapLog(directory, NAME, executor, what="the resource groups")
        self._groups: dict[str, dict[str, int]] = self._log.load(GroupsCodec())
        self._clock = clock
        self._later = later
        self._publish: dict[str, PublishLimiter] = {}
        self._dispatch: dict[str, RateLimit] = {}

    def names(self) -> list[str]:
        return sorted(self._groups)

    def get(self, name: str) -> dict[str, int] | None:
        group = self._groups.get(name)
        return None if group is None else dict(group)

    def exists(self, name: str) -> bool:
        return name in self._groups

    def put(self, name: str, group: dict[str, int]) -> bool:
        """Create the group, or update it as Pulsar does (only the fields given other than -1 change); True when
        it was created."""
        if not isinstance(name, str) or not GROUP_NAME.fullmatch(name):
            raise InvalidConfiguration(f"invalid resource group name {name[:64]!r}: letters, digits and _-=:.",
                                       resourcegroup=str(name)[:64])
        current = self._groups.get(name)
        if current is None:
            stored = {f: group.get(f, UNSET) for f in FIELDS}
        else:
            stored = {f: group[f] if group.get(f, UNSET) != UNSET else current[f] for f in FIELDS}
        self._groups[name] = stored
        self._log.put(name, stored, len(self._groups), self.document)
        self._refresh(name)
        return current is None

    def delete(self, name: str) -> bool:
        """Remove the group; False when there was none. Its limiters resume whoever they throttle."""
        if self._groups.pop(name, None) is None:
            return False
        self._log.put(name, None, len(self._groups), self.document)
        self._refresh(name)
        return True

    def document(self) -> dict[str, dict[str, int]]:
        return self._groups

    # ------------------------------------------------------------------ shared limiters
    def publish_limiter(self, name: str | None) -> PublishLimiter | None:
        """The limiter every topic of group ``name`` charges what it takes to (None: the group limits nothing)."""
        group = self._groups.get(name) if name else None
        if group is None or (group["publishRateInMsgs"] <= 0 and group["publishRateInBytes"] <= 0):
            return None
        limiter = self._publish.get(name)  # type: ignore[arg-type]
        if limiter is None:
            limiter = self._publish[name] = PublishLimiter(group["publishRateInMsgs"], group["publishRateInBytes"],
                                                           self._clock, self._later)
        return limiter

    def dispatch_limit(self, name: str | None) -> RateLimit | None:
        """The dispatch limit every topic of group ``name`` shares (None: the group limits nothing)."""
        group = self._groups.get(name) if name else None
        if group is None or (group["dispatchRateInMsgs"] <= 0 and group["dispatchRateInBytes"] <= 0):
            return None
        limit = self._dispatch.get(name)  # type: ignore[arg-type]
        if limit is None:
            limit = self._dispatch[name] = RateLimit(group["dispatchRateInMsgs"], group["dispatchRateInBytes"], 1,
                                                     clock=self._clock)
        return limit

    def _refresh(self, name: str) -> None:
        """The group changed: its limiters take the new rates (or go, resuming what they held)."""
        group = self._groups.get(name)
        limiter = self._publish.get(name)
        if limiter is not None:
            if group is None or (group["publishRateInMsgs"] <= 0 and group["publishRateInBytes"] <= 0):
                del self._publish[name]
                limiter.close()
            elif (limiter.msg_rate, limiter.byte_rate) != (max(group["publishRateInMsgs"], 0),
                                                           max(group["publishRateInBytes"], 0)):
                limiter.set_rate(group["publishRateInMsgs"], group["publishRateInBytes"])
        limit = self._dispatch.get(name)
        if limit is not None:
            if group is None or (group["dispatchRateInMsgs"] <= 0 and group["dispatchRateInBytes"] <= 0):
                del self._dispatch[name]
            else:
                limit.set_rate(group["dispatchRateInMsgs"], group["dispatchRateInBytes"], 1)

    def close(self) -> None:
        self._log.close()
