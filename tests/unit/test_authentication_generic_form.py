"""``Authentication(dynamicLibPath, authParamsString)``, pulsar-client's generic form: the plugin names of
Pulsar's clients give our TLS, token, Basic and OAuth2 methods; another plugin is refused with
``AuthenticationError`` naming it when the client authenticates (not when constructed); arguments that are not
str are pulsar-client's ValueError."""
from __future__ import annotations

import pytest

from connector.client.security.authentication import (Authentication, AuthenticationBasic, AuthenticationTLS,
                                             AuthenticationToken)
from connector.client.transport.binary.handshake import auth_data
from connector import AuthenticationError


@pytest.mark.parametrize("plugin", ["tls", "org.apache.pulsar.client.impl.auth.AuthenticationTls"])
def test_a_tls_plugin_name_gives_a_client_certificate(plugin):
    auth = Authentication(plugin, "tlsCertFile:/certs/client-cert.pem,tlsKeyFile:/certs/client-key.pem")
    assert isinstance(auth, AuthenticationTLS)
    assert auth.tls_files() == ("/certs/client-cert.pem", "/certs/client-key.pem")


def test_a_token_plugin_name_gives_the_token():
    auth = Authentication("token", "token:abc.def.ghi")
    assert isinstance(auth, AuthenticationToken) and auth.token() == "abc.def.ghi"


def test_a_basic_plugin_name_gives_user_and_password():
    auth = Authentication("basic", '{"username": "admin", "password": "123456"}')
    assert isinstance(auth, AuthenticationBasic) and auth_data(auth) == ("basic", b"admin:123456")


def test_an_unknown_plugin_is_refused_when_the_client_authenticates_naming_it():
    auth = Authentication("someoldjunk.so", "blah")
    assert isinstance(auth, Authentication) and auth.tls_files() is None
    with pytest.raises(AuthenticationError, match="someoldjunk.so"):
        auth_data(auth)


@pytest.mark.parametrize("args", [(None, "x"), ("tls", 3)])
def test_arguments_that_are_not_str_are_a_value_error(args):
    with pytest.raises(ValueError, match="type 'str'"):
        Authentication(*args)


def test_subclasses_are_constructed_as_usual():
    assert AuthenticationToken("t").token() == "t"
    assert Authentication().token() is None


def test_basic_auth_params_that_do_not_parse_are_a_runtime_error_as_in_pulsar_client():
    from broker_core.errors import InvalidConfiguration

    with pytest.raises(RuntimeError) as refused:
        AuthenticationBasic(auth_params_string="invalid auth params")
    assert isinstance(refused.value, InvalidConfiguration)
