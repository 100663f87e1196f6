"""Tenants, namespaces, their permissions and policies as the admin API serves them, once for REST
(``/admin/v2/tenants``, ``/admin/v2/namespaces``, a topic's policies and permissions) and gRPC (``CreateTenant``,
``SetPolicy``, ``GrantPermission``, ...), over the registry's stores (:class:`~broker_core.core.namespaces.
NamespacesStore`, :class:`~broker_core.core.policies.PoliciesStore`).

- Tenants: ``TenantInfo`` ``{"adminRoles": [...], "allowedClusters": [...]}``; a cluster other than the
  broker's one is refused (``InvalidConfiguration``: Pulsar's 412 "Clusters do not exist").
- Policies: one policy by its key or REST segment (:mod:`.policy_table`), its type checked there and its range
  by the store; a namespace's all at once as Pulsar's ``Policies`` (:meth:`NamespaceAdmin.pulsar_policies`); a
  topic's only once the topic exists (``TopicNotFound``).
- Backlog quotas: the ``backlogQuota`` policy is a map by quota type (``destination_storage``,
  ``message_age``), set and removed one type at a time, answered as Pulsar's ``BacklogQuota``.
- Permissions: ``role -> actions`` of a namespace or a topic.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable

from broker_core.core import topic_lookup
from broker_core.core.admin.policy_table import BY_KEY, POLICIES, checked
from broker_core.core.backlog_quota import STORAGE, as_pulsar, check_quota, check_type
from broker_core.core.policies import BACKLOG_QUOTA, NAMESPACE, SCHEMA_STRATEGY, TOPIC
from broker_core.core.policy_checks import MAX_MESSAGE_SIZE, SUBSCRIPTION_AUTH_ROLES
from broker_core.errors import InvalidConfiguration, InvalidMessage, TopicNotFound
from broker_core.types import TopicName

if TYPE_CHECKING:
    from broker_core.core.registry import TopicRegistry


class Scope:
    """What a policy or a permission applies to: a namespace (``tenant/ns``) or a topic."""

    def __init__(self, kind: str, name: str, namespace: str) -> None:
        self.kind, self.name, self.namespace = kind, name, namespace

    @classmethod
    def of_namespace(cls, namespace: str) -> "Scope":
        return cls(NAMESPACE, namespace, namespace)

    @classmethod
    def of_topic(cls, topic: TopicName) -> "Scope":
        return cls(TOPIC, str(topic), topic.namespace_name)

    @classmethod
    def of(cls, namespace: str, topic: str) -> "Scope":
        """Exactly one of ``namespace`` and ``topic`` (gRPC's ``PolicyScope``); ``InvalidMessage`` otherwise."""
        if bool(namespace) == bool(topic):
            raise InvalidMessage("a policy or a permission applies to a namespace or to a topic: set exactly one"
                                 " of them")
        return cls.of_namespace(namespace) if namespace else cls.of_topic(TopicName.parse(topic))


class TenantAdmin:
    """The tenants of ``registry``."""

    def __init__(self, registry: "TopicRegistry") -> None:
        self._registry = registry
        self._store = registry.namespaces
        self._cluster = registry.config.clusterName

    def list(self) -> list[str]:
        return self._store.tenants()

    def info(self, tenant: str) -> dict[str, list[str]]:
        """Pulsar's ``TenantInfo``."""
        return self._store.tenant_info(tenant)

    def _clusters(self, clusters: Iterable[str]) -> list[str]:
        clusters = list(clusters)
        unknown = [c for c in clusters if c != self._cluster]
        if unknown:  # Pulsar: 412 "Clusters do not exist"
            raise InvalidConfiguration(f"clusters {', '.join(c[:64] for c in unknown[:5])} do not exist: this"
                                       f" broker's only cluster is {self._cluster}", key="allowedClusters")
        return clusters

    def create(self, tenant: str, admin_roles: Iterable[str] = (), allowed_clusters: Iterable[str] = ()) -> None:
        self._store.create_tenant(tenant, list(admin_roles), self._clusters(allowed_clusters))

    def update(self, tenant: str, admin_roles: Iterable[str] | None, allowed_clusters: Iterable[str] | None) -> None:
        """Replace what is given (None: kept as it is)."""
        self._store.update_tenant(tenant, None if admin_roles is None else list(admin_roles),
                                  None if allowed_clusters is None else self._clusters(allowed_clusters))

    async def delete(self, tenant: str, *, force: bool = False) -> None:
        """A tenant without namespaces, or (``force``) its namespaces and their topics first."""
        await self._registry.delete_tenant(tenant, force=force)


class NamespaceAdmin:
    """The namespaces of ``registry``, their policies and permissions, and the topics' own."""

    def __init__(self, registry: "TopicRegistry") -> None:
        self._registry = registry
        self._policies = registry.policies
        self._cluster = registry.config.clusterName

    # ------------------------------------------------------------------ namespaces
    def list(self, tenant: str) -> list[str]:
        return self._registry.namespaces.namespaces(tenant)

    def create(self, namespace: str) -> None:
        self._registry.create_namespace(namespace)

    async def delete(self, namespace: str, *, force: bool = False) -> None:
        """An empty namespace, or (``force``) every topic in it first, connected clients or not."""
        await self._registry.delete_namespace(namespace, force=force)

    def topics(self, namespace: str, mode: str = "PERSISTENT") -> list[str]:
        """Its topics of ``mode`` (``PERSISTENT``, ``NON_PERSISTENT`` or ``ALL``), as regex subscriptions ask."""
        return topic_lookup.namespace_topics(self._registry, namespace, mode)

    def pulsar_policies(self, namespace: str) -> dict[str, Any]:
        """Pulsar's ``Policies`` of a namespace: the fields this broker has (those of :mod:`.policy_table`, the
        backlog quotas, the permissions), one bundle and this broker's cluster."""
        stored = self._registry.get_policies(NAMESPACE, namespace)
        found: dict[str, Any] = {
            "auth_policies": {"namespace_auth": self._policies.permissions(NAMESPACE, namespace),
                              "destination_auth": {},
                              "subscription_auth_roles": stored.get(SUBSCRIPTION_AUTH_ROLES) or {}},
            "replication_clusters": [self._cluster],
            "bundles": {"boundaries": ["0x00000000", "0xffffffff"], "numBundles": 1},
            "deleted": False,
            "backlog_quota_map": {kind: as_pulsar(quota) for kind, quota in (stored.get(BACKLOG_QUOTA) or {}).items()},
        }
        for policy in POLICIES:
            if policy.pulsar_field:
                value = stored.get(policy.key)
                if policy.per_cluster:  # the rates: Pulsar keeps them by cluster
                    found[policy.pulsar_field] = {} if value is None else {self._cluster: value}
                elif value is None and (policy.unset_config or policy.null_in_policies):
                    found[policy.pulsar_field] = None  # Pulsar's Policies holds null: the broker's then
                else:
                    found[policy.pulsar_field] = policy.unset if value is None else value
        return found

    # ------------------------------------------------------------------ one policy
    def _checked(self, scope: Scope) -> None:
        """The scope exists: its namespace, and a topic (or partitioned topic) itself."""
        self._registry.namespaces.check_exists(scope.namespace)
        if scope.kind == TOPIC:
            topic = TopicName.parse(scope.name)
            if not (self._registry.partitions_of(topic) or self._registry.exists(topic)):
                raise TopicNotFound(f"topic {topic} does not exist", topic=str(topic))

    def policies(self, scope: Scope) -> dict[str, Any]:
        """Every policy set on ``scope`` by key (not the inherited ones)."""
        self._checked(scope)
        return self._registry.get_policies(scope.kind, scope.name)

    def policy(self, scope: Scope, key: str) -> Any:
        """Policy ``key`` of ``scope`` (what is set on it; unset: the table's ``unset``, usually None)."""
        value = self.policies(scope).get(key)
        if value is not None or key not in BY_KEY:
            return value
        policy = BY_KEY[key]
        if scope.kind == TOPIC:
            return policy.topic_unset
        return getattr(self._registry.config, policy.unset_config) if policy.unset_config else policy.unset

    def set_policy(self, scope: Scope, key: str, value: Any) -> None:
        """Set policy ``key`` (``value`` None: remove it) and apply it to the loaded topics."""
        value = checked(key, value)
        if scope.kind == TOPIC and key == SCHEMA_STRATEGY and value == "UNDEFINED":
            value = None  # a topic's UNDEFINED is its namespace's: Pulsar removes it
        broker_limit = self._registry.config.maxMessageSize
        if key == MAX_MESSAGE_SIZE and isinstance(value, int) and value > broker_limit:
            raise InvalidConfiguration(f"topic-level maxMessageSize must be at most the broker's maxMessageSize"
                                       f" ({broker_limit}), not {value}", key=key)
        self._checked(scope)
        self._registry.set_policy(scope.kind, scope.name, key, value)

    def remove_policy(self, scope: Scope, key: str) -> None:
        self.set_policy(scope, key, None)

    # ------------------------------------------------------------------ backlog quotas
    def backlog_quotas(self, namespace: str) -> dict[str, dict[str, Any]]:
        """Every quota by type, as Pulsar's ``BacklogQuota``."""
        quotas = self.policies(Scope.of_namespace(namespace)).get(BACKLOG_QUOTA) or {}
        return {quota_type: as_pulsar(quota) for quota_type, quota in quotas.items()}

    def backlog_quota(self, namespace: str, quota_type: str = STORAGE) -> dict[str, Any] | None:
        """The quota of ``quota_type`` (None: unset)."""
        return self.backlog_quotas(namespace).get(check_type(quota_type))

    def set_backlog_quota(self, namespace: str, quota: Any, quota_type: str = STORAGE) -> None:
        """Set the quota of ``quota_type`` from Pulsar's ``BacklogQuota`` ``{"limitSize", "limitTime",
        "policy"}``: a field of the wrong type is ``InvalidMessage``, a value out of range ``InvalidConfiguration``."""
        quota_type = check_type(quota_type)
        if not isinstance(quota, dict):
            raise InvalidMessage("BacklogQuota: expected a JSON object")
        for field in ("limit", "limitSize", "limitTime"):
            if field in quota and (isinstance(quota[field], bool) or not isinstance(quota[field], int)):
                raise InvalidMessage(f"BacklogQuota.{field}: expected an integer", field=f"BacklogQuota.{field}")
        scope = Scope.of_namespace(namespace)
        quotas = dict(self.policies(scope).get(BACKLOG_QUOTA) or {})
        quotas[quota_type] = check_quota("BacklogQuota", quota)
        self.set_policy(scope, BACKLOG_QUOTA, quotas)

    def remove_backlog_quota(self, namespace: str, quota_type: str = STORAGE) -> None:
        quota_type = check_type(quota_type)
        scope = Scope.of_namespace(namespace)
        quotas = {t: q for t, q in (self.policies(scope).get(BACKLOG_QUOTA) or {}).items() if t != quota_type}
        self.set_policy(scope, BACKLOG_QUOTA, quotas or None)

    # ------------------------------------------------------------------ permissions
    def permissions(self, scope: Scope) -> dict[str, list[str]]:
        """``role -> actions`` granted on ``scope`` itself."""
        self._registry.namespaces.check_exists(scope.namespace)
        return self._policies.permissions(scope.kind, scope.name)

    def grant(self, scope: Scope, role: str, actions: Any) -> None:
        self._registry.namespaces.check_exists(scope.namespace)
        self._policies.grant(scope.kind, scope.name, role, actions)

    def revoke(self, scope: Scope, role: str) -> None:
        self._registry.namespaces.check_exists(scope.namespace)
        self._policies.revoke(scope.kind, scope.name, role)
