"""The ``basic`` provider (Pulsar's ``AuthenticationProviderBasic``): htpasswd users read in every form
``basicAuthConf`` takes, every hash format Pulsar reads checked against references (openssl, the C library's
crypt), malformed files refused at start naming the line, wrong passwords and unknown users refused alike and
compared in constant time, and the security layer taking ``basic`` from CONNECT and ``Authorization: Basic``."""
from __future__ import annotations

import base64
import subprocess
import warnings

import pytest

from broker_core.config import BrokerConfig
from broker_core.errors import AuthenticationError, InvalidConfiguration
from broker_core.net.peers import ClientIdentity
from broker_core.security import Security, password_hashes
from broker_core.security.basic import BasicAuthentication, parse_htpasswd, read_conf
from broker_core.security.password_hashes import hash_password, md5_crypt, scheme_of, verify
from connector.client.security.authentication import AuthenticationBasic, from_plugin

PULSAR_DOC_LINE = "superuser:$apr1$GBIYZYFZ$MzLcPrvoUky16mLcK6UtX/"
"""The line of Pulsar's basic authentication page, for ``htpasswd -cmb .htpasswd superuser admin``."""
ME = ClientIdentity("ipv4:127.0.0.1:5000")

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    import crypt as libc_crypt  # the C library's crypt(3): the reference for $1$, $5$, $6$ and DES


def users(*lines: str) -> BasicAuthentication:
    return BasicAuthentication(parse_htpasswd("\n".join(lines)))


def test_pulsars_documented_apr1_line_admits_its_password():
    assert users(PULSAR_DOC_LINE).authenticate(b"superuser:admin", ME).role == "superuser"


def test_apr1_hashes_made_by_openssl_are_read(tmp_path):
    for password in ("admin", "pässwörd with spaces", "x" * 70, ""):
        made = subprocess.run(["openssl", "passwd", "-apr1", password], capture_output=True, text=True,
                              check=True).stdout.strip()
        assert verify(password, made) and not verify(password + "!", made)


@pytest.mark.parametrize("salt", ["$1$saltsalt", "$5$sixteencharsalt", "$6$sixteencharsalt", "$5$rounds=1200$abc",
                                  "$6$rounds=1000$abc", "ab"])
@pytest.mark.parametrize("password", ["admin", "pä:ss wörd", "a" * 65])
def test_crypt_formats_match_the_c_library(salt, password):
    stored = libc_crypt.crypt(password, salt)
    assert hash_password(password, stored) == stored
    assert not verify("wrong", stored)


def test_the_des_format_reads_only_eight_characters_as_crypt_does():
    stored = libc_crypt.crypt("12345678", "ab")
    assert scheme_of(stored) == password_hashes.DES and verify("12345678-and-more", stored)


@pytest.mark.parametrize("stored", ["$2y$05$abcdefghijklmnopqrstuuRWqBnyHrWvDN6hq6LbJ2jhXMQ5XDtBm", "{SHA}W6ph5Mm5P"
                                    "z8GgiULbPgzG37mj9g=", "plaintext", "$apr1$salt$tooshort", "$9$x$y"])
def test_unknown_formats_are_refused_at_start_naming_the_line(stored):
    with pytest.raises(InvalidConfiguration) as refused:
        parse_htpasswd(f"# users\n{PULSAR_DOC_LINE}\nbob:{stored}\n")
    assert "line 3 (user 'bob')" in refused.value.message and "htpasswd -m" in refused.value.message
    assert stored not in refused.value.message


@pytest.mark.parametrize("content, why", [
    ("no-colon-here", "line 1: not name:hash"),
    (":$apr1$GBIYZYFZ$MzLcPrvoUky16mLcK6UtX/", "line 1: not name:hash"),
    ("alice:", "line 1: not name:hash"),
    (f"{PULSAR_DOC_LINE}\n{PULSAR_DOC_LINE}", "line 2: user 'superuser' is listed twice"),
    ("# only a comment\n\n", "no users"),
])
def test_malformed_files_are_refused(content, why):
    with pytest.raises(InvalidConfiguration) as refused:
        parse_htpasswd(content)
    assert why in refused.value.message


def test_comments_blank_lines_and_crlf_are_skipped():
    found = parse_htpasswd(f"# made by htpasswd\r\n\r\n{PULSAR_DOC_LINE}\r\n  \r\n")
    assert found == {"superuser": PULSAR_DOC_LINE.split(":", 1)[1]}


def test_basic_auth_conf_takes_a_file_url_a_path_data_and_bare_base64(tmp_path):
    path = tmp_path / ".htpasswd"
    path.write_text(PULSAR_DOC_LINE + "\n")
    encoded = base64.b64encode(path.read_bytes()).decode()
    for value in (f"file://{path}", str(path), f"data:;base64,{encoded}", encoded):
        assert read_conf(value).strip() == PULSAR_DOC_LINE, value


def test_basic_auth_conf_missing_or_unreadable_is_refused(tmp_path):
    for value, why in (("", "needs basicAuthConf"), (str(tmp_path / "nope"), "no htpasswd file at"),
                       (f"file://{tmp_path}/nope", "no htpasswd file at"), ("%%%", "not valid base64")):
        with pytest.raises(InvalidConfiguration) as refused:
            read_conf(value)
        assert why in refused.value.message, value


@pytest.mark.parametrize("credentials", [b"superuser:wrong", b"superuser:", b"nobody:admin"])
def test_a_wrong_password_and_an_unknown_user_are_one_refusal(credentials):
    with pytest.raises(AuthenticationError) as refused:
        users(PULSAR_DOC_LINE).authenticate(credentials, ME)
    assert refused.value.fields["reason"] == "unknown user or wrong password"


@pytest.mark.parametrize("credentials, reason", [(b"", "no credentials"), (b"no-colon", "malformed credentials"),
                                                  (b":admin", "malformed credentials"),
                                                  (b"\xff\xfe:x", "malformed credentials")])
def test_malformed_credentials_are_refused(credentials, reason):
    with pytest.raises(AuthenticationError) as refused:
        users(PULSAR_DOC_LINE).authenticate(credentials, ME)
    assert refused.value.fields["reason"] == reason


def test_a_password_may_hold_colons():
    stored = libc_crypt.crypt("a:b:c", "$6$salt")
    assert users(f"carol:{stored}").authenticate(b"carol:a:b:c", ME).role == "carol"


def test_every_check_hashes_and_compares_in_constant_time_even_for_an_unknown_user(monkeypatch):
    compared: list[tuple[bytes, bytes]] = []
    real = password_hashes.hmac.compare_digest

    def spy(a, b):
        compared.append((a, b))
        return real(a, b)

    monkeypatch.setattr(password_hashes.hmac, "compare_digest", spy)
    known = users(PULSAR_DOC_LINE)
    for credentials in (b"superuser:admin", b"superuser:wrong", b"nobody:admin"):
        try:
            known.authenticate(credentials, ME)
        except AuthenticationError:
            pass
    assert len(compared) == 3 and all(a.startswith(b"$apr1$") and b.startswith(b"$apr1$") for a, b in compared)


def secured(tmp_path, **extra: str) -> Security:
    path = tmp_path / "users"
    path.write_text(PULSAR_DOC_LINE + "\n")
    settings = {"authenticationEnabled": True, "authenticationProviders":
                "org.apache.pulsar.broker.authentication.AuthenticationProviderBasic", "basicAuthConf": str(path),
                **extra}
    return Security(BrokerConfig(**settings))


def test_the_security_layer_takes_basic_from_connect_and_from_an_authorization_header(tmp_path):
    security = secured(tmp_path)
    assert security.authenticate("basic", b"superuser:admin", ME).role == "superuser"
    header = "Basic " + base64.b64encode(b"superuser:admin").decode()
    principal = security.authenticate_call(header, ME)
    assert (principal.role, principal.method) == ("superuser", "basic")
    for bad in ("Basic " + base64.b64encode(b"superuser:nope").decode(), "Basic !!!", "Bearer a.b.c"):
        with pytest.raises(AuthenticationError):
            security.authenticate_call(bad, ME)


def test_a_broker_with_basic_and_no_users_does_not_start(tmp_path):
    with pytest.raises(InvalidConfiguration, match="needs basicAuthConf"):
        Security(BrokerConfig(authenticationEnabled=True, authenticationProviders="basic"))


def test_the_client_sends_basic_credentials_and_never_shows_the_password():
    auth = AuthenticationBasic("superuser", "admin")
    assert auth.authorization() == "Basic " + base64.b64encode(b"superuser:admin").decode()
    assert "admin" not in repr(auth).replace("superuser", "")
    same = AuthenticationBasic(auth_params_string='{"username": "superuser", "password": "admin"}')
    assert same.authorization() == auth.authorization()
    plugin = from_plugin("org.apache.pulsar.client.impl.auth.AuthenticationBasic",
                         '{"userId": "superuser", "password": "admin"}')
    assert plugin.authorization() == auth.authorization()
    with pytest.raises(ValueError):
        AuthenticationBasic("a:b", "x")


def test_credentials_longer_than_htpasswd_allows_are_refused_without_hashing(monkeypatch):
    import broker_core.security.basic as basic

    users = basic.BasicAuthentication(basic.parse_htpasswd("alice:" + md5_crypt(b"pw", b"saltsalt", "$apr1$")))
    monkeypatch.setattr(basic, "verify", lambda *a: pytest.fail("a 64 KiB password was hashed"))
    with pytest.raises(AuthenticationError, match="longer than"):
        users.authenticate(b"alice:" + b"x" * 65536, ClientIdentity("127.0.0.1"))


def test_credentials_that_passed_are_not_hashed_again(monkeypatch):
    import broker_core.security.basic as basic

    users = basic.BasicAuthentication(basic.parse_htpasswd("alice:" + md5_crypt(b"pw", b"saltsalt", "$apr1$")))
    assert users.authenticate(b"alice:pw", ClientIdentity("127.0.0.1")).role == "alice"
    with pytest.raises(AuthenticationError):  # a failure is not remembered as a pass
        users.authenticate(b"alice:wrong", ClientIdentity("127.0.0.1"))
    monkeypatch.setattr(basic, "verify", lambda *a: pytest.fail("hashed again"))
    assert users.authenticate(b"alice:pw", ClientIdentity("127.0.0.1")).role == "alice"
