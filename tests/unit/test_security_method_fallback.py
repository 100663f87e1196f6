"""A client naming an authentication method no provider takes, as Pulsar's ``ServerCnx`` (CONNECT's
``auth_method_name``) and its HTTP ``AuthenticationService`` (an ``Authorization`` no provider reads) treat
it: the ``anonymousUserRole`` when one is set, so that authorization decides; refused at once without it.
Credentials a provider refuses stay refused, whatever ``anonymousUserRole`` says."""
from __future__ import annotations

import asyncio
import logging

import pytest

from broker_core.config import BrokerConfig
from broker_core.errors import AuthenticationError
from broker_core.net.peers import ClientIdentity
from broker_core.security import Security

ME = ClientIdentity("ipv4:127.0.0.1:5000")
WITH_CERTIFICATE = ClientIdentity("ipv4:127.0.0.1:5000", "alice")
BASIC_ADMIN = "Basic YWRtaW46MTIzNDU2"
"""``admin:123456``, the user of pulsar-client-python's test broker (its ``tests/test-conf/.htpasswd``)."""
ADMIN_LINE = "admin:$apr1$FG4AO6aX$KGYPuMoLUou3i6vUkPUUf."


def _security(tmp_path, **config) -> Security:
    users = tmp_path / ".htpasswd"
    users.write_text(ADMIN_LINE + "\n")
    return Security(BrokerConfig.from_mapping({"authenticationEnabled": True, "authenticationProviders": "basic,tls",
                                               "basicAuthConf": str(users), **config}))


def test_an_unknown_connect_method_gets_the_anonymous_user_role(tmp_path, caplog):
    security = _security(tmp_path, anonymousUserRole="anonymous")
    with caplog.at_level(logging.INFO, logger="broker_core.security.layer"):
        principal = security.authenticate("unknown", b"admin:123456", ME)
        assert asyncio.run(security.authenticate_async("unknown", b"admin:123456", ME)) == principal
    assert (principal.role, principal.method) == ("anonymous", "none")
    assert "event=authentication_fallback" in caplog.text and "method=unknown role=anonymous" in caplog.text
    assert caplog.text.count("event=authentication_fallback") == 1  # once per method and 10 s, counted


def test_an_unknown_connect_method_without_anonymous_user_role_is_refused_at_once(tmp_path):
    security = _security(tmp_path)
    with pytest.raises(AuthenticationError, match="'unknown' is not enabled.*anonymousUserRole is unset"):
        security.authenticate("unknown", b"admin:123456", ME)
    with pytest.raises(AuthenticationError, match="'token' is not enabled"):
        asyncio.run(security.authenticate_async("token", b"x.y.z", ME))


def test_a_known_method_with_the_right_credentials_is_its_user(tmp_path):
    security = _security(tmp_path, anonymousUserRole="anonymous")
    assert security.authenticate("basic", b"admin:123456", ME).role == "admin"
    assert security.authenticate_call(BASIC_ADMIN, ME).role == "admin"


@pytest.mark.parametrize("method, data", [("basic", b"admin:wrong"), ("tls", b"")])
def test_credentials_a_provider_refuses_are_never_the_anonymous_role(tmp_path, method, data):
    security = _security(tmp_path, anonymousUserRole="anonymous")
    with pytest.raises(AuthenticationError):
        security.authenticate(method, data, ME)
    with pytest.raises(AuthenticationError):
        security.authenticate_call("Basic YWRtaW46d3Jvbmc=", ME)  # admin:wrong


@pytest.mark.parametrize("authorization", ["Digest username=admin", "Bearer x.y.z", "Negotiate abc", "garbage"])
def test_an_authorization_no_provider_takes_gets_the_anonymous_user_role(tmp_path, authorization):
    security = _security(tmp_path, anonymousUserRole="anonymous")
    assert security.authenticate_call(authorization, ME).role == "anonymous"
    assert asyncio.run(security.authenticate_call_async(authorization, ME)).role == "anonymous"


@pytest.mark.parametrize("authorization", ["Digest username=admin", "Bearer x.y.z"])
def test_an_authorization_no_provider_takes_without_anonymous_user_role_is_refused(tmp_path, authorization):
    security = _security(tmp_path)
    with pytest.raises(AuthenticationError, match="not one this broker takes.*anonymousUserRole is unset"):
        security.authenticate_call(authorization, ME)


def test_an_authorization_no_provider_takes_leaves_the_client_certificate_to_decide(tmp_path):
    # Pulsar's HTTP service tries every provider: the tls one takes the certificate
    assert _security(tmp_path).authenticate_call("Digest username=admin", WITH_CERTIFICATE).role == "alice"
