"""The compose file's one-shot ``keys`` service: makes what a secured broker and its clients need, once, in
the ``keys`` volume (run again, it keeps what is there):

- ``secret.key``: the HS256 token secret (the broker's ``tokenSecretKey=file:///keys/secret.key``);
- ``admin.token``: a token for role ``admin`` (a ``superUserRoles`` role), what the demo authenticates with;
- ``ca.pem`` (the clients' ``tls_trust_certs_file_path``), ``broker.pem`` and ``broker.key``: a CA and the
  broker's certificate for the host names ``broker`` and ``localhost`` (and 127.0.0.1).

Files are readable by their owner only (the image's user, which the broker runs as too), ``ca.pem`` by all.
"""
from __future__ import annotations

import datetime
import ipaddress
import os
import sys
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from broker_core.security.tokens import create_token, generate_secret_key

DAYS = 825


def _write(path: Path, data: bytes, mode: int = 0o600) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "wb") as out:
        out.write(data)


def _certificate(subject: str, key, issuer: str, issuer_key, ca: bool, names: list[str]) -> x509.Certificate:
    now = datetime.datetime.now(datetime.timezone.utc)
    builder = (x509.CertificateBuilder()
               .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
               .issuer_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, issuer)]))
               .public_key(key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(DAYS))
               .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    if names:
        builder = builder.add_extension(x509.SubjectAlternativeName(
            [x509.DNSName(n) for n in names] + [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
    return builder.sign(issuer_key, hashes.SHA256())


def main(folder: str) -> int:
    keys = Path(folder)
    if (keys / "admin.token").exists():
        print(f"keys already in {keys}; nothing to do")
        return 0
    secret = generate_secret_key()
    _write(keys / "secret.key", secret)
    _write(keys / "admin.token", create_token(secret, "admin").encode())
    ca_key, broker_key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca = _certificate("pulsarlike-compose-ca", ca_key, "pulsarlike-compose-ca", ca_key, True, [])
    broker = _certificate("broker", broker_key, "pulsarlike-compose-ca", ca_key, False, ["broker", "localhost"])
    _write(keys / "ca.pem", ca.public_bytes(serialization.Encoding.PEM), 0o644)
    _write(keys / "broker.pem", broker.public_bytes(serialization.Encoding.PEM))
    _write(keys / "broker.key", broker_key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                         serialization.NoEncryption()))
    print(f"made secret.key, admin.token, ca.pem, broker.pem and broker.key in {keys}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "/keys"))
