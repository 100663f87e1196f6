"""Authentication providers: what a client presented -> its role, or ``AuthenticationError``.

One interface for every front end: ``authenticate(credentials, identity) -> Authenticated``, where
``credentials`` is what the client sent for the provider's method (a token's bytes; nothing for ``tls``) and
``identity`` the connection as the broker's port saw it (:class:`~broker_core.net.peers.ClientIdentity`:
address, verified TLS client certificate's CN); ``await authenticate_async(...)`` is the same check for the
event loop, which a provider whose check is costly (``basic``: a password hash) does on a worker thread.
Provider names are Pulsar's method names:

- ``token`` (:class:`TokenAuthentication`): a JWT, see :mod:`broker_core.security.tokens`; the role
  is its ``tokenAuthClaim``, and it expires with the token;
- ``tls`` (:class:`TlsAuthentication`): the client certificate the TLS listener verified; the role is its
  common name (CN). A connection without a verified certificate is refused;
- ``basic`` (:class:`~broker_core.security.basic.BasicAuthentication`): ``user:password`` checked against the
  htpasswd users of ``basicAuthConf``; the role is the user's name.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from broker_core.errors import AuthenticationError
from broker_core.net.peers import ClientIdentity

if TYPE_CHECKING:  # imported where a token provider is configured (secrets, hmac, keys: not at every start)
    from broker_core.security.tokens import TokenValidator


@dataclass(frozen=True)
class Authenticated:
    role: str
    expires_at_ms: int | None = None
    """When these credentials stop being valid (None: never); long-lived connections are checked."""


class AuthenticationProvider(Protocol):
    method: str

    def authenticate(self, credentials: bytes, identity: ClientIdentity) -> Authenticated: ...

    async def authenticate_async(self, credentials: bytes, identity: ClientIdentity) -> Authenticated: ...

    def still_valid(self, authenticated: Authenticated) -> bool: ...


class TokenAuthentication:
    method = "token"

    def __init__(self, validator: TokenValidator) -> None:
        self._validator = validator

    def authenticate(self, credentials: bytes, identity: ClientIdentity) -> Authenticated:
        if not credentials:
            raise AuthenticationError("authentication failed: no token was presented; give the client "
                                      "authentication=AuthenticationToken(...)", reason="no token")
        try:
            token = credentials.decode("ascii").strip()
        except UnicodeDecodeError:
            raise AuthenticationError("authentication failed: the token is not a JWT (malformed)",
                                      reason="the token is not a JWT (malformed)") from None
        valid = self._validator.validate(token)
        return Authenticated(valid.role, valid.expires_at_ms)

    async def authenticate_async(self, credentials: bytes, identity: ClientIdentity) -> Authenticated:
        return self.authenticate(credentials, identity)  # a signature check: tens of microseconds

    def still_valid(self, authenticated: Authenticated) -> bool:
        from broker_core.security.tokens import ValidToken

        return not self._validator.expired(ValidToken(authenticated.role, authenticated.expires_at_ms))


class TlsAuthentication:
    method = "tls"

    def authenticate(self, credentials: bytes, identity: ClientIdentity) -> Authenticated:
        if not identity.tls_subject:
            raise AuthenticationError(
                "authentication failed: no verified TLS client certificate; connect with pulsar+ssl:// and "
                "AuthenticationTLS(cert, key) signed by the broker's tlsTrustCertsFilePath",
                reason="no client certificate")
        return Authenticated(identity.tls_subject)

    async def authenticate_async(self, credentials: bytes, identity: ClientIdentity) -> Authenticated:
        return self.authenticate(credentials, identity)

    def still_valid(self, authenticated: Authenticated) -> bool:
        return True


class AnyOf:
    """Providers of one method (``token``: a static key's and OpenID issuers'), tried in turn, as Pulsar's
    ``AuthenticationProviderList``: the first that accepts the credentials admits the client; when none does,
    the refusal gives each one's reason."""

    def __init__(self, providers: list[AuthenticationProvider]) -> None:
        self.providers = providers
        self.method = providers[0].method

    @classmethod
    def of(cls, *providers: AuthenticationProvider | None) -> AuthenticationProvider:
        """One provider for those given (None skipped; one alone is itself; lists are flattened)."""
        flat: list[AuthenticationProvider] = []
        for provider in providers:
            if provider is not None:
                flat.extend(provider.providers if isinstance(provider, AnyOf) else [provider])
        return flat[0] if len(flat) == 1 else cls(flat)

    def authenticate(self, credentials: bytes, identity: ClientIdentity) -> Authenticated:
        reasons = []
        for provider in self.providers:
            try:
                return provider.authenticate(credentials, identity)
            except AuthenticationError as exc:
                reasons.append(exc)
        raise _all_refused(reasons)

    async def authenticate_async(self, credentials: bytes, identity: ClientIdentity) -> Authenticated:
        reasons = []
        for provider in self.providers:
            try:
                return await provider.authenticate_async(credentials, identity)
            except AuthenticationError as exc:
                reasons.append(exc)
        raise _all_refused(reasons)

    def still_valid(self, authenticated: Authenticated) -> bool:
        return any(provider.still_valid(authenticated) for provider in self.providers)


def _all_refused(refusals: list[AuthenticationError]) -> AuthenticationError:
    reasons = list(dict.fromkeys(str(exc.fields.get("reason", exc.message)) for exc in refusals))
    reason = "; ".join(reasons)
    return AuthenticationError(f"authentication failed: {reason}", reason=reason)
