"""pulsar-client 3.13's cluster endpoints: ``ServiceInfo`` (one endpoint: URL, authentication, trust file; what
``Client.get_service_info()`` returns), ``ServiceInfoProvider`` (the base class of a user's provider, which
names the first endpoint and may push others later) and ``AutoClusterFailover`` (the built-in provider's
configuration: a primary, ordered secondaries, the probe interval and thresholds). ``Client(provider)`` /
``Client(AutoClusterFailover(...))`` switch the client's service as :mod:`connector.client.failover` says."""
from __future__ import annotations

from typing import Any, Callable

from connector.client.arg_checks import check_type, check_type_or_none
from connector.client.security.authentication import Authentication


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
        return (f"ServiceInfo(service_url={self._service_url!r}, use_tls={self.use_tls!r}, "
                f"tls_trust_certs_file_path={self._trust!r})")


class ServiceInfoProvider:
    """Base class of a user-defined service discovery or failover provider, given to ``Client(provider)``.

    ``initial_service_info()`` returns the first :class:`ServiceInfo`; ``initialize(on_service_info_update)``
    is called once the client is built, with the callback the provider calls (from any thread) with a new
    :class:`ServiceInfo` to switch the client to it; ``close()`` is called by ``Client.close()``."""

    def initial_service_info(self) -> ServiceInfo:
        raise NotImplementedError

    def initialize(self, on_service_info_update: Callable[[ServiceInfo], None]) -> None:
        raise NotImplementedError

    def close(self) -> None:
        """Stop background work and release resources (``Client.close()`` calls it)."""
        return None


class AutoClusterFailover:
    """Cluster-level automatic failover for ``Client(AutoClusterFailover(primary, [secondary, ...]))``
    (pulsar-client 3.13's arguments and checks, ``ValueError`` as it raises them).

    Every ``check_interval_ms`` the client probes the service it uses (a TCP connection to its host:port):
    after ``failover_threshold`` consecutive failures it switches to the first secondary that answers; on a
    secondary, after ``switch_back_threshold`` consecutive successful probes of the primary it switches back
    (at once when the secondary fails and the primary answers)."""

    def __init__(self, primary: ServiceInfo, secondary: list[ServiceInfo], check_interval_ms: int = 5000,
                 failover_threshold: int = 1, switch_back_threshold: int = 1) -> None:
        check_type(ServiceInfo, primary, "primary")
        check_type(list, secondary, "secondary")
        check_type(int, check_interval_ms, "check_interval_ms")
        check_type(int, failover_threshold, "failover_threshold")
        check_type(int, switch_back_threshold, "switch_back_threshold")
        if not secondary:
            raise ValueError("Argument secondary is expected to contain at least one ServiceInfo")
        for index, info in enumerate(secondary):
            if not isinstance(info, ServiceInfo):
                raise ValueError(f"Argument secondary[{index}] is expected to be of type 'ServiceInfo' and not "
                                 f"'{type(info).__name__}'")
        for name, value in (("check_interval_ms", check_interval_ms), ("failover_threshold", failover_threshold),
                            ("switch_back_threshold", switch_back_threshold)):
            if value <= 0:
                raise ValueError(f"Argument {name} is expected to be greater than 0")
        self.primary = primary
        self.secondary = list(secondary)
        self.check_interval_ms = check_interval_ms
        self.failover_threshold = failover_threshold
        self.switch_back_threshold = switch_back_threshold

    def __repr__(self) -> str:
        return (f"AutoClusterFailover(primary={self.primary!r}, secondary={self.secondary!r}, "
                f"check_interval_ms={self.check_interval_ms!r}, failover_threshold={self.failover_threshold!r}, "
                f"switch_back_threshold={self.switch_back_threshold!r})")
