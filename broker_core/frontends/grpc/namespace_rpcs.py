"""Namespace operations of the ``PulsarLike`` service besides its policies (``pulsarlike admin namespaces unload|
bundles|set-property|...|grant-subscription-permission``) and one policy read (``GetPolicy``, what the REST route
of a policy answers): protobuf in and out, the work done by the admin core's
:class:`~broker_core.core.admin.namespace_operations.NamespaceOperations` and
:class:`~broker_core.core.admin.namespaces.NamespaceAdmin`, which serve the REST routes too.

A component of :class:`~broker_core.frontends.grpc.servicer.BrokerServicer` (each method serves the RPC of its
name); who may call them: :mod:`.rpc_access`.
"""
from __future__ import annotations

import json
from typing import Any

from broker_core.core.admin.namespace_operations import NamespaceOperations
from broker_core.core.admin.namespaces import NamespaceAdmin
from broker_core.core.registry import TopicRegistry
from broker_core.frontends.grpc.admin_rpcs import scope_of
from broker_core.protocol import broker_pb2 as pb


def _json(value: Any) -> pb.JsonResponse:
    """``value`` as JSON (None: empty, as the REST route's 204)."""
    return pb.JsonResponse(json="" if value is None else json.dumps(value, sort_keys=True))


class NamespaceRpcs:
    """Unload, bundles, properties, subscription permissions and one policy."""

    def __init__(self, registry: TopicRegistry) -> None:
        self._operations = NamespaceOperations(registry)
        self._namespaces = NamespaceAdmin(registry)

    def GetPolicy(self, request: pb.PolicyRequest) -> pb.JsonResponse:
        return _json(self._namespaces.policy(scope_of(request.scope), request.key))

    async def UnloadNamespace(self, request: pb.NamespaceRequest) -> pb.Empty:
        await self._operations.unload(request.namespace)
        return pb.Empty()

    def GetNamespaceBundles(self, request: pb.NamespaceRequest) -> pb.JsonResponse:
        return _json(self._operations.bundles(request.namespace))

    def GetNamespaceProperties(self, request: pb.NamespaceRequest) -> pb.JsonResponse:
        return _json(self._operations.properties(request.namespace))

    def SetNamespaceProperties(self, request: pb.NamespacePropertiesRequest) -> pb.Empty:
        self._operations.set_properties(request.namespace, dict(request.properties))
        return pb.Empty()

    def ClearNamespaceProperties(self, request: pb.NamespaceRequest) -> pb.Empty:
        self._operations.clear_properties(request.namespace)
        return pb.Empty()

    def SetNamespaceProperty(self, request: pb.NamespacePropertyRequest) -> pb.Empty:
        self._operations.set_property(request.namespace, request.key, request.value)
        return pb.Empty()

    def GetNamespaceProperty(self, request: pb.NamespacePropertyRequest) -> pb.JsonResponse:
        return _json(self._operations.property(request.namespace, request.key))

    def RemoveNamespaceProperty(self, request: pb.NamespacePropertyRequest) -> pb.Empty:
        self._operations.remove_property(request.namespace, request.key)
        return pb.Empty()

    def GetSubscriptionPermissions(self, request: pb.NamespaceRequest) -> pb.JsonResponse:
        return _json(self._operations.subscription_permissions(request.namespace))

    def GrantSubscriptionPermission(self, request: pb.SubscriptionPermissionRequest) -> pb.Empty:
        self._operations.grant_subscription(request.namespace, request.subscription, list(request.roles))
        return pb.Empty()

    def RevokeSubscriptionPermission(self, request: pb.SubscriptionPermissionRequest) -> pb.Empty:
        for role in request.roles:
            self._operations.revoke_subscription(request.namespace, request.subscription, role)
        return pb.Empty()
