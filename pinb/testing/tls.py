"""A throwaway self-signed certificate for loopback TLS servers in tests and benchmarks."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Certificate", "self_signed_certificate"]


@dataclass(frozen=True)
class Certificate:
    """A certificate for ``127.0.0.1`` and ``localhost`` and its private key (PEM files).

    ``cert`` is also the one authority that vouches for it: give it to a client as its
    CA file (``SSL_CERT_FILE``, ``verify=``).
    """

    cert: Path
    key: Path


def self_signed_certificate(folder: Path, *, days: int = 2) -> Certificate:
    """Make a self-signed certificate in ``folder`` with the ``openssl`` command.

    Raises
    ------
    RuntimeError
        ``openssl`` is not installed, or failed.
    """
    openssl = shutil.which("openssl")
    if openssl is None:
        raise RuntimeError("a TLS test server needs the openssl command (apt-get install openssl)")
    folder.mkdir(parents=True, exist_ok=True)
    cert, key = folder / "loopback-cert.pem", folder / "loopback-key.pem"
    command = [
        openssl,
        "req",
        "-x509",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",  # quicker to make and to use than RSA
        "-nodes",
        "-keyout",
        str(key),
        "-out",
        str(cert),
        "-days",
        str(days),
        "-subj",
        "/CN=127.0.0.1",
        "-addext",
        "subjectAltName=IP:127.0.0.1,DNS:localhost",
        "-addext",
        "basicConstraints=critical,CA:TRUE",
    ]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"openssl could not make a certificate: {done.stderr.strip()}")
    return Certificate(cert, key)
