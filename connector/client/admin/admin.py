"""``Admin``: the broker's unary admin calls, like ``pulsar-admin`` -- tenants and namespaces, topics,
subscriptions without consumers, operator calls (terminate, unload, examine, expire ...), namespace/topic
policies and permissions."""
from __future__ import annotations

from typing import Any

from connector.client.admin.namespaces import NamespacesAdmin
from connector.client.admin.operations import OperationsAdmin
from connector.client.admin.permissions import PermissionsAdmin
from connector.client.admin.policies import PoliciesAdmin
from connector.client.admin.topics import TopicsAdmin
from connector.client.authentication import Authentication
from connector.client.connection import Connection, Security


class Admin(NamespacesAdmin, TopicsAdmin, OperationsAdmin, PoliciesAdmin, PermissionsAdmin):
    """Manage tenants, namespaces, topics, subscriptions and policies. Errors are the typed exceptions of
    :mod:`broker_core.errors` (``TopicNotFound``, ``NamespaceNotFound``, ``TopicAlreadyExists``,
    ``NamespaceNotEmpty``, ``InvalidConfiguration`` ...)."""

    def __init__(self, service_url: str, operation_timeout_seconds: float = 30,
                 connection_timeout_ms: int = 10000, authentication: Authentication | None = None,
                 tls_trust_certs_file_path: str | None = None, tls_allow_insecure_connection: bool = False,
                 tls_validate_hostname: bool = False, tls_certificate_file_path: str | None = None,
                 tls_private_key_file_path: str | None = None) -> None:
        """``authentication`` and the ``tls_*`` options as :class:`~connector.Client` takes them (a
        ``pulsar+ssl://`` URL for the broker's TLS port)."""
        security = Security.of(service_url, authentication, False, tls_trust_certs_file_path,
                               tls_allow_insecure_connection, tls_validate_hostname, tls_certificate_file_path,
                               tls_private_key_file_path)
        self._connection = Connection(service_url, operation_timeout_seconds,
                                      connection_timeout_ms / 1000.0, security)

    def close(self) -> None:
        self._connection.close()

    def __enter__(self) -> "Admin":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
