"""JSON Web Tokens as Pulsar's token authentication uses them: validation for the broker
(:class:`TokenValidator`), creation and key generation for ``pulsarlike tokens`` (like ``pulsar tokens``).

Validation of a token (configuration keys of :mod:`broker_core.config`):

1. It must be a JWS whose header ``alg`` is one the broker's key is for: ``HS256``/``HS384``/``HS512`` with
   ``tokenSecretKey``, else exactly ``tokenPublicAlg`` with ``tokenPublicKey``. ``none`` is never accepted,
   and a token signed with HMAC over the public key (the HS/RS confusion) fails: the algorithm is fixed by
   the kind of key, never taken from the token.
2. The signature must verify.
3. ``exp`` and ``nbf``, when present, are checked against the broker's clock, with
   ``tokenAllowedClockSkewSeconds`` of leeway.
4. With ``tokenAudienceClaim`` and ``tokenAudience`` set, that claim (a string or a list) must hold the
   audience.
5. The role is the ``tokenAuthClaim`` claim (``sub``), a non-empty string.

A refusal is ``AuthenticationError`` whose ``reason`` says which step failed; it never holds the token.

Example::

    secret = generate_secret_key()
    token = create_token(secret, "alice", "HS256", expires_at_s=time.time() + 3600)
    validator = TokenValidator(secret=secret)      # or TokenValidator.from_config(config, clock)
    validator.validate(token).role                 # "alice"
"""
from __future__ import annotations

import logging
import secrets
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from broker_core.clock import SYSTEM_CLOCK, Clock
from broker_core.config import BrokerConfig
from broker_core.errors import AuthenticationError, InvalidConfiguration
from broker_core.security.keys import load_public_key, read_key

log = logging.getLogger(__name__)

HMAC_ALGORITHMS = ("HS256", "HS384", "HS512")
PUBLIC_ALGORITHMS = ("RS256", "RS384", "RS512", "ES256", "ES384", "ES512", "PS256", "PS384", "PS512")
CACHE_SIZE = 4096
"""Tokens whose signature was checked, kept to spare each unary call a verification (expiry is checked on
every use)."""


@dataclass(frozen=True)
class ValidToken:
    role: str
    expires_at_ms: int | None
    """``exp`` in milliseconds, None when the token never expires."""


class TokenValidator:
    """Checks tokens (see the module docstring); safe to share, thread-safe enough for the event loop."""

    def __init__(self, *, secret: bytes | None = None, public_key: Any = None, public_alg: str = "RS256",
                 role_claim: str = "sub", audience_claim: str = "", audience: str = "", leeway_s: int = 0,
                 clock: Clock = SYSTEM_CLOCK) -> None:
        if secret is not None:
            self._key, self._algorithms = secret, list(HMAC_ALGORITHMS)
        elif public_key is not None:
            if public_alg not in PUBLIC_ALGORITHMS:
                raise InvalidConfiguration(f"tokenPublicAlg={public_alg!r} is not valid; use one of "
                                           f"{', '.join(PUBLIC_ALGORITHMS)}", key="tokenPublicAlg")
            self._key, self._algorithms = public_key, [public_alg]
        else:
            raise InvalidConfiguration("token authentication needs tokenSecretKey (HS256) or tokenPublicKey "
                                       "(RS256/ES256 ...): see `pulsarlike tokens --help`", key="tokenSecretKey")
        self._role_claim = role_claim or "sub"
        self._audience_claim = audience_claim
        self._audience = audience
        self._leeway_ms = leeway_s * 1000
        self._clock = clock
        self._checked: OrderedDict[str, ValidToken] = OrderedDict()

    @classmethod
    def from_config(cls, config: BrokerConfig, clock: Clock = SYSTEM_CLOCK) -> "TokenValidator":
        secret = read_key("tokenSecretKey", config.tokenSecretKey) if config.tokenSecretKey else None
        public = None
        if secret is None and config.tokenPublicKey:
            public = load_public_key("tokenPublicKey", read_key("tokenPublicKey", config.tokenPublicKey))
        return cls(secret=secret, public_key=public, public_alg=config.tokenPublicAlg,
                   role_claim=config.tokenAuthClaim, audience_claim=config.tokenAudienceClaim,
                   audience=config.tokenAudience, leeway_s=config.tokenAllowedClockSkewSeconds, clock=clock)

    def validate(self, token: str) -> ValidToken:
        """The role and expiry of a valid token; ``AuthenticationError`` otherwise."""
        valid = self._checked.get(token)
        if valid is None:
            valid = self._verify(token)
            self._checked[token] = valid
            if len(self._checked) > CACHE_SIZE:
                self._checked.popitem(last=False)
        if self.expired(valid):
            raise AuthenticationError("the token has expired: get a new one (exp is in the past)",
                                      reason="token expired", role=valid.role)
        return valid

    def expired(self, valid: ValidToken) -> bool:
        return valid.expires_at_ms is not None and self._clock.now_ms() > valid.expires_at_ms + self._leeway_ms

    def _verify(self, token: str) -> ValidToken:
        import jwt  # here, not at the top: PyJWT loads cryptography (~50 ms, ~16 MB), unused without tokens

        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError:
            raise _refused("the token is not a JWT (malformed)") from None
        if header.get("alg") not in self._algorithms:
            raise _refused(f"the token's algorithm {str(header.get('alg'))[:16]!r} is not accepted (this broker "
                           f"takes {', '.join(self._algorithms)})")
        try:
            claims = jwt.decode(token, self._key, algorithms=self._algorithms,
                                options={"verify_exp": False, "verify_nbf": False, "verify_iat": False,
                                         "verify_aud": False, "verify_iss": False})
        except jwt.InvalidSignatureError:
            raise _refused("the token's signature does not verify (tampered, or signed with another key)") from None
        except jwt.PyJWTError as exc:
            raise _refused(f"the token cannot be verified ({type(exc).__name__})") from None
        now = self._clock.now_ms()
        nbf = _seconds(claims, "nbf")
        if nbf is not None and now + self._leeway_ms < nbf * 1000:
            raise _refused("the token is not valid yet (nbf is in the future)")
        if self._audience_claim and self._audience:
            audience = claims.get(self._audience_claim)
            audiences = audience if isinstance(audience, list) else [audience]
            if self._audience not in audiences:
                raise _refused(f"the token is not for this broker's audience ({self._audience_claim} does not "
                               f"hold {self._audience!r})")
        role = claims.get(self._role_claim)
        if not isinstance(role, str) or not role:
            raise _refused(f"the token has no role: its {self._role_claim!r} claim is missing or not a string")
        exp = _seconds(claims, "exp")
        return ValidToken(role, None if exp is None else int(exp * 1000))


def _seconds(claims: dict, name: str) -> float | None:
    value = claims.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _refused(f"the token's {name} claim is not a number")
    return float(value)


def _refused(reason: str) -> AuthenticationError:
    return AuthenticationError(f"authentication failed: {reason}", reason=reason)


# ====================================================================================== creation (CLI)
def generate_secret_key() -> bytes:
    """A random HS256 key (32 bytes, as ``pulsar tokens create-secret-key``)."""
    return secrets.token_bytes(32)


def generate_key_pair(algorithm: str = "RS256") -> tuple[bytes, bytes]:
    """(private key as PKCS#8 DER, public key as X.509 DER) for RS*/PS* (2048-bit RSA) or ES256/384/512."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec, rsa

    curves = {"ES256": ec.SECP256R1(), "ES384": ec.SECP384R1(), "ES512": ec.SECP521R1()}
    if algorithm in curves:
        key: Any = ec.generate_private_key(curves[algorithm])
    elif algorithm in PUBLIC_ALGORITHMS:
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    else:
        raise InvalidConfiguration(f"algorithm {algorithm!r} is not valid; use one of {', '.join(PUBLIC_ALGORITHMS)}")
    private = key.private_bytes(serialization.Encoding.DER, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    public = key.public_key().public_bytes(serialization.Encoding.DER,
                                           serialization.PublicFormat.SubjectPublicKeyInfo)
    return private, public


def create_token(key: Any, subject: str, algorithm: str = "HS256", expires_at_s: float | None = None,
                 claims: dict[str, Any] | None = None, role_claim: str = "sub") -> str:
    """A signed token whose ``role_claim`` is ``subject``; ``key`` is the secret's bytes or a private key
    object."""
    import jwt

    payload: dict[str, Any] = dict(claims or {})
    payload[role_claim] = subject
    if expires_at_s is not None:
        payload["exp"] = int(expires_at_s)
    return jwt.encode(payload, key, algorithm=algorithm)
