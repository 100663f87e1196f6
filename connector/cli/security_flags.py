"""The authentication and TLS flags every client-side tool takes, with pulsar-admin's and pulsar-client's
names, and the environment variables that give their defaults (handy in containers):

    --auth-plugin CLASS     org.apache.pulsar.client.impl.auth.AuthenticationToken (or ...AuthenticationTls,
                            short: token, tls)                          $PULSARLIKE_AUTH_PLUGIN
    --auth-params PARAMS    token:<jwt> | file:///path/to/token | tlsCertFile:<pem>,tlsKeyFile:<pem> |
                            OAuth2's JSON {"issuerUrl", "privateKey", "audience", "scope"}
                                                                        $PULSARLIKE_AUTH_PARAMS
    --tls-trust-cert-path F CA certificates (PEM) for pulsar+ssl://     $PULSARLIKE_TLS_TRUST_CERT_PATH
    --tls-allow-insecure    trust any broker certificate (local play only)
    --tls-enable-hostname-verification   check the certificate names the URL's host

The token never appears in a usage error or a log line.
"""
from __future__ import annotations

import argparse
import os
from typing import Any

ENV = {"auth_plugin": "PULSARLIKE_AUTH_PLUGIN", "auth_params": "PULSARLIKE_AUTH_PARAMS",
       "tls_trust_cert_path": "PULSARLIKE_TLS_TRUST_CERT_PATH"}


def add(parser: argparse.ArgumentParser, suppress: bool = False) -> None:
    """Add the flags; ``suppress``: no defaults of their own (a sub-command's copy of the top-level ones)."""
    def default(value: Any) -> Any:
        return argparse.SUPPRESS if suppress else value

    group = parser.add_argument_group("authentication and TLS")
    group.add_argument("--auth-plugin", dest="auth_plugin", default=default(os.environ.get(ENV["auth_plugin"], "")),
                       metavar="CLASS", help="authentication plugin: org.apache.pulsar.client.impl.auth."
                       "AuthenticationToken, ...AuthenticationTls, ...AuthenticationBasic or ...oauth2."
                       "AuthenticationOAuth2 (default $PULSARLIKE_AUTH_PLUGIN)")
    group.add_argument("--auth-params", dest="auth_params", default=default(os.environ.get(ENV["auth_params"], "")),
                       metavar="PARAMS", help="token:<jwt>, file:///path/to/token, tlsCertFile:<pem>,tlsKeyFile:"
                       "<pem>, or OAuth2's JSON {\"issuerUrl\": ..., \"privateKey\": \"file:///...\", "
                       "\"audience\": ...} (default $PULSARLIKE_AUTH_PARAMS)")
    group.add_argument("--tls-trust-cert-path", dest="tls_trust_cert_path",
                       default=default(os.environ.get(ENV["tls_trust_cert_path"]) or None), metavar="FILE",
                       help="CA certificates (PEM) the broker's certificate must chain to, for pulsar+ssl:// URLs")
    group.add_argument("--tls-allow-insecure", dest="tls_allow_insecure", action="store_true",
                       default=default(False), help="trust any certificate the broker presents (local play only)")
    group.add_argument("--tls-enable-hostname-verification", dest="tls_hostname_verification",
                       action="store_true", default=default(False),
                       help="check that the broker's certificate names the URL's host")


def client_kwargs(args: argparse.Namespace, url: str) -> dict[str, Any]:
    """Keyword arguments for ``Client``/``Admin`` from the parsed flags (``InvalidConfiguration`` for a bad
    plugin or parameters)."""
    from connector.client.security.authentication import from_plugin
    from connector.client.security import is_tls_url

    kwargs: dict[str, Any] = {"authentication": from_plugin(getattr(args, "auth_plugin", ""),
                                                            getattr(args, "auth_params", ""))}
    if is_tls_url(url):
        kwargs.update(tls_trust_certs_file_path=getattr(args, "tls_trust_cert_path", None),
                      tls_allow_insecure_connection=getattr(args, "tls_allow_insecure", False),
                      tls_validate_hostname=getattr(args, "tls_hostname_verification", False))
    return kwargs
