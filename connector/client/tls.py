"""TLS to the broker's TLS port (``pulsar+ssl://``) with pulsar-client's options, over gRPC's own TLS.

- ``tls_trust_certs_file_path``: the CA certificates (PEM) the broker's certificate must chain to (unset:
  the system's roots, as gRPC has them);
- ``tls_validate_hostname`` (pulsar-client's default: False): check that the certificate names the host
  of the URL. gRPC always checks a name, so when this is off the client first reads the broker's
  certificate in a separate (verified) handshake and checks against a name the certificate holds
  (``grpc.ssl_target_name_override``): the chain is verified, the host name is not;
- ``tls_allow_insecure_connection``: trust whatever certificate the broker presents (the one read at the
  first connection is pinned for the client's life; for tests and local play only);
- a client certificate and key (``AuthenticationTLS`` or ``tls_certificate_file_path`` /
  ``tls_private_key_file_path``) for mTLS.
"""
from __future__ import annotations

import socket
import ssl
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc

from broker_core.errors import ConnectError, InvalidConfiguration


@dataclass(frozen=True)
class TlsOptions:
    trust_certs_file: str | None = None
    allow_insecure: bool = False
    validate_hostname: bool = False
    cert_file: str | None = None
    key_file: str | None = None


def _read(option: str, path: str | None) -> bytes | None:
    if not path:
        return None
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise InvalidConfiguration(f"{option}: cannot read {path} ({exc.strerror})") from None


def check(options: TlsOptions) -> None:
    """Refuse what cannot work before anything is sent (unreadable files, a key without a certificate)."""
    _read("tls_trust_certs_file_path", options.trust_certs_file)
    if bool(options.cert_file) != bool(options.key_file):
        raise InvalidConfiguration("a client certificate needs its private key (and the reverse): give both "
                                   "tls_certificate_file_path and tls_private_key_file_path, or AuthenticationTLS")
    _read("tls_certificate_file_path", options.cert_file)
    _read("tls_private_key_file_path", options.key_file)


def secure_channel(target: str, options: TlsOptions, channel_options: list[tuple[str, Any]],
                   timeout_s: float) -> grpc.Channel:
    """A gRPC channel to ``target`` (``host:port``) over TLS as ``options`` say."""
    root = _read("tls_trust_certs_file_path", options.trust_certs_file)
    cert = _read("tls_certificate_file_path", options.cert_file)
    key = _read("tls_private_key_file_path", options.key_file)
    extra: list[tuple[str, Any]] = []
    if options.allow_insecure or not options.validate_hostname:
        leaf, names = _broker_certificate(target, options, timeout_s)
        if options.allow_insecure:
            root = leaf
        if names:
            extra.append(("grpc.ssl_target_name_override", names[0]))
    credentials = grpc.ssl_channel_credentials(root_certificates=root, private_key=key, certificate_chain=cert)
    return grpc.secure_channel(target, credentials, options=channel_options + extra)


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


def _broker_certificate(target: str, options: TlsOptions, timeout_s: float) -> tuple[bytes, list[str]]:
    """The broker's certificate (PEM) and the names it holds, from one handshake (verified against the trust
    certificates unless insecure connections are allowed)."""
    host, _, port = target.rpartition(":")
    host = host.strip("[]")
    context = ssl_context(options, check_hostname=False)
    try:
        with socket.create_connection((host, int(port)), timeout=timeout_s) as sock, \
                context.wrap_socket(sock, server_hostname=host) as tls:
            der = tls.getpeercert(binary_form=True)
    except ssl.SSLCertVerificationError as exc:
        raise ConnectError(f"the broker's certificate at {target} is not trusted ({exc.verify_message}): give "
                           "tls_trust_certs_file_path the CA that signed it", target=target) from None
    except (OSError, ssl.SSLError) as exc:
        raise ConnectError(f"cannot reach the broker's TLS port at {target}: {exc}; is it a TLS port "
                           "(brokerServicePortTls)?", target=target) from None
    if der is None:
        raise ConnectError(f"the broker at {target} presented no certificate", target=target)
    return ssl.DER_cert_to_PEM_cert(der).encode(), _names(der)


def _names(der: bytes) -> list[str]:
    """The certificate's DNS and IP subject alternative names, then its CN."""
    from cryptography import x509
    from cryptography.x509.oid import NameOID

    cert = x509.load_der_x509_certificate(der)
    names: list[str] = []
    try:
        alt = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        names += alt.get_values_for_type(x509.DNSName)
        names += [str(ip) for ip in alt.get_values_for_type(x509.IPAddress)]
    except x509.ExtensionNotFound:
        pass
    names += [str(attr.value) for attr in cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)]
    # a wildcard name is matched by any name in its place
    return [n.replace("*.", "broker.", 1) if n.startswith("*.") else n for n in names if n]
