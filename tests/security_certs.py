"""Real TLS material for the security tests, made in the test (``cryptography``): a CA, the broker's
certificate (for ``localhost`` and ``127.0.0.1``), client certificates whose CN is a role, and a second CA
whose certificates the broker must refuse; and token helpers."""
from __future__ import annotations

import base64
import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


class Authority:
    """A CA that signs certificates into ``folder``."""

    def __init__(self, folder: Path, name: str) -> None:
        self.folder = folder
        self.name = name
        self.key = ec.generate_private_key(ec.SECP256R1())
        self.cert = self._sign(name, self.key.public_key(), ca=True)
        self.cert_file = folder / f"{name}.pem"
        self.cert_file.write_bytes(self.cert.public_bytes(serialization.Encoding.PEM))

    def _sign(self, subject: str, public_key, ca: bool = False, server: bool = False) -> x509.Certificate:
        now = datetime.datetime.now(datetime.timezone.utc)
        builder = (x509.CertificateBuilder().subject_name(_name(subject)).issuer_name(_name(self.name))
                   .public_key(public_key).serial_number(x509.random_serial_number())
                   .not_valid_before(now - datetime.timedelta(hours=1))
                   .not_valid_after(now + datetime.timedelta(days=2))
                   .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
        if server:
            builder = builder.add_extension(x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
        return builder.sign(self.key, hashes.SHA256())

    def issue(self, common_name: str, server: bool = False) -> tuple[str, str]:
        """(certificate file, key file) for ``common_name``."""
        key = ec.generate_private_key(ec.SECP256R1())
        cert = self._sign(common_name, key.public_key(), server=server)
        cert_file, key_file = self.folder / f"{common_name}.pem", self.folder / f"{common_name}.key"
        cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        key_file.write_bytes(_pem_key(key))
        return str(cert_file), str(key_file)


@dataclass
class TlsFiles:
    ca: str
    """The broker's trust (and the clients' trust of the broker)."""
    server_cert: str
    server_key: str
    other_ca: Authority
    """A CA the broker does not trust."""
    authority: Authority

    def client(self, role: str) -> tuple[str, str]:
        return self.authority.issue(role)

    def broker_settings(self, require_client_cert: bool = False) -> dict[str, str]:
        return {"tlsCertificateFilePath": self.server_cert, "tlsKeyFilePath": self.server_key,
                "tlsTrustCertsFilePath": self.ca,
                "tlsRequireTrustedClientCertOnConnect": "true" if require_client_cert else "false"}


def make_tls(folder: Path) -> TlsFiles:
    folder.mkdir(parents=True, exist_ok=True)
    authority = Authority(folder, "test-ca")
    server_cert, server_key = authority.issue("localhost", server=True)
    return TlsFiles(str(authority.cert_file), server_cert, server_key, Authority(folder, "other-ca"), authority)


def secret_setting(secret: bytes) -> str:
    """``tokenSecretKey`` for ``secret``."""
    return "data:;base64," + base64.b64encode(secret).decode()


def as_args(settings: dict[str, str]) -> list[str]:
    """``--set key=value`` arguments of ``pulsarlike broker``."""
    return [item for key, value in settings.items() for item in ("--set", f"{key}={value}")]
