"""``Admin``: the broker's unary admin calls, like ``pulsar-admin`` -- tenants and namespaces, topics,
subscriptions without consumers, operator calls (terminate, unload, examine, expire ...), and namespace/topic
policies."""
from __future__ import annotations

from typing import Any

from connector.client.admin.namespaces import NamespacesAdmin
from connector.client.admin.operations import OperationsAdmin
from connector.client.admin.policies import PoliciesAdmin
from connector.client.admin.topics import TopicsAdmin
from connector.client.connection import Connection


class Admin(NamespacesAdmin, TopicsAdmin, OperationsAdmin, PoliciesAdmin):
    """Manage tenants, namespaces, topics, subscriptions and policies. Errors are the typed exceptions of
    :mod:`broker_core.errors` (``TopicNotFound``, ``NamespaceNotFound``, ``TopicAlreadyExists``,
    ``NamespaceNotEmpty``, ``InvalidConfiguration`` ...)."""

    def __init__(self, service_url: str, operation_timeout_seconds: float = 30,
                 connection_timeout_ms: int = 10000) -> None:
        self._connection = Connection(service_url, operation_timeout_seconds,
                                      connection_timeout_ms / 1000.0)

    def close(self) -> None:
        self._connection.close()

    def __enter__(self) -> "Admin":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
