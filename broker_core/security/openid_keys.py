"""The public keys of OpenID Connect issuers, as Pulsar's ``AuthenticationProviderOpenID`` finds them: each
allowed issuer's discovery document (``<issuer>/.well-known/openid-configuration``) names its ``jwks_uri``,
whose JSON Web Key Set holds the keys tokens are signed with, found by their ``kid``.

Caching (configuration keys of :mod:`broker_core.config`):

1. an issuer's keys are fetched on first use and kept at most ``openIDCacheExpirationSeconds``; at most
   ``openIDCacheSize`` issuers are kept (the least recently used goes);
2. keys older than ``openIDCacheRefreshAfterWriteSeconds`` are fetched again in the background, the cached
   ones answering meanwhile;
3. a ``kid`` the cached set lacks (the issuer rotated its keys) fetches the set again, unless it was fetched
   less than ``openIDKeyIdCacheMissRefreshSeconds`` ago: tokens with made-up key ids cannot make the broker
   hammer the issuer;
4. concurrent lookups that need a fetch share it (one in flight per issuer).

Fetching is blocking HTTP (``urllib``; ``openIDTokenIssuerTrustCertsFilePath`` for a private CA, the
connection and read timeouts): it runs on a short-lived thread of its own, which the event loop awaits
(:meth:`KeyCache.key_async`) and never waits on. A failure is ``AuthenticationError``; failures are not
cached, so a recovered issuer works at once.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import json
import logging
import ssl
import threading
import urllib.error
import urllib.request
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Callable

from broker_core.clock import Clock
from broker_core.errors import AuthenticationError

log = logging.getLogger(__name__)

DISCOVERY_PATH = "/.well-known/openid-configuration"
MAX_DOCUMENT_BYTES = 1 << 20
"""A discovery document or key set larger than this is refused (real ones are a few KiB)."""

FetchJson = Callable[[str], Any]
"""``url -> parsed JSON`` (raises ``AuthenticationError``)."""


@dataclass(frozen=True)
class Jwk:
    key: Any
    """The public key (a ``cryptography`` RSA or EC public key)."""
    alg: str | None
    """The JWK's ``alg``, when it names one (a token's ``alg`` must then be the same)."""


@dataclass(frozen=True)
class IssuerKeys:
    jwks_uri: str
    keys: dict[str | None, Jwk]
    """``kid`` -> key."""
    fetched_ms: float
    """The clock's monotonic reading when they were fetched."""


@dataclass(frozen=True)
class CachePolicy:
    size: int = 5
    expiration_s: int = 24 * 3600
    refresh_after_write_s: int = 18 * 3600
    kid_miss_refresh_s: int = 300


def http_fetcher(trust_file: str = "", connect_timeout_s: float = 10.0, read_timeout_s: float = 10.0) -> FetchJson:
    """A :data:`FetchJson` over ``urllib`` (``https://`` checked against ``trust_file`` or the system's roots)."""
    context = ssl.create_default_context(cafile=trust_file or None)

    def fetch(url: str) -> Any:
        try:
            with urllib.request.urlopen(urllib.request.Request(url, headers={"Accept": "application/json"}),
                                        timeout=connect_timeout_s + read_timeout_s,
                                        context=context if url.lower().startswith("https") else None) as answer:
                body = answer.read(MAX_DOCUMENT_BYTES + 1)
        except urllib.error.HTTPError as exc:
            raise _refused(f"the issuer's {url} answered HTTP {exc.code}") from None
        except (urllib.error.URLError, OSError, ValueError) as exc:
            raise _refused(f"cannot fetch {url}: {getattr(exc, 'reason', exc)}") from None
        if len(body) > MAX_DOCUMENT_BYTES:
            raise _refused(f"{url} answered more than {MAX_DOCUMENT_BYTES} bytes")
        try:
            return json.loads(body)
        except ValueError:
            raise _refused(f"{url} did not answer JSON") from None

    return fetch


class KeyCache:
    """Keys by issuer and ``kid`` (see the module docstring)."""

    def __init__(self, fetch: FetchJson, clock: Clock, policy: CachePolicy = CachePolicy()) -> None:
        self._fetch = fetch
        self._clock = clock
        self._policy = policy
        self._lock = threading.Lock()
        self._issuers: OrderedDict[str, IssuerKeys] = OrderedDict()
        self._inflight: dict[str, concurrent.futures.Future] = {}
        self.fetches = 0
        """Key sets fetched (for tests and logs)."""

    def key(self, issuer: str, kid: str | None) -> Jwk:
        """The key ``kid`` of ``issuer``, fetching on this thread's behalf when needed (blocks)."""
        found = self._cached(issuer, kid)
        if found is not None:
            return found
        return self._pick(issuer, kid, self._start(issuer).result())

    async def key_async(self, issuer: str, kid: str | None) -> Jwk:
        """:meth:`key` for the event loop: a fetch runs on its own thread, awaited."""
        found = self._cached(issuer, kid)
        if found is not None:
            return found
        return self._pick(issuer, kid, await asyncio.wrap_future(self._start(issuer)))

    def _cached(self, issuer: str, kid: str | None) -> Jwk | None:
        """The cached key; None when a fetch is needed; ``AuthenticationError`` for a ``kid`` missed too soon."""
        now = self._clock.monotonic_ms()
        with self._lock:
            entry = self._issuers.get(issuer)
            if entry is None or now - entry.fetched_ms >= self._policy.expiration_s * 1000:
                return None
            self._issuers.move_to_end(issuer)
        key = entry.keys.get(kid)
        if key is not None:
            if now - entry.fetched_ms >= self._policy.refresh_after_write_s * 1000:
                self._start(issuer)  # in the background: this lookup is answered from the cache
            return key
        if now - entry.fetched_ms >= self._policy.kid_miss_refresh_s * 1000:
            return None
        raise _refused(f"the issuer {issuer} has no key with kid {str(kid)[:64]!r} (its keys were fetched "
                       f"{(now - entry.fetched_ms) / 1000:.0f} s ago; openIDKeyIdCacheMissRefreshSeconds="
                       f"{self._policy.kid_miss_refresh_s})")

    def _pick(self, issuer: str, kid: str | None, entry: IssuerKeys) -> Jwk:
        key = entry.keys.get(kid)
        if key is None:
            raise _refused(f"the issuer {issuer} has no key with kid {str(kid)[:64]!r} in {entry.jwks_uri}")
        return key

    def _start(self, issuer: str) -> concurrent.futures.Future:
        with self._lock:
            future = self._inflight.get(issuer)
            if future is not None:
                return future
            future = self._inflight[issuer] = concurrent.futures.Future()
        threading.Thread(target=self._load, args=(issuer, future), name="openid-keys", daemon=True).start()
        return future

    def _load(self, issuer: str, future: concurrent.futures.Future) -> None:
        try:
            entry = self._download(issuer)
        except BaseException as exc:  # noqa: BLE001 -- handed to every waiter
            if not isinstance(exc, AuthenticationError):
                exc = _refused(f"cannot read the keys of {issuer}: {type(exc).__name__}: {exc}")
            log.warning("event=openid_keys_failed issuer=%s reason=%s", issuer, exc.fields.get("reason", exc))
            with self._lock:
                del self._inflight[issuer]
            future.set_exception(exc)
            return
        with self._lock:
            self.fetches += 1
            self._issuers[issuer] = entry
            self._issuers.move_to_end(issuer)
            while len(self._issuers) > max(1, self._policy.size):
                self._issuers.popitem(last=False)
            del self._inflight[issuer]
        log.info("event=openid_keys_fetched issuer=%s keys=%d", issuer, len(entry.keys))
        future.set_result(entry)

    def _download(self, issuer: str) -> IssuerKeys:
        from jwt import PyJWK, PyJWKError  # here: PyJWT loads cryptography, unused without OpenID

        document = self._fetch(issuer.rstrip("/") + DISCOVERY_PATH)
        if not isinstance(document, dict):
            raise _refused(f"the discovery document of {issuer} is not a JSON object")
        if document.get("issuer") != issuer:
            raise _refused(f"the discovery document of {issuer} names another issuer "
                           f"({str(document.get('issuer'))[:100]!r})")
        jwks_uri = document.get("jwks_uri")
        if not isinstance(jwks_uri, str) or not jwks_uri.lower().startswith(("http://", "https://")):
            raise _refused(f"the discovery document of {issuer} names no jwks_uri")
        key_set = self._fetch(jwks_uri)
        listed = key_set.get("keys") if isinstance(key_set, dict) else None
        if not isinstance(listed, list):
            raise _refused(f"{jwks_uri} is not a JSON Web Key Set (no keys list)")
        keys: dict[str | None, Jwk] = {}
        for value in listed:
            if not isinstance(value, dict) or value.get("use", "sig") != "sig":
                continue
            try:
                keys[value.get("kid")] = Jwk(PyJWK(value).key, value.get("alg"))
            except (PyJWKError, ValueError, TypeError):
                continue  # a key of a kind tokens here cannot use (oct, OKP ...): skipped, as unusable
        return IssuerKeys(jwks_uri, keys, self._clock.monotonic_ms())


def _refused(reason: str) -> AuthenticationError:
    return AuthenticationError(f"authentication failed: {reason}", reason=reason)
