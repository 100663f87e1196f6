"""The password hashes of htpasswd files that Pulsar's ``AuthenticationProviderBasic`` reads, checked with
the standard library.

Pulsar hands ``$apr1$`` hashes to Apache's APR1 MD5 and everything else to commons-codec's ``Crypt.crypt``,
which reads ``$1$`` (MD5-crypt), ``$5$``/``$6$`` (SHA-256/512-crypt) and 13-character DES crypt. So do we:

=========== ==================================== ===============================================
``$apr1$``  ``htpasswd -m`` (Pulsar recommends)  MD5-crypt with Apache's magic, pure (hashlib)
``$1$``     ``openssl passwd -1``                MD5-crypt, pure (hashlib)
``$5$``     ``openssl passwd -5``                SHA-256-crypt (``rounds=`` too), pure (hashlib)
``$6$``     ``openssl passwd -6``                SHA-512-crypt (``rounds=`` too), pure (hashlib)
DES         ``htpasswd -d``                      the C library's ``crypt(3)`` through Python's
                                                 ``crypt`` module (a pure DES is not small; Python
                                                 3.13 removed the module, where such a file is
                                                 refused at start)
=========== ==================================== ===============================================

Anything else (bcrypt ``$2y$``, ``{SHA}``, plain text) is refused by :func:`scheme_of` with the formats to
use instead. :func:`verify` compares in constant time (``hmac.compare_digest``).

What a check costs is its :class:`HashCost` (scheme, rounds, salt length; the password's length is the
client's): :func:`decoy` makes a stored hash of a given cost that no password is known to match, so that an
unknown user's password can be checked at exactly the cost of a known user's (:mod:`.decoys`).

Example::

    verify("admin", "$apr1$GBIYZYFZ$MzLcPrvoUky16mLcK6UtX/")   # True
    cost_of("$6$rounds=20000$saltsalt$...")                    # HashCost("$6$", 20000, 8)
    verify("admin", decoy(cost_of(stored)))                    # False, after the same work as verify(.., stored)
"""
from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import warnings
from typing import Callable, NamedTuple

ITOA64 = "./0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
APR1, MD5, SHA256, SHA512, DES = "$apr1$", "$1$", "$5$", "$6$", "des"
SUPPORTED = "APR1 MD5 ($apr1$, htpasswd -m), MD5-crypt ($1$), SHA-256/512-crypt ($5$, $6$) or DES crypt (htpasswd -d)"

_CHARS = f"[{re.escape(ITOA64)}]"
_SHAPES = {
    APR1: re.compile(rf"\$apr1\$[^$]{{0,8}}\${_CHARS}{{22}}"),
    MD5: re.compile(rf"\$1\$[^$]{{0,8}}\${_CHARS}{{22}}"),
    SHA256: re.compile(rf"\$5\$(rounds=\d+\$)?[^$]{{0,16}}\${_CHARS}{{43}}"),
    SHA512: re.compile(rf"\$6\$(rounds=\d+\$)?[^$]{{0,16}}\${_CHARS}{{86}}"),
    DES: re.compile(rf"{_CHARS}{{13}}"),
}


class HashCost(NamedTuple):
    """Everything of a stored hash that makes checking a password against it slower or faster."""

    scheme: str
    """``$apr1$``, ``$1$``, ``$5$``, ``$6$`` or ``des``: the hash function."""
    rounds: int
    """Its iterations: 1,000 for MD5-crypt and APR1 (fixed), ``rounds=`` for SHA-crypt (5,000 when absent,
    clamped as the check clamps it), 25 for DES (fixed)."""
    salt_length: int
    """Bytes of salt hashed (SHA-crypt hashes the salt in two of three rounds, MD5-crypt too)."""


class UnsupportedHash(ValueError):
    """A stored hash in none of the formats above (the message lists them)."""


def scheme_of(stored: str) -> str:
    """The scheme of a stored hash; ``UnsupportedHash`` when it is none we (and Pulsar) read."""
    for scheme, shape in _SHAPES.items():
        if shape.fullmatch(stored):
            if scheme == DES and _crypt_module() is None:
                raise UnsupportedHash("DES crypt hashes need Python's crypt module, which this Python does not "
                                      "have; store the password with htpasswd -m (APR1 MD5) instead")
            return scheme
    raise UnsupportedHash(f"not a password hash this broker reads; use {SUPPORTED}")


Pause = Callable[[], None]
"""Called every :data:`PAUSE_EVERY` rounds of a hash: a worker thread hands the GIL over there
(:mod:`.password_checks`)."""
PAUSE_EVERY = 256


def hash_password(password: str, stored: str, pause: Pause | None = None) -> str:
    """``password`` hashed with the scheme and salt of ``stored`` (a well-formed hash, see :func:`scheme_of`)."""
    scheme = scheme_of(stored)
    secret = password.encode("utf-8")
    if scheme in (APR1, MD5):
        return md5_crypt(secret, stored[len(scheme):].split("$", 1)[0].encode("utf-8"), scheme, pause)
    if scheme in (SHA256, SHA512):
        return sha_crypt(secret, stored[len(scheme):].rsplit("$", 1)[0], scheme, pause)
    crypt = _crypt_module()
    assert crypt is not None  # scheme_of refused DES without it
    return str(crypt.crypt(password, stored[:2]))


def verify(password: str, stored: str, pause: Pause | None = None) -> bool:
    """Whether ``password`` hashes to ``stored``, compared in constant time."""
    return hmac.compare_digest(hash_password(password, stored, pause).encode("utf-8"), stored.encode("utf-8"))


def cost_of(stored: str) -> HashCost:
    """The cost of checking a password against ``stored`` (a well-formed hash, see :func:`scheme_of`)."""
    scheme = scheme_of(stored)
    if scheme in (APR1, MD5):
        return HashCost(scheme, MD5_ROUNDS, len(stored[len(scheme):].split("$", 1)[0].encode("utf-8")[:8]))
    if scheme in (SHA256, SHA512):
        rounds, _, salt = _sha_salt_field(stored[len(scheme):].rsplit("$", 1)[0])
        return HashCost(scheme, rounds, len(salt))
    return HashCost(DES, DES_ROUNDS, 2)


def decoy(cost: HashCost) -> str:
    """A stored hash of ``cost`` that no password is known to match (random salt and digest): checking a
    password against it takes what checking one against any hash of that cost takes, and fails."""
    salt = _random64(cost.salt_length)
    if cost.scheme in (APR1, MD5):
        return f"{cost.scheme}{salt}${_random64(22)}"
    if cost.scheme in (SHA256, SHA512):
        rounds = "" if cost.rounds == ROUNDS_DEFAULT else f"rounds={cost.rounds}$"
        return f"{cost.scheme}{rounds}{salt}${_random64(43 if cost.scheme == SHA256 else 86)}"
    return _random64(13)  # DES: 2 characters of salt, 11 of digest


def _random64(length: int) -> str:
    return "".join(secrets.choice(ITOA64) for _ in range(length))


def _to64(value: int, length: int) -> str:
    out = []
    for _ in range(length):
        out.append(ITOA64[value & 0x3F])
        value >>= 6
    return "".join(out)


MD5_ROUNDS, DES_ROUNDS = 1000, 25


def md5_crypt(password: bytes, salt: bytes, magic: str, pause: Pause | None = None) -> str:
    """MD5-crypt (Poul-Henning Kamp's); with ``magic`` ``$apr1$`` it is Apache's APR1."""
    salt = salt[:8]
    alternate = hashlib.md5(password + salt + password).digest()
    ctx = bytearray(password + magic.encode("ascii") + salt)
    for left in range(len(password), 0, -16):
        ctx += alternate[:min(16, left)]
    length = len(password)
    while length:
        ctx += b"\0" if length & 1 else password[:1]
        length >>= 1
    digest = hashlib.md5(ctx).digest()
    for i in range(MD5_ROUNDS):  # the algorithm's fixed cost
        if pause is not None and not i % PAUSE_EVERY:
            pause()
        step = bytearray(password if i & 1 else digest)
        if i % 3:
            step += salt
        if i % 7:
            step += password
        step += digest if i & 1 else password
        digest = hashlib.md5(step).digest()
    encoded = "".join(_to64((digest[a] << 16) | (digest[b] << 8) | digest[c], 4)
                      for a, b, c in ((0, 6, 12), (1, 7, 13), (2, 8, 14), (3, 9, 15), (4, 10, 5)))
    return f"{magic}{salt.decode('utf-8', 'replace')}${encoded}{_to64(digest[11], 2)}"


ROUNDS_DEFAULT, ROUNDS_MIN, ROUNDS_MAX = 5000, 1000, 999_999_999


def sha_crypt(password: bytes, salt_field: str, magic: str, pause: Pause | None = None) -> str:
    """SHA-256-crypt (``$5$``) or SHA-512-crypt (``$6$``), Ulrich Drepper's specification; ``salt_field`` is
    the salt, optionally after ``rounds=N$``."""
    new = hashlib.sha256 if magic == SHA256 else hashlib.sha512
    size = 32 if magic == SHA256 else 64
    rounds, custom, salt = _sha_salt_field(salt_field)
    alternate = new(password + salt + password).digest()
    ctx = bytearray(password + salt)
    for left in range(len(password), 0, -size):
        ctx += alternate[:min(size, left)]
    length = len(password)
    while length:
        ctx += alternate if length & 1 else password
        length >>= 1
    digest = new(ctx).digest()
    p_bytes = _repeat(new(password * len(password)).digest(), len(password))
    s_bytes = _repeat(new(salt * (16 + digest[0])).digest(), len(salt))
    for i in range(rounds):
        if pause is not None and not i % PAUSE_EVERY:
            pause()
        step = bytearray(p_bytes if i & 1 else digest)
        if i % 3:
            step += s_bytes
        if i % 7:
            step += p_bytes
        step += digest if i & 1 else p_bytes
        digest = new(step).digest()
    groups = []
    third = size // 3  # 10 (SHA-256: 30 of 32 bytes in triples) or 21 (SHA-512: 63 of 64)
    for i in range(third):
        a, b, c = digest[i], digest[i + third], digest[i + 2 * third]
        if size == 32:
            triple = ((a, b, c), (c, a, b), (b, c, a))[i % 3]
        else:
            triple = ((a, b, c), (b, c, a), (c, a, b))[i % 3]
        groups.append(_to64((triple[0] << 16) | (triple[1] << 8) | triple[2], 4))
    groups.append(_to64((digest[31] << 8) | digest[30], 3) if size == 32 else _to64(digest[63], 2))
    prefix = f"{magic}rounds={rounds}$" if custom else magic
    return f"{prefix}{salt.decode('utf-8', 'replace')}${''.join(groups)}"


def _sha_salt_field(salt_field: str) -> tuple[int, bool, bytes]:
    """(rounds, whether ``rounds=`` was given, salt) of SHA-crypt's ``[rounds=N$]salt``."""
    rounds, custom = ROUNDS_DEFAULT, False
    if salt_field.startswith("rounds="):
        count, _, salt_field = salt_field[len("rounds="):].partition("$")
        rounds, custom = min(max(int(count), ROUNDS_MIN), ROUNDS_MAX), True
    return rounds, custom, salt_field.encode("utf-8")[:16]


def _repeat(block: bytes, length: int) -> bytes:
    return (block * (length // len(block) + 1))[:length]


def _crypt_module():  # type: ignore[no-untyped-def]
    """Python's ``crypt`` (deprecated in 3.11, removed in 3.13), or None; only DES hashes need it."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            import crypt
        except ImportError:
            return None
    return crypt
