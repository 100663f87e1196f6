"""End-to-end encryption's keys: pulsar-client's key reader and the public names of an encrypted message, and
how Pulsar wraps a message's data key with each public key.

A producer encrypts every entry with a symmetric *data key* (:mod:`connector.client.security.message_crypto`) and sends
that key in the entry's metadata once per public key named by ``encryption_key``, each copy encrypted with
that public key (``EncryptionKeys{key: the key's name, value: the wrapped data key, metadata: the key
reader's metadata}``). How a data key is wrapped, as Pulsar's clients do it:

- **RSA** public key: RSA-OAEP with SHA-1 and MGF1(SHA-1) (Java's ``RSA/NONE/OAEPWithSHA1AndMGF1Padding``,
  the C++ client's ``RSA_PKCS1_OAEP_PADDING``): what pulsar-client (C++) and the Java client read and write.
- **EC** public key (the Java client's ECDSA keys; pulsar-client's C++ core has RSA only): BouncyCastle's
  ``ECIES`` as the Java client uses it, without parameters -- an ephemeral key pair on the recipient's curve,
  ``Z`` = the ECDH shared x-coordinate (field-size bytes), ``V`` = the ephemeral public point uncompressed,
  ``K`` = KDF2-SHA1(``V || Z``) of 16 + len(data key) bytes, the MAC key the first 16 bytes and the XOR
  stream the rest, ``C`` = data key XOR stream, ``T`` = HMAC-SHA1(MAC key, ``C || 0x00 * 8``); the wrapped
  key is ``V || C || T`` (65 + 32 + 20 bytes on P-256).

Keys are PEM: a public key as SubjectPublicKeyInfo (``BEGIN PUBLIC KEY``) or a certificate, a private key
as PKCS#8, PKCS#1 (``BEGIN RSA PRIVATE KEY``) or SEC1 (``BEGIN EC PRIVATE KEY``, ``openssl ecparam -genkey``
output with its ``EC PARAMETERS`` block first). A key that does not load, or a wrapped key that does not
unwrap, raises :class:`CryptoError`.
"""
from __future__ import annotations

import hashlib
import hmac
import re
from typing import Any, Mapping

from broker_core.errors import PulsarLikeError

from connector.client.arg_checks import check_type


class CryptoError(PulsarLikeError):
    """pulsar-client's ``CryptoError``: a key could not be read or loaded, a data key not wrapped or unwrapped, a
    payload not encrypted or decrypted."""


class EncryptionKeyInfo:
    """What a key reader returns: the key (PEM bytes) and its metadata (sent with the wrapped data key, given
    back to the reader that unwraps it), as Pulsar's ``EncryptionKeyInfo``."""

    __slots__ = ("key", "metadata")

    def __init__(self, key: bytes | str, metadata: Mapping[str, str] | None = None) -> None:
        self.key = key.encode() if isinstance(key, str) else bytes(key)
        self.metadata = dict(metadata or {})

    def __repr__(self) -> str:
        return f"EncryptionKeyInfo(key=<{len(self.key)} bytes>, metadata={self.metadata})"


class CryptoKeyReader:
    """pulsar-client's default key reader: ``CryptoKeyReader(public_key_path, private_key_path)`` reads the
    public key (a producer's) and the private key (a consumer's) from PEM files, whatever key name is asked,
    as pulsar-client's ``DefaultCryptoKeyReader`` (the files are read at each use: a replaced file is taken).

    A key reader of your own subclasses it and overrides :meth:`get_public_key` and/or
    :meth:`get_private_key` (or the Java/C++ spellings ``getPublicKey``/``getPrivateKey``), each returning an
    :class:`EncryptionKeyInfo` or the PEM bytes; its ``__init__`` need not call this one. Example::

        class Keys(pulsar.CryptoKeyReader):
            def __init__(self, pems): self.pems = pems
            def get_public_key(self, key_name, metadata): return self.pems[key_name + ".pub"]
            def get_private_key(self, key_name, metadata): return self.pems[key_name + ".key"]
    """

    def __init__(self, public_key_path: str, private_key_path: str) -> None:
        check_type(str, public_key_path, "public_key_path")
        check_type(str, private_key_path, "private_key_path")
        self.public_key_path = public_key_path
        self.private_key_path = private_key_path

    def get_public_key(self, key_name: str, metadata: Mapping[str, str]) -> EncryptionKeyInfo:
        return EncryptionKeyInfo(_read(getattr(self, "public_key_path", None), "public", key_name))

    def get_private_key(self, key_name: str, metadata: Mapping[str, str]) -> EncryptionKeyInfo:
        return EncryptionKeyInfo(_read(getattr(self, "private_key_path", None), "private", key_name))

    def __repr__(self) -> str:
        return (f"CryptoKeyReader(public_key_path={getattr(self, 'public_key_path', None)!r}, "
                f"private_key_path={getattr(self, 'private_key_path', None)!r})")


def _read(path: str | None, which: str, key_name: str) -> bytes:
    if not path:
        raise CryptoError(f"no {which} key for {key_name!r}: this CryptoKeyReader has no {which}_key_path")
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as exc:
        raise CryptoError(f"cannot read the {which} key for {key_name!r} from {path}: {exc.strerror}") from None


def read_key(reader: Any, private: bool, key_name: str, metadata: Mapping[str, str]) -> EncryptionKeyInfo:
    """Ask ``reader`` for a key (its snake_case or camelCase method, whichever the class overrides)."""
    snake, camel = ("get_private_key", "getPrivateKey") if private else ("get_public_key", "getPublicKey")
    method = getattr(reader, camel, None) if callable(getattr(type(reader), camel, None)) else None
    if method is None:
        method = getattr(reader, snake, None)
    if method is None:
        raise CryptoError(f"{type(reader).__name__} has no {snake}(key_name, metadata)")
    try:
        info = method(key_name, dict(metadata))
    except CryptoError:
        raise
    except Exception as exc:  # a user's reader: its failure is the message's crypto failure
        raise CryptoError(f"{type(reader).__name__}.{snake}({key_name!r}) failed: {exc!r}") from exc
    if isinstance(info, EncryptionKeyInfo):
        return info
    if isinstance(info, (bytes, bytearray, str)):
        return EncryptionKeyInfo(info)
    raise CryptoError(f"{type(reader).__name__}.{snake}({key_name!r}) returned {type(info).__name__}; return "
                      "an EncryptionKeyInfo or the key's PEM bytes")


# --- the names a consumer sees ---------------------------------------------------------------------------
class EncryptionKey:
    """One wrapped data key of a message (pulsar-client's ``EncryptionKey``): ``key`` the public key's name,
    ``value`` the data key encrypted with it, ``metadata`` the key reader's."""

    __slots__ = ("_key", "_value", "_metadata")

    def __init__(self, key: str, value: bytes, metadata: Mapping[str, str] | None = None) -> None:
        self._key = key
        self._value = bytes(value)
        self._metadata = dict(metadata or {})

    @property
    def key(self) -> str:
        return self._key

    @property
    def value(self) -> bytes:
        return self._value

    @property
    def metadata(self) -> dict:
        return dict(self._metadata)

    def __str__(self) -> str:
        return f"EncryptionKey(key={self.key}, value_len={len(self.value)}, metadata={self.metadata})"

    __repr__ = __str__


class EncryptionContext:
    """How a received message was encrypted (pulsar-client's ``EncryptionContext``, from
    ``Message.encryption_context()``): with ``crypto_failure_action=CONSUME`` a message that could not be
    decrypted is delivered as it was sent (``is_decryption_failed()``: its ``data()`` is the encrypted -- and
    maybe compressed -- payload, a whole batch as one message), and this says how to decrypt it."""

    def __init__(self, keys: list[EncryptionKey], param: bytes, algorithm: str, compression_type: Any,
                 uncompressed_message_size: int, batch_size: int, is_decryption_failed: bool) -> None:
        self._keys = keys
        self._param = param
        self._algorithm = algorithm
        self._compression_type = compression_type
        self._uncompressed_message_size = uncompressed_message_size
        self._batch_size = batch_size
        self._failed = is_decryption_failed

    @classmethod
    def of(cls, metadata: Any, failed: bool) -> "EncryptionContext":
        """The context of an entry's ``MessageMetadata``."""
        from connector.client.enums import CompressionType
        keys = [EncryptionKey(k.key, k.value, {kv.key: kv.value for kv in k.metadata}) for k in metadata.encryption_keys]
        batch = metadata.num_messages_in_batch if metadata.HasField("num_messages_in_batch") else -1
        try:
            compression = CompressionType(metadata.compression)
        except ValueError:
            compression = metadata.compression
        return cls(keys, metadata.encryption_param, metadata.encryption_algo, compression,
                   metadata.uncompressed_size, batch, failed)

    def keys(self) -> list[EncryptionKey]:
        return list(self._keys)

    def param(self) -> bytes:
        """The AES-GCM IV (12 bytes)."""
        return self._param

    def algorithm(self) -> str:
        """The metadata's ``encryption_algo`` ('' as Pulsar's clients leave it: AES-256-GCM)."""
        return self._algorithm

    def compression_type(self) -> Any:
        return self._compression_type

    def uncompressed_message_size(self) -> int:
        return self._uncompressed_message_size

    def batch_size(self) -> int:
        """Messages in the batch, -1 when the message is not batched."""
        return self._batch_size

    def is_decryption_failed(self) -> bool:
        return self._failed

    def __str__(self) -> str:
        name = getattr(self._compression_type, "name", self._compression_type)
        return (f"EncryptionContext(algorithm={self._algorithm}, compression_type={name}, "
                f"uncompressed_message_size={self._uncompressed_message_size}, "
                f"is_decryption_failed={self._failed}, keys=[{', '.join(str(k) for k in self._keys)}])")

    __repr__ = __str__


# --- wrapping a data key ---------------------------------------------------------------------------------
_EC_PARAMETERS = re.compile(rb"-----BEGIN EC PARAMETERS-----.*?-----END EC PARAMETERS-----\s*", re.S)
_ECIES_MAC_KEY = 16
"""BouncyCastle's default IES MAC key size (128 bits) when no IESParameterSpec is given."""


def load_public_key(pem: bytes, key_name: str) -> Any:
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization
    data = _EC_PARAMETERS.sub(b"", pem)
    try:
        if b"BEGIN CERTIFICATE" in data:
            return x509.load_pem_x509_certificate(data).public_key()
        return serialization.load_pem_public_key(data)
    except (ValueError, TypeError) as exc:
        raise CryptoError(f"cannot load the public key {key_name!r}: {exc}") from None


def load_private_key(pem: bytes, key_name: str) -> Any:
    from cryptography.hazmat.primitives import serialization
    try:
        return serialization.load_pem_private_key(_EC_PARAMETERS.sub(b"", pem), password=None)
    except (ValueError, TypeError) as exc:
        raise CryptoError(f"cannot load the private key {key_name!r}: {exc}") from None


def _oaep() -> Any:
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import padding
    return padding.OAEP(mgf=padding.MGF1(algorithm=hashes.SHA1()), algorithm=hashes.SHA1(), label=None)


def wrap_data_key(public_key: Any, data_key: bytes, key_name: str) -> bytes:
    """``data_key`` encrypted with ``public_key`` (RSA-OAEP or ECIES, see the module docstring)."""
    from cryptography.hazmat.primitives.asymmetric import ec, rsa
    if isinstance(public_key, rsa.RSAPublicKey):
        return public_key.encrypt(data_key, _oaep())
    if isinstance(public_key, ec.EllipticCurvePublicKey):
        ephemeral = ec.generate_private_key(public_key.curve)
        return _ecies(ephemeral, public_key, data_key)
    raise CryptoError(f"unsupported key type {type(public_key).__name__} for key {key_name!r}: use an RSA or EC key")


def unwrap_data_key(private_key: Any, wrapped: bytes, key_name: str) -> bytes:
    """The data key ``wrapped`` holds (:func:`wrap_data_key`'s inverse); :class:`CryptoError` when it is not for
    this key."""
    from cryptography.hazmat.primitives.asymmetric import ec, rsa
    try:
        if isinstance(private_key, rsa.RSAPrivateKey):
            return private_key.decrypt(wrapped, _oaep())
        if isinstance(private_key, ec.EllipticCurvePrivateKey):
            return _ecies_open(private_key, wrapped)
    except ValueError as exc:
        raise CryptoError(f"cannot decrypt the data key with the private key {key_name!r}: {exc or 'wrong key'}") \
            from None
    raise CryptoError(f"unsupported key type {type(private_key).__name__} for key {key_name!r}: use an RSA or EC key")


def _kdf2_sha1(secret: bytes, length: int) -> bytes:
    """ISO-18033 KDF2 with SHA-1 (counter from 1, no derivation parameter), as BouncyCastle's KDF2BytesGenerator."""
    out = b""
    counter = 1
    while len(out) < length:
        out += hashlib.sha1(secret + counter.to_bytes(4, "big")).digest()
        counter += 1
    return out[:length]


def _point_bytes(key: Any) -> bytes:
    from cryptography.hazmat.primitives import serialization
    return key.public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)


def _ecies(ephemeral: Any, recipient: Any, message: bytes) -> bytes:
    from cryptography.hazmat.primitives.asymmetric import ec
    v = _point_bytes(ephemeral.public_key())
    z = ephemeral.exchange(ec.ECDH(), recipient)  # the x-coordinate, field-size bytes
    k = _kdf2_sha1(v + z, _ECIES_MAC_KEY + len(message))
    mac_key, stream = k[:_ECIES_MAC_KEY], k[_ECIES_MAC_KEY:]
    c = bytes(a ^ b for a, b in zip(message, stream))
    t = hmac.new(mac_key, c + bytes(8), hashlib.sha1).digest()
    return v + c + t


def _ecies_open(private_key: Any, wrapped: bytes) -> bytes:
    from cryptography.hazmat.primitives.asymmetric import ec
    size = (private_key.curve.key_size + 7) // 8
    v_len, t_len = 1 + 2 * size, hashlib.sha1().digest_size
    if len(wrapped) <= v_len + t_len or wrapped[0] != 4:
        raise ValueError("not an ECIES-wrapped key for this curve")
    v, c, t = wrapped[:v_len], wrapped[v_len:-t_len], wrapped[-t_len:]
    try:
        ephemeral = ec.EllipticCurvePublicKey.from_encoded_point(private_key.curve, v)
    except ValueError:
        raise ValueError("the ephemeral key is not a point of this key's curve") from None
    z = private_key.exchange(ec.ECDH(), ephemeral)
    k = _kdf2_sha1(v + z, _ECIES_MAC_KEY + len(c))
    mac_key, stream = k[:_ECIES_MAC_KEY], k[_ECIES_MAC_KEY:]
    if not hmac.compare_digest(hmac.new(mac_key, c + bytes(8), hashlib.sha1).digest(), t):
        raise ValueError("ECIES MAC mismatch (another key)")
    return bytes(a ^ b for a, b in zip(c, stream))
