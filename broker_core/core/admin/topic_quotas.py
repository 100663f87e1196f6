"""A topic's backlog quotas (``pulsar-admin topics get-backlog-quotas|set-backlog-quota|remove-backlog-quota``,
Pulsar's ``backlogQuotaMap``/``backlogQuota`` topic routes), once for REST and gRPC.

Stored as the topic-level ``backlogQuota`` policy (a map of quota type to quota, as the namespace's). Each type
is in force on a topic as Pulsar's ``PolicyHierarchyValue`` resolves it: the topic's quota of that type, else
its partitioned topic's, else its namespace's (:func:`~broker_core.core.backlog_quota.quotas_in_force`), so a
topic that sets only ``destination_storage`` still has its namespace's ``message_age``. Reading with
``applied`` answers as Pulsar's ``getBacklogQuotaMap(applied=true)``: the topic's map when it has one, else its
namespace's.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from broker_core.core.admin.namespaces import NamespaceAdmin, Scope
from broker_core.core.backlog_quota import STORAGE, as_pulsar, check_quota, check_type
from broker_core.core.policies import BACKLOG_QUOTA
from broker_core.errors import InvalidMessage
from broker_core.types import TopicName

if TYPE_CHECKING:
    from broker_core.core.registry import TopicRegistry


def checked_quota(quota: Any) -> dict[str, Any]:
    """Pulsar's ``BacklogQuota`` body as stored: a field of the wrong JSON type is ``InvalidMessage`` (400), a
    value out of range ``InvalidConfiguration`` (412)."""
    if not isinstance(quota, dict):
        raise InvalidMessage("BacklogQuota: expected a JSON object", field="BacklogQuota")
    for field in ("limit", "limitSize", "limitTime"):
        if field in quota and (isinstance(quota[field], bool) or not isinstance(quota[field], int)):
            raise InvalidMessage(f"BacklogQuota.{field}: expected an integer", field=f"BacklogQuota.{field}")
    return check_quota("BacklogQuota", quota)


class TopicQuotaAdmin:
    """The backlog quotas of the topics of ``registry`` (a topic that does not exist is ``TopicNotFound``)."""

    def __init__(self, registry: "TopicRegistry") -> None:
        self._policies = NamespaceAdmin(registry)

    def _map(self, scope: Scope) -> dict[str, dict[str, Any]]:
        return dict(self._policies.policies(scope).get(BACKLOG_QUOTA) or {})

    def quotas(self, topic: TopicName, applied: bool = False) -> dict[str, dict[str, Any]]:
        """The topic's own quotas by type, as Pulsar's ``BacklogQuota`` (``{}``: none); ``applied``: its
        namespace's when it has none."""
        found = self._map(Scope.of_topic(topic))
        if applied and not found:
            found = self._map(Scope.of_namespace(topic.namespace_name))
        return {quota_type: as_pulsar(quota) for quota_type, quota in found.items()}

    def set_quota(self, topic: TopicName, quota: Any, quota_type: str = STORAGE) -> None:
        """Set the topic's quota of ``quota_type`` (``destination_storage`` or ``message_age``); the broker
        checks every loaded topic against it at once."""
        quota_type = check_type(quota_type)
        scope = Scope.of_topic(topic)
        found = self._map(scope)
        found[quota_type] = checked_quota(quota)
        self._policies.set_policy(scope, BACKLOG_QUOTA, found)

    def remove_quota(self, topic: TopicName, quota_type: str = STORAGE) -> None:
        """Remove the topic's quota of ``quota_type``: its namespace's of that type applies again."""
        quota_type = check_type(quota_type)
        scope = Scope.of_topic(topic)
        found = {kind: quota for kind, quota in self._map(scope).items() if kind != quota_type}
        self._policies.set_policy(scope, BACKLOG_QUOTA, found or None)
