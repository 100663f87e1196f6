"""``ServiceInfo`` (pulsar-client 3.13): the cluster endpoint a client uses, as ``Client.get_service_info()``
returns it. pulsarlike has one broker and no cluster failover (``AutoClusterFailover`` is refused), so a
client's service info is the URL, authentication and trust file it was created with."""
from __future__ import annotations

from typing import Any

from connector.client.arg_checks import check_type, check_type_or_none
from connector.client.authentication import Authentication


class ServiceInfo:
    """Connection information for one endpoint: ``service_url``, ``use_tls``, ``authentication``,
    ``tls_trust_certs_file_path``."""

    def __init__(self, service_url: str, authentication: Any = None,
                 tls_trust_certs_file_path: str | None = None) -> None:
        check_type(str, service_url, "service_url")  # pulsar-client's ValueErrors
        if authentication is not None and not isinstance(authentication, Authentication):
            raise ValueError("Argument authentication is expected to be either None or of type 'Authentication'")
        check_type_or_none(str, tls_trust_certs_file_path, "tls_trust_certs_file_path")
        self._service_url = service_url
        self._authentication = authentication
        self._trust = tls_trust_certs_file_path

    @property
    def service_url(self) -> str:
        return self._service_url

    @property
    def use_tls(self) -> bool:
        return self._service_url.startswith(("pulsar+ssl://", "https://"))

    @property
    def authentication(self) -> Any:
        return self._authentication

    @property
    def tls_trust_certs_file_path(self) -> str | None:
        return self._trust

    def __repr__(self) -> str:
        return f"ServiceInfo(service_url={self._service_url!r}, use_tls={self.use_tls})"
