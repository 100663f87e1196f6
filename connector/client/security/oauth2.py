"""``AuthenticationOauth2``: OAuth 2.0 access tokens from an identity provider, as pulsar-client 3.13 takes them.

    auth = AuthenticationOauth2(json.dumps({
        "type": "client_credentials",                       # the one flow pulsar-client's Python API serves
        "issuer_url": "https://idp.example.com",            # where /.well-known/openid-configuration is
        "private_key": "file:///secrets/pulsar-client.json",  # {"client_id": ..., "client_secret": ...}
        "audience": "pulsar",                               # optional
        "scope": "pulsar:produce"}))                        # optional
    Client(url, authentication=auth)

The client-credentials flow (RFC 6749 4.4), as Pulsar's clients do it:

1. the issuer's OpenID discovery document ``<issuer_url>/.well-known/openid-configuration`` names the
   ``token_endpoint`` (asked once per ``AuthenticationOauth2``);
2. a ``POST`` to it of the form ``grant_type=client_credentials&client_id=..&client_secret=..`` (with
   ``audience`` and ``scope`` when given) answers ``{"access_token": .., "expires_in": ..}``;
3. the access token is what :meth:`token` gives: it travels as Pulsar's ``token`` auth data in the binary
   protocol's ``CONNECT``/``AUTH_RESPONSE``, as ``authorization: Bearer`` over gRPC and REST;
4. it is kept until ``expires_in`` is nearly spent (the last tenth of its life, at most
   :data:`REFRESH_MARGIN_S`), then fetched again: a broker's ``AUTH_CHALLENGE`` or a gRPC stream ended for
   an expired token gets a fresh one.

``private_key`` is a credentials file: ``/path``, ``file:///path``, ``file:/path`` or
``data:application/json;base64,<json>``. Failures are ``AuthenticationError`` naming the step (never the
secret). The standard library's ``urllib`` does the HTTP (``https://`` checked against the system's roots, or
``tls_trust_certs_file_path``).
"""
from __future__ import annotations

import base64
import json
import ssl
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from broker_core.errors import AuthenticationError, InvalidConfiguration

from connector.client.security.authentication import Authentication

DISCOVERY_PATH = "/.well-known/openid-configuration"
REFRESH_MARGIN_S = 60.0
"""A token is fetched again this long before it expires at most (a short-lived one: in its last tenth)."""
HTTP_TIMEOUT_S = 10.0
MAX_ANSWER_BYTES = 1 << 20
"""An identity provider's answer larger than this is refused (a discovery document is a few KiB)."""


@dataclass(frozen=True)
class Oauth2Params:
    """``auth_params_string`` parsed (pulsar-client's snake_case keys; the Java client's camelCase ones too,
    as pulsar-admin's ``--auth-params`` spells them)."""

    issuer_url: str
    private_key: str
    audience: str = ""
    scope: str = ""

    @classmethod
    def parse(cls, params: str) -> "Oauth2Params":
        try:
            values = json.loads(params)
        except (TypeError, ValueError):
            raise InvalidConfiguration("AuthenticationOauth2: auth_params_string must be a JSON object such as "
                                       '{"issuer_url": ..., "private_key": ...}') from None
        if not isinstance(values, dict):
            raise InvalidConfiguration("AuthenticationOauth2: auth_params_string must be a JSON object")

        def get(snake: str, camel: str) -> str:
            value = values.get(snake, values.get(camel, ""))
            if not isinstance(value, str):
                raise InvalidConfiguration(f"AuthenticationOauth2: {snake} must be a string")
            return value.strip()

        flow = get("type", "type") or "client_credentials"
        if flow != "client_credentials":
            raise InvalidConfiguration(f"AuthenticationOauth2: type {flow[:40]!r} is not served; the one flow is "
                                       "client_credentials")
        issuer, key = get("issuer_url", "issuerUrl"), get("private_key", "privateKey")
        if not issuer.lower().startswith(("http://", "https://")):
            raise InvalidConfiguration("AuthenticationOauth2: issuer_url must be an http(s):// URL")
        if not key:
            raise InvalidConfiguration("AuthenticationOauth2: private_key must name the credentials file "
                                       "(/path, file:///path or data:application/json;base64,...)")
        return cls(issuer.rstrip("/"), key, get("audience", "audience"), get("scope", "scope"))


@dataclass(frozen=True)
class _Cached:
    token: str
    refresh_at: float
    """Clock reading after which the token is fetched again."""


class AuthenticationOauth2(Authentication):
    """OAuth 2.0 client credentials (see the module docstring). ``clock`` (pulsarlike extension): seconds,
    monotonic, for tests; ``tls_trust_certs_file_path``: CA certificates for an ``https://`` issuer."""

    def __init__(self, auth_params_string: str, *, clock: Callable[[], float] = time.monotonic,
                 tls_trust_certs_file_path: str | None = None) -> None:
        if not isinstance(auth_params_string, str):
            raise ValueError("AuthenticationOauth2(auth_params_string): a JSON string")
        self.params = Oauth2Params.parse(auth_params_string)
        self._clock = clock
        self._trust = tls_trust_certs_file_path
        self._lock = threading.Lock()
        self._token_endpoint: str | None = None
        self._cached: _Cached | None = None

    def token(self) -> str:
        with self._lock:
            cached = self._cached
            if cached is None or self._clock() >= cached.refresh_at:
                cached = self._cached = self._fetch()
            return cached.token

    def __repr__(self) -> str:  # never the secret nor the token
        return f"AuthenticationOauth2(issuer_url={self.params.issuer_url!r})"

    # ------------------------------------------------------------------ the flow
    def _fetch(self) -> _Cached:
        client_id, client_secret = _credentials(self.params.private_key)
        if self._token_endpoint is None:
            document = self._call(self.params.issuer_url + DISCOVERY_PATH, None, "the discovery document")
            endpoint = document.get("token_endpoint")
            if not isinstance(endpoint, str) or not endpoint.lower().startswith(("http://", "https://")):
                raise _failed(f"the discovery document of {self.params.issuer_url} names no token_endpoint")
            self._token_endpoint = endpoint
        form = {"grant_type": "client_credentials", "client_id": client_id, "client_secret": client_secret}
        if self.params.audience:
            form["audience"] = self.params.audience
        if self.params.scope:
            form["scope"] = self.params.scope
        started = self._clock()
        answer = self._call(self._token_endpoint, urllib.parse.urlencode(form).encode(), "the token endpoint")
        token = answer.get("access_token")
        if not isinstance(token, str) or not token:
            raise _failed(f"the token endpoint {self._token_endpoint} answered no access_token")
        lifetime = answer.get("expires_in")
        if isinstance(lifetime, str) and lifetime.isdigit():
            lifetime = int(lifetime)
        if isinstance(lifetime, bool) or not isinstance(lifetime, (int, float)) or lifetime <= 0:
            return _Cached(token, float("inf"))  # no expiry announced: kept until the broker refuses it
        return _Cached(token, started + lifetime - min(REFRESH_MARGIN_S, lifetime / 10))

    def _call(self, url: str, form: bytes | None, what: str) -> dict[str, Any]:
        headers = {"Accept": "application/json"}
        if form is not None:
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        request = urllib.request.Request(url, data=form, headers=headers, method="POST" if form else "GET")
        context = ssl.create_default_context(cafile=self._trust) if url.lower().startswith("https") else None
        try:
            with urllib.request.urlopen(request, timeout=HTTP_TIMEOUT_S, context=context) as response:
                body = response.read(MAX_ANSWER_BYTES + 1)
        except urllib.error.HTTPError as exc:
            detail = _error_detail(exc)
            raise _failed(f"{what} ({url}) answered HTTP {exc.code}{detail}") from None
        except (urllib.error.URLError, OSError, ValueError) as exc:
            reason = getattr(exc, "reason", exc)
            raise _failed(f"cannot reach {what} at {url}: {reason}") from None
        if len(body) > MAX_ANSWER_BYTES:
            raise _failed(f"{what} ({url}) answered more than {MAX_ANSWER_BYTES} bytes")
        try:
            value = json.loads(body)
        except ValueError:
            raise _failed(f"{what} ({url}) did not answer JSON") from None
        if not isinstance(value, dict):
            raise _failed(f"{what} ({url}) did not answer a JSON object")
        return value


def _credentials(private_key: str) -> tuple[str, str]:
    """(client_id, client_secret) from the credentials file ``private_key`` names."""
    if private_key.startswith("data:"):
        header, _, data = private_key.partition(",")
        try:
            raw = base64.b64decode(data, validate=True) if header.endswith(";base64") else \
                urllib.parse.unquote(data).encode()
        except ValueError:
            raise InvalidConfiguration("AuthenticationOauth2: private_key's data: URL is not valid base64") from None
        where = "the private_key data: URL"
    else:
        path = urllib.parse.unquote(urllib.parse.urlparse(private_key).path) if private_key.startswith("file:") \
            else private_key
        try:
            raw = Path(path).read_bytes()
        except OSError as exc:
            raise InvalidConfiguration(f"AuthenticationOauth2: cannot read the credentials file {path}: "
                                       f"{exc.strerror}") from None
        where = f"the credentials file {path}"
    try:
        values = json.loads(raw)
    except ValueError:
        raise InvalidConfiguration(f"AuthenticationOauth2: {where} is not JSON") from None
    client_id = values.get("client_id") if isinstance(values, dict) else None
    client_secret = values.get("client_secret") if isinstance(values, dict) else None
    if not isinstance(client_id, str) or not client_id or not isinstance(client_secret, str):
        raise InvalidConfiguration(f"AuthenticationOauth2: {where} must hold client_id and client_secret")
    return client_id, client_secret


def _error_detail(exc: urllib.error.HTTPError) -> str:
    """RFC 6749's ``error`` (``invalid_client``, ``invalid_scope`` ...) of a refusal, when it says one."""
    try:
        value = json.loads(exc.read(4096))
    except (ValueError, OSError):
        return ""
    error = value.get("error") if isinstance(value, dict) else None
    return f" ({str(error)[:80]})" if error else ""


def _failed(reason: str) -> AuthenticationError:
    return AuthenticationError(f"OAuth2 authentication failed: {reason}", reason=reason)
