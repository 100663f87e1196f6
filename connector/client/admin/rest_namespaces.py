"""The namespace calls of ``Admin(admin_url=...)`` that :mod:`.rest_wire` hands over: one policy read
(``GetPolicy``: the route pulsar-admin's ``get-*`` reads, with Pulsar's answer while unset), namespace unload,
bundles, properties and subscription permissions -- each the request Pulsar's Java admin sends:

==============================  ===================================================================
``GetPolicy``                   ``GET /admin/v2/namespaces/{t}/{ns}/{segment}`` (a topic's: its own route)
``UnloadNamespace``             ``PUT .../unload``
``GetNamespaceBundles``         ``GET .../bundles``
``GetNamespaceProperties``      ``GET .../properties``
``SetNamespaceProperties``      ``PUT .../properties`` with the map (added to those there)
``ClearNamespaceProperties``    ``DELETE .../properties``
``SetNamespaceProperty``        ``PUT .../property/{key}/{value}``
``GetNamespaceProperty``        ``GET .../property/{key}``
``RemoveNamespaceProperty``     ``DELETE .../property/{key}``
``GetSubscriptionPermissions``  ``GET .../permissions/subscription``
``GrantSubscriptionPermission`` ``POST .../permissions/subscription/{sub}`` with the roles
``RevokeSubscriptionPermission`` ``DELETE .../permissions/{sub}/{role}``
==============================  ===================================================================
"""
from __future__ import annotations

from typing import Any, Callable

from broker_core import errors
from broker_core.protocol import broker_pb2

from connector.client.admin.wire import NotSupported


class RestNamespaces:
    """Serves the calls above with ``call(method, where, body?, **options)`` (:meth:`RestWire._call`);
    ``namespace_path(namespace, *rest)`` and ``topic_path(topic, *rest)`` make the paths, ``segments`` maps a
    namespace policy key to its path segment and ``topic_segments`` a topic policy key to its."""

    def __init__(self, call: Callable[..., Any], namespace_path: Callable[..., str], topic_path: Callable[..., str],
                 segments: dict[str, str], topic_segments: dict[str, str]) -> None:
        self._call = call
        self._namespace_path = namespace_path
        self._topic_path = topic_path
        self._segments = segments
        self._topic_segments = topic_segments

    def handler(self, method: str) -> Callable[[Any], Any] | None:
        """What serves the gRPC call ``method`` here (None: not one of these)."""
        return getattr(self, "_" + method, None)

    def _ns(self, namespace: str, *rest: str) -> str:
        return self._namespace_path(namespace, *rest)

    def _GetPolicy(self, request: broker_pb2.PolicyRequest) -> Any:
        scope, key = request.scope, request.key
        if scope.topic:
            if key not in self._topic_segments:
                raise NotSupported(f"the topic policy {key} is not mapped onto the admin REST API", method=key)
            return self._call("GET", self._topic_path(scope.topic, self._topic_segments[key]))
        if key not in self._segments:
            raise NotSupported(f"the namespace policy {key} is not mapped onto the admin REST API", method=key)
        return self._call("GET", self._ns(scope.namespace, self._segments[key]),
                          not_found=errors.NamespaceNotFound)

    def _UnloadNamespace(self, request: broker_pb2.NamespaceRequest) -> None:
        self._call("PUT", self._ns(request.namespace, "unload"), not_found=errors.NamespaceNotFound)

    def _GetNamespaceBundles(self, request: broker_pb2.NamespaceRequest) -> Any:
        return self._call("GET", self._ns(request.namespace, "bundles"), not_found=errors.NamespaceNotFound)

    def _GetNamespaceProperties(self, request: broker_pb2.NamespaceRequest) -> Any:
        return self._call("GET", self._ns(request.namespace, "properties"),
                          not_found=errors.NamespaceNotFound) or {}

    def _SetNamespaceProperties(self, request: broker_pb2.NamespacePropertiesRequest) -> None:
        self._call("PUT", self._ns(request.namespace, "properties"), dict(request.properties),
                   not_found=errors.NamespaceNotFound, refused=errors.InvalidConfiguration)

    def _ClearNamespaceProperties(self, request: broker_pb2.NamespaceRequest) -> None:
        self._call("DELETE", self._ns(request.namespace, "properties"), not_found=errors.NamespaceNotFound)

    def _SetNamespaceProperty(self, request: broker_pb2.NamespacePropertyRequest) -> None:
        self._call("PUT", self._ns(request.namespace, "property", request.key, request.value),
                   not_found=errors.NamespaceNotFound, refused=errors.InvalidConfiguration)

    def _GetNamespaceProperty(self, request: broker_pb2.NamespacePropertyRequest) -> Any:
        return self._call("GET", self._ns(request.namespace, "property", request.key),
                          not_found=errors.NamespaceNotFound)

    def _RemoveNamespaceProperty(self, request: broker_pb2.NamespacePropertyRequest) -> None:
        self._call("DELETE", self._ns(request.namespace, "property", request.key), not_found=errors.NamespaceNotFound)

    def _GetSubscriptionPermissions(self, request: broker_pb2.NamespaceRequest) -> Any:
        return self._call("GET", self._ns(request.namespace, "permissions", "subscription"),
                          not_found=errors.NamespaceNotFound) or {}

    def _GrantSubscriptionPermission(self, request: broker_pb2.SubscriptionPermissionRequest) -> None:
        self._call("POST", self._ns(request.namespace, "permissions", "subscription", request.subscription),
                   list(request.roles), not_found=errors.NamespaceNotFound, refused=errors.InvalidConfiguration)

    def _RevokeSubscriptionPermission(self, request: broker_pb2.SubscriptionPermissionRequest) -> None:
        for role in request.roles:
            self._call("DELETE", self._ns(request.namespace, "permissions", request.subscription, role),
                       not_found=errors.NamespaceNotFound)
