"""OpenID Connect authentication, as Pulsar's ``AuthenticationProviderOpenID``: tokens an identity provider
issued (an OAuth2 client-credentials access token, a Kubernetes service account token ...) checked with the
issuer's published keys, no shared secret. Enabled by ``authenticationProviders`` naming
``AuthenticationProviderOpenID`` (or ``openid``); its method is ``token``, as the OAuth2 client plugins send
(beside the ``token`` provider, a token either accepts is in: Pulsar's ``AuthenticationProviderList``).

Validation of a token (configuration keys of :mod:`broker_core.config`):

1. it must be a JWS signed with RS256/384/512 or ES256/384/512;
2. its ``iss`` must be one of ``openIDAllowedTokenIssuers`` (refused before any fetch: an unknown issuer
   costs nothing);
3. the key its header's ``kid`` names is the issuer's (:mod:`broker_core.security.openid_keys`: discovery
   document, JWKS, cached); when that JWK names an ``alg``, the token's must be the same;
4. the signature must verify with it;
5. ``iat``, ``exp``, ``nbf`` and ``sub`` must be present (and ``openIDRoleClaim``); ``exp`` not passed,
   ``nbf`` and ``iat`` not in the future, with ``openIDAcceptedTimeLeewaySeconds`` of leeway, on the broker's
   clock;
6. ``aud`` (a string or a list) must hold one of ``openIDAllowedAudiences``;
7. the role is ``openIDRoleClaim`` (``sub``): a string, or the first of a list.

A refusal is ``AuthenticationError`` whose ``reason`` says which step failed; never the token. The
connection's credentials expire with ``exp`` (``authenticationRefreshCheckSeconds``, ``AUTH_CHALLENGE``).
"""
from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from broker_core.clock import SYSTEM_CLOCK, Clock
from broker_core.config import BrokerConfig
from broker_core.errors import AuthenticationError, InvalidConfiguration
from broker_core.net.peers import ClientIdentity
from broker_core.security.openid_keys import CachePolicy, FetchJson, Jwk, KeyCache, http_fetcher
from broker_core.security.providers import Authenticated

ALGORITHMS = ("RS256", "RS384", "RS512", "ES256", "ES384", "ES512")
REQUIRED_CLAIMS = ("iat", "exp", "nbf", "sub")
CHECKED_CACHE_SIZE = 4096
"""Tokens whose signature was checked, kept to spare each gRPC call a verification (time checked per use)."""


@dataclass(frozen=True)
class OpenIDSettings:
    issuers: frozenset[str]
    audiences: tuple[str, ...]
    role_claim: str = "sub"
    leeway_s: int = 0
    cache: CachePolicy = CachePolicy()
    trust_file: str = ""
    connect_timeout_s: float = 10.0
    read_timeout_s: float = 10.0

    @classmethod
    def from_config(cls, config: BrokerConfig) -> "OpenIDSettings":
        issuers = _listed(config.openIDAllowedTokenIssuers)
        audiences = _listed(config.openIDAllowedAudiences)
        if not issuers:
            raise InvalidConfiguration("AuthenticationProviderOpenID needs openIDAllowedTokenIssuers: the issuer "
                                       "URLs whose tokens this broker accepts", key="openIDAllowedTokenIssuers")
        if not audiences:
            raise InvalidConfiguration("AuthenticationProviderOpenID needs openIDAllowedAudiences: a token's aud "
                                       "must hold one of them", key="openIDAllowedAudiences")
        insecure = [issuer for issuer in issuers if not issuer.lower().startswith("https://")]
        if insecure and config.openIDRequireIssuersUseHttps:
            raise InvalidConfiguration(f"openIDAllowedTokenIssuers: {insecure[0]} does not use https; use an "
                                       "https:// issuer or set openIDRequireIssuersUseHttps=false",
                                       key="openIDAllowedTokenIssuers")
        policy = CachePolicy(config.openIDCacheSize, config.openIDCacheExpirationSeconds,
                             config.openIDCacheRefreshAfterWriteSeconds, config.openIDKeyIdCacheMissRefreshSeconds)
        return cls(frozenset(issuers), tuple(audiences), config.openIDRoleClaim or "sub",
                   config.openIDAcceptedTimeLeewaySeconds, policy, config.openIDTokenIssuerTrustCertsFilePath,
                   config.openIDHttpConnectionTimeoutMillis / 1000, config.openIDHttpReadTimeoutMillis / 1000)


@dataclass(frozen=True)
class _Checked:
    """A token whose signature and claims were checked: what remains to check on each use is time."""
    authenticated: Authenticated
    not_before_ms: int
    issued_at_ms: int


class OpenIDAuthentication:
    """The ``token`` method checked against OpenID issuers (see the module docstring)."""

    method = "token"

    def __init__(self, settings: OpenIDSettings, clock: Clock = SYSTEM_CLOCK, fetch: FetchJson | None = None) -> None:
        self.settings = settings
        self._clock = clock
        self.keys = KeyCache(fetch or http_fetcher(settings.trust_file, settings.connect_timeout_s,
                                                   settings.read_timeout_s), clock, settings.cache)
        self._checked: OrderedDict[str, _Checked] = OrderedDict()

    @classmethod
    def from_config(cls, config: BrokerConfig, clock: Clock = SYSTEM_CLOCK) -> "OpenIDAuthentication":
        return cls(OpenIDSettings.from_config(config), clock)

    def authenticate(self, credentials: bytes, identity: ClientIdentity) -> Authenticated:
        token, header, claims = self._unverified(credentials)
        found = self._checked.get(token)
        if found is None:
            found = self._verify(token, header, claims, self.keys.key(claims["iss"], header.get("kid")))
        return self._current(found)

    async def authenticate_async(self, credentials: bytes, identity: ClientIdentity) -> Authenticated:
        token, header, claims = self._unverified(credentials)
        found = self._checked.get(token)
        if found is None:
            key = await self.keys.key_async(claims["iss"], header.get("kid"))
            found = self._verify(token, header, claims, key)
        return self._current(found)

    def still_valid(self, authenticated: Authenticated) -> bool:
        expires = authenticated.expires_at_ms
        return expires is None or self._clock.now_ms() <= expires + self.settings.leeway_s * 1000

    # ------------------------------------------------------------------ steps
    def _unverified(self, credentials: bytes) -> tuple[str, dict[str, Any], dict[str, Any]]:
        """Steps 1-2: the token, its header and its claims, read before any key is looked for."""
        import jwt  # here: PyJWT loads cryptography (see tokens.py)

        if not credentials:
            raise _refused("no token was presented")
        try:
            token = credentials.decode("ascii").strip()
            header = jwt.get_unverified_header(token)
            claims = jwt.decode(token, options={"verify_signature": False})
        except (UnicodeDecodeError, jwt.PyJWTError):
            raise _refused("the token is not a JWT (malformed)") from None
        if header.get("alg") not in ALGORITHMS:
            raise _refused(f"the token's algorithm {str(header.get('alg'))[:16]!r} is not accepted (OpenID "
                           f"tokens: {', '.join(ALGORITHMS)})")
        issuer = claims.get("iss")
        if not isinstance(issuer, str) or not issuer:
            raise _refused("the token has no issuer (iss)")
        if issuer not in self.settings.issuers:
            raise _refused(f"the token's issuer {issuer[:200]!r} is not allowed (openIDAllowedTokenIssuers)")
        return token, header, claims

    def _verify(self, token: str, header: dict[str, Any], claims: dict[str, Any], key: Jwk) -> _Checked:
        """Steps 3-7 (the time checks of step 5 are :meth:`_current`'s); the result is kept."""
        import jwt

        algorithm = header["alg"]
        if key.alg is not None and key.alg != algorithm:
            raise _refused(f"the token's algorithm {algorithm} is not its key's ({key.alg})")
        try:
            jwt.decode(token, key.key, algorithms=[algorithm],
                       options={"verify_exp": False, "verify_nbf": False, "verify_iat": False, "verify_aud": False,
                                "verify_iss": False})
        except jwt.InvalidSignatureError:
            raise _refused("the token's signature does not verify with its issuer's key") from None
        except (jwt.PyJWTError, ValueError, TypeError) as exc:
            raise _refused(f"the token cannot be verified with its issuer's key ({type(exc).__name__})") from None
        required = REQUIRED_CLAIMS + ((self.settings.role_claim,) if self.settings.role_claim != "sub" else ())
        missing = [name for name in required if claims.get(name) is None]
        if missing:
            raise _refused(f"the token lacks the claim {missing[0]}")
        for name in ("iat", "exp", "nbf"):
            if isinstance(claims[name], bool) or not isinstance(claims[name], (int, float)):
                raise _refused(f"the token's {name} claim is not a number")
        audience = claims.get("aud")
        audiences = audience if isinstance(audience, list) else [audience]
        if not any(isinstance(a, str) and a in self.settings.audiences for a in audiences):
            raise _refused("the token is not for this broker's audience (aud holds none of openIDAllowedAudiences)")
        role = claims[self.settings.role_claim]
        if isinstance(role, list):
            role = role[0] if role else None
        if not isinstance(role, str) or not role:
            raise _refused(f"the token has no role: its {self.settings.role_claim!r} claim is not a string")
        found = _Checked(Authenticated(role, int(claims["exp"] * 1000)), int(claims["nbf"] * 1000),
                         int(claims["iat"] * 1000))
        self._checked[token] = found
        if len(self._checked) > CHECKED_CACHE_SIZE:
            self._checked.popitem(last=False)
        return found

    def _current(self, checked: _Checked) -> Authenticated:
        """Step 5's time checks, on every use of a token (kept or just verified)."""
        now, leeway = self._clock.now_ms(), self.settings.leeway_s * 1000
        found = checked.authenticated
        if found.expires_at_ms is not None and now > found.expires_at_ms + leeway:
            raise AuthenticationError("authentication failed: the token has expired: get a new one from the issuer "
                                      "(exp is in the past)", reason="token expired", role=found.role)
        if now + leeway < checked.not_before_ms:
            raise _refused("the token is not valid yet (nbf is in the future)")
        if now + leeway < checked.issued_at_ms:
            raise _refused("the token was issued in the future (iat): check the clocks")
        return found


def _listed(value: str) -> list[str]:
    return [part.strip() for part in (value or "").split(",") if part.strip()]


def _refused(reason: str) -> AuthenticationError:
    return AuthenticationError(f"authentication failed: {reason}", reason=reason)
