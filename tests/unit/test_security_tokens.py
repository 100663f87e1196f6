"""Token validation as Pulsar's token provider does it, and the bad tokens of issue 13: each is a typed
refusal that says why and never holds the token."""
from __future__ import annotations

import base64
import hashlib
import hmac

import jwt
import pytest
from cryptography.hazmat.primitives import serialization

from broker_core.clock import FakeClock
from broker_core.config import BrokerConfig
from broker_core.errors import AuthenticationError, InvalidConfiguration
from broker_core.security.keys import load_private_key, load_public_key, read_key
from broker_core.security.tokens import (TokenValidator, create_token, generate_key_pair,
                                                  generate_secret_key)

SECRET = generate_secret_key()
NOW_MS = 1_700_000_000_000


@pytest.fixture
def clock():
    return FakeClock(NOW_MS)


@pytest.fixture
def validator(clock):
    return TokenValidator(secret=SECRET, clock=clock)


def refused(validator: TokenValidator, token: str, reason: str) -> AuthenticationError:
    with pytest.raises(AuthenticationError, match=reason) as caught:
        validator.validate(token)
    assert token not in caught.value.message and token not in str(caught.value.fields)
    return caught.value


def test_a_valid_hs256_token_gives_its_subject_as_the_role(validator):
    assert validator.validate(create_token(SECRET, "alice")).role == "alice"


def test_a_token_keeps_its_expiry_in_milliseconds(validator):
    valid = validator.validate(create_token(SECRET, "alice", expires_at_s=NOW_MS / 1000 + 60))
    assert valid.expires_at_ms == NOW_MS + 60_000


def test_an_expired_token_is_refused(validator):
    refused(validator, create_token(SECRET, "alice", expires_at_s=NOW_MS / 1000 - 1), "expired")


def test_a_token_expires_when_the_clock_passes_its_exp(validator, clock):
    token = create_token(SECRET, "alice", expires_at_s=NOW_MS / 1000 + 10)
    validator.validate(token)
    clock.advance(11_000)
    refused(validator, token, "expired")


def test_clock_skew_leeway_accepts_a_just_expired_token(clock):
    lenient = TokenValidator(secret=SECRET, leeway_s=5, clock=clock)
    assert lenient.validate(create_token(SECRET, "alice", expires_at_s=NOW_MS / 1000 - 2)).role == "alice"


def test_a_tampered_token_is_refused(validator):
    header, payload, signature = create_token(SECRET, "alice").split(".")
    forged = base64.urlsafe_b64encode(b'{"sub":"admin"}').rstrip(b"=").decode()
    refused(validator, f"{header}.{forged}.{signature}", "signature does not verify")


def test_a_token_signed_with_another_secret_is_refused(validator):
    refused(validator, create_token(generate_secret_key(), "alice"), "signature does not verify")


def test_an_unsigned_alg_none_token_is_refused(validator):
    refused(validator, jwt.encode({"sub": "admin"}, None, algorithm="none"), "algorithm 'none' is not accepted")


def test_an_hmac_token_signed_with_the_public_key_is_refused(clock):
    private, public = generate_key_pair("RS256")
    validator = TokenValidator(public_key=load_public_key("k", public), public_alg="RS256", clock=clock)
    pem = load_public_key("k", public).public_bytes(serialization.Encoding.PEM,
                                                    serialization.PublicFormat.SubjectPublicKeyInfo)
    header = base64.urlsafe_b64encode(b'{"alg":"HS256","typ":"JWT"}').rstrip(b"=")
    body = base64.urlsafe_b64encode(b'{"sub":"admin"}').rstrip(b"=")
    signature = base64.urlsafe_b64encode(hmac.new(pem, header + b"." + body, hashlib.sha256).digest()).rstrip(b"=")
    refused(validator, (header + b"." + body + b"." + signature).decode(), "algorithm 'HS256' is not accepted")
    assert validator.validate(create_token(load_private_key("k", private), "bob", "RS256")).role == "bob"


def test_es256_tokens_verify_with_their_public_key(clock):
    private, public = generate_key_pair("ES256")
    validator = TokenValidator(public_key=load_public_key("k", public), public_alg="ES256", clock=clock)
    assert validator.validate(create_token(load_private_key("k", private), "carol", "ES256")).role == "carol"


def test_a_token_for_another_audience_is_refused(clock):
    validator = TokenValidator(secret=SECRET, audience_claim="aud", audience="broker-a", clock=clock)
    refused(validator, create_token(SECRET, "alice", claims={"aud": "broker-b"}), "audience")
    assert validator.validate(create_token(SECRET, "alice", claims={"aud": ["x", "broker-a"]})).role == "alice"


def test_a_token_without_the_role_claim_is_refused(validator):
    refused(validator, jwt.encode({"name": "alice"}, SECRET, algorithm="HS256"), "no role")


def test_a_token_not_valid_yet_is_refused(validator):
    refused(validator, create_token(SECRET, "alice", claims={"nbf": NOW_MS // 1000 + 600}), "not valid yet")


@pytest.mark.parametrize("garbage", ["", "garbage", "a.b.c", "eyJ.eyJ.x", "\u00e9\u00e9.\u00e9"])
def test_garbage_is_refused_as_malformed(validator, garbage):
    with pytest.raises(AuthenticationError):
        validator.validate(garbage)


def test_a_role_claim_other_than_sub_is_read_when_configured(clock):
    validator = TokenValidator(secret=SECRET, role_claim="role", clock=clock)
    assert validator.validate(create_token(SECRET, "svc", role_claim="role")).role == "svc"


@pytest.mark.parametrize("form", ["data", "base64", "file", "env"])
def test_keys_are_read_in_pulsars_forms(tmp_path, monkeypatch, form):
    encoded = base64.b64encode(SECRET).decode()
    (tmp_path / "secret.key").write_bytes(SECRET)
    monkeypatch.setenv("TEST_SECRET", encoded)
    value = {"data": f"data:;base64,{encoded}", "base64": encoded, "file": f"file://{tmp_path}/secret.key",
             "env": "env:TEST_SECRET"}[form]
    assert read_key("tokenSecretKey", value) == SECRET


def test_a_missing_key_file_is_a_configuration_error_naming_the_setting():
    with pytest.raises(InvalidConfiguration, match="tokenSecretKey: cannot read"):
        read_key("tokenSecretKey", "file:///nonexistent/secret.key")


def test_the_validator_is_built_from_broker_configuration():
    config = BrokerConfig(tokenSecretKey="data:;base64," + base64.b64encode(SECRET).decode())
    assert TokenValidator.from_config(config).validate(create_token(SECRET, "alice")).role == "alice"


def test_token_authentication_without_a_key_is_refused_at_start():
    with pytest.raises(InvalidConfiguration, match="tokenSecretKey"):
        TokenValidator.from_config(BrokerConfig())
