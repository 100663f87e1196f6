"""``/admin/v2/tenants``: list, create, get, update, delete, on the admin core's
:class:`~broker_core.core.admin.namespaces.TenantAdmin` (what ``pulsarlike admin tenants`` calls over gRPC).

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

from broker_core.core.admin.namespaces import TenantAdmin
from broker_core.core.registry import TopicRegistry
from broker_core.frontends.http.admin.access import BROKER, TENANT, needs, tenant_of
from broker_core.frontends.http.admin.answers import body, flag, obj, ok, strings
from broker_core.security import ADMIN, SUPER


async def tenant_info(request: web.Request) -> tuple[list[str], list[str]]:
    """(adminRoles, allowedClusters) of a TenantInfo body; both empty when there is none."""
    info = obj(await body(request, "TenantInfo", {}), "TenantInfo")
    return strings(info.get("adminRoles", []), "adminRoles"), strings(info.get("allowedClusters", []),
                                                                      "allowedClusters")


class TenantRoutes:
    def __init__(self, registry: TopicRegistry) -> None:
        self._tenants = TenantAdmin(registry)

    def routes(self) -> list[web.RouteDef]:
        return [
            web.get("/admin/v2/tenants", self.list_tenants),
            web.put("/admin/v2/tenants/{tenant}", self.create_tenant),
            web.get("/admin/v2/tenants/{tenant}", self.get_tenant),
            web.post("/admin/v2/tenants/{tenant}", self.update_tenant),
            web.delete("/admin/v2/tenants/{tenant}", self.delete_tenant),
        ]

    @needs(SUPER, BROKER)
    async def list_tenants(self, request: web.Request) -> web.Response:
        return ok(self._tenants.list())

    @needs(SUPER, TENANT)
    async def create_tenant(self, request: web.Request) -> web.Response:
        roles, clusters = await tenant_info(request)
        self._tenants.create(tenant_of(request), roles, clusters)
        return ok()

    @needs(ADMIN, TENANT)
    async def get_tenant(self, request: web.Request) -> web.Response:
        return ok(self._tenants.info(tenant_of(request)))

    @needs(SUPER, TENANT)
    async def update_tenant(self, request: web.Request) -> web.Response:
        roles, clusters = await tenant_info(request)  # Pulsar replaces the whole TenantInfo
        self._tenants.update(tenant_of(request), roles, clusters)
        return ok()

    @needs(SUPER, TENANT)
    async def delete_tenant(self, request: web.Request) -> web.Response:
        await self._tenants.delete(tenant_of(request), force=flag(request, "force"))
        return ok()
