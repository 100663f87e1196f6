"""Which admin ``pulsarlike admin`` talks to: the REST admin for an ``http(s)://`` URL (pulsar-admin's
``--admin-url``), pulsarlike's gRPC admin for ``pulsar://`` -- refused, with a pointer to the REST API, when the
``pulsar://`` broker is another Pulsar broker."""
from __future__ import annotations

import argparse
from typing import Any

from connector.cli import security_flags

PROBE_TIMEOUT_S = 2.0
"""How long the binary CONNECT that tells pulsarlike from another Pulsar broker may take."""


def refuse_another_broker(args: argparse.Namespace) -> None:
    """``NotSupported`` when the ``pulsar://`` URL is a Pulsar broker other than pulsarlike (one binary CONNECT
    says whose it is): it has no gRPC admin, only its admin REST API. Nothing answering there: the Admin's own
    error follows."""
    url = args.admin_url
    if url.startswith(("http://", "https://")):
        return
    from broker_core.errors import NotSupported
    from connector.client.broker_kind import is_pulsarlike
    from connector.client.security import Security

    try:
        security = Security.of(url, **security_flags.client_kwargs(args, url))
        pulsarlike = is_pulsarlike(url, PROBE_TIMEOUT_S, security)
    except Exception:  # noqa: BLE001 -- a bad URL or flags, or no answer: the Admin's own call reports it
        return
    if not pulsarlike:
        raise NotSupported(f"{url} is a Pulsar broker other than pulsarlike: its admin calls go over its admin "
                           "REST API only; give --admin-url http://HOST:8080 (its web service port)")


def open_admin(admin_class: Any, args: argparse.Namespace) -> Any:
    """The REST admin for an http(s) URL (pulsar-admin's --admin-url), else the gRPC one."""
    url = args.admin_url
    kwargs = security_flags.client_kwargs(args, url)
    if not url.startswith(("http://", "https://")):
        return admin_class(url, **kwargs)
    if url.startswith("https://"):
        kwargs.update(tls_trust_certs_file_path=getattr(args, "tls_trust_cert_path", None),
                      tls_allow_insecure_connection=getattr(args, "tls_allow_insecure", False),
                      tls_validate_hostname=getattr(args, "tls_hostname_verification", False))
    return admin_class(admin_url=url, **kwargs)
