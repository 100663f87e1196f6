"""How a client reaches a broker, whatever the transport: the service URL (:func:`parse_service_url`), TLS
(:class:`TlsOptions`, :func:`ssl_context`) and authentication together (:class:`Security`).

Both transports take these -- gRPC (:mod:`connector.client.transport.grpc.connection`, whose TLS channel is
:mod:`connector.client.transport.grpc.tls`) and Pulsar's binary protocol (:mod:`connector.client.transport.binary`) -- and so do the
Spark connector, the CLI and the admin clients, without loading either transport.

TLS options are pulsar-client's:

- ``tls_trust_certs_file_path``: the CA certificates (PEM) the broker's certificate must chain to (unset: the
  system's roots);
- ``tls_validate_hostname`` (pulsar-client's default: False): check that the certificate names the host of
  the URL;
- ``tls_allow_insecure_connection``: trust whatever certificate the broker presents (for tests and local play
  only);
- a client certificate and key (``AuthenticationTLS`` or ``tls_certificate_file_path`` /
  ``tls_private_key_file_path``) for mTLS.
"""
from __future__ import annotations

import re
import ssl
from dataclasses import dataclass
from pathlib import Path

from broker_core import errors

from connector.client.security.authentication import Authentication

_URL = re.compile(r"^(?:pulsar(?:\+ssl)?://)?(?P<host>\[[0-9a-fA-F:.]+\]|[A-Za-z0-9._-]+):(?P<port>\d{1,5})/?$")
TLS_SCHEME = "pulsar+ssl://"


def parse_service_url(service_url: str) -> str:
    """``pulsar://host:port``, ``pulsar+ssl://host:port`` or ``host:port`` -> ``host:port``; anything else is
    a ValueError."""
    match = _URL.match(service_url.strip()) if isinstance(service_url, str) else None
    if not match or not 0 < int(match.group("port")) < 65536:
        raise ValueError(f"service_url={service_url!r} is not valid; use 'pulsar://host:port' "
                         "(as Broker.service_url returns), 'pulsar+ssl://host:port' or 'host:port'")
    return f"{match.group('host')}:{int(match.group('port'))}"


def is_tls_url(service_url: str) -> bool:
    """``pulsar+ssl://``, or ``https://`` (a web service URL the client looks topics up at, over TLS)."""
    return isinstance(service_url, str) and service_url.strip().lower().startswith((TLS_SCHEME, "https://"))


@dataclass(frozen=True)
class TlsOptions:
    """pulsar-client's TLS options (module docstring)."""

    trust_certs_file: str | None = None
    allow_insecure: bool = False
    validate_hostname: bool = False
    cert_file: str | None = None
    key_file: str | None = None


def read_file(option: str, path: str | None) -> bytes | None:
    """The bytes of the file ``option`` names (None when unset); ``InvalidConfiguration`` naming the option."""
    if not path:
        return None
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise errors.InvalidConfiguration(f"{option}: cannot read {path} ({exc.strerror})") from None


def check_tls(options: TlsOptions) -> None:
    """Refuse what cannot work before anything is sent (unreadable files, a key without a certificate)."""
    read_file("tls_trust_certs_file_path", options.trust_certs_file)
    if bool(options.cert_file) != bool(options.key_file):
        raise errors.InvalidConfiguration(
            "a client certificate needs its private key (and the reverse): give both tls_certificate_file_path "
            "and tls_private_key_file_path, or AuthenticationTLS")
    read_file("tls_certificate_file_path", options.cert_file)
    read_file("tls_private_key_file_path", options.key_file)


def ssl_context(options: TlsOptions, check_hostname: bool) -> ssl.SSLContext:
    """A client ``ssl`` context trusting what ``options`` say (nothing checked when insecure connections are
    allowed), presenting the client certificate when there is one."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = check_hostname and not options.allow_insecure
    if options.allow_insecure:
        context.verify_mode = ssl.CERT_NONE
    elif options.trust_certs_file:
        context.load_verify_locations(cafile=options.trust_certs_file)
    else:
        context.load_default_certs()
    if options.cert_file and options.key_file:
        context.load_cert_chain(options.cert_file, options.key_file)
    return context


class Security:
    """How a connection authenticates and encrypts: ``authentication`` (None: anonymous) and ``tls`` (None:
    a plain connection)."""

    def __init__(self, authentication: Authentication | None = None, tls: TlsOptions | None = None) -> None:
        if authentication is not None and not isinstance(authentication, Authentication):
            raise errors.InvalidConfiguration(f"authentication={type(authentication).__name__} is not valid; use "
                                              "AuthenticationToken(token), AuthenticationBasic(username, password) "
                                              "or AuthenticationTLS(certificate_path, private_key_path)")
        self.authentication = authentication
        self.tls = tls
        if tls is not None:
            check_tls(tls)
        elif authentication is not None and authentication.tls_files() is not None:
            raise errors.InvalidConfiguration("AuthenticationTLS needs a TLS connection: use a pulsar+ssl:// URL")

    @classmethod
    def of(cls, service_url: str, authentication: Authentication | None = None, use_tls: bool = False,
           tls_trust_certs_file_path: str | None = None, tls_allow_insecure_connection: bool = False,
           tls_validate_hostname: bool = False, tls_certificate_file_path: str | None = None,
           tls_private_key_file_path: str | None = None) -> "Security":
        """From pulsar-client's ``Client`` arguments (TLS when the URL is ``pulsar+ssl://`` or ``use_tls``)."""
        if not (use_tls or is_tls_url(service_url)):
            given = [name for name, value in (
                ("tls_trust_certs_file_path", tls_trust_certs_file_path),
                ("tls_allow_insecure_connection", tls_allow_insecure_connection),
                ("tls_validate_hostname", tls_validate_hostname),
                ("tls_certificate_file_path", tls_certificate_file_path),
                ("tls_private_key_file_path", tls_private_key_file_path)) if value]
            if given:
                raise errors.InvalidConfiguration(f"{', '.join(given)}: TLS options need a TLS connection; use a "
                                                  "pulsar+ssl:// URL (the broker's brokerServicePortTls)")
            return cls(authentication)
        files = authentication.tls_files() if isinstance(authentication, Authentication) else None
        cert, key = files if files is not None else (tls_certificate_file_path, tls_private_key_file_path)
        return cls(authentication, TlsOptions(tls_trust_certs_file_path, bool(tls_allow_insecure_connection),
                                              bool(tls_validate_hostname), cert, key))

    @classmethod
    def for_url(cls, service_url: str) -> "Security":
        """No authentication; TLS with the defaults when the URL is ``pulsar+ssl://`` (a transport built
        without a ``Security``)."""
        return cls(tls=TlsOptions()) if is_tls_url(service_url) else cls()

    def token(self) -> str | None:
        return self.authentication.token() if self.authentication is not None else None

    def authorization(self) -> str | None:
        """The ``authorization`` metadata value (``Bearer <token>``, ``Basic ...``), asked from its source now."""
        return self.authentication.authorization() if self.authentication is not None else None

    def metadata(self) -> tuple[tuple[str, str], ...] | None:
        value = self.authorization()
        return (("authorization", value),) if value else None
