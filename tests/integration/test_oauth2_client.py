"""``AuthenticationOauth2`` against a real OAuth2 issuer in-process (tests/oidc_issuer.py): the
client-credentials flow (discovery, token endpoint), the token kept and fetched again before it expires (an
injected clock), the credentials file's three spellings, refusals, and the plugin names the CLI and Spark
take."""
from __future__ import annotations

import base64
import json

import pytest

import pulsarlike
from connector import AuthenticationError, AuthenticationOauth2, InvalidConfiguration
from connector.client.security.authentication import from_plugin
from tests.oidc_issuer import DISCOVERY, TOKEN, OidcIssuer


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(scope="module")
def issuer():
    with OidcIssuer(clients={"svc": ("s3cret", "svc-role")}, lifetime_s=100) as issuer:
        yield issuer


def test_the_client_credentials_flow_gets_a_token_from_the_discovered_token_endpoint(issuer):
    before = issuer.requests[DISCOVERY], issuer.requests[TOKEN]
    auth = AuthenticationOauth2(issuer.auth_params("svc", audience="pulsar", scope="produce consume"))
    token = auth.token()
    assert issuer.requests[DISCOVERY] == before[0] + 1 and issuer.requests[TOKEN] == before[1] + 1
    assert issuer.token_forms[-1] == {"grant_type": "client_credentials", "client_id": "svc",
                                      "client_secret": "s3cret", "audience": "pulsar", "scope": "produce consume"}
    import jwt
    assert jwt.decode(token, options={"verify_signature": False})["sub"] == "svc-role"
    assert auth.authorization() == f"Bearer {token}"


def test_the_token_is_kept_and_fetched_again_in_the_last_tenth_of_its_life(issuer):
    clock = Clock()
    auth = AuthenticationOauth2(issuer.auth_params("svc"), clock=clock)
    first = auth.token()
    fetched = issuer.requests[TOKEN]
    clock.now += 89
    assert auth.token() == first and issuer.requests[TOKEN] == fetched
    clock.now += 2   # 91 s of 100: inside the last tenth
    auth.token()
    assert issuer.requests[TOKEN] == fetched + 1
    assert issuer.requests[DISCOVERY] >= 1


@pytest.mark.parametrize("spelling", ["path", "file:///", "file:/"])
def test_the_credentials_file_is_read_from_a_path_or_a_file_url(issuer, tmp_path, spelling):
    path = tmp_path / "credentials.json"
    path.write_text(json.dumps({"type": "client_credentials", "client_id": "svc", "client_secret": "s3cret"}))
    private_key = {"path": str(path), "file:///": f"file://{path}", "file:/": f"file:{path}"}[spelling]
    auth = AuthenticationOauth2(json.dumps({"issuer_url": issuer.url, "private_key": private_key}))
    assert auth.token()


def test_a_wrong_secret_is_an_authentication_error_naming_the_issuers_answer(issuer):
    wrong = base64.b64encode(json.dumps({"client_id": "svc", "client_secret": "wrong"}).encode()).decode()
    auth = AuthenticationOauth2(json.dumps({"issuer_url": issuer.url,
                                            "private_key": f"data:application/json;base64,{wrong}"}))
    with pytest.raises(AuthenticationError, match="invalid_client") as refused:
        auth.token()
    assert "wrong" not in str(refused.value)


def test_an_unreachable_issuer_is_an_authentication_error():
    auth = AuthenticationOauth2(json.dumps({"issuer_url": "http://127.0.0.1:9", "private_key": "data:,{}"}))
    with pytest.raises((AuthenticationError, InvalidConfiguration)):
        auth.token()


@pytest.mark.parametrize("params,problem", [
    ("not json", "JSON"),
    ('{"private_key": "/k.json"}', "issuer_url"),
    ('{"issuer_url": "https://idp", "type": "device_code", "private_key": "/k.json"}', "client_credentials"),
    ('{"issuer_url": "https://idp"}', "private_key"),
])
def test_bad_parameters_are_refused_at_construction(params, problem):
    with pytest.raises(InvalidConfiguration, match=problem):
        AuthenticationOauth2(params)


def test_the_java_plugin_name_and_camel_case_params_build_it_for_the_cli_and_spark(issuer):
    params = json.dumps({"issuerUrl": issuer.url, "privateKey": issuer.credentials_url("svc"), "audience": "pulsar"})
    auth = from_plugin("org.apache.pulsar.client.impl.auth.oauth2.AuthenticationOAuth2", params)
    assert isinstance(auth, AuthenticationOauth2) and auth.params.audience == "pulsar"
    assert auth.token()


def test_pulsarlike_serves_authentication_oauth2_and_never_shows_the_secret(issuer):
    assert pulsarlike.AuthenticationOauth2 is AuthenticationOauth2
    auth = pulsarlike.AuthenticationOauth2(issuer.auth_params("svc"))
    assert "s3cret" not in repr(auth) and issuer.url in repr(auth)


def test_spark_options_with_pulsar_sparks_names_build_it(issuer):
    from connector.spark.auth_options import split_security

    rest, security = split_security({"pulsar.client.authPluginClassName":
                                     "org.apache.pulsar.client.impl.auth.oauth2.AuthenticationOAuth2",
                                     "pulsar.client.authParams": issuer.auth_params("svc"), "topic": "t"}, "source")
    assert rest == {"topic": "t"} and "s3cret" not in repr(security)
    assert isinstance(security.client_kwargs("pulsar://localhost:6650")["authentication"], AuthenticationOauth2)
