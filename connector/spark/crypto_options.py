"""End-to-end encryption options of the Spark source (decrypt) and sink (encrypt), parsed once on the driver.

StreamNative's pulsar-spark has no encryption options (its ``pulsar.reader.*``/``pulsar.producer.*`` keys are
the Java client's, where a key reader is an object, not a string). The options here take the Java configuration
names where one exists (``encryptionKeys``, ``cryptoFailureAction``, also accepted with pulsar-spark's
``pulsar.producer.``/``pulsar.reader.`` prefix) and Pulsar Functions' ``CryptoConfig`` names for a key reader
class (``cryptoKeyReaderClassName``, ``cryptoKeyReaderConfig``):

============================== ===========================================================================
``cryptoPrivateKey`` (source)   the private key (PEM) that decrypts: a path, ``file:///path`` or
                                ``data:application/x-pem-file;base64,<pem>`` (Java's
                                ``DefaultCryptoKeyReader`` forms); used whatever key name a message names,
                                as pulsar-client's ``CryptoKeyReader``. Read on the executors.
``cryptoPublicKey`` (sink)      the public key (PEM) that encrypts, in the same forms.
``encryptionKeys`` (sink)       comma-separated key names; the data key is wrapped with the public key once
                                per name (the consumer's key reader is asked by these names).
``cryptoKeyReaderClassName``    instead of the key options: ``module.Class`` (or ``module:Class``) of a
                                ``pulsarlike.CryptoKeyReader`` subclass, importable on the driver and the
                                executors, made on each executor with ``cryptoKeyReaderConfig``.
``cryptoKeyReaderConfig``       a JSON object: the class's keyword arguments (default ``{}``).
``cryptoFailureAction``         source: what a message that cannot be decrypted does -- ``fail`` (the
                                default: the query fails with ``CryptoError`` naming the topic, partition and
                                offsets), ``discard`` (its rows are left out, logged), ``consume`` (delivered
                                as stored, a batch as one row, with the ``__encryptionContext`` column:
                                :mod:`connector.spark.encrypted_rows`). Sink: only ``fail`` (Java's
                                ``ProducerCryptoFailureAction.FAIL``); ``send`` (send unencrypted) is refused.
============================== ===========================================================================

Every mistake raises ``ValueError`` at ``load()``/``save()``/``start()`` naming the option: an unknown failure
action, a key option on the wrong side (a public key on the source), keys without names or names without keys,
a class that does not import or is not a key reader, a config that is not a JSON object or does not fit the
class's ``__init__``, a ``data:`` URL that does not hold a key. A path is not opened on the driver (only the
executors must be able to read it); an executor that cannot read it reports it in the task's ``CryptoError``.
The key material never appears in a ``repr``; Spark shows options in ``explain()`` unless
``spark.sql.redaction.options.regex`` matches them, so prefer a path to a ``data:`` URL for a private key.
"""
from __future__ import annotations

import base64
import importlib
import inspect
import json
import logging
from dataclasses import dataclass, field
from typing import Any, Mapping
from urllib.parse import unquote, urlparse

from connector.client.security.crypto_keys import (
    CryptoError, CryptoKeyReader, EncryptionKeyInfo, load_private_key, load_public_key)
from connector.client.security.message_crypto import ConsumerCrypto, ConsumerCryptoFailureAction

log = logging.getLogger(__name__)

FAILURE_ACTIONS = ("fail", "discard", "consume")
"""Values of the source's ``cryptoFailureAction`` (Java's ``ConsumerCryptoFailureAction``, any case)."""
SOURCE_CRYPTO_OPTIONS = ("cryptoPrivateKey", "cryptoKeyReaderClassName", "cryptoKeyReaderConfig",
                         "cryptoFailureAction")
SINK_CRYPTO_OPTIONS = ("encryptionKeys", "cryptoPublicKey", "cryptoKeyReaderClassName", "cryptoKeyReaderConfig",
                       "cryptoFailureAction")
_ALL = {name.lower(): name for name in SOURCE_CRYPTO_OPTIONS + SINK_CRYPTO_OPTIONS}
_PREFIXED = {"pulsar.reader.cryptofailureaction": ("source", "cryptoFailureAction"),
             "pulsar.producer.cryptofailureaction": ("sink", "cryptoFailureAction"),
             "pulsar.producer.encryptionkeys": ("sink", "encryptionKeys")}
"""pulsar-spark's spellings (the Java reader's and producer's configuration keys) -> (side, own name)."""
_DATA_PREFIX = "data:"


@dataclass(frozen=True)
class KeyReaderSpec:
    """How an executor makes its key reader: PEM sources (path, ``file://`` or ``data:`` URL) or a class."""

    public_key: str | None = field(default=None, repr=False)
    private_key: str | None = field(default=None, repr=False)
    class_name: str | None = None
    config: str = field(default="{}", repr=False)
    """``cryptoKeyReaderConfig``: a JSON object (kept as text: the spec travels to the executors pickled)."""

    def build(self) -> CryptoKeyReader:
        """The key reader (on an executor); a user class is imported and made with the config's arguments."""
        if self.class_name is None:
            return KeyFiles(self.public_key, self.private_key)
        return _load_class(self.class_name, "cryptoKeyReaderClassName")(**json.loads(self.config))


@dataclass(frozen=True)
class SourceCrypto:
    """The source's decryption: ``keys`` None without a key reader (an encrypted message then meets
    ``action`` at once)."""

    action: str = "fail"
    keys: KeyReaderSpec | None = None

    @property
    def consume(self) -> bool:
        """``cryptoFailureAction=consume``: the rows get the ``__encryptionContext`` column."""
        return self.action == "consume"

    def consumer_crypto(self, label: str) -> ConsumerCrypto:
        """The client's decryption of one range's entries (its key reader made here, on the executor)."""
        return ConsumerCrypto(self.key_reader(), ConsumerCryptoFailureAction[self.action.upper()], label=label)

    def key_reader(self) -> CryptoKeyReader | None:
        """The key reader (made on the executor), None without one."""
        return self.keys.build() if self.keys is not None else None


@dataclass(frozen=True)
class SinkCrypto:
    """The sink's encryption: ``key_names`` empty when it does not encrypt."""

    key_names: tuple[str, ...] = ()
    keys: KeyReaderSpec | None = None

    def producer_kwargs(self) -> dict[str, Any]:
        """``create_producer`` keyword arguments (none when the sink does not encrypt)."""
        if not self.key_names or self.keys is None:
            return {}
        return {"encryption_keys": list(self.key_names), "crypto_key_reader": self.keys.build()}


class KeyFiles(CryptoKeyReader):
    """pulsar-client's file key reader, also taking Java's ``file:///path`` and ``data:...;base64,`` forms;
    ``last_error`` keeps why a key could not be read (the source's ``CryptoError`` names it)."""

    def __init__(self, public_key: str | None, private_key: str | None) -> None:
        self.public_key_path = public_key or ""
        self.private_key_path = private_key or ""
        self.last_error: str | None = None

    def get_public_key(self, key_name: str, metadata: Mapping[str, str]) -> EncryptionKeyInfo:
        return EncryptionKeyInfo(self._pem(self.public_key_path, "cryptoPublicKey", key_name))

    def get_private_key(self, key_name: str, metadata: Mapping[str, str]) -> EncryptionKeyInfo:
        return EncryptionKeyInfo(self._pem(self.private_key_path, "cryptoPrivateKey", key_name))

    def _pem(self, source: str, option: str, key_name: str) -> bytes:
        try:
            return read_pem(source, option)
        except CryptoError as exc:
            self.last_error = f"key {key_name!r}: {exc.message}"
            raise

    def __repr__(self) -> str:
        return "KeyFiles(<keys not shown>)"


def read_pem(source: str, option: str) -> bytes:
    """The PEM bytes ``source`` names (a path, ``file:///path``, ``data:[<type>][;base64],<data>``)."""
    if not source:
        raise CryptoError(f"no {option} given")
    if source.startswith(_DATA_PREFIX):
        head, sep, data = source[len(_DATA_PREFIX):].partition(",")
        if not sep:
            raise CryptoError(f"option {option}: a data: URL is data:application/x-pem-file;base64,<base64 PEM>")
        try:
            return base64.b64decode(data, validate=True) if head.endswith(";base64") else unquote(data).encode()
        except ValueError:
            raise CryptoError(f"option {option}: the data: URL's base64 does not decode") from None
    path = _file_path(source, option)
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as exc:
        raise CryptoError(f"option {option}: cannot read {path} on this executor: {exc.strerror}") from None


def _file_path(source: str, option: str) -> str:
    if "://" not in source:
        return source
    url = urlparse(source)
    if url.scheme != "file" or url.netloc not in ("", "localhost"):
        raise CryptoError(f"option {option}={source!r}: use a path, file:///absolute/path or a data: URL")
    return unquote(url.path)


def split_source_crypto(options: Mapping[str, str]) -> tuple[dict[str, str], SourceCrypto]:
    """(the other options, the source's decryption); ``ValueError`` naming a wrong option."""
    rest, given = _split(options, "source")
    for name in ("cryptoPublicKey", "encryptionKeys"):
        if name in given:
            raise ValueError(f"option {name} is the sink's (it encrypts with public keys); the source decrypts "
                             "with the private key: set cryptoPrivateKey, or cryptoKeyReaderClassName")
    action = given.get("cryptoFailureAction", "fail").strip().lower()
    if action not in FAILURE_ACTIONS:
        raise ValueError(f"option cryptoFailureAction={given['cryptoFailureAction']!r} is not valid; use fail (the "
                         "default: the query stops with CryptoError), discard (leave the message out) or consume "
                         "(deliver it encrypted, with the __encryptionContext column)")
    keys = _key_reader(given, "cryptoPrivateKey", private=True)
    return rest, SourceCrypto(action, keys)


def split_sink_crypto(options: Mapping[str, str]) -> tuple[dict[str, str], SinkCrypto]:
    """(the other options, the sink's encryption); ``ValueError`` naming a wrong option."""
    rest, given = _split(options, "sink")
    if "cryptoPrivateKey" in given:
        raise ValueError("option cryptoPrivateKey is the source's (it decrypts); the sink encrypts with public "
                         "keys: set cryptoPublicKey and encryptionKeys")
    action = given.get("cryptoFailureAction", "fail").strip().lower()
    if action != "fail":
        raise ValueError(f"option cryptoFailureAction={given['cryptoFailureAction']!r} is not valid for the sink; "
                         "only fail is (a row that cannot be encrypted fails the write): the sink never sends "
                         "unencrypted what it was asked to encrypt")
    names = tuple(dict.fromkeys(n.strip() for n in given.get("encryptionKeys", "").split(",")))
    if "encryptionKeys" in given and (not names or "" in names):
        raise ValueError(f"option encryptionKeys={given['encryptionKeys']!r} is not valid; use comma-separated "
                         "key names, e.g. 'orders-key' or 'orders-key,audit-key'")
    keys = _key_reader(given, "cryptoPublicKey", private=False)
    if keys is not None and "encryptionKeys" not in given:
        raise ValueError("a key reader (cryptoPublicKey or cryptoKeyReaderClassName) is set but option "
                         "encryptionKeys is not: name the keys to encrypt with, e.g. "
                         ".option('encryptionKeys', 'orders-key')")
    if "encryptionKeys" in given and keys is None:
        raise ValueError("option encryptionKeys needs the public key: set cryptoPublicKey (a path, file:///path "
                         "or data: URL readable on the executors) or cryptoKeyReaderClassName; the rows would "
                         "otherwise go out unencrypted")
    return rest, SinkCrypto(names if "encryptionKeys" in given else (), keys)


def _split(options: Mapping[str, str], side: str) -> tuple[dict[str, str], dict[str, str]]:
    rest: dict[str, str] = {}
    given: dict[str, str] = {}
    written: dict[str, str] = {}
    for key, value in options.items():
        lowered = key.lower()
        if lowered in _PREFIXED:
            owner, name = _PREFIXED[lowered]
            if owner != side:
                rest[key] = value  # the other side's prefix: refused there as unknown
                continue
        elif lowered in _ALL:
            name = _ALL[lowered]
        else:
            rest[key] = value
            continue
        if name in written:
            raise ValueError(f"options {written[name]} and {key} name the same option ({name}); set only one")
        written[name] = key
        given[name] = str(value)
    return rest, given


def _key_reader(given: Mapping[str, str], key_option: str, private: bool) -> KeyReaderSpec | None:
    class_name = given.get("cryptoKeyReaderClassName")
    source = given.get(key_option)
    if class_name is None:
        if "cryptoKeyReaderConfig" in given:
            raise ValueError("option cryptoKeyReaderConfig needs cryptoKeyReaderClassName (the class it "
                             "configures)")
        if source is None:
            return None
        source = source.strip()
        _check_source(source, key_option, private)
        return KeyReaderSpec(public_key=None if private else source, private_key=source if private else None)
    if source is not None:
        raise ValueError(f"options {key_option} and cryptoKeyReaderClassName conflict: set the key, or a key "
                         "reader class of your own, not both")
    class_name = class_name.strip()
    cls = _load_class(class_name, "cryptoKeyReaderClassName")
    if not (isinstance(cls, type) and issubclass(cls, CryptoKeyReader)):
        raise ValueError(f"option cryptoKeyReaderClassName={class_name!r} is not a key reader; name a subclass of "
                         "pulsarlike.CryptoKeyReader (overriding get_public_key/get_private_key)")
    text = given.get("cryptoKeyReaderConfig", "{}")
    try:
        config = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"option cryptoKeyReaderConfig is not valid JSON ({exc}); use a JSON object of the "
                         "class's keyword arguments, e.g. {\"path\": \"/keys/app.key.pem\"}") from None
    if not isinstance(config, dict):
        raise ValueError("option cryptoKeyReaderConfig must be a JSON object (the class's keyword arguments), "
                         f"not {type(config).__name__}")
    try:
        inspect.signature(cls).bind(**config)
    except TypeError as exc:
        raise ValueError(f"option cryptoKeyReaderConfig does not fit {class_name}'s arguments: {exc}") from None
    except ValueError:
        pass  # no signature to check (a builtin's): the executor's call tells
    return KeyReaderSpec(class_name=class_name, config=json.dumps(config))


def _check_source(source: str, option: str, private: bool) -> None:
    """A ``data:`` URL must hold a key of the right kind; a path is the executors' to read."""
    if not source:
        raise ValueError(f"option {option} is empty; give a path, file:///path or data: URL of the PEM key")
    try:
        if source.startswith(_DATA_PREFIX):
            pem = read_pem(source, option)
            (load_private_key if private else load_public_key)(pem, option)
        else:
            _file_path(source, option)
    except CryptoError as exc:
        raise ValueError(exc.message if exc.message.startswith("option") else f"option {option}: {exc.message}") \
            from None


def _load_class(name: str, option: str) -> Any:
    module_name, sep, attribute = name.partition(":") if ":" in name else name.rpartition(".")
    if not module_name or not attribute:
        raise ValueError(f"option {option}={name!r} is not valid; use module.Class (or module:Class)")
    try:
        found: Any = importlib.import_module(module_name)
        for part in attribute.split("."):
            found = getattr(found, part)
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"option {option}={name!r} does not import: {exc}; the class must be importable on the "
                         "driver and on every executor") from None
    return found
