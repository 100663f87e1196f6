"""The security layer both front ends call: who a client is (authentication), and what it may do
(authorization). Configured by ``authenticationEnabled``, ``authenticationProviders``, ``anonymousUserRole``,
``authorizationEnabled`` and ``superUserRoles`` (:mod:`broker_core.config`; docs/security.md). The ``openid``
provider (:mod:`broker_core.security.openid`) takes the ``token`` method too: with both, a token either
accepts is in (:class:`~broker_core.security.providers.AnyOf`).

- The gRPC front end (:mod:`broker_core.frontends.grpc.admission`) hands it each call's ``authorization: Bearer
  <token>`` metadata and the connection's :class:`~broker_core.net.peers.ClientIdentity`
  (:meth:`Security.authenticate_call`): a token goes to the ``token`` provider (``Basic base64(user:password)``
  to the ``basic`` one, :mod:`broker_core.security.basic`), else a verified TLS client certificate to the
  ``tls`` provider, else the client is anonymous. The HTTP admin API does the same with its ``Authorization``
  header and its HTTPS client certificate (:mod:`broker_core.frontends.http.admin.access`).
- The Pulsar binary front end hands it ``CONNECT``'s ``auth_method_name`` and ``auth_data``
  (:meth:`Security.authenticate`).
- On the event loop each front end awaits the ``_async`` form (:meth:`Security.authenticate_async`,
  :meth:`Security.authenticate_call_async`): a Basic password is hashed on a worker thread
  (:mod:`broker_core.security.password_checks`), never on the loop; an address that failed too many Basic
  logins is refused with ``TooManyRequests`` (:mod:`broker_core.security.failed_logins`).
- Both then ask :meth:`Security.authorize` (role x action x resource,
  :mod:`broker_core.security.authorization`) before doing anything, and check long-lived connections
  with :meth:`Security.still_valid` every ``authenticationRefreshCheckSeconds``.

With authentication off every client is anonymous (role ``anonymousUserRole``, empty by default); with it on,
a client that presents nothing gets that role only when ``anonymousUserRole`` is set, else
``AuthenticationError``. So does a client that names a method no provider takes (``CONNECT``'s
``auth_method_name``, an ``authorization`` scheme such as ``Digest``), as Pulsar's ``ServerCnx`` and its HTTP
``AuthenticationService`` do: with ``anonymousUserRole`` it is that role, and authorization decides (logged
once per method, ``event=authentication_fallback``); without, it is refused at once. Credentials a provider
refuses are refused, never that role. Every refusal is logged once (``event=authentication_refused`` / ``authorization_
refused``) with the peer, the method or role, the action and the resource -- never a token.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass

from broker_core.clock import SYSTEM_CLOCK, Clock
from broker_core.config import BrokerConfig
from broker_core.errors import AuthenticationError, AuthorizationError, InvalidConfiguration
from broker_core.log_limits import LogLimiter
from broker_core.net.peers import ClientIdentity
from broker_core.security.authorization import ADMIN, CONSUME, SUPER, Authorizer
from broker_core.security.providers import (AnyOf, Authenticated, AuthenticationProvider, TlsAuthentication,
                                                    TokenAuthentication)
from broker_core.types import TopicName

log = logging.getLogger(__name__)

ANONYMOUS = ""
"""The role of every client while authentication is off and ``anonymousUserRole`` is unset."""
NO_AUTH = "none"
BEARER = "bearer "
BASIC = "basic "


@dataclass(frozen=True)
class Principal:
    """An authenticated client."""

    role: str
    method: str
    """The provider that admitted it (``token``, ``tls``), or ``none`` for an anonymous client."""
    expires_at_ms: int | None = None
    """When its credentials expire (None: never)."""


class Security:
    """Authentication and authorization as configured (see the module docstring). ``Security()`` is
    everything off: anonymous clients allowed to do everything."""

    def __init__(self, config: BrokerConfig | None = None, authorizer: Authorizer | None = None,
                 clock: Clock = SYSTEM_CLOCK) -> None:
        config = config or BrokerConfig()
        self.authentication_enabled = config.authenticationEnabled
        self.anonymous_role = config.anonymousUserRole
        self.refresh_check_s = config.authenticationRefreshCheckSeconds
        self._refusals = LogLimiter(log, clock=clock)
        """A client refused again and again (a loop of bad tokens, of calls it may not make), or let in as
        ``anonymousUserRole`` for a method no provider takes, is one line per kind and 10 s, with the count."""
        self._authorizer = authorizer if config.authorizationEnabled else None
        self.providers: dict[str, AuthenticationProvider] = {}
        for name in config.authentication_providers():
            if name == "token":
                from broker_core.security.tokens import TokenValidator  # only then: see providers.py

                self.providers[name] = AnyOf.of(TokenAuthentication(TokenValidator.from_config(config, clock)),
                                                self.providers.get(name))
            elif name == "openid":  # the token method, as Pulsar's AuthenticationProviderOpenID
                from broker_core.security.openid import OpenIDAuthentication  # only then, as tokens

                self.providers["token"] = AnyOf.of(self.providers.get("token"),
                                                   OpenIDAuthentication.from_config(config, clock))
            elif name == "basic":
                from broker_core.security.basic import BasicAuthentication  # only then, as tokens

                self.providers[name] = BasicAuthentication.from_config(config, clock)
            else:
                self.providers[name] = TlsAuthentication()
        if self.authentication_enabled and not self.providers:
            raise InvalidConfiguration("authenticationEnabled=true needs authenticationProviders (token, tls, "
                                       "basic, openid)",
                                       key="authenticationProviders")
        if config.authorizationEnabled and authorizer is None:
            raise InvalidConfiguration("authorizationEnabled=true needs the broker's tenants and policies")

    @property
    def authorization_enabled(self) -> bool:
        return self._authorizer is not None

    # ------------------------------------------------------------------ authentication
    def authenticate(self, method: str, data: bytes, identity: ClientIdentity) -> Principal:
        """The principal of a client that presents ``data`` for ``method`` (``""``/``none``: nothing);
        ``AuthenticationError`` when it is refused (``TooManyRequests`` from an address blocked for failed
        Basic logins). Checked on the calling thread: the event loop awaits :meth:`authenticate_async`."""
        provider = self._provider(method, identity)
        if isinstance(provider, Principal):
            return provider
        try:
            found = provider.authenticate(data, identity)
        except AuthenticationError as exc:
            raise self._refused(identity, method, exc.fields.get("reason", exc.message)) from None
        return Principal(found.role, method, found.expires_at_ms)

    async def authenticate_async(self, method: str, data: bytes, identity: ClientIdentity) -> Principal:
        """:meth:`authenticate` for the event loop: a password is hashed on a worker thread, awaited."""
        provider = self._provider(method, identity)
        if isinstance(provider, Principal):
            return provider
        try:
            found = await provider.authenticate_async(data, identity)
        except AuthenticationError as exc:
            raise self._refused(identity, method, exc.fields.get("reason", exc.message)) from None
        return Principal(found.role, method, found.expires_at_ms)

    def authenticate_call(self, authorization: str | None, identity: ClientIdentity) -> Principal:
        """A gRPC call's or HTTP request's principal from its ``authorization`` metadata or header (``Bearer
        <token>``, ``Basic base64(user:password)``), else its TLS client certificate, else anonymous."""
        credentials = self._call_credentials(authorization, identity)
        if isinstance(credentials, Principal):
            return credentials
        return self.authenticate(*credentials, identity)

    async def authenticate_call_async(self, authorization: str | None, identity: ClientIdentity) -> Principal:
        """:meth:`authenticate_call` for the event loop (see :meth:`authenticate_async`)."""
        credentials = self._call_credentials(authorization, identity)
        if isinstance(credentials, Principal):
            return credentials
        return await self.authenticate_async(*credentials, identity)

    def _provider(self, method: str, identity: ClientIdentity) -> AuthenticationProvider | Principal:
        """The provider that checks ``method``, or the principal when nothing is to be checked."""
        if not self.authentication_enabled:
            return Principal(self.anonymous_role or ANONYMOUS, NO_AUTH)
        if not method or method == NO_AUTH:
            return self._anonymous(identity)
        provider = self.providers.get(method)
        if provider is None:
            return self._unknown_method(identity, method, f"authentication method {method[:32]!r} is not enabled "
                                        f"on this broker (it takes {', '.join(self.providers)})")
        return provider

    def _call_credentials(self, authorization: str | None,
                          identity: ClientIdentity) -> tuple[str, bytes] | Principal:
        """(method, credentials) of a call's ``authorization``: a token, Basic credentials, else the TLS
        client certificate, else none. An ``authorization`` no provider here takes (another scheme, a token
        where only ``basic`` is on) counts as none, as Pulsar's HTTP ``AuthenticationService`` tries each
        provider and then falls back: the certificate, else the anonymous principal (refused without
        ``anonymousUserRole``)."""
        if not self.authentication_enabled:
            return NO_AUTH, b""
        if authorization:
            scheme = authorization[:max(len(BEARER), len(BASIC))].lower()
            method = "token" if scheme.startswith(BEARER) else "basic" if scheme.startswith(BASIC) else ""
            if method == "basic" and method in self.providers:
                return "basic", _basic_credentials(authorization[len(BASIC):])
            if method == "token" and method in self.providers:
                return "token", authorization[len(BEARER):].strip().encode("ascii", "replace")
            if not (identity.tls_subject and "tls" in self.providers):
                return self._unknown_method(identity, method or "unknown", "the authorization is not one this "
                                            f"broker takes: {self._schemes()}")
        if identity.tls_subject and "tls" in self.providers:
            return "tls", b""
        return NO_AUTH, b""

    def still_valid(self, principal: Principal) -> bool:
        """False once the principal's credentials expired (``authenticationRefreshCheckSeconds`` checks)."""
        if principal.expires_at_ms is None:
            return True
        provider = self.providers.get(principal.method)
        return provider is None or provider.still_valid(Authenticated(principal.role, principal.expires_at_ms))

    def _schemes(self) -> str:
        """What an ``authorization`` header or metadata may carry here (for refusals)."""
        shapes = {"token": "'Bearer <token>'", "basic": "'Basic base64(user:password)'",
                  "tls": "a TLS client certificate"}
        return " or ".join(shapes[name] for name in self.providers if name in shapes)

    def _anonymous(self, identity: ClientIdentity) -> Principal:
        if self.anonymous_role:
            return Principal(self.anonymous_role, NO_AUTH)
        raise self._refused(identity, NO_AUTH, "no credentials were presented and this broker requires them "
                            f"(authentication methods: {', '.join(self.providers)})")

    def _unknown_method(self, identity: ClientIdentity, method: str, reason: str) -> Principal:
        """A client naming a method no provider takes: ``anonymousUserRole`` when it is set (Pulsar's
        ``ServerCnx``: authorization then decides), else refused with ``reason``."""
        if not self.anonymous_role:
            raise self._refused(identity, method, reason + ", and anonymousUserRole is unset")
        self._refusals.log(logging.INFO, f"fallback {method[:32]}", "event=authentication_fallback peer=%s "
                           "method=%s role=%s reason=%s", identity.address, method[:32], self.anonymous_role, reason)
        return Principal(self.anonymous_role, NO_AUTH)

    def _refused(self, identity: ClientIdentity, method: str, reason: str) -> AuthenticationError:
        self._refusals.warning(f"authn {method[:32]} {reason[:80]}", "event=authentication_refused peer=%s "
                               "method=%s reason=%s", identity.address, method[:32], reason)
        return AuthenticationError(f"authentication failed: {reason}", reason=reason)

    # ------------------------------------------------------------------ authorization
    def authorize(self, principal: Principal, action: str, resource: str, peer: str = "",
                  subscription: str = "") -> None:
        """Raises ``AuthorizationError`` when ``principal`` may not do ``action`` on ``resource`` (see
        :mod:`broker_core.security.authorization`); ``subscription``: the one a ``consume`` uses (its
        namespace's subscription permissions and ``subscriptionAuthMode`` apply)."""
        authorizer = self._authorizer
        if authorizer is None or authorizer.allowed(principal.role, action, resource, subscription):
            return
        problem = (authorizer.subscription_problem(principal.role, TopicName.parse(resource), subscription)
                   if action == CONSUME and subscription and "://" in resource else None)
        if problem is not None:
            self._refusals.warning(f"authz {principal.role[:64]} subscription", "event=authorization_refused peer=%s"
                                   " role=%s action=%s resource=%s subscription=%s", peer, principal.role, action,
                                   resource, subscription[:200])
            raise AuthorizationError(problem, role=principal.role, action=action, resource=resource)
        self._refusals.warning(f"authz {principal.role[:64]} {action}", "event=authorization_refused peer=%s "
                               "role=%s action=%s resource=%s", peer, principal.role, action, resource or "broker")
        who = f"role {principal.role!r}" if principal.role else "an anonymous client"
        if action == SUPER:
            hint = "only a super-user (superUserRoles) may"
        elif action == ADMIN:
            hint = "only a super-user or an admin role of the tenant (adminRoles) may"
        else:
            hint = ("ask an admin for `pulsarlike admin namespaces grant-permission` (or topics grant-permission)"
                    f" with --actions {'produce,consume' if action == 'lookup' else action}; without it one may not")
        raise AuthorizationError(f"{who} may not {action} on {resource or 'this broker'}: {hint} do that",
                                 role=principal.role, action=action, resource=resource)


def _basic_credentials(encoded: str) -> bytes:
    """``user:password`` of an ``Authorization: Basic`` value; garbage decodes to nothing, which the ``basic``
    provider refuses as malformed."""
    import base64
    import binascii

    try:
        return base64.b64decode(encoded.strip(), validate=True) or b":"
    except (binascii.Error, ValueError):
        return b":"
