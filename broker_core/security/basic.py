"""The ``basic`` authentication provider: Pulsar's ``AuthenticationProviderBasic``.

Users are an htpasswd file (``htpasswd -cm users.htpasswd alice``): one ``name:hash`` a line, blank lines and
``#`` comments skipped, the hashes of :mod:`broker_core.security.password_hashes`. ``basicAuthConf`` names
it as Pulsar reads it: ``file:///path``, a path, ``data:;base64,<content>`` or the content base64-encoded.
The file is read once, at start; a file that cannot be read, a malformed line, a user twice or a hash in an
unknown format stops the broker with ``InvalidConfiguration`` naming the line (never quoting a hash).

A client presents ``user:password``: in ``CONNECT`` (``auth_method_name`` ``basic``, ``auth_data``
``user:password``, what pulsar-client's ``AuthenticationBasic`` sends), as ``Authorization: Basic
base64(user:password)`` on HTTP and gRPC (:meth:`~broker_core.security.Security.authenticate_call`). The role
is the user's name. An unknown user and a wrong password are one refusal ("unknown user or wrong
password"), and an unknown user's password is hashed against a decoy too, so neither the answer nor its
time tells which names exist.

Example::

    users = BasicAuthentication(parse_htpasswd("alice:$apr1$GBIYZYFZ$MzLcPrvoUky16mLcK6UtX/\\n"))
    users.authenticate(b"alice:admin", identity).role      # "alice"
"""
from __future__ import annotations

import hashlib
import os
from collections import OrderedDict
from pathlib import Path

from broker_core.config import BrokerConfig
from broker_core.errors import AuthenticationError, InvalidConfiguration
from broker_core.net.peers import ClientIdentity
from broker_core.security.keys import read_key
from broker_core.security.password_hashes import UnsupportedHash, md5_crypt, scheme_of, verify
from broker_core.security.providers import Authenticated

SETTING = "basicAuthConf"
DECOY = md5_crypt(b"no such user", b"pulsarli", "$apr1$")
"""Hashed against when the user does not exist: as slow as a real user's APR1 check."""
REFUSED = "unknown user or wrong password"
MAX_CREDENTIALS = 512
"""Longest ``user:password`` checked, in bytes (htpasswd takes passwords of at most 255 characters): a hash's
cost grows with the password's length (SHA-crypt's 5,000 rounds over a 64 KiB password held the event loop
about a second), so longer ones are refused unhashed."""
VERIFIED_CACHE = 1024
"""Credentials that passed, remembered (by their SHA-256) so that a client presenting them again -- an HTTP
client does on every request -- costs a dictionary lookup, not 2-8 ms of hashing on the event loop."""


def read_conf(value: str) -> str:
    """The htpasswd text ``basicAuthConf`` designates (see the module docstring)."""
    value = value.strip()
    if not value:
        raise InvalidConfiguration(f"the basic authentication provider needs {SETTING}: the htpasswd file "
                                   "(file:///path) or its content base64-encoded (data:;base64,...)", key=SETTING)
    if not value.startswith(("data:", "file:")) and Path(value).is_file():
        try:
            data = Path(value).read_bytes()
        except OSError as exc:
            raise InvalidConfiguration(f"{SETTING}: cannot read {value} ({exc.strerror})", key=SETTING) from None
    else:
        try:
            data = read_key(SETTING, value)
        except InvalidConfiguration:
            if os.sep in value and not value.startswith("data:"):  # meant as a path (base64 has / too)
                raise InvalidConfiguration(f"{SETTING}: no htpasswd file at {value}", key=SETTING) from None
            raise
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidConfiguration(f"{SETTING}: the htpasswd content is not UTF-8 text", key=SETTING) from None


def parse_htpasswd(text: str) -> dict[str, str]:
    """``name -> hash`` of htpasswd lines; ``InvalidConfiguration`` naming the first bad line."""
    users: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        name, sep, stored = line.partition(":")
        name, stored = name.strip(), stored.strip()
        if not sep or not name or not stored:
            raise InvalidConfiguration(f"{SETTING} line {number}: not name:hash (write it with htpasswd -m)",
                                       key=SETTING)
        if name in users:
            raise InvalidConfiguration(f"{SETTING} line {number}: user {name!r} is listed twice", key=SETTING)
        try:
            scheme_of(stored)
        except UnsupportedHash as exc:
            raise InvalidConfiguration(f"{SETTING} line {number} (user {name!r}): {exc}", key=SETTING) from None
        users[name] = stored
    if not users:
        raise InvalidConfiguration(f"{SETTING}: no users (name:hash lines) in the htpasswd content", key=SETTING)
    return users


class BasicAuthentication:
    method = "basic"

    def __init__(self, users: dict[str, str]) -> None:
        self._users = dict(users)
        self._verified: OrderedDict[bytes, str] = OrderedDict()

    @classmethod
    def from_config(cls, config: BrokerConfig) -> "BasicAuthentication":
        return cls(parse_htpasswd(read_conf(config.basicAuthConf)))

    def __len__(self) -> int:
        return len(self._users)

    def authenticate(self, credentials: bytes, identity: ClientIdentity) -> Authenticated:
        if not credentials:
            raise AuthenticationError("authentication failed: no user name and password were presented; give "
                                      "the client authentication=AuthenticationBasic(user, password)",
                                      reason="no credentials")
        if len(credentials) > MAX_CREDENTIALS:
            raise AuthenticationError(f"authentication failed: user:password longer than {MAX_CREDENTIALS} bytes",
                                      reason="malformed credentials")
        key = hashlib.sha256(credentials).digest()
        known = self._verified.get(key)
        if known is not None:
            self._verified.move_to_end(key)
            return Authenticated(known)
        try:
            text = credentials.decode("utf-8")
        except UnicodeDecodeError:
            raise AuthenticationError("authentication failed: the credentials are not UTF-8 user:password",
                                      reason="malformed credentials") from None
        # The user name ends at the first colon; the password may hold more (RFC 7617).
        name, sep, password = text.partition(":")
        if not sep or not name:
            raise AuthenticationError("authentication failed: the credentials are not user:password",
                                      reason="malformed credentials")
        stored = self._users.get(name)
        matches = verify(password, stored if stored is not None else DECOY)
        if stored is None or not matches:
            raise AuthenticationError(f"authentication failed: {REFUSED}", reason=REFUSED)
        self._verified[key] = name
        if len(self._verified) > VERIFIED_CACHE:
            self._verified.popitem(last=False)
        return Authenticated(name)

    def still_valid(self, authenticated: Authenticated) -> bool:
        return True
