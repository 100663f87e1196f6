"""Tenant, namespace, permission and policy calls of the ``PulsarLike`` service (``pulsarlike admin
tenants|namespaces``, ``... set-*|grant-permission|permissions``): protobuf in and out, the work done by
:class:`~broker_core.core.registry.TopicRegistry`, :class:`~broker_core.core.namespaces.NamespacesStore` and
:class:`~broker_core.core.policies.PoliciesStore`.

A component of :class:`~broker_core.frontends.grpc.servicer.BrokerServicer`: each method serves the RPC of its
name, takes the request and returns the reply; errors are turned into gRPC statuses by
:func:`~broker_core.frontends.grpc.handlers.answer`.
"""
from __future__ import annotations

import json

from broker_core.core.policies import NAMESPACE, TOPIC
from broker_core.core.registry import TopicRegistry
from broker_core.errors import InvalidMessage
from broker_core.protocol import broker_pb2 as pb
from broker_core.types import TopicName


def permission_scope(scope: pb.PolicyScope) -> tuple[str, str, str]:
    """(policies scope, canonical name, namespace) of a permission request; exactly one of namespace/topic."""
    if bool(scope.namespace) == bool(scope.topic):
        raise InvalidMessage("a permission applies to a namespace or to a topic: set exactly one of them")
    if scope.namespace:
        return NAMESPACE, scope.namespace, scope.namespace
    topic = TopicName.parse(scope.topic)
    return TOPIC, str(topic), topic.namespace_name


def policy_scope(scope: pb.PolicyScope) -> tuple[str, str]:
    """(policies scope, name) of a policy request; exactly one of namespace/topic."""
    if bool(scope.namespace) == bool(scope.topic):
        raise InvalidMessage("a policy applies to a namespace or to a topic: set exactly one of them")
    return (NAMESPACE, scope.namespace) if scope.namespace else (TOPIC, scope.topic)


class AdminRpcs:
    """Tenants, namespaces, their permissions and policies."""

    def __init__(self, registry: TopicRegistry) -> None:
        self._registry = registry

    # ================================================================== tenants and namespaces
    def ListTenants(self, request: pb.Empty) -> pb.NameList:
        return pb.NameList(names=self._registry.namespaces.tenants())

    def GetTenant(self, request: pb.TenantRequest) -> pb.TenantInfo:
        info = self._registry.namespaces.tenant_info(request.tenant)
        return pb.TenantInfo(tenant=request.tenant, admin_roles=info["adminRoles"],
                             allowed_clusters=info["allowedClusters"])

    def CreateTenant(self, request: pb.TenantInfo) -> pb.Empty:
        self._registry.namespaces.create_tenant(request.tenant, request.admin_roles, request.allowed_clusters)
        return pb.Empty()

    def UpdateTenant(self, request: pb.UpdateTenantRequest) -> pb.Empty:
        info = request.info
        self._registry.namespaces.update_tenant(
            info.tenant, info.admin_roles if request.set_admin_roles else None,
            info.allowed_clusters if request.set_allowed_clusters else None)
        return pb.Empty()

    async def DeleteTenant(self, request: pb.DeleteTenantRequest) -> pb.Empty:
        await self._registry.delete_tenant(request.tenant, force=request.force)
        return pb.Empty()

    def ListNamespaces(self, request: pb.TenantRequest) -> pb.NameList:
        return pb.NameList(names=self._registry.namespaces.namespaces(request.tenant))

    def CreateNamespace(self, request: pb.NamespaceRequest) -> pb.Empty:
        self._registry.create_namespace(request.namespace)
        return pb.Empty()

    async def DeleteNamespace(self, request: pb.DeleteNamespaceRequest) -> pb.Empty:
        await self._registry.delete_namespace(request.namespace, force=request.force)
        return pb.Empty()

    # ================================================================== permissions
    def GrantPermission(self, request: pb.PermissionRequest) -> pb.Empty:
        scope, name, namespace = permission_scope(request.scope)
        self._registry.namespaces.check_exists(namespace)
        self._registry.policies.grant(scope, name, request.role, list(request.actions))
        return pb.Empty()

    def RevokePermission(self, request: pb.PermissionRequest) -> pb.Empty:
        scope, name, namespace = permission_scope(request.scope)
        self._registry.namespaces.check_exists(namespace)
        self._registry.policies.revoke(scope, name, request.role)
        return pb.Empty()

    def GetPermissions(self, request: pb.PolicyScope) -> pb.JsonResponse:
        scope, name, namespace = permission_scope(request)
        self._registry.namespaces.check_exists(namespace)
        return pb.JsonResponse(json=json.dumps(self._registry.policies.permissions(scope, name), sort_keys=True))

    # ================================================================== policies
    def SetPolicy(self, request: pb.PolicyRequest) -> pb.Empty:
        scope, name = policy_scope(request.scope)
        try:
            value = json.loads(request.value_json) if request.value_json else None
        except ValueError:
            raise InvalidMessage(f"policy {request.key}: value {request.value_json[:200]!r} is not JSON") from None
        except RecursionError:  # nested deeper than the parser goes: no policy is
            raise InvalidMessage(f"policy {request.key}: value nested too deeply") from None
        self._registry.set_policy(scope, name, request.key, value)
        return pb.Empty()

    def GetPolicies(self, request: pb.PolicyScope) -> pb.JsonResponse:
        scope, name = policy_scope(request)
        return pb.JsonResponse(json=json.dumps(self._registry.get_policies(scope, name), sort_keys=True))
