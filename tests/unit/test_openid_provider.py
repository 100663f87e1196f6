"""Pulsar's OpenID Connect provider, its steps one by one, with the issuer's documents served by an injected
fetch (no network) and a fake clock: issuers, audiences, times with leeway, the role claim, key lookup by kid
with the rate-limited refresh on a miss, cache expiry, one fetch shared by concurrent lookups, and the
configuration checks."""
from __future__ import annotations

import asyncio
import threading

import pytest

from broker_core.clock import FakeClock
from broker_core.config import BrokerConfig
from broker_core.errors import AuthenticationError, InvalidConfiguration
from broker_core.net.peers import ClientIdentity
from broker_core.security.layer import Security
from broker_core.security.openid import OpenIDAuthentication, OpenIDSettings
from broker_core.security.openid_keys import CachePolicy
from broker_core.security.tokens import create_token, generate_secret_key
from tests.oidc_issuer import JWKS, OidcIssuer

PEER = ClientIdentity("127.0.0.1:5000")
AUDIENCE = "pulsar"


class Documents:
    """The injected fetch: answers the issuers' documents, counts the fetches, can be held to test sharing."""

    def __init__(self, *issuers: OidcIssuer) -> None:
        self.issuers = issuers
        self.count: dict[str, int] = {}
        self.gate: threading.Event | None = None

    def __call__(self, url: str):
        if self.gate is not None:
            self.gate.wait(5)
        self.count[url] = self.count.get(url, 0) + 1
        for issuer in self.issuers:
            found = issuer.documents().get(url)
            if found is not None:
                return found
        raise AuthenticationError(f"authentication failed: {url} answered HTTP 404", reason="404")


@pytest.fixture
def clock():
    return FakeClock()


@pytest.fixture
def issuer(clock):
    return OidcIssuer(serve=False, now_s=lambda: clock.now_ms() / 1000, lifetime_s=60)


def provider(clock, documents, issuers=("https://issuer.test",), audiences=(AUDIENCE,), **settings):
    cache = settings.pop("cache", CachePolicy())
    return OpenIDAuthentication(OpenIDSettings(frozenset(issuers), tuple(audiences), cache=cache, **settings),
                                clock, fetch=documents)


def check(p, token: str):
    return p.authenticate(token.encode(), PEER)


def test_a_token_of_an_allowed_issuer_is_in_with_its_sub_as_role_until_it_expires(clock, issuer):
    found = check(provider(clock, Documents(issuer)), issuer.token("svc", audience=AUDIENCE))
    assert found.role == "svc" and found.expires_at_ms == (clock.now_ms() // 1000 + 60) * 1000


def test_an_issuer_not_allowed_is_refused_before_anything_is_fetched(clock, issuer):
    documents = Documents(issuer)
    with pytest.raises(AuthenticationError, match="issuer .* is not allowed"):
        check(provider(clock, documents), issuer.token("svc", audience=AUDIENCE, issuer="https://evil.test"))
    assert documents.count == {}


def test_a_token_for_another_audience_is_refused(clock, issuer):
    p = provider(clock, Documents(issuer))
    with pytest.raises(AuthenticationError, match="audience"):
        check(p, issuer.token("svc", audience="someone-else"))
    with pytest.raises(AuthenticationError, match="audience"):
        check(p, issuer.token("svc", audience=None))
    assert check(p, issuer.token("svc", audience=["x", AUDIENCE])).role == "svc"


def test_an_expired_token_is_refused_and_the_leeway_is_honoured(clock, issuer):
    token = issuer.token("svc", audience=AUDIENCE)
    strict, lenient = provider(clock, Documents(issuer)), provider(clock, Documents(issuer), leeway_s=30)
    assert check(strict, token).role == "svc"
    clock.advance(61_000)
    with pytest.raises(AuthenticationError, match="expired"):
        check(strict, token)
    assert check(lenient, token).role == "svc"
    assert not strict.still_valid(check(lenient, token)) and lenient.still_valid(check(lenient, token))


def test_a_token_not_valid_yet_or_issued_in_the_future_is_refused(clock, issuer):
    p = provider(clock, Documents(issuer))
    later = clock.now_ms() // 1000 + 120
    with pytest.raises(AuthenticationError, match="nbf"):
        check(p, issuer.token("svc", audience=AUDIENCE, nbf=later))
    with pytest.raises(AuthenticationError, match="iat"):
        check(p, issuer.token("svc", audience=AUDIENCE, iat=later))


@pytest.mark.parametrize("claim", ["iat", "exp", "nbf", "sub"])
def test_a_token_lacking_a_required_claim_is_refused(clock, issuer, claim):
    with pytest.raises(AuthenticationError, match=f"lacks the claim {claim}"):
        check(provider(clock, Documents(issuer)), issuer.token("svc", audience=AUDIENCE, drop=(claim,)))


def test_the_role_claim_may_be_another_one_and_a_list_gives_its_first(clock, issuer):
    p = provider(clock, Documents(issuer), role_claim="roles")
    assert check(p, issuer.token("svc", audience=AUDIENCE, roles=["admin", "ops"])).role == "admin"
    with pytest.raises(AuthenticationError, match="lacks the claim roles"):
        check(p, issuer.token("svc", audience=AUDIENCE))


def test_a_token_signed_by_another_key_under_a_known_kid_is_refused(clock, issuer):
    impostor = OidcIssuer(serve=False, now_s=issuer.now_s)
    with pytest.raises(AuthenticationError, match="signature"):
        check(provider(clock, Documents(issuer)), impostor.token("svc", audience=AUDIENCE))


def test_not_a_jwt_and_a_secret_signed_jwt_are_refused(clock, issuer):
    p = provider(clock, Documents(issuer))
    with pytest.raises(AuthenticationError, match="malformed"):
        check(p, "not-a-token")
    hs = create_token(generate_secret_key(), "svc", claims={"iss": issuer.url, "aud": AUDIENCE})
    with pytest.raises(AuthenticationError, match="algorithm 'HS256'"):
        check(p, hs)


def test_an_es256_issuer_works_and_its_keys_refuse_an_rs256_token_under_their_kid(clock):
    es = OidcIssuer(serve=False, algorithm="ES256", now_s=lambda: clock.now_ms() / 1000)
    p = provider(clock, Documents(es))
    assert check(p, es.token("edge", audience=AUDIENCE)).role == "edge"
    rs = OidcIssuer(serve=False, now_s=es.now_s)
    with pytest.raises(AuthenticationError, match="not its key's"):
        check(p, rs.token("edge", audience=AUDIENCE))


def test_an_unknown_kid_fetches_the_keys_again_at_most_every_miss_refresh_interval(clock, issuer):
    documents = Documents(issuer)
    p = provider(clock, documents, cache=CachePolicy(kid_miss_refresh_s=300))
    check(p, issuer.token("svc", audience=AUDIENCE))
    issuer.rotate()
    rotated = issuer.token("svc", audience=AUDIENCE)
    with pytest.raises(AuthenticationError, match="no key with kid 'key-2'"):
        check(p, rotated)  # fetched less than 300 s ago: not again
    assert documents.count[issuer.url + JWKS] == 1
    clock.advance(300_000)
    assert check(p, issuer.token("svc", audience=AUDIENCE)).role == "svc"
    assert documents.count[issuer.url + JWKS] == 2


def test_keys_older_than_the_expiration_are_fetched_again(clock, issuer):
    documents = Documents(issuer)
    p = provider(clock, documents, cache=CachePolicy(expiration_s=100, refresh_after_write_s=1000))
    check(p, issuer.token("svc", audience=AUDIENCE))
    clock.advance(101_000)
    check(p, issuer.token("other", audience=AUDIENCE))
    assert documents.count[issuer.url + JWKS] == 2


def test_a_discovery_document_naming_another_issuer_is_refused(clock, issuer):
    def lying(url):
        answer = Documents(issuer)(url)
        return {**answer, "issuer": "https://elsewhere.test"} if "openid-configuration" in url else answer

    with pytest.raises(AuthenticationError, match="names another issuer"):
        check(provider(clock, lying), issuer.token("svc", audience=AUDIENCE))


def test_concurrent_lookups_on_the_event_loop_share_one_fetch(clock, issuer):
    documents = Documents(issuer)
    documents.gate = threading.Event()
    p = provider(clock, documents)
    tokens = [issuer.token(f"svc-{i}", audience=AUDIENCE).encode() for i in range(5)]

    async def main():
        pending = [asyncio.ensure_future(p.authenticate_async(t, PEER)) for t in tokens]
        await asyncio.sleep(0)
        documents.gate.set()
        return await asyncio.gather(*pending)

    assert [a.role for a in asyncio.run(main())] == [f"svc-{i}" for i in range(5)]
    assert documents.count[issuer.url + JWKS] == 1


def test_the_configuration_needs_issuers_audiences_and_https():
    base = {"authenticationEnabled": True, "authenticationProviders": "AuthenticationProviderOpenID"}
    with pytest.raises(InvalidConfiguration, match="openIDAllowedTokenIssuers"):
        Security(BrokerConfig(**base, openIDAllowedAudiences="a"))
    with pytest.raises(InvalidConfiguration, match="openIDAllowedAudiences"):
        Security(BrokerConfig(**base, openIDAllowedTokenIssuers="https://i"))
    with pytest.raises(InvalidConfiguration, match="does not use https"):
        Security(BrokerConfig(**base, openIDAllowedTokenIssuers="http://i", openIDAllowedAudiences="a"))
    Security(BrokerConfig(**base, openIDAllowedTokenIssuers="http://i", openIDAllowedAudiences="a",
                          openIDRequireIssuersUseHttps=False))
    with pytest.raises(InvalidConfiguration, match="openIDCacheSize"):
        BrokerConfig(openIDCacheSize=-1)


def test_with_the_token_provider_too_a_token_either_accepts_is_in(clock, issuer, monkeypatch):
    secret = generate_secret_key()
    config = BrokerConfig(authenticationEnabled=True,
                          authenticationProviders="token,org.apache.pulsar.broker.authentication.oidc."
                                                  "AuthenticationProviderOpenID",
                          tokenSecretKey="data:;base64," + __import__("base64").b64encode(secret).decode(),
                          openIDAllowedTokenIssuers=issuer.url, openIDAllowedAudiences=AUDIENCE)
    monkeypatch.setattr("broker_core.security.openid.http_fetcher", lambda *a: Documents(issuer))
    security = Security(config, clock=clock)
    assert security.authenticate("token", create_token(secret, "static").encode(), PEER).role == "static"
    assert security.authenticate("token", issuer.token("oidc", audience=AUDIENCE).encode(), PEER).role == "oidc"
    with pytest.raises(AuthenticationError) as refused:
        security.authenticate("token", issuer.token("oidc", audience="nope").encode(), PEER)
    assert "audience" in str(refused.value) and "algorithm 'RS256'" in str(refused.value)  # each one's reason
