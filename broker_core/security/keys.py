"""Reading token keys the way Pulsar's broker and ``pulsar tokens`` do (``AuthTokenUtils``).

A key setting (``tokenSecretKey``, ``tokenPublicKey``, ``--secret-key``, ``--private-key``) is one of:

- ``data:;base64,<base64>`` (or ``data:<base64>``): the key's bytes inline;
- ``file:///path/to/key``: the file's bytes;
- ``env:NAME``: the environment variable's value, base64;
- anything else: base64 of the key's bytes.

A secret key is its raw bytes. A public or private key is DER (what Pulsar writes: X.509
SubjectPublicKeyInfo, PKCS#8) or PEM. Errors are ``InvalidConfiguration`` naming the setting; they never
quote the key.
"""
from __future__ import annotations

import base64
import binascii
import os
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from broker_core.errors import InvalidConfiguration


def read_key(setting: str, value: str) -> bytes:
    """The bytes ``value`` designates (see the module docstring)."""
    value = value.strip()
    try:
        if value.startswith("data:"):
            _, _, encoded = value.partition(",")
            return base64.b64decode(encoded or value[len("data:"):], validate=True)
        if value.startswith("file:"):
            path = unquote(urlparse(value).path)
            return Path(path).read_bytes()
        if value.startswith("env:"):
            name = value[len("env:"):]
            if name not in os.environ:
                raise InvalidConfiguration(f"{setting}: the environment variable {name} is not set", key=setting)
            return base64.b64decode(os.environ[name], validate=True)
        return base64.b64decode(value, validate=True)
    except OSError as exc:
        raise InvalidConfiguration(f"{setting}: cannot read the key file ({exc.strerror})", key=setting) from None
    except (binascii.Error, ValueError):
        raise InvalidConfiguration(f"{setting}: not valid base64; give data:;base64,..., file:///path, env:NAME "
                                   "or base64", key=setting) from None


def load_public_key(setting: str, data: bytes) -> Any:
    """A public key object from DER or PEM bytes."""
    from cryptography.hazmat.primitives import serialization

    try:
        if data.lstrip().startswith(b"-----BEGIN"):
            return serialization.load_pem_public_key(data)
        return serialization.load_der_public_key(data)
    except (ValueError, TypeError):
        raise InvalidConfiguration(f"{setting}: not a public key (DER or PEM)", key=setting) from None


def load_private_key(setting: str, data: bytes) -> Any:
    """A private key object from DER (PKCS#8) or PEM bytes."""
    from cryptography.hazmat.primitives import serialization

    try:
        if data.lstrip().startswith(b"-----BEGIN"):
            return serialization.load_pem_private_key(data, password=None)
        return serialization.load_der_private_key(data, password=None)
    except (ValueError, TypeError):
        raise InvalidConfiguration(f"{setting}: not a private key (DER or PEM, unencrypted)", key=setting) from None
