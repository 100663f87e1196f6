"""HTTP to Pulsar's admin REST API (``http://HOST:8080``, ``https://HOST:8443``): requests with the admin's
credentials, answers as JSON or text, and Pulsar's error statuses as the typed errors of
:mod:`broker_core.errors`. Standard library only (urllib), so the connector imports without the broker.

Statuses: 401 ``AuthenticationError``, 403 ``AuthorizationError``, 404 the missing thing's ``...NotFound``
(tenant, namespace, topic or subscription, from what the call names and Pulsar's ``reason``), 409 the
call's conflict (``TenantAlreadyExists``, ``NamespaceNotEmpty`` ...), 412 ``NotAllowedError`` (or the call's
own, e.g. ``InvalidConfiguration`` for a policy value), 400 ``InvalidConfiguration``, 406
``InvalidPartitionCount``, 405/501
:class:`~connector.client.admin.wire.NotSupported`, 429 ``TooManyRequests``, 503 ``ServiceNotReady``; the
message is Pulsar's ``reason``. An unreachable server is ``ConnectError``, no answer in time ``Timeout``.
"""
from __future__ import annotations

import json
import logging
import socket
import ssl
import time
import urllib.error
import urllib.parse
import urllib.request
from email.message import Message
from typing import Any

from broker_core import errors

from connector.client.admin.wire import NotSupported
from connector.client.security.authentication import Authentication

log = logging.getLogger(__name__)

_NO_BODY = object()
MAX_REASON = 1000
"""Longest server text quoted in an error (a proxy may answer a whole HTML page)."""
_BY_STATUS: dict[int, type[errors.PulsarLikeError]] = {
    400: errors.InvalidConfiguration, 401: errors.AuthenticationError, 403: errors.AuthorizationError,
    404: errors.TopicNotFound, 409: errors.NotAllowedError, 412: errors.NotAllowedError,
    405: NotSupported, 406: errors.InvalidPartitionCount, 501: NotSupported, 429: errors.TooManyRequests,
    503: errors.ServiceNotReady,
    504: errors.Timeout,
}
_NOT_FOUND_WORDS = (("Message not found", errors.MessageNotFound), ("Message ID not found", errors.MessageNotFound),
                    ("ubscription", errors.SubscriptionNotFound), ("enant", errors.TenantNotFound),
                    ("amespace", errors.NamespaceNotFound))
"""A 404's reason naming what is missing (Pulsar: "Tenant does not exist", "Namespace does not exist",
"Subscription not found", "Message not found" ...); checked before the call's own expectation."""


def _segment(value: str) -> str:
    return urllib.parse.quote(value, safe="")


def path(*segments: str) -> str:
    """``/admin/v2/a/b/c`` with each segment quoted (a name may hold characters a URL reserves)."""
    return "/" + "/".join(_segment(s) for s in segments)


class RestTransport:
    """One admin REST endpoint: :meth:`call` sends a request and returns the decoded answer."""

    def __init__(self, admin_url: str, authentication: Authentication | None = None, timeout_s: float = 30,
                 tls_trust_certs_file_path: str | None = None, tls_allow_insecure_connection: bool = False,
                 tls_validate_hostname: bool = False, tls_certificate_file_path: str | None = None,
                 tls_private_key_file_path: str | None = None) -> None:
        parsed = urllib.parse.urlsplit(admin_url)
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise errors.InvalidConfiguration(f"admin_url={admin_url!r} is not valid; use http://HOST:8080 or"
                                              " https://HOST:8443", key="admin_url")
        self.base = f"{parsed.scheme}://{parsed.netloc}{parsed.path.rstrip('/')}"
        self.timeout_s = timeout_s
        self._authentication = authentication
        self._context: ssl.SSLContext | None = None
        if parsed.scheme == "https":
            self._context = _tls_context(tls_trust_certs_file_path, tls_allow_insecure_connection,
                                         tls_validate_hostname, authentication, tls_certificate_file_path,
                                         tls_private_key_file_path)
        self.closed = False

    def close(self) -> None:
        self.closed = True

    def _headers(self) -> dict[str, str]:
        headers = {"Accept": "application/json"}
        auth = self._authentication
        if auth is None:
            return headers
        # Bearer <token>, Basic <credentials>: what the gRPC calls send as metadata (AuthenticationTLS: none)
        authorize = getattr(auth, "authorization", None)
        value = authorize() if callable(authorize) else (f"Bearer {auth.token()}" if auth.token() else None)
        if value:
            headers["Authorization"] = value
        return headers

    def call(self, method: str, where: str, body: Any = _NO_BODY, *, query: dict[str, Any] | None = None,
             not_found: type[errors.PulsarLikeError] | None = None,
             conflict: type[errors.PulsarLikeError] | None = None,
             refused: type[errors.PulsarLikeError] | None = None, timeout_s: float | None = None,
             retry: bool = False) -> Any:
        """``method`` on ``where`` (a path from the admin URL's root); the answer as JSON (text when it is
        not JSON; None for 204). ``not_found`` / ``conflict`` / ``refused``: the error a 404 / 409 / 412
        means for this call. ``retry``: tried again while the server is unreachable or answers 503, until the
        timeout."""
        raw, headers = self.fetch(method, where, body, query=query, not_found=not_found, conflict=conflict,
                                  refused=refused, timeout_s=timeout_s, retry=retry)
        return _decoded(raw, headers.get("Content-Type", ""))

    def fetch(self, method: str, where: str, body: Any = _NO_BODY, *, query: dict[str, Any] | None = None,
              not_found: type[errors.PulsarLikeError] | None = None,
              conflict: type[errors.PulsarLikeError] | None = None,
              refused: type[errors.PulsarLikeError] | None = None, timeout_s: float | None = None,
              retry: bool = False) -> tuple[bytes, Message]:
        """:meth:`call`'s answer undecoded: (body, headers) -- for answers whose headers carry data (a peeked
        message's ``X-Pulsar-*``)."""
        url = self.base + where
        if query:
            url += "?" + urllib.parse.urlencode({k: _query_value(v) for k, v in query.items()})
        data = None if body is _NO_BODY else json.dumps(body).encode()
        headers = self._headers()
        if data is not None:
            headers["Content-Type"] = "application/json"
        timeout = timeout_s or self.timeout_s
        deadline = time.monotonic() + timeout
        delay = 0.05
        while True:
            try:
                return self._once(method, url, data, headers, max(deadline - time.monotonic(), 0.001),
                                  not_found, conflict, refused)
            except (errors.ConnectError, errors.ServiceNotReady):
                if not retry or self.closed or time.monotonic() + delay >= deadline:
                    raise
                time.sleep(delay)  # backoff while the broker restarts, as the gRPC admin's retries
                delay = min(delay * 2, 1.0)

    def _once(self, method: str, url: str, data: bytes | None, headers: dict[str, str], timeout: float,
              not_found: Any, conflict: Any, refused: Any) -> Any:
        if self.closed:
            raise errors.AlreadyClosed("the admin is closed")
        request = urllib.request.Request(url, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=timeout, context=self._context) as reply:
                return reply.read(), reply.headers
        except urllib.error.HTTPError as failed:
            with failed:
                raise _error(method, url, failed.code, failed.read(), failed.headers.get("Content-Type", ""),
                             not_found, conflict, refused) from None
        except (socket.timeout, TimeoutError):
            raise errors.Timeout(f"{method} {url}: no answer within {timeout:.1f} s") from None
        except urllib.error.URLError as failed:
            if isinstance(failed.reason, (socket.timeout, TimeoutError)):
                raise errors.Timeout(f"{method} {url}: no answer within {timeout:.1f} s") from None
            raise errors.ConnectError(f"cannot reach the admin API at {self.base}: {failed.reason}") from None
        except (ConnectionError, OSError) as failed:
            raise errors.ConnectError(f"cannot reach the admin API at {self.base}: {failed}") from None


def _query_value(value: Any) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def _decoded(raw: bytes, content_type: str) -> Any:
    if not raw:
        return None
    if "json" in content_type:
        return json.loads(raw)
    text = raw.decode("utf-8", errors="replace")
    try:  # some servers answer JSON as text/plain
        return json.loads(text)
    except ValueError:
        return text


def _error(method: str, url: str, status: int, raw: bytes, content_type: str, not_found: Any, conflict: Any,
           refused: Any) -> errors.PulsarLikeError:
    reason = ""
    try:
        found = json.loads(raw) if raw else None
        if isinstance(found, dict):
            reason = str(found.get("reason") or found.get("message") or "")
    except ValueError:
        pass
    if not reason:
        reason = raw.decode("utf-8", errors="replace").strip()[:MAX_REASON] or f"HTTP {status}"
    where = urllib.parse.urlsplit(url).path
    cls = _BY_STATUS.get(status, errors.UnknownError)
    if status == 404:
        cls = next((c for word, c in _NOT_FOUND_WORDS if word in reason), None) or not_found or cls
    elif status == 409 and conflict is not None:
        cls = conflict
    elif status == 412 and refused is not None:
        cls = refused
    elif status >= 500 and status not in _BY_STATUS:
        cls = errors.UnknownError
    log.debug("event=admin_rest_refused method=%s path=%s status=%d", method, where, status)
    return cls(f"{reason} ({method} {where}: HTTP {status})", status=status, reason=reason)


def _tls_context(trust: str | None, insecure: bool, hostname: bool, authentication: Authentication | None,
                 cert: str | None, key: str | None) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=trust) if trust else ssl.create_default_context()
    if insecure:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    else:
        context.check_hostname = hostname
    files = authentication.tls_files() if authentication is not None else None
    if files is None and cert and key:
        files = (cert, key)
    if files is not None:
        context.load_cert_chain(*files)
    return context
