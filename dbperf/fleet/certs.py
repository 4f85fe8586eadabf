"""A self-signed certificate set for a lab's fleet (`dbperf fleet certs DIR`): a CA and one certificate signed by it
that the scheduler, the workers and the controller present. Dask's TLS is mutual (every side checks the other's
certificate against the CA), so a worker without a certificate of this CA is refused by the scheduler, and a worker
does not talk to a scheduler that cannot show one."""

from __future__ import annotations

import datetime
import ipaddress
import os
import socket
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from dbperf.errors import UserError

CA, CERT, KEY = "ca.pem", "lab.pem", "lab-key.pem"
CA_KEY = "ca-key.pem"  # kept (private) so that the set can be remade; never needed by a running fleet
VALID_DAYS = 825


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "dbperf lab"),
                      x509.NameAttribute(NameOID.COMMON_NAME, common)])


def _write_private(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)


def make_certs(directory: Path, hosts: list[str] | None = None) -> list[Path]:
    """CA + one lab certificate (names: localhost, 127.0.0.1, this machine, and `hosts`). Refuses to overwrite."""
    paths = [directory / n for n in (CA, CA_KEY, CERT, KEY)]
    existing = [p for p in paths if p.exists()]
    if existing:
        raise UserError(f"{existing[0]}: already exists; dbperf fleet certs writes a new set into an empty directory")
    try:
        directory.mkdir(parents=True, exist_ok=True)
        directory.chmod(0o700)
    except OSError as e:
        raise UserError(f"{directory}: cannot create: {e.strerror}") from None
    now = datetime.datetime.now(datetime.UTC)
    start, end = now - datetime.timedelta(minutes=5), now + datetime.timedelta(days=VALID_DAYS)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (x509.CertificateBuilder().subject_name(_name("dbperf lab CA")).issuer_name(_name("dbperf lab CA"))
          .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
          .not_valid_before(start).not_valid_after(end)
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                       content_commitment=False, key_encipherment=False, data_encipherment=False,
                                       key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    names: list[x509.GeneralName] = [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
    for host in dict.fromkeys([socket.gethostname(), *(hosts or [])]):
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    cert = (x509.CertificateBuilder().subject_name(_name("dbperf lab")).issuer_name(ca.subject)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(start).not_valid_after(end)
            .add_extension(x509.SubjectAlternativeName(names), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH,
                                                  x509.oid.ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
            .sign(ca_key, hashes.SHA256()))
    pem = serialization.Encoding.PEM

    def private(k: ec.EllipticCurvePrivateKey) -> bytes:
        return k.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())

    try:
        (directory / CA).write_bytes(ca.public_bytes(pem))
        _write_private(directory / CA_KEY, private(ca_key))
        (directory / CERT).write_bytes(cert.public_bytes(pem))
        _write_private(directory / KEY, private(key))
    except OSError as e:
        raise UserError(f"{e.filename or directory}: cannot write: {e.strerror}") from None
    return paths


def cert_files(directory: Path) -> tuple[Path, Path, Path]:
    """(CA, certificate, key) of a set made by make_certs (or laid out the same way by the user)."""
    files = (directory / CA, directory / CERT, directory / KEY)
    missing = [p for p in files if not p.is_file()]
    if missing:
        raise UserError(f"{missing[0]}: not found (a certificate set has {CA}, {CERT} and {KEY}: "
                        "dbperf fleet certs DIR makes one)")
    return files
