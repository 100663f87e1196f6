"""``Admin``: the broker's unary admin calls, like ``pulsar-admin`` -- tenants and namespaces, topics,
subscriptions without consumers, operator calls (terminate, unload, examine, expire ...), offsets,
namespace/topic policies and permissions."""
from __future__ import annotations

from typing import Any, Callable

from connector.client.admin.namespaces import NamespacesAdmin
from connector.client.admin.offsets import OffsetsAdmin
from connector.client.admin.operations import OperationsAdmin
from connector.client.admin.permissions import PermissionsAdmin
from connector.client.admin.policies import PoliciesAdmin
from connector.client.admin.topics import TopicsAdmin
from connector.client.authentication import Authentication
from connector.client.connection import Connection, Security


class Admin(NamespacesAdmin, TopicsAdmin, OperationsAdmin, OffsetsAdmin, PoliciesAdmin, PermissionsAdmin):
    """Manage tenants, namespaces, topics, subscriptions and policies. Errors are the typed exceptions of
    :mod:`broker_core.errors` (``TopicNotFound``, ``NamespaceNotFound``, ``TopicAlreadyExists``,
    ``NamespaceNotEmpty``, ``InvalidConfiguration`` ...).

    ``retry_while_unavailable=True``: a call made while the broker cannot be reached or is not ready (it is
    restarting) is tried again with backoff until ``operation_timeout_seconds`` (then ``ConnectError`` or
    ``Timeout``), as the client's lookups are. Meant for idempotent calls (reads, ``acknowledge_up_to``):
    a create retried after an attempt that did reach the broker reports ``TopicAlreadyExists`` and the like."""

    def __init__(self, service_url: str, operation_timeout_seconds: float = 30,
                 connection_timeout_ms: int = 10000, authentication: Authentication | None = None,
                 tls_trust_certs_file_path: str | None = None, tls_allow_insecure_connection: bool = False,
                 tls_validate_hostname: bool = False, tls_certificate_file_path: str | None = None,
                 tls_private_key_file_path: str | None = None, retry_while_unavailable: bool = False) -> None:
        """``authentication`` and the ``tls_*`` options as :class:`~connector.Client` takes them (a
        ``pulsar+ssl://`` URL for the broker's TLS port)."""
        security = Security.of(service_url, authentication, False, tls_trust_certs_file_path,
                               tls_allow_insecure_connection, tls_validate_hostname, tls_certificate_file_path,
                               tls_private_key_file_path)
        self._use(Connection(service_url, operation_timeout_seconds, connection_timeout_ms / 1000.0, security),
                  retry_while_unavailable)

    @classmethod
    def on_connection(cls, connection: Connection, retry_while_unavailable: bool = False) -> "Admin":
        """An admin whose calls go over ``connection`` (shared with entry streams:
        :mod:`connector.client.entry_stream`); :meth:`close` closes it."""
        admin = cls.__new__(cls)
        admin._use(connection, retry_while_unavailable)
        return admin

    def _use(self, connection: Connection, retry: bool) -> None:
        self._connection = _Retrying(connection) if retry else connection  # type: ignore[assignment]

    def close(self) -> None:
        self._connection.close()

    def __enter__(self) -> "Admin":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class _Retrying:
    """A connection whose unary calls retry while the broker is unavailable (see :class:`Admin`)."""

    def __init__(self, connection: Connection) -> None:
        self._connection = connection
        self.close: Callable[[], None] = connection.close

    def unary(self, method: str, request: Any, timeout_s: float | None = None, retry: bool = True) -> Any:
        return self._connection.unary(method, request, timeout_s, retry)
