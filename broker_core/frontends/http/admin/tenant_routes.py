"""``/admin/v2/tenants``: list, create, get, update, delete, on the registry's
:class:`~broker_core.core.namespaces.NamespacesStore` (what ``pulsarlike admin tenants`` does over gRPC).

=====================================  ======================================================  ============
``GET /admin/v2/tenants``              ``["public", ...]``                                     super-user
``PUT /admin/v2/tenants/{tenant}``     TenantInfo ``{"adminRoles": [..], "allowedClusters":    super-user
                                       [..]}`` (optional); 204, 409 when it exists, 412 for a
                                       bad name or a cluster that is not this broker's
``GET /admin/v2/tenants/{tenant}``     TenantInfo; 404                                         tenant admin
``POST /admin/v2/tenants/{tenant}``    TenantInfo replacing the current one; 204, 404          super-user
``DELETE /admin/v2/tenants/{tenant}``  ``?force=true`` deletes its namespaces first; 204,      super-user
                                       409 while it has namespaces
=====================================  ======================================================  ============
"""
from __future__ import annotations

from aiohttp import web

from broker_core.core.registry import TopicRegistry
from broker_core.errors import InvalidConfiguration
from broker_core.frontends.http.admin.access import BROKER, TENANT, needs, tenant_of
from broker_core.frontends.http.admin.answers import body, flag, obj, ok, strings
from broker_core.security import ADMIN, SUPER


class TenantRoutes:
    def __init__(self, registry: TopicRegistry) -> None:
        self._registry = registry
        self._cluster = registry.config.clusterName

    def routes(self) -> list[web.RouteDef]:
        return [
            web.get("/admin/v2/tenants", self.list_tenants),
            web.put("/admin/v2/tenants/{tenant}", self.create_tenant),
            web.get("/admin/v2/tenants/{tenant}", self.get_tenant),
            web.post("/admin/v2/tenants/{tenant}", self.update_tenant),
            web.delete("/admin/v2/tenants/{tenant}", self.delete_tenant),
        ]

    async def _info(self, request: web.Request) -> tuple[list[str], list[str]]:
        """(adminRoles, allowedClusters) of a TenantInfo body; both empty when there is none."""
        info = obj(await body(request, "TenantInfo", {}), "TenantInfo")
        roles = strings(info.get("adminRoles", []), "adminRoles")
        clusters = strings(info.get("allowedClusters", []), "allowedClusters")
        unknown = [c for c in clusters if c != self._cluster]
        if unknown:  # Pulsar: 412 "Clusters do not exist"
            raise InvalidConfiguration(f"clusters {', '.join(c[:64] for c in unknown[:5])} do not exist: this"
                                       f" broker's only cluster is {self._cluster}", key="allowedClusters")
        return roles, clusters

    @needs(SUPER, BROKER)
    async def list_tenants(self, request: web.Request) -> web.Response:
        return ok(self._registry.namespaces.tenants())

    @needs(SUPER, TENANT)
    async def create_tenant(self, request: web.Request) -> web.Response:
        roles, clusters = await self._info(request)
        self._registry.namespaces.create_tenant(tenant_of(request), roles, clusters)
        return ok()

    @needs(ADMIN, TENANT)
    async def get_tenant(self, request: web.Request) -> web.Response:
        return ok(self._registry.namespaces.tenant_info(tenant_of(request)))

    @needs(SUPER, TENANT)
    async def update_tenant(self, request: web.Request) -> web.Response:
        roles, clusters = await self._info(request)  # Pulsar replaces the whole TenantInfo
        self._registry.namespaces.update_tenant(tenant_of(request), roles, clusters)
        return ok()

    @needs(SUPER, TENANT)
    async def delete_tenant(self, request: web.Request) -> web.Response:
        await self._registry.delete_tenant(tenant_of(request), force=flag(request, "force"))
        return ok()
