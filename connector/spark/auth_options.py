"""Authentication and TLS options of the Spark source and sink, with pulsar-spark's names (also accepted with
its ``pulsar.client.`` prefix, in any case):

=============================== ==========================================================================
``authPluginClassName``          ``org.apache.pulsar.client.impl.auth.AuthenticationToken``,
                                 ``...AuthenticationTls``, ``...AuthenticationBasic`` or
                                 ``...oauth2.AuthenticationOAuth2`` (short: ``token``, ``tls``, ``oauth2``)
``authParams``                   ``token:<jwt>``, ``file:///path/to/token`` (read on every connection, so a
                                 rotated token is picked up; keeps the token out of the query's options),
                                 ``tlsCertFile:<pem>,tlsKeyFile:<pem>``, or OAuth2's JSON (``issuerUrl``,
                                 ``privateKey`` as ``file:///...``, ``audience``, ``scope``): each
                                 executor asks the issuer for its own token
``tlsTrustCertsFilePath``        CA certificates (PEM) for a ``pulsar+ssl://`` ``service.url``
``tlsAllowInsecureConnection``   ``true``: trust any broker certificate (local play only)
``tlsHostnameVerificationEnable`` ``true``: check that the certificate names the URL's host
=============================== ==========================================================================

The parsed :class:`ClientSecurity` travels to the executors with the options; its ``repr`` (what a log
line or an error shows) never holds ``authParams``. Spark prints a source's options in ``explain()`` unless
``spark.sql.redaction.options.regex`` matches them: pass the token as ``file:///...`` (docs/security.md).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from broker_core.errors import InvalidConfiguration

from connector.client.security.authentication import from_plugin
from connector.client.security import Security, is_tls_url

SECURITY_OPTIONS = ("authPluginClassName", "authParams", "tlsTrustCertsFilePath", "tlsAllowInsecureConnection",
                    "tlsHostnameVerificationEnable")
PREFIX = "pulsar.client."
_NAMES = {name.lower(): name for name in SECURITY_OPTIONS}
_NAMES.update({(PREFIX + name).lower(): name for name in SECURITY_OPTIONS})


@dataclass(frozen=True)
class ClientSecurity:
    auth_plugin: str = ""
    auth_params: str = field(default="", repr=False)
    tls_trust_certs_file_path: str | None = None
    tls_allow_insecure: bool = False
    tls_validate_hostname: bool = False

    def client_kwargs(self, service_url: str) -> dict[str, Any]:
        """``Client``/``Admin`` keyword arguments."""
        kwargs: dict[str, Any] = {"authentication": from_plugin(self.auth_plugin, self.auth_params)}
        if is_tls_url(service_url):
            kwargs.update(tls_trust_certs_file_path=self.tls_trust_certs_file_path,
                          tls_allow_insecure_connection=self.tls_allow_insecure,
                          tls_validate_hostname=self.tls_validate_hostname)
        return kwargs

    def connection_security(self, service_url: str) -> Security:
        return Security.of(service_url, **self.client_kwargs(service_url))


def split_security(options: Mapping[str, str], where: str) -> tuple[dict[str, str], ClientSecurity]:
    """(the other options, the parsed security options); ``ValueError`` naming a wrong one. ``where``: the
    source or the sink, for messages."""
    rest: dict[str, str] = {}
    given: dict[str, str] = {}
    url = ""
    for key, value in options.items():
        name = _NAMES.get(key.lower())
        if name is None:
            rest[key] = value
            if key.lower() == "service.url":
                url = value
        else:
            given[name] = value
    security = ClientSecurity(
        auth_plugin=given.get("authPluginClassName", "").strip(), auth_params=given.get("authParams", ""),
        tls_trust_certs_file_path=given.get("tlsTrustCertsFilePath") or None,
        tls_allow_insecure=_flag(given, "tlsAllowInsecureConnection"),
        tls_validate_hostname=_flag(given, "tlsHostnameVerificationEnable"))
    try:
        from_plugin(security.auth_plugin, security.auth_params)
    except (InvalidConfiguration, ValueError) as exc:
        message = getattr(exc, "message", str(exc))
        raise ValueError(f"option authPluginClassName/authParams of the pulsarlike {where}: {message}") from None
    tls_given = [n for n in SECURITY_OPTIONS[2:] if n in given]
    if tls_given and url and not is_tls_url(url):
        raise ValueError(f"option {', '.join(tls_given)} needs a TLS service.url: use pulsar+ssl://host:port "
                         "(the broker's brokerServicePortTls)")
    return rest, security


def _flag(given: Mapping[str, str], name: str) -> bool:
    value = given.get(name, "false").strip().lower()
    if value not in ("true", "false"):
        raise ValueError(f"option {name}={given[name]!r} is not valid; use true or false")
    return value == "true"
