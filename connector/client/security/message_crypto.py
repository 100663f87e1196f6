"""End-to-end encryption of entries, in Pulsar's format (what pulsar-client's ``MessageCrypto`` writes and reads).

Producer side (:class:`ProducerCrypto`), per entry -- a batch, an unbatched message, or one chunk::

    payload --compress (whole message or batch)--> --[chunk]--> AES-256-GCM(data key, fresh 12-byte IV)
    metadata.encryption_keys = [EncryptionKeys{key: name, value: data key wrapped with that public key,
                                               metadata: the key reader's}]  one per encryption key name
    metadata.encryption_param = the IV            (encryption_algo left unset, as Pulsar's clients leave it)
    payload = ciphertext || 16-byte GCM tag

The data key is 32 random bytes, wrapped once per public key (:mod:`connector.client.security.crypto_keys`) and used
for every entry until it is renewed: every 4 hours (:data:`DATA_KEY_ROTATION_S`, Pulsar's producer task), at
the first entry encrypted after that. A chunked message is compressed whole, split, and each chunk encrypted
on its own (its own IV), as Pulsar's producers do; consumers decrypt each chunk, join, then decompress.

Consumer side (:class:`ConsumerCrypto`): the entry's data key is looked up by the MD5 of a wrapped copy in a
cache (an entry unused for 4 hours is dropped), else unwrapped with the private key the key reader gives for
one of the entry's key names, and the payload decrypted; the caller then decompresses and splits as for any
entry. When that fails, ``crypto_failure_action`` decides (:class:`ConsumerCryptoFailureAction`, pulsar-client's
values): ``FAIL`` (0) the message is not delivered and stays unacknowledged (redelivered after the ack timeout
when there is one), ``DISCARD`` (1) it is acknowledged and skipped, ``CONSUME`` (2) it is delivered as sent
(a batch as one message) with ``encryption_context().is_decryption_failed()``.
"""
from __future__ import annotations

import enum
import hashlib
import logging
import os
import threading
import time
from typing import Any, Callable, Iterable

from connector.client.security.crypto_keys import (
    CryptoError, CryptoKeyReader, load_private_key, load_public_key, read_key, unwrap_data_key, wrap_data_key)

log = logging.getLogger(__name__)

DATA_KEY_LEN = 32
"""AES-256."""
IV_LEN = 12
TAG_LEN = 16
DATA_KEY_ROTATION_S = 4 * 60 * 60
"""A producer's data key is renewed every 4 hours, as Pulsar's producers do."""
DATA_KEY_CACHE_S = 4 * 60 * 60
"""A consumer forgets a data key unused for 4 hours, as Pulsar's consumers do."""


class ConsumerCryptoFailureAction(enum.IntEnum):
    """pulsar-client's ``ConsumerCryptoFailureAction`` (same names and values)."""

    FAIL = 0
    DISCARD = 1
    CONSUME = 2


def check_key_reader(reader: Any, name: str = "crypto_key_reader") -> None:
    """pulsar-client's check: None or a :class:`CryptoKeyReader` (a user's reader subclasses it)."""
    if reader is not None and not isinstance(reader, CryptoKeyReader):
        raise ValueError(f"Argument {name} is expected to be either None or of type 'CryptoKeyReader'")


def failure_action(action: Any) -> ConsumerCryptoFailureAction:
    """``crypto_failure_action`` as the enum; pulsar-client's ValueError for anything else."""
    if action is None:
        return ConsumerCryptoFailureAction.FAIL
    if isinstance(action, bool) or not isinstance(action, int):
        raise ValueError("Argument crypto_failure_action is expected to be of type "
                         f"'ConsumerCryptoFailureAction' and not '{type(action).__name__}'")
    try:
        return ConsumerCryptoFailureAction(int(action))
    except ValueError:
        raise ValueError(f"crypto_failure_action={action!r} is not valid; use ConsumerCryptoFailureAction.FAIL, "
                         "DISCARD or CONSUME") from None


def _aesgcm(key: bytes) -> Any:
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM
    return AESGCM(key)


class ProducerCrypto:
    """Encrypts a producer's entries with its keys (``key_names``, read through ``reader``); ``clock`` (seconds,
    monotonic) times the data key's renewal. Thread-safe."""

    def __init__(self, key_names: Iterable[str], reader: Any, label: str = "",
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.key_names = tuple(dict.fromkeys(key_names))
        if not self.key_names or any(not isinstance(k, str) or not k for k in self.key_names):
            raise ValueError(f"encryption keys {list(key_names)!r} are not valid; name at least one key (a str)")
        if reader is None:
            raise ValueError("encryption_key needs a crypto_key_reader to read the public key")
        self._reader = reader
        self._label = label
        self._clock = clock
        self._lock = threading.Lock()
        self._data_key = b""
        self._aead: Any = None
        self._wrapped: dict[str, tuple[bytes, dict[str, str]]] = {}
        self._renewed_at = 0.0
        try:  # as Pulsar: a key that does not load now fails the sends, not the producer's creation
            self.renew_data_key()
        except CryptoError as exc:
            log.error("event=encryption_key_unavailable producer=%s error=%s", label, exc.message)

    def renew_data_key(self) -> None:
        """A new data key, wrapped with every public key (Pulsar's ``addPublicKeyCipher``)."""
        with self._lock:
            self._renew_locked()

    def _renew_locked(self) -> None:
        data_key = os.urandom(DATA_KEY_LEN)
        wrapped = {}
        for name in self.key_names:
            info = read_key(self._reader, False, name, {})
            wrapped[name] = (wrap_data_key(load_public_key(info.key, name), data_key, name), info.metadata)
        self._data_key, self._aead, self._wrapped = data_key, _aesgcm(data_key), wrapped
        self._renewed_at = self._clock()

    def overhead(self) -> int:
        """Bytes encryption adds to an entry (the tag, the IV and the wrapped keys in the metadata): chunk
        sizes leave room for it."""
        keys = sum(len(name) + len(value) + 16 + sum(len(k) + len(v) + 8 for k, v in meta.items())
                   for name, (value, meta) in self._wrapped.items())
        return TAG_LEN + IV_LEN + 4 + (keys or 512 * len(self.key_names))

    def encrypt(self, metadata: Any, payload: bytes) -> bytes:
        """Set ``metadata``'s encryption fields and return the encrypted ``payload``; :class:`CryptoError` when
        a key cannot be read or used."""
        from broker_core.protocol import pulsar_api_pb2
        with self._lock:
            if not self._wrapped or self._clock() - self._renewed_at >= DATA_KEY_ROTATION_S:
                self._renew_locked()
            aead, wrapped = self._aead, self._wrapped
        iv = os.urandom(IV_LEN)
        del metadata.encryption_keys[:]
        for name, (value, meta) in wrapped.items():
            keys = metadata.encryption_keys.add(key=name, value=value)
            keys.metadata.extend(pulsar_api_pb2.KeyValue(key=k, value=v) for k, v in meta.items())
        metadata.encryption_param = iv
        return aead.encrypt(iv, bytes(payload), None)


class ConsumerCrypto:
    """Decrypts the entries one consumer (or reader) receives. Thread-safe."""

    def __init__(self, reader: Any, action: ConsumerCryptoFailureAction, label: str = "",
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.reader = reader
        self.action = action
        self._label = label
        self._clock = clock
        self._lock = threading.Lock()
        self._data_keys: dict[bytes, tuple[Any, float]] = {}
        """MD5 of a wrapped data key -> (AES-GCM of the data key, last use)."""

    def decrypt(self, metadata: Any, payload: bytes | memoryview) -> bytes | None:
        """The decrypted payload of an entry whose metadata has ``encryption_keys``, or None when it cannot be
        decrypted (no key reader, no key that opens it, a payload that does not authenticate)."""
        if self.reader is None:
            log.warning("event=encrypted_message_without_key_reader consumer=%s action=%s", self._label,
                        self.action.name)
            return None
        iv = metadata.encryption_param
        data = bytes(payload)
        for aead in self._cached(metadata):
            plain = _open(aead, iv, data)
            if plain is not None:
                return plain
        for keys in metadata.encryption_keys:
            try:
                info = read_key(self.reader, True, keys.key, {kv.key: kv.value for kv in keys.metadata})
                data_key = unwrap_data_key(load_private_key(info.key, keys.key), keys.value, keys.key)
            except CryptoError as exc:
                log.debug("event=data_key_not_decrypted consumer=%s key=%s error=%s", self._label, keys.key,
                          exc.message)
                continue
            aead = _aesgcm(data_key) if len(data_key) in (16, 24, 32) else None
            plain = _open(aead, iv, data) if aead is not None else None
            if plain is not None:
                self._remember(keys.value, aead)
                return plain
        log.warning("event=decryption_failed consumer=%s keys=%s action=%s", self._label,
                    ",".join(k.key for k in metadata.encryption_keys), self.action.name)
        return None

    def _cached(self, metadata: Any) -> list[Any]:
        now = self._clock()
        found = []
        with self._lock:
            for keys in metadata.encryption_keys:
                digest = hashlib.md5(keys.value).digest()
                hit = self._data_keys.get(digest)
                if hit is not None:
                    self._data_keys[digest] = (hit[0], now)
                    found.append(hit[0])
        return found

    def _remember(self, wrapped: bytes, aead: Any) -> None:
        now = self._clock()
        with self._lock:
            self._data_keys[hashlib.md5(wrapped).digest()] = (aead, now)
            for digest in [d for d, (_, used) in self._data_keys.items() if now - used > DATA_KEY_CACHE_S]:
                del self._data_keys[digest]


def _open(aead: Any, iv: bytes, data: bytes) -> bytes | None:
    from cryptography.exceptions import InvalidTag
    if len(iv) != IV_LEN or len(data) < TAG_LEN:
        return None
    try:
        return aead.decrypt(iv, data, None)
    except InvalidTag:
        return None
