"""The ``basic`` authentication provider: Pulsar's ``AuthenticationProviderBasic``.

Users are an htpasswd file (``htpasswd -cm users.htpasswd alice``): one ``name:hash`` a line, blank lines and
``#`` comments skipped, the hashes of :mod:`broker_core.security.password_hashes`. ``basicAuthConf`` names
it as Pulsar reads it: ``file:///path``, a path, ``data:;base64,<content>`` or the content base64-encoded.
The file is read once, at start; a file that cannot be read, a malformed line, a user twice or a hash in an
unknown format stops the broker with ``InvalidConfiguration`` naming the line (never quoting a hash).

A client presents ``user:password``: in ``CONNECT`` (``auth_method_name`` ``basic``, ``auth_data``
``user:password``, what pulsar-client's ``AuthenticationBasic`` sends), as ``Authorization: Basic
base64(user:password)`` on HTTP and gRPC (:meth:`~broker_core.security.Security.authenticate_call`). The role
is the user's name.

How a login is checked (:meth:`BasicAuthentication.authenticate_async`, what the front ends await):

1. Empty, longer than :data:`MAX_CREDENTIALS`, not UTF-8 or not ``user:password``: refused at once.
2. From an address that failed too often (:mod:`.failed_logins`): ``TooManyRequests`` at once, nothing
   hashed, even for credentials that passed before.
3. Credentials that passed before (the last :data:`VERIFIED_CACHE`): admitted without hashing.
4. The password is hashed on a worker thread (:mod:`.password_checks`) against the user's hash, or, for a
   name that is no user, against a decoy of the same scheme, rounds and salt length (:mod:`.decoys`); the
   result is compared in constant time. An unknown user and a wrong password are one refusal ("unknown user
   or wrong password"), after the same work: neither the answer nor its time tells which names exist.
   The refusal counts against the client's address.

Example::

    users = BasicAuthentication(parse_htpasswd("alice:$apr1$GBIYZYFZ$MzLcPrvoUky16mLcK6UtX/\\n"))
    users.authenticate(b"alice:admin", identity).role      # "alice"
"""
from __future__ import annotations

import asyncio
import functools
import hashlib
import os
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

from broker_core.clock import SYSTEM_CLOCK, Clock
from broker_core.config import BrokerConfig
from broker_core.errors import AuthenticationError, InvalidConfiguration
from broker_core.net.peers import ClientIdentity
from broker_core.security.decoys import Decoys
from broker_core.security.failed_logins import FailedLogins, FailureLimits, client_address
from broker_core.security.keys import read_key
from broker_core.security.password_checks import PasswordChecks, hand_over
from broker_core.security.password_hashes import UnsupportedHash, scheme_of, verify
from broker_core.security.providers import Authenticated

SETTING = "basicAuthConf"
REFUSED = "unknown user or wrong password"
MAX_CREDENTIALS = 512
"""Longest ``user:password`` checked, in bytes (htpasswd takes passwords of at most 255 characters): a hash's
cost grows with the password's length (SHA-crypt's 5,000 rounds over a 64 KiB password took about a second),
so longer ones are refused unhashed."""
VERIFIED_CACHE = 1024
"""Credentials that passed, remembered (by their SHA-256) so that a client presenting them again -- an HTTP
client does on every request -- costs a dictionary lookup, not 2-15 ms of hashing."""


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


@dataclass(frozen=True)
class _Login:
    """One login to check: who, against which hash, counted for which address."""

    name: str
    password: str
    stored: str
    """The user's hash, or the decoy for a name that is no user."""
    known: bool
    key: bytes
    """SHA-256 of the credentials as presented."""
    address: str


class BasicAuthentication:
    method = "basic"

    def __init__(self, users: dict[str, str], limits: FailureLimits | None = None, clock: Clock = SYSTEM_CLOCK,
                 checks: PasswordChecks | None = None) -> None:
        """``limits``: failed logins per address (None: the defaults); ``checks``: where passwords are hashed
        for :meth:`authenticate_async`."""
        self._users = dict(users)
        self._decoys = Decoys(self._users)
        self.failed_logins = FailedLogins(limits or FailureLimits(), clock)
        self._checks = checks or PasswordChecks()
        self._verified: OrderedDict[bytes, str] = OrderedDict()

    @classmethod
    def from_config(cls, config: BrokerConfig, clock: Clock = SYSTEM_CLOCK) -> "BasicAuthentication":
        return cls(parse_htpasswd(read_conf(config.basicAuthConf)), FailureLimits.from_config(config), clock)

    def __len__(self) -> int:
        return len(self._users)

    def authenticate(self, credentials: bytes, identity: ClientIdentity) -> Authenticated:
        """The login checked on the calling thread (see :meth:`authenticate_async` for the event loop)."""
        login = self._login(credentials, identity)
        if isinstance(login, Authenticated):
            return login
        self.failed_logins.checking(login.address, login.key)
        try:
            matches = verify(login.password, login.stored)
        except BaseException:
            self.failed_logins.checked(login.address, login.key, failed=False)
            raise
        return self._answer(login, self._settle(login, matches))

    async def authenticate_async(self, credentials: bytes, identity: ClientIdentity) -> Authenticated:
        """The login checked with its password hashed on a worker thread (the module docstring's steps)."""
        login = self._login(credentials, identity)
        if isinstance(login, Authenticated):
            return login
        self.failed_logins.checking(login.address, login.key)
        try:
            check = self._checks.submit(login.key, functools.partial(verify, login.password, login.stored,
                                                                     hand_over))
        except BaseException:
            self.failed_logins.checked(login.address, login.key, failed=False)
            raise
        # recorded when the hash is done, whether this caller still waits or not: a client that hangs up
        # before its answer still has its failure counted
        check.add_done_callback(lambda done: self._settle(login, _matched(done)))
        matches = await asyncio.shield(check)
        return self._answer(login, matches and login.known)

    def _login(self, credentials: bytes, identity: ClientIdentity) -> _Login | Authenticated:
        """Steps 1-3: the login to check, or the remembered pass; refusals raised."""
        if not credentials:
            raise AuthenticationError("authentication failed: no user name and password were presented; give "
                                      "the client authentication=AuthenticationBasic(user, password)",
                                      reason="no credentials")
        if len(credentials) > MAX_CREDENTIALS:
            raise AuthenticationError(f"authentication failed: user:password longer than {MAX_CREDENTIALS} bytes",
                                      reason="malformed credentials")
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
        key = hashlib.sha256(credentials).digest()
        address = client_address(identity.address)
        self.failed_logins.admit(address, key)
        known = self._verified.get(key)
        if known is not None:
            self._verified.move_to_end(key)
            return Authenticated(known)
        decoy = self._decoys.for_name(name)  # for every name, known or not: the same work before the hash
        stored = self._users.get(name)
        return _Login(name, password, decoy if stored is None else stored, stored is not None, key, address)

    def _settle(self, login: _Login, matches: bool | None) -> bool:
        """Step 4's outcome recorded: a pass remembered, a refusal counted (``matches`` None: the check
        failed, counted as neither). Whether the login passed."""
        passed = bool(matches) and login.known
        self.failed_logins.checked(login.address, login.key, failed=matches is not None and not passed)
        if passed:
            self._verified[login.key] = login.name
            self._verified.move_to_end(login.key)
            if len(self._verified) > VERIFIED_CACHE:
                self._verified.popitem(last=False)
        return passed

    def _answer(self, login: _Login, passed: bool) -> Authenticated:
        if not passed:
            raise AuthenticationError(f"authentication failed: {REFUSED}", reason=REFUSED)
        return Authenticated(login.name)

    def still_valid(self, authenticated: Authenticated) -> bool:
        return True


def _matched(check: asyncio.Future[bool]) -> bool | None:
    """A finished check's answer; None when it could not be computed."""
    if check.cancelled() or check.exception() is not None:
        return None
    return check.result()
