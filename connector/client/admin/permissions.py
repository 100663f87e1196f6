"""Permissions of :class:`~connector.client.admin.Admin` (``pulsar-admin namespaces|topics
grant-permission|revoke-permission|permissions``): which role may ``produce`` and/or ``consume``.

A topic's grants add to its namespace's (Pulsar's semantics); a grant replaces what the role had at that
level. Only super-users and the tenant's admin roles may change or read them (``AuthorizationError``
otherwise); with ``authorizationEnabled=false`` on the broker they are stored but not enforced.
"""
from __future__ import annotations

from typing import Iterable

from broker_core.protocol import broker_pb2

from connector.client.admin.wire import UnaryWire, topic_name

ACTIONS = ("produce", "consume")


def _actions(actions: Iterable[str] | str) -> list[str]:
    items = [a.strip() for a in actions.split(",")] if isinstance(actions, str) else list(actions)
    if not items or any(a not in ACTIONS for a in items):
        raise ValueError(f"actions={actions!r} is not valid; use a list of {', '.join(ACTIONS)}")
    return items


def _role(role: str) -> str:
    if not isinstance(role, str) or not role.strip():
        raise ValueError(f"role={role!r} is not valid; use a non-empty str")
    return role.strip()


class PermissionsAdmin:
    """Who may produce and consume: a part of :class:`~connector.client.admin.Admin`, which serves its public
    methods."""

    def __init__(self, wire: UnaryWire) -> None:
        self._wire = wire

    def grant_namespace_permission(self, namespace: str, role: str, actions: Iterable[str] | str) -> None:
        """``role`` may ``actions`` (``produce``, ``consume``) every topic of ``tenant/namespace``."""
        self._grant(broker_pb2.PolicyScope(namespace=namespace), role, actions)

    def revoke_namespace_permission(self, namespace: str, role: str) -> None:
        self._revoke(broker_pb2.PolicyScope(namespace=namespace), role)

    def get_namespace_permissions(self, namespace: str) -> dict[str, list[str]]:
        """Role -> actions granted on the namespace itself."""
        return self._permissions(broker_pb2.PolicyScope(namespace=namespace))

    def grant_topic_permission(self, topic: str, role: str, actions: Iterable[str] | str) -> None:
        """``role`` may ``actions`` this topic (every partition of a partitioned one), on top of what its
        namespace grants."""
        self._grant(broker_pb2.PolicyScope(topic=topic_name(topic)), role, actions)

    def revoke_topic_permission(self, topic: str, role: str) -> None:
        self._revoke(broker_pb2.PolicyScope(topic=topic_name(topic)), role)

    def get_topic_permissions(self, topic: str) -> dict[str, list[str]]:
        """Role -> actions granted on the topic itself (not its namespace's)."""
        return self._permissions(broker_pb2.PolicyScope(topic=topic_name(topic)))

    def _grant(self, scope: broker_pb2.PolicyScope, role: str, actions: Iterable[str] | str) -> None:
        self._wire.unary("GrantPermission", broker_pb2.PermissionRequest(
            scope=scope, role=_role(role), actions=_actions(actions)))

    def _revoke(self, scope: broker_pb2.PolicyScope, role: str) -> None:
        self._wire.unary("RevokePermission", broker_pb2.PermissionRequest(scope=scope, role=_role(role)))

    def _permissions(self, scope: broker_pb2.PolicyScope) -> dict[str, list[str]]:
        return self._wire.unary("GetPermissions", scope)
