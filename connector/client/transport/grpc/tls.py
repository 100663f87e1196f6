"""The gRPC transport's TLS channel to the broker's TLS port (``pulsar+ssl://``), with pulsar-client's options
(:class:`~connector.client.security.TlsOptions`).

gRPC always checks a name: when ``tls_validate_hostname`` is off (pulsar-client's default) the client first
reads the broker's certificate in a separate (verified) handshake and checks against a name the certificate
holds (``grpc.ssl_target_name_override``): the chain is verified, the host name is not. With
``tls_allow_insecure_connection`` the certificate read at the first connection is pinned for the client's life.
"""
from __future__ import annotations

import socket
import ssl
from typing import Any

import grpc

from broker_core.errors import ConnectError

from connector.client.security import TlsOptions, read_file, ssl_context

__all__ = ["secure_channel"]


def secure_channel(target: str, options: TlsOptions, channel_options: list[tuple[str, Any]],
                   timeout_s: float) -> grpc.Channel:
    """A gRPC channel to ``target`` (``host:port``) over TLS as ``options`` say."""
    root = read_file("tls_trust_certs_file_path", options.trust_certs_file)
    cert = read_file("tls_certificate_file_path", options.cert_file)
    key = read_file("tls_private_key_file_path", options.key_file)
    extra: list[tuple[str, Any]] = []
    if options.allow_insecure or not options.validate_hostname:
        leaf, names = _broker_certificate(target, options, timeout_s)
        if options.allow_insecure:
            root = leaf
        if names:
            extra.append(("grpc.ssl_target_name_override", names[0]))
    credentials = grpc.ssl_channel_credentials(root_certificates=root, private_key=key, certificate_chain=cert)
    return grpc.secure_channel(target, credentials, options=channel_options + extra)


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
