"""Resource groups as the admin API serves them (REST ``/admin/v2/resourcegroups``, a namespace's
``resourcegroup``, a topic's ``resourceGroup``; :mod:`broker_core.core.resource_groups` keeps them and shares
their limits), with Pulsar's answers:

- ``PUT resourcegroups/{name}`` creates the group, or updates the fields given other than -1 (Pulsar's
  read-modify-write); a field of the wrong JSON type is ``InvalidMessage`` (400); unknown fields are ignored;
- ``GET``/``DELETE`` of a group that does not exist: ``ResourceGroupNotFound`` (404); deleting one a namespace
  or topic is attached to: ``ResourceGroupInUse`` (409, "ResourceGroup is in use");
- attaching a namespace to a group that does not exist: ``InvalidConfiguration`` (412, "ResourceGroup does not
  exist"), a topic: ``ResourceGroupNotFound`` (404).

Each change applies at once: the loaded topics of the group's namespaces and topics charge its limits.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from broker_core.core.admin.namespaces import NamespaceAdmin, Scope
from broker_core.core.admin.values import integer, obj, text
from broker_core.core.rate_policies import RESOURCE_GROUP
from broker_core.core.resource_groups import FIELDS, UNSET
from broker_core.errors import InvalidConfiguration, ResourceGroupInUse, ResourceGroupNotFound
from broker_core.types import TopicName

if TYPE_CHECKING:
    from broker_core.core.registry import TopicRegistry


def resource_group_body(value: Any) -> dict[str, int]:
    """Pulsar's ``ResourceGroup`` as a request carries it (fields left out or null -- what pulsar-admin sends for
    a flag not given --: -1, not set)."""
    value = obj(value, "ResourceGroup")
    return {field: integer(UNSET if value.get(field) is None else value[field], f"ResourceGroup.{field}")
            for field in FIELDS}


class ResourceGroupAdmin:
    """The resource groups of ``registry`` and what is attached to them."""

    def __init__(self, registry: "TopicRegistry") -> None:
        self._registry = registry
        self._groups = registry.resource_groups
        self._namespaces = NamespaceAdmin(registry)

    def list(self) -> list[str]:
        return self._groups.names()

    def get(self, name: str) -> dict[str, int]:
        """Pulsar's ``ResourceGroup``."""
        group = self._groups.get(name)
        if group is None:
            raise ResourceGroupNotFound(f"ResourceGroup does not exist: {name[:64]}", resourcegroup=name[:64])
        return group

    def put(self, name: str, body: Any) -> bool:
        """Create or update the group from Pulsar's ``ResourceGroup`` body; True when it was created."""
        created = self._groups.put(name, resource_group_body(body))
        self._registry.rates_changed()
        return created

    def delete(self, name: str) -> None:
        self.get(name)
        holders = self._registry.policies.holders(RESOURCE_GROUP, name)
        if holders:
            raise ResourceGroupInUse(f"ResourceGroup is in use: {name[:64]} is attached to {holders[0][:200]}"
                                     + (f" and {len(holders) - 1} more" if len(holders) > 1 else "")
                                     + "; detach it first", resourcegroup=name[:64], used_by=holders[0][:200])
        self._groups.delete(name)
        self._registry.rates_changed()

    # ------------------------------------------------------------------ attachments
    def namespace_group(self, namespace: str) -> str | None:
        """The group ``tenant/ns`` is attached to (None: none)."""
        return self._namespaces.policy(Scope.of_namespace(namespace), RESOURCE_GROUP)

    def attach_namespace(self, namespace: str, name: str) -> None:
        if not self._groups.exists(name):  # Pulsar: 412
            raise InvalidConfiguration(f"ResourceGroup does not exist: {name[:64]}", resourcegroup=name[:64])
        self._namespaces.set_policy(Scope.of_namespace(namespace), RESOURCE_GROUP, name)

    def detach_namespace(self, namespace: str) -> None:
        self._namespaces.remove_policy(Scope.of_namespace(namespace), RESOURCE_GROUP)

    def topic_group(self, topic: TopicName) -> str | None:
        """The group the topic itself is attached to (None: none; its namespace's may apply)."""
        return self._namespaces.policy(Scope.of_topic(topic), RESOURCE_GROUP)

    def attach_topic(self, topic: TopicName, name: Any) -> None:
        name = text(name, "resourceGroupName").strip().strip('"')
        self.get(name)
        self._namespaces.set_policy(Scope.of_topic(topic), RESOURCE_GROUP, name)

    def detach_topic(self, topic: TopicName) -> None:
        self._namespaces.remove_policy(Scope.of_topic(topic), RESOURCE_GROUP)
