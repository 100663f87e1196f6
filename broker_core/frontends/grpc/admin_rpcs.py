"""The servicer's tenant, namespace and subscription-admin calls (``pulsarlike admin``): protobuf in and
out, the work done by :class:`~broker_core.core.registry.TopicRegistry`,
:class:`~broker_core.core.namespaces.NamespacesStore` and :mod:`broker_core.core.persistent.cursor_admin`.

A mixin of :class:`~broker_core.frontends.grpc.servicer.BrokerServicer`, which provides ``_registry``, ``_unary``
(errors to gRPC statuses) and ``_persistent`` (a persistent topic partition or ``NotAllowedError``).
"""
from __future__ import annotations

import json
from typing import Any

from broker_core.errors import InvalidMessage
from broker_core.protocol import broker_pb2 as pb
from broker_core.core.persistent import cursor_admin
from broker_core.core.policies import NAMESPACE, TOPIC
from broker_core.types import TopicName


def permission_scope(scope: pb.PolicyScope) -> tuple[str, str, str]:
    """(policies scope, canonical name, namespace) of a permission request; exactly one of namespace/topic."""
    if bool(scope.namespace) == bool(scope.topic):
        raise InvalidMessage("a permission applies to a namespace or to a topic: set exactly one of them")
    if scope.namespace:
        return NAMESPACE, scope.namespace, scope.namespace
    topic = TopicName.parse(scope.topic)
    return TOPIC, str(topic), topic.namespace_name


class AdminRpcs:
    _registry: Any
    _unary: Any
    _persistent: Any

    # ================================================================== tenants and namespaces
    async def ListTenants(self, request, context):
        return await self._unary(context, lambda: pb.NameList(names=self._registry.namespaces.tenants()))

    async def GetTenant(self, request, context):
        def get():
            info = self._registry.namespaces.tenant_info(request.tenant)
            return pb.TenantInfo(tenant=request.tenant, admin_roles=info["adminRoles"],
                                 allowed_clusters=info["allowedClusters"])
        return await self._unary(context, get)

    async def CreateTenant(self, request, context):
        def create():
            self._registry.namespaces.create_tenant(request.tenant, request.admin_roles, request.allowed_clusters)
            return pb.Empty()
        return await self._unary(context, create)

    async def UpdateTenant(self, request, context):
        def update():
            info = request.info
            self._registry.namespaces.update_tenant(
                info.tenant, info.admin_roles if request.set_admin_roles else None,
                info.allowed_clusters if request.set_allowed_clusters else None)
            return pb.Empty()
        return await self._unary(context, update)

    async def DeleteTenant(self, request, context):
        async def delete():
            await self._registry.delete_tenant(request.tenant, force=request.force)
            return pb.Empty()
        return await self._unary(context, delete)

    async def ListNamespaces(self, request, context):
        return await self._unary(context, lambda: pb.NameList(
            names=self._registry.namespaces.namespaces(request.tenant)))

    async def CreateNamespace(self, request, context):
        def create():
            self._registry.create_namespace(request.namespace)
            return pb.Empty()
        return await self._unary(context, create)

    async def DeleteNamespace(self, request, context):
        async def delete():
            await self._registry.delete_namespace(request.namespace, force=request.force)
            return pb.Empty()
        return await self._unary(context, delete)

    # ================================================================== permissions
    async def GrantPermission(self, request, context):
        def grant():
            scope, name, namespace = permission_scope(request.scope)
            self._registry.namespaces.check_exists(namespace)
            self._registry.policies.grant(scope, name, request.role, list(request.actions))
            return pb.Empty()
        return await self._unary(context, grant)

    async def RevokePermission(self, request, context):
        def revoke():
            scope, name, namespace = permission_scope(request.scope)
            self._registry.namespaces.check_exists(namespace)
            self._registry.policies.revoke(scope, name, request.role)
            return pb.Empty()
        return await self._unary(context, revoke)

    async def GetPermissions(self, request, context):
        def get():
            scope, name, namespace = permission_scope(request)
            self._registry.namespaces.check_exists(namespace)
            return pb.JsonResponse(json=json.dumps(self._registry.policies.permissions(scope, name),
                                                   sort_keys=True))
        return await self._unary(context, get)

    # ================================================================== subscriptions without consumers
    async def ListSubscriptions(self, request, context):
        return await self._unary(context, lambda: pb.NameList(
            names=self._registry.subscriptions(TopicName.parse(request.topic))))

    async def SkipMessages(self, request, context):
        def skip():
            acked, next_offset = cursor_admin.skip(self._persistent(request.topic), request.subscription,
                                                   request.count)
            return pb.SubscriptionPosition(next_offset=next_offset, acknowledged=acked)
        return await self._unary(context, skip)

    async def ClearBacklog(self, request, context):
        def clear():
            acked, next_offset = cursor_admin.clear_backlog(self._persistent(request.topic), request.subscription)
            return pb.SubscriptionPosition(next_offset=next_offset, acknowledged=acked)
        return await self._unary(context, clear)

    async def PeekMessages(self, request, context):
        def peek():
            found = cursor_admin.peek(self._persistent(request.topic), request.subscription, request.count)
            reply = pb.PeekedEntries(count=sum(p.unacked for p in found))
            for p in found:
                e = p.entry
                reply.entries.add(data=e.data, ledger_id=e.ledger_id, entry_id=e.offset,
                                  num_messages=e.num_messages, ack_set=p.ack_set or ())
            return reply
        return await self._unary(context, peek)

    async def TopicInternalStats(self, request, context):
        return await self._unary(context, lambda: pb.JsonResponse(
            json=json.dumps(self._registry.internal_stats(TopicName.parse(request.topic)))))
