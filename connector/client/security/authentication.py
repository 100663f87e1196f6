"""Client authentication with pulsar-client's names: ``AuthenticationToken``, ``AuthenticationTLS`` and
``AuthenticationBasic`` (``AuthenticationOauth2``: :mod:`connector.client.security.oauth2`).

    Client(url, authentication=AuthenticationToken("eyJhbGciOi..."))
    Client(url, authentication=AuthenticationToken(lambda: open("/run/token").read()))   # refreshed
    Client("pulsar+ssl://host:6651", tls_trust_certs_file_path="ca.pem",
           authentication=AuthenticationTLS("client.pem", "client.key"))
    Client(url, authentication=AuthenticationBasic("alice", "secret"))

A token travels as each gRPC call's ``authorization: Bearer <token>`` metadata (on plain and TLS
connections alike, as Pulsar's binary protocol sends it in CONNECT). A callable token source is asked on
every call and every stream opening, so a rotated token is picked up at once; a stream the broker ended
because its token expired is opened again only when the source gives another token (otherwise the
``AuthenticationError`` is final: refusals never spin). ``AuthenticationTLS`` presents a client certificate
during the TLS handshake; the broker's ``tls`` provider takes its CN as the role. ``AuthenticationBasic``
travels as ``authorization: Basic base64(user:password)`` (the broker's ``basic`` provider, role: the user).

:func:`from_plugin` reads pulsar-admin / pulsar-spark's ``authPluginClassName`` + ``authParams``.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable
from urllib.parse import unquote, urlparse

import base64

from broker_core.errors import AuthenticationError, InvalidConfiguration


class _GenericForm(type):
    """``Authentication(plugin, params)``, pulsar-client's generic form (there: a C++ plugin loaded by name),
    builds the method the plugin names (:func:`from_plugin`); a subclass is constructed as usual."""

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        if cls is Authentication and (args or kwargs):
            return _generic(*args, **kwargs)
        return super().__call__(*args, **kwargs)


class Authentication(metaclass=_GenericForm):
    """Base of the authentication methods a ``Client`` takes. ``Authentication(dynamicLibPath,
    authParamsString)`` is pulsar-client's generic form: the plugin names of Pulsar's clients for TLS
    (``tls``, ``org.apache.pulsar.client.impl.auth.AuthenticationTls``), token, Basic and OAuth2 give that
    method (the parameters as :func:`from_plugin` reads them); any other plugin (a shared library, Athenz)
    is refused with ``AuthenticationError`` naming it when the client first authenticates, as pulsar-client
    fails to authenticate with a plugin it cannot load."""

    def token(self) -> str | None:
        """The token to send now (None: no token)."""
        return None

    def tls_files(self) -> tuple[str, str] | None:
        """(certificate file, private key file) to present in the TLS handshake, or None."""
        return None

    def authorization(self) -> str | None:
        """The ``authorization`` metadata value to send now (None: none): ``Bearer <token>`` by default."""
        token = self.token()
        return f"Bearer {token}" if token else None


class AuthenticationToken(Authentication):
    """``token``: the JWT, or a function returning it (asked again for every call and stream)."""

    def __init__(self, token: str | Callable[[], str]) -> None:
        if not callable(token) and (not isinstance(token, str) or not token.strip()):
            raise ValueError("AuthenticationToken(token): token must be a non-empty str or a function returning one")
        self._source = token

    def token(self) -> str:
        """The token; ``AuthenticationError`` naming what the supplier raised when it raises (pulsar-client's
        answer to a failing supplier: no connection is made with it)."""
        try:
            value = self._source() if callable(self._source) else self._source
        except Exception as exc:
            raise AuthenticationError(f"the AuthenticationToken supplier failed: {exc}") from exc
        if not isinstance(value, str) or not value.strip():
            raise InvalidConfiguration("the AuthenticationToken function returned no token")
        return value.strip()

    def __repr__(self) -> str:  # never the token itself
        return "AuthenticationToken(<function>)" if callable(self._source) else "AuthenticationToken(<token>)"


class AuthenticationTLS(Authentication):
    """A client certificate and its private key (PEM files), for ``pulsar+ssl://`` URLs."""

    def __init__(self, certificate_path: str, private_key_path: str) -> None:
        for name, path in (("certificate_path", certificate_path), ("private_key_path", private_key_path)):
            if not isinstance(path, str) or not path:
                raise ValueError(f"AuthenticationTLS: {name} must be a file path")
        self.certificate_path = certificate_path
        self.private_key_path = private_key_path

    def tls_files(self) -> tuple[str, str]:
        return self.certificate_path, self.private_key_path

    def __repr__(self) -> str:
        return f"AuthenticationTLS({self.certificate_path!r}, {self.private_key_path!r})"


class AuthenticationBasic(Authentication):
    """A user name and password, checked by the broker's ``basic`` provider (pulsar-client's signature:
    ``auth_params_string`` is the JSON ``{"username": ..., "password": ..., "method": ...}`` and wins over the
    other arguments; ``method`` is the method name Pulsar's binary protocol sends, ``basic`` by default --
    the gRPC port takes the ``Basic`` scheme itself)."""

    def __init__(self, username: str | None = None, password: str | None = None, method: str = "basic",
                 auth_params_string: str | None = None) -> None:
        if auth_params_string is not None:
            try:
                values = _json(auth_params_string)
            except InvalidConfiguration as exc:
                raise InvalidAuthParams(f"AuthenticationBasic: auth_params_string: {exc.message}") from None
            username, password = values.get("username"), values.get("password")
            method = values.get("method") or "basic"
        if not isinstance(username, str) or not username or ":" in username:
            raise ValueError("AuthenticationBasic: username must be a non-empty str without ':'")
        if not isinstance(password, str):
            raise ValueError("AuthenticationBasic: password must be a str")
        if not isinstance(method, str) or not method:
            raise ValueError("AuthenticationBasic: method must be a non-empty str")
        self.username = username
        self.method = method
        self._credentials = base64.b64encode(f"{username}:{password}".encode("utf-8")).decode("ascii")

    def authorization(self) -> str:
        return f"Basic {self._credentials}"

    def __repr__(self) -> str:  # never the password
        return f"AuthenticationBasic({self.username!r}, <password>)"


class InvalidAuthParams(InvalidConfiguration, RuntimeError):
    """An ``auth_params_string`` that does not parse: pulsar-client raises RuntimeError (its C++ core's error)."""


class _FileToken(Authentication):
    """A token read from a file on every use (``file:///path``, as Pulsar's token plugin reads it)."""

    def __init__(self, path: str) -> None:
        self._path = path

    def token(self) -> str:
        try:
            value = Path(self._path).read_text().strip()
        except OSError as exc:
            raise InvalidConfiguration(f"cannot read the token file {self._path}: {exc.strerror}") from None
        if not value:
            raise InvalidConfiguration(f"the token file {self._path} is empty")
        return value

    def __repr__(self) -> str:
        return f"AuthenticationToken(file {self._path!r})"


TOKEN_PLUGINS = ("org.apache.pulsar.client.impl.auth.AuthenticationToken", "AuthenticationToken", "token")
TLS_PLUGINS = ("org.apache.pulsar.client.impl.auth.AuthenticationTls", "AuthenticationTls", "AuthenticationTLS",
               "tls")
BASIC_PLUGINS = ("org.apache.pulsar.client.impl.auth.AuthenticationBasic", "AuthenticationBasic", "basic")
OAUTH2_PLUGINS = ("org.apache.pulsar.client.impl.auth.oauth2.AuthenticationOAuth2", "AuthenticationOAuth2",
                  "AuthenticationOauth2", "oauth2")


def from_plugin(plugin: str, params: str) -> Authentication | None:
    """pulsar-admin's ``--auth-plugin`` / ``--auth-params`` (pulsar-spark's ``authPluginClassName`` /
    ``authParams``): a token plugin takes ``token:<jwt>``, ``file:///path`` or the bare token; the TLS plugin
    ``tlsCertFile:<path>,tlsKeyFile:<path>`` or that as JSON; the OAuth2 plugin the JSON of
    :class:`~connector.client.security.oauth2.AuthenticationOauth2` (``issuerUrl``/``issuer_url``, ``privateKey``,
    ``audience``, ``scope``). Empty plugin: None."""
    plugin, params = (plugin or "").strip(), (params or "").strip()
    if not plugin:
        if params:
            raise InvalidConfiguration("authParams given without authPluginClassName: name the plugin "
                                       f"({TOKEN_PLUGINS[0]} or {TLS_PLUGINS[0]})")
        return None
    if plugin in TOKEN_PLUGINS:
        if params.startswith("token:"):
            return AuthenticationToken(params[len("token:"):])
        if params.startswith("file:"):
            return _FileToken(unquote(urlparse(params).path))
        if params.startswith("{"):
            value = _json(params).get("token", "")
            return AuthenticationToken(value) if value else _missing(plugin)
        return AuthenticationToken(params) if params else _missing(plugin)
    if plugin in TLS_PLUGINS:
        values = _json(params) if params.startswith("{") else dict(
            item.split(":", 1) for item in params.split(",") if ":" in item)
        cert, key = values.get("tlsCertFile"), values.get("tlsKeyFile")
        if not cert or not key:
            raise InvalidConfiguration("the TLS auth plugin takes authParams tlsCertFile:<path>,tlsKeyFile:<path>")
        return AuthenticationTLS(str(cert).strip(), str(key).strip())
    if plugin in BASIC_PLUGINS:
        # Pulsar's Java plugin takes JSON {"userId": ..., "password": ...}; the C++/Python one "username".
        values = _json(params) if params.startswith("{") else {}
        user = values.get("userId", values.get("username"))
        if not user or values.get("password") is None:
            raise InvalidConfiguration('the basic auth plugin takes authParams {"userId": ..., "password": ...}')
        return AuthenticationBasic(str(user), str(values["password"]))
    if plugin in OAUTH2_PLUGINS:
        from connector.client.security.oauth2 import AuthenticationOauth2  # it imports this module

        return AuthenticationOauth2(params)
    raise InvalidConfiguration(f"unknown auth plugin {plugin!r}: use {TOKEN_PLUGINS[0]}, {TLS_PLUGINS[0]}, "
                               f"{BASIC_PLUGINS[0]} or {OAUTH2_PLUGINS[0]}")


class _UnknownPlugin(Authentication):
    """A plugin pulsarlike has not: every attempt to authenticate raises ``AuthenticationError`` naming it."""

    def __init__(self, plugin: str) -> None:
        self.plugin = plugin

    def token(self) -> str | None:
        raise AuthenticationError(
            f"authentication plugin {self.plugin[:200]!r} is not one pulsarlike has: use tls, token, basic or oauth2 "
            f"(or AuthenticationTLS, AuthenticationToken, AuthenticationBasic, AuthenticationOauth2)",
            plugin=self.plugin)

    def authorization(self) -> str | None:
        return self.token()

    def __repr__(self) -> str:
        return f"Authentication({self.plugin[:200]!r}, <params>)"


def _generic(dynamicLibPath: Any, authParamsString: Any) -> Authentication:
    for name, value in (("dynamicLibPath", dynamicLibPath), ("authParamsString", authParamsString)):
        if not isinstance(value, str):  # pulsar-client's _check_type
            raise ValueError(f"Argument {name} is expected to be of type 'str' and not '{type(value).__name__}'")
    known = TOKEN_PLUGINS + TLS_PLUGINS + BASIC_PLUGINS + OAUTH2_PLUGINS
    if dynamicLibPath.strip() not in known:
        return _UnknownPlugin(dynamicLibPath)
    found = from_plugin(dynamicLibPath, authParamsString)
    assert found is not None
    return found


def _json(params: str) -> dict[str, Any]:
    try:
        value = json.loads(params)
    except ValueError:
        raise InvalidConfiguration("authParams is not valid JSON") from None
    if not isinstance(value, dict):
        raise InvalidConfiguration("authParams JSON must be an object")
    return value


def _missing(plugin: str) -> Authentication:
    raise InvalidConfiguration(f"the {plugin} plugin needs authParams: token:<jwt> or file:///path/to/token")
