"""``ServiceInfo`` (pulsar-client 3.13): the cluster endpoint a client uses, as ``Client.get_service_info()``
returns it. pulsarlike has one broker and no cluster failover (``AutoClusterFailover`` is refused), so a
client's service info is the URL, authentication and trust file it was created with."""
from __future__ import annotations

from typing import Any


class ServiceInfo:
    """Connection information for one endpoint: ``service_url``, ``use_tls``, ``authentication``,
    ``tls_trust_certs_file_path``."""

    def __init__(self, service_url: str, authentication: Any = None,
                 tls_trust_certs_file_path: str | None = None) -> None:
        if not isinstance(service_url, str):
            raise TypeError(f"service_url must be a str, not {type(service_url).__name__}")
        if tls_trust_certs_file_path is not None and not isinstance(tls_trust_certs_file_path, str):
            raise TypeError("tls_trust_certs_file_path must be a str or None")
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
