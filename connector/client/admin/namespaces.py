"""Tenant and namespace calls of :class:`~connector.client.admin.Admin` (``pulsar-admin tenants ...``,
``pulsar-admin namespaces create|list|delete``)."""
from __future__ import annotations

from typing import Iterable

from broker_core import errors
from broker_core.protocol import broker_pb2

from connector.client.admin.wire import UnaryWire

TOPIC_MODES = {"PERSISTENT": ("persistent",), "NON_PERSISTENT": ("non-persistent",),
               "ALL": ("persistent", "non-persistent")}
"""``list_namespace_topics``' modes (Pulsar's ``ListNamespaceTopicsOptions.Mode``) -> the domains each lists."""


class NamespacesAdmin:
    """Tenants and namespaces: a part of :class:`~connector.client.admin.Admin`, which serves its public
    methods."""

    def __init__(self, wire: UnaryWire) -> None:
        self._wire = wire

    # --- tenants -------------------------------------------------------------------------------------
    def list_tenants(self) -> list[str]:
        return list(self._wire.unary("ListTenants", broker_pb2.Empty()))

    def get_tenant(self, tenant: str) -> dict[str, list[str]]:
        """``{"adminRoles": [...], "allowedClusters": [...]}`` (``TenantNotFound`` when missing)."""
        return self._wire.unary("GetTenant", broker_pb2.TenantRequest(tenant=tenant))

    def create_tenant(self, tenant: str, admin_roles: Iterable[str] | None = None,
                      allowed_clusters: Iterable[str] | None = None) -> None:
        """A new tenant (``TenantAlreadyExists`` when it exists); ``allowed_clusters`` defaults to the
        broker's cluster. Admin roles are kept and shown, not enforced (no authentication here)."""
        self._wire.unary("CreateTenant", broker_pb2.TenantInfo(
            tenant=tenant, admin_roles=_strings("admin_roles", admin_roles),
            allowed_clusters=_strings("allowed_clusters", allowed_clusters)))

    def update_tenant(self, tenant: str, admin_roles: Iterable[str] | None = None,
                      allowed_clusters: Iterable[str] | None = None) -> None:
        """Replace the admin roles and/or allowed clusters given (None keeps the current ones)."""
        self._wire.unary("UpdateTenant", broker_pb2.UpdateTenantRequest(
            info=broker_pb2.TenantInfo(tenant=tenant, admin_roles=_strings("admin_roles", admin_roles),
                                       allowed_clusters=_strings("allowed_clusters", allowed_clusters)),
            set_admin_roles=admin_roles is not None, set_allowed_clusters=allowed_clusters is not None))

    def delete_tenant(self, tenant: str, force: bool = False) -> None:
        """Delete a tenant; one with namespaces is refused (``TenantNotEmpty``) unless ``force``, which
        deletes its namespaces and their topics first."""
        self._wire.unary("DeleteTenant", broker_pb2.DeleteTenantRequest(tenant=tenant, force=force))

    # --- namespaces ----------------------------------------------------------------------------------
    def list_namespaces(self, tenant: str) -> list[str]:
        """``tenant/namespace`` names of the tenant (``TenantNotFound`` when missing)."""
        return list(self._wire.unary("ListNamespaces", broker_pb2.TenantRequest(tenant=tenant)))

    def list_namespace_topics(self, namespace: str, mode: str = "PERSISTENT") -> list[str]:
        """The topic partitions and non-partitioned topics of ``tenant/namespace`` in ``mode``'s domains
        (``PERSISTENT``, Pulsar's default, ``NON_PERSISTENT`` or ``ALL``): ``pulsar-admin namespaces topics``
        (``NamespaceNotFound`` when missing). Over ``admin_url``: ``GET namespaces/{tenant}/{ns}/topics?mode=``,
        as Pulsar's admin sends it."""
        if not isinstance(mode, str) or mode.upper() not in TOPIC_MODES:
            raise ValueError(f"mode={mode!r} is not valid; use one of {', '.join(TOPIC_MODES)}")
        mode = mode.upper()
        transport = getattr(self._wire, "transport", None)
        if transport is not None:  # Pulsar's admin REST API: one route answers it
            from connector.client.admin.rest_wire import namespace_path
            return list(transport.call("GET", namespace_path(namespace, "topics"), query={"mode": mode},
                                       not_found=errors.NamespaceNotFound) or [])
        topics = self._wire.unary("ListTopics", broker_pb2.ListTopicsRequest(namespace=namespace))
        return [t for t in topics if t.split("://", 1)[0] in TOPIC_MODES[mode]]

    def create_namespace(self, namespace: str) -> None:
        """A new ``tenant/namespace`` (the tenant must exist; ``NamespaceAlreadyExists`` when it does)."""
        self._wire.unary("CreateNamespace", broker_pb2.NamespaceRequest(namespace=namespace))

    def delete_namespace(self, namespace: str, force: bool = False) -> None:
        """Delete a namespace and its policies; one with topics is refused (``NamespaceNotEmpty``) unless
        ``force``, which deletes its topics first, connected clients or not."""
        self._wire.unary("DeleteNamespace", broker_pb2.DeleteNamespaceRequest(
            namespace=namespace, force=force))


def _strings(name: str, values: Iterable[str] | None) -> list[str]:
    if values is None:
        return []
    if isinstance(values, str):
        raise TypeError(f"{name} takes a list of names, not the string {values!r}")
    return [str(v) for v in values]
