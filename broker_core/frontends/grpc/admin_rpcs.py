"""Tenant, namespace, permission and policy calls of the ``PulsarLike`` service (``pulsarlike admin
tenants|namespaces``, ``... set-*|grant-permission|permissions``): protobuf in and out, the work done by the
admin core's :class:`~broker_core.core.admin.namespaces.TenantAdmin` and
:class:`~broker_core.core.admin.namespaces.NamespaceAdmin` (the REST routes' too: a policy's type is checked
by the same table, :mod:`broker_core.core.admin.policy_table`).

A component of :class:`~broker_core.frontends.grpc.servicer.BrokerServicer`: each method serves the RPC of its
name, takes the request and returns the reply; errors are turned into gRPC statuses by
:func:`~broker_core.frontends.grpc.handlers.answer`.
"""
from __future__ import annotations

import json

from broker_core.core.admin.namespaces import NamespaceAdmin, Scope, TenantAdmin
from broker_core.core.registry import TopicRegistry
from broker_core.errors import InvalidMessage
from broker_core.protocol import broker_pb2 as pb


def scope_of(scope: pb.PolicyScope) -> Scope:
    """The namespace or topic of a request; exactly one of them (``InvalidMessage`` otherwise)."""
    return Scope.of(scope.namespace, scope.topic)


class AdminRpcs:
    """Tenants, namespaces, their permissions and policies."""

    def __init__(self, registry: TopicRegistry) -> None:
        self._tenants = TenantAdmin(registry)
        self._namespaces = NamespaceAdmin(registry)

    # ================================================================== tenants and namespaces
    def ListTenants(self, request: pb.Empty) -> pb.NameList:
        return pb.NameList(names=self._tenants.list())

    def GetTenant(self, request: pb.TenantRequest) -> pb.TenantInfo:
        info = self._tenants.info(request.tenant)
        return pb.TenantInfo(tenant=request.tenant, admin_roles=info["adminRoles"],
                             allowed_clusters=info["allowedClusters"])

    def CreateTenant(self, request: pb.TenantInfo) -> pb.Empty:
        self._tenants.create(request.tenant, request.admin_roles, request.allowed_clusters)
        return pb.Empty()

    def UpdateTenant(self, request: pb.UpdateTenantRequest) -> pb.Empty:
        info = request.info
        self._tenants.update(info.tenant, info.admin_roles if request.set_admin_roles else None,
                             info.allowed_clusters if request.set_allowed_clusters else None)
        return pb.Empty()

    async def DeleteTenant(self, request: pb.DeleteTenantRequest) -> pb.Empty:
        await self._tenants.delete(request.tenant, force=request.force)
        return pb.Empty()

    def ListNamespaces(self, request: pb.TenantRequest) -> pb.NameList:
        return pb.NameList(names=self._namespaces.list(request.tenant))

    def CreateNamespace(self, request: pb.NamespaceRequest) -> pb.Empty:
        self._namespaces.create(request.namespace)
        return pb.Empty()

    async def DeleteNamespace(self, request: pb.DeleteNamespaceRequest) -> pb.Empty:
        await self._namespaces.delete(request.namespace, force=request.force)
        return pb.Empty()

    # ================================================================== permissions
    def GrantPermission(self, request: pb.PermissionRequest) -> pb.Empty:
        self._namespaces.grant(scope_of(request.scope), request.role, list(request.actions))
        return pb.Empty()

    def RevokePermission(self, request: pb.PermissionRequest) -> pb.Empty:
        self._namespaces.revoke(scope_of(request.scope), request.role)
        return pb.Empty()

    def GetPermissions(self, request: pb.PolicyScope) -> pb.JsonResponse:
        return pb.JsonResponse(json=json.dumps(self._namespaces.permissions(scope_of(request)), sort_keys=True))

    # ================================================================== policies
    def SetPolicy(self, request: pb.PolicyRequest) -> pb.Empty:
        scope = scope_of(request.scope)
        try:
            value = json.loads(request.value_json) if request.value_json else None
        except ValueError:
            raise InvalidMessage(f"policy {request.key}: value {request.value_json[:200]!r} is not JSON") from None
        except RecursionError:  # nested deeper than the parser goes: no policy is
            raise InvalidMessage(f"policy {request.key}: value nested too deeply") from None
        self._namespaces.set_policy(scope, request.key, value)
        return pb.Empty()

    def GetPolicies(self, request: pb.PolicyScope) -> pb.JsonResponse:
        return pb.JsonResponse(json=json.dumps(self._namespaces.policies(scope_of(request)), sort_keys=True))
